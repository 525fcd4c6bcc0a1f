"""docs/edit-scripts.md is checked against the op declarations (issue #13 item 12): every op of
``OP_FIELDS`` has a section naming each of its fields and a JSON example that is a valid edit,
and the doc describes no op that does not exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fxstudio.core.edits.script import load_script, new_script, validate_script
from fxstudio.core.edits.validation import OP_FIELDS, check_fields

DOC = Path(__file__).resolve().parents[3] / "docs" / "edit-scripts.md"
TEXT = DOC.read_text(encoding="utf-8")
JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.S)


def _op_sections() -> dict[str, str]:
    ops_part = TEXT.split("\n## Ops\n", 1)[1].split("\n## ", 1)[0]
    pieces = re.split(r"^### `([a-z_]+)`\n", ops_part, flags=re.M)
    return dict(zip(pieces[1::2], pieces[2::2]))


SECTIONS = _op_sections()


def test_the_doc_has_one_section_per_declared_op_and_no_other():
    assert sorted(SECTIONS) == sorted(OP_FIELDS)


@pytest.mark.parametrize("op", sorted(OP_FIELDS))
def test_each_op_section_names_every_field_and_has_a_valid_example(op):
    section = SECTIONS[op]
    required, optional = OP_FIELDS[op]
    for field in sorted(required | optional):
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


def test_every_field_is_in_the_field_table():
    table = TEXT.split("\n## Field types\n", 1)[1].split("\n## ", 1)[0]
    fields = {f for required, optional in OP_FIELDS.values() for f in required | optional} | {"op"}
    for field in sorted(fields):
        assert f"`{field}`" in table, f"field {field!r} is missing from the field table"


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
