"""docs/edit-scripts.md is checked against the op registry (issue #13 item 12, #16 item 2): every op
of ``OPS`` has a section naming each of its fields and a JSON example that is a valid edit, the doc
describes no op that does not exist, and the field table's string and true/false fields are the
registry's text and bool fields."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fxstudio.core.edits import OPS, check_fields, load_script, new_script, validate_script

DOC = Path(__file__).resolve().parents[3] / "docs" / "edit-scripts.md"
TEXT = DOC.read_text(encoding="utf-8")
JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.S)


def _op_sections() -> dict[str, str]:
    ops_part = TEXT.split("\n## Ops\n", 1)[1].split("\n## ", 1)[0]
    pieces = re.split(r"^### `([a-z_]+)`\n", ops_part, flags=re.M)
    return dict(zip(pieces[1::2], pieces[2::2]))


SECTIONS = _op_sections()


def test_the_doc_has_one_section_per_declared_op_and_no_other():
    assert sorted(SECTIONS) == sorted(OPS)


@pytest.mark.parametrize("op", sorted(OPS))
def test_each_op_section_names_every_field_and_has_a_valid_example(op):
    section = SECTIONS[op]
    required = OPS[op].required
    for field in sorted(OPS[op].fields):
        assert f"`{field}`" in section, f"docs/edit-scripts.md, section {op}: field {field!r} is not described"
    examples = [json.loads(block) for block in JSON_BLOCK.findall(section)]
    assert examples, f"section {op} has no JSON example"
    used = set()
    for edit in examples:
        assert edit["op"] == op
        check_fields(edit)
        validate_script(new_script([edit]))
        used |= set(edit) - {"op"}
    assert required <= used


def _field_table() -> dict[str, str]:
    """The field table's rows: field name -> its JSON type column."""
    table = TEXT.split("\n## Field types\n", 1)[1].split("\n## ", 1)[0]
    types: dict[str, str] = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            for name in re.findall(r"`([a-z0-9_]+)`", cells[0]):
                types[name] = cells[1]
    return types


def test_every_field_is_in_the_field_table():
    table = _field_table()
    fields = {f for spec in OPS.values() for f in spec.fields} | {"op"}
    for field in sorted(fields):
        assert field in table, f"field {field!r} is missing from the field table"
    assert set(table) <= fields, f"the field table describes fields no op has: {sorted(set(table) - fields)}"


def test_the_field_table_types_are_the_registry_text_and_bool_fields():
    table = _field_table()
    texts = {f for spec in OPS.values() for f in spec.text_fields}
    bools = {f for spec in OPS.values() for f in spec.bool_fields}
    assert {f for f, kind in table.items() if kind == "string" and f != "op"} == texts
    assert {f for f, kind in table.items() if "true" in kind and "false" in kind} == bools


def test_the_registry_is_consistent():
    for name, spec in OPS.items():
        assert spec.name == name and spec.summary and callable(spec.handler)
        assert set(spec.text_fields) | spec.bool_fields <= spec.fields
        assert not set(spec.text_fields) & spec.bool_fields


def test_the_file_example_is_a_script_that_loads(tmp_path):
    first = JSON_BLOCK.findall(TEXT.split("\n## Ops\n", 1)[0])[0]
    path = tmp_path / "example.json"
    path.write_text(first, encoding="utf-8")
    assert load_script(path)["format"] == "fxstudio.edits/1"


def test_apply_help_names_the_doc():
    proc = subprocess.run([sys.executable, "-m", "fxstudio", "apply", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "docs/edit-scripts.md" in " ".join(proc.stdout.split())
