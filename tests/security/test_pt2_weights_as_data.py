"""A ``.pt2``'s weights read as data by the editable open (issue #28, ``pt2_weights``).

The records are the archive's bytes, never code: stored records at any offset (views where
aligned, copies otherwise) and compressed ones give the weights torch's own loader gives; a record
that is not a whole number of values is one line and exit 2 from the real CLI; a weight whose
stored shape disagrees with the graph's record of it is left to torch's full load, whose answer
(a program or one line) stands.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model
from tests.security import pt2_hostile as h

ROOT = Path(__file__).resolve().parents[2]
CONFIG = "data/weights/model_weights_config.json"


def _deflated(src: Path, dst: Path) -> Path:
    """``src`` with every record deflated (torch writes them stored)."""
    with zipfile.ZipFile(src) as zf:
        records = {n: zf.read(n) for n in zf.namelist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in records.items():
            zf.writestr(name, data)
    dst.write_bytes(out.getvalue())
    return dst


def _weight_record(path: Path, fqn: str = "lin.weight") -> str:
    with zipfile.ZipFile(path) as zf:
        top = zf.namelist()[0].split("/", 1)[0]
        return json.loads(zf.read(f"{top}/{CONFIG}"))["config"][fqn]["path_name"]


@pytest.mark.parametrize("layout", ["torch", "rewritten", "deflated"])
def test_the_weights_are_torchs_whatever_the_records_layout(tmp_path, layout):
    base = h.save_tiny(tmp_path / "base.pt2")
    path = {"torch": lambda: base,
            "rewritten": lambda: h.rewrite(base, tmp_path / "moved.pt2", lambda records: None),  # unaligned
            "deflated": lambda: _deflated(base, tmp_path / "deflated.pt2")}[layout]()
    loaded = load_model(path)
    assert loaded.exported_program is None  # the editable open, not torch's rebuild
    reference = torch.export.load(base)
    state = loaded.module.state_dict()
    assert sorted(state) == sorted(reference.state_dict)
    for key, value in reference.state_dict.items():
        assert torch.equal(state[key], value) and state[key].dtype == value.dtype, key
    assert isinstance(loaded.module.get_parameter("lin.weight"), torch.nn.Parameter)
    torch.testing.assert_close(loaded.graph_module(*loaded.example_inputs),
                               reference.module()(*loaded.example_inputs))


def test_a_record_that_is_not_a_whole_number_of_values_is_one_line_exit_2(tmp_path):
    base = h.save_tiny(tmp_path / "base.pt2")
    # 6 floats declared (2×3) over 23 bytes: what torch's reader would reject too
    bad = h.weight_layout(base, tmp_path / "ragged.pt2", [2, 3], [3, 1], b"\0" * 23)
    done = subprocess.run([sys.executable, "-m", "fxstudio", "inspect", str(bad)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "Traceback" not in done.stderr, done.stderr


def test_a_weight_whose_shape_disagrees_with_the_graph_is_left_to_torch(tmp_path):
    base = h.save_tiny(tmp_path / "base.pt2")
    with zipfile.ZipFile(base) as zf:
        top = zf.namelist()[0].split("/", 1)[0]
        data = zf.read(f"{top}/data/weights/{_weight_record(base)}")
    swapped = h.weight_layout(base, tmp_path / "swapped.pt2", [3, 2], [2, 1], data)  # the graph says 2×3
    try:
        loaded = load_model(swapped)
    except LoadError as exc:  # torch's answer, in one line
        assert len(str(exc).splitlines()) == 1 and str(swapped) in str(exc)
    else:
        assert loaded.exported_program is not None  # not opened from the weights the graph disagrees with
