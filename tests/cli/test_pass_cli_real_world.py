"""``fxstudio pass`` with real passes, in fresh processes: a prepare_fx pass that calibrates on the
model's example inputs, ShapeProp (an analysis: exit 0, the analysis in the label), and a pass whose
result does not run (exit 1, one line, nothing saved)."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_pass_cli import fx, one_error_line
from tests.core.passes.real_world_files import write_files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_files(tmp_path_factory.mktemp("real_cli"))


def test_prepare_fx_calibrates_on_the_example_inputs_and_records_the_pass(files, tmp_path):
    saved = tmp_path / "s.json"
    proc = fx("pass", files["cnn"], f"{files['passes']}::prepare", "--save-script", saved, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("Run pass passes.py::prepare (10 added, 3 removed")
    assert "Traceback" not in proc.stderr
    (edit,) = json.loads(saved.read_text())["edits"]
    assert edit["op"] == "run_pass" and edit["name"] == "prepare" and "kwargs" not in edit


def test_shape_prop_is_an_analysis_and_exits_0(files, tmp_path):
    proc = fx("pass", files["cnn"], f"{files['passes']}::ShapeProp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(analysis: tensor_meta, type on 15 nodes)" in proc.stdout.splitlines()[0]


def test_a_result_that_does_not_run_exits_1_with_one_line(files, tmp_path):
    proc = fx("pass", files["cnn"], f"{files['passes']}::breaks_at_run_time", cwd=tmp_path)
    assert proc.returncode == 1
    assert one_error_line(proc) == ("fxstudio: The pass passes.py::breaks_at_run_time's result does not run on "
                                    "the example inputs (IndexError: list index out of range); nothing was changed.")
