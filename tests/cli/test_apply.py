"""``fxstudio apply MODEL EDITS.json``: replays, prints the edited graph like inspect, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

from fxstudio.cli import main
from fxstudio.resources import example_path


def write_script(tmp_path, edits):
    path = tmp_path / "edits.json"
    path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": edits}))
    return path


def test_apply_in_a_subprocess_prints_the_edited_graph(tmp_path):
    script = write_script(tmp_path, [
        {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
        {"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu", "args": "(%add,)"},
        {"op": "replace_uses", "node": "add", "with": "relu"},
    ])
    proc = subprocess.run([sys.executable, "-m", "fxstudio", "apply", str(example_path("add_mul.py")), str(script)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"applied 3 edit(s) from {script}"
    row = next(line.split() for line in lines if line.startswith("mul "))
    assert row[:4] == ["mul", "call_function", "operator.mul", "(%relu,"]
    assert any(line.split()[:3] == ["relu", "call_function", "torch.relu"] for line in lines)
    assert lines[-1].startswith("lint: ok")
    assert proc.stderr == ""


def test_apply_refused_edit_exits_1_with_its_index_and_reason(tmp_path, capsys):
    script = write_script(tmp_path, [
        {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
        {"op": "set_arg", "node": "add", "key": 0, "value": "%mul"},
    ])
    assert main(["apply", str(example_path("add_mul.py")), str(script)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("fxstudio: Edit 2 (set_arg) of 2 was refused: Using %mul as an input of %add "
                          "would create a cycle: add → mul → add")
    assert "Traceback" not in err


def test_apply_malformed_script_exits_2(tmp_path, capsys):
    script = write_script(tmp_path, [{"op": "set_arg", "node": "mul", "key": 1, "value": "10", "why": "x"}])
    assert main(["apply", str(example_path("add_mul.py")), str(script)]) == 2
    err = capsys.readouterr().err
    assert "Edit 1: Unknown field(s) 'why' for op 'set_arg'" in err and "Traceback" not in err
    assert main(["apply", str(example_path("add_mul.py")), str(tmp_path / "missing.json")]) == 2
    assert "Cannot read the edit script" in capsys.readouterr().err


def test_apply_json_output(tmp_path, capsys):
    script = write_script(tmp_path, [{"op": "set_target", "match": "torch.relu", "target": "relu_add.my_relu"}])
    assert main(["apply", str(example_path("relu_add.py")), str(script), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    relu = next(n for n in record["nodes"] if n["name"] == "relu")
    assert relu["target"] == "relu_add.my_relu" and record["lint"]["ok"] and record["edits"] == 1


def test_apply_insert_with_reroute_exports_the_rerouted_graph(tmp_path):
    """``"reroute": true`` (issue #13 item 11) through the real command: the exported file runs the
    new node between ``add`` and its user ``mul``."""
    script = write_script(tmp_path, [{"op": "insert", "after": "add", "kind": "call_function",
                                      "target": "torch.neg", "args": "(%add,)", "reroute": True}])
    out = tmp_path / "out.py"
    proc = subprocess.run([sys.executable, "-m", "fxstudio", "apply", str(example_path("add_mul.py")), str(script),
                           "-o", str(out)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("mul "))
    assert row[:4] == ["mul", "call_function", "operator.mul", "(%neg,"]
    check = subprocess.run([sys.executable, "-c", "import sys, torch; sys.path.insert(0, sys.argv[1]);"
                            "from out import *; import out as m;"
                            "cls = next(v for v in vars(m).values() if isinstance(v, type) and "
                            "issubclass(v, torch.nn.Module) and v.__module__ == 'out');"
                            "x = torch.arange(6.0).reshape(2, 3); print(torch.equal(cls()(x), -(x + 5) * 2))",
                            str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert check.stdout.strip() == "True", check.stderr
