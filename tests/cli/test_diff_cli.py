"""`fxstudio diff A B [C ...]` on the real command line: the report, --json, the exit status, bad input."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest

from fxstudio.cli import main
from tests.model_files import write_model

ORIGINAL = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x) * 0.5
        z = torch.add(y, x, alpha=2)
        return torch.sigmoid(z)


def example_inputs():
    return (torch.ones(2, 4),)
"""

EDITED = (ORIGINAL.replace("* 0.5", "* 0.25").replace("alpha=2", "alpha=3")
          .replace("        return torch.sigmoid(z)", "        z = torch.relu(z)\n        return torch.tanh(z)"))


def fxstudio(*args, cwd=None):
    """Run the real command line; (exit status, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "fxstudio", *map(str, args)], capture_output=True, text=True,
                          timeout=240, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def models(tmp_path):
    return write_model(tmp_path / "net.py", ORIGINAL), write_model(tmp_path / "net_edited.py", EDITED)


def test_same_graphs_exit_0(models):
    a, _ = models
    rc, out, err = fxstudio("diff", a, a)
    assert rc == 0, err
    nodes = out.count("\n")  # the two title lines and the summary
    assert nodes == 3
    assert "B vs A: 0 added, 0 removed, 0 changed, 6 same" in out


def test_changed_arguments_added_and_replaced_nodes(models):
    a, b = models
    rc, out, err = fxstudio("diff", a, b)
    assert rc == 1 and err.strip() == "fxstudio: the graphs differ"
    assert "B vs A: 1 added, 0 removed, 3 changed, 3 same" in out
    lines = out.splitlines()
    assert "  ~ mul: args[1]: 0.5 -> 0.25" in lines
    assert "  ~ add: kwargs['alpha']: 2 -> 3" in lines
    assert "  + relu: call_function torch.relu (%add)" in lines
    assert "  ~ sigmoid -> tanh: target: torch.sigmoid -> torch.tanh  [structure]" in lines


def test_json_schema(models, capsys):
    a, b = models
    assert main(["diff", str(a), str(b), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "fxstudio.diff/1" and data["differ"] is True
    assert [g["label"] for g in data["graphs"]] == ["A", "B"]
    assert [n["name"] for n in data["graphs"][1]["nodes"]] == ["x", "lin", "mul", "add", "relu", "tanh", "output"]
    (comp,) = data["comparisons"]
    assert comp["base"] == "A" and comp["other"] == "B"
    assert comp["counts"] == {"added": 1, "removed": 0, "changed": 3, "same": 3}
    assert comp["added"] == ["relu"] and comp["removed"] == []
    by_base = {m["base"]: m for m in comp["matches"]}
    assert by_base["mul"]["changes"] == [{"field": "args[1]", "before": "0.5", "after": "0.25"}]
    assert by_base["mul"]["status"] == "changed" and by_base["lin"]["status"] == "same"
    assert by_base["sigmoid"]["other"] == "tanh"
    # the output reads tanh, sigmoid's partner: not a change (references compare through the pairs)
    assert by_base["output"]["status"] == "same"
    assert {m["how"] for m in comp["matches"]} <= {"lineage", "structure", "name"}


def test_edit_script_is_matched_by_lineage(models, tmp_path, capsys):
    a, _ = models
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": [
        {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
        {"op": "rename", "node": "add", "name": "residual"}]}))
    assert main(["diff", str(a), str(script), "--json"]) == 1
    (comp,) = json.loads(capsys.readouterr().out)["comparisons"]
    assert {m["how"] for m in comp["matches"]} == {"lineage"}
    by_base = {m["base"]: m for m in comp["matches"]}
    assert by_base["add"]["other"] == "residual" and by_base["add"]["status"] == "same"
    assert by_base["mul"]["changes"] == [{"field": "args[1]", "before": "0.5", "after": "10"}]
    assert comp["counts"]["changed"] == 1


def test_fx_against_export_of_the_same_model(models, capsys):
    a, _ = models
    assert main(["diff", str(a), str(a), "--tracer-b", "export", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["graphs"][0]["source"].endswith("(fx)") and data["graphs"][1]["source"].endswith("(export)")
    by_base = {m["base"]: m for m in data["comparisons"][0]["matches"]}
    assert by_base["lin"]["other"] == "linear" and by_base["lin"]["how"] == "structure"
    assert by_base["lin"]["changes"][0]["field"] == "op"
    assert by_base["sigmoid"]["other"] == "sigmoid"


def test_three_graphs(models, capsys):
    a, b = models
    assert main(["diff", str(a), str(b), str(a)]) == 1
    out = capsys.readouterr().out
    assert "B vs A: 1 added" in out and "C vs A: 0 added, 0 removed, 0 changed, 6 same" in out


@pytest.mark.parametrize("case", ["one model", "missing", "broken", "script first", "bad script", "bad flag"])
def test_bad_input_is_one_line_exit_2(case, models, tmp_path, capsys):
    a, _ = models
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    bad_script = tmp_path / "bad.json"
    bad_script.write_text("{not json")
    args = {"one model": [a], "missing": [a, tmp_path / "nope.py"], "broken": [a, broken],
            "script first": [bad_script, a], "bad script": [a, bad_script],
            "bad flag": [a, a, "--tracer-b", "jit"]}[case]
    if case == "broken":   # once through a real process: nothing but the line reaches the terminal
        rc, out, err = fxstudio("diff", *args)
    else:
        with pytest.raises(SystemExit) if case == "bad flag" else contextlib.nullcontext() as stop:
            rc = main(["diff", *map(str, args)])
        rc = stop.value.code if case == "bad flag" else rc
        err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err

