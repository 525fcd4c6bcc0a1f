"""``fxstudio.apply`` against ``fxstudio apply`` run as a real subprocess on the same model file and
edit script, and the refusals it raises (the CLI's exit statuses, as exceptions)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
import torch

import fxstudio
from fxstudio.core.errors import EditRefused, FxStudioError, LoadError, ScriptError
from tests.api.api_models import MODEL_FILE, Net, example_input, plain_fx_set_arg, state_snapshot

EDITS = [
    {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
    {"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.neg", "args": "(%relu,)",
     "reroute": True},
    {"op": "set_target", "node": "add", "target": "operator.sub"},
]


def _files(tmp_path, edits=EDITS):
    model = tmp_path / "net.py"
    model.write_text(MODEL_FILE, encoding="utf-8")
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": edits}), encoding="utf-8")
    return model, script


def _import(path):
    spec = importlib.util.spec_from_file_location(f"api_test_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fxstudio", *map(str, args)], capture_output=True, text=True,
                          timeout=240, cwd=cwd)


def test_apply_equals_the_cli_on_the_same_file_and_script(tmp_path):
    model_file, script = _files(tmp_path)
    user = _import(model_file)
    model, (x,) = user.Net(), user.example_inputs()
    weights = state_snapshot(model)
    edited = fxstudio.apply(model, script, x)

    proc = _cli("apply", model_file, script, "--json")
    assert proc.returncode == 0, proc.stderr
    cli_nodes = [(n["name"], n["op"], n["args"]) for n in json.loads(proc.stdout)["nodes"]]
    from fxstudio.core.inspect_view import inspect_record
    from fxstudio.core.loading import load_in_memory

    ours = [(n["name"], n["op"], n["args"]) for n in inspect_record(load_in_memory(edited, (x,)))["nodes"]]
    assert ours == cli_nodes
    assert ("neg", "call_function", "(%relu,)") in ours

    out = tmp_path / "exported.py"
    proc = _cli("apply", model_file, script, "-o", out)
    assert proc.returncode == 0, proc.stderr
    check = subprocess.run(
        [sys.executable, "-c",
         "import sys, torch; sys.path.insert(0, sys.argv[1]); import exported as m;"
         "x = torch.arange(8.0).reshape(2, 4) / 4 - 1; torch.save(m.get_model()(x).detach(), sys.argv[2])",
         str(tmp_path), str(tmp_path / "cli_out.pt")], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    cli_out = torch.load(tmp_path / "cli_out.pt")
    assert torch.equal(edited(x), cli_out)
    assert torch.equal(cli_out, -torch.relu(model.lin(x)) * 10 - 1)
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())


def test_a_script_dict_a_path_and_a_graph_module_give_the_same_module(tmp_path):
    _, script = _files(tmp_path, EDITS[:1])
    model, x = Net(), example_input()
    by_path = fxstudio.apply(model, script, x)
    by_dict = fxstudio.apply(model, json.loads(script.read_text(encoding="utf-8")), x)
    by_gm = fxstudio.apply(torch.fx.symbolic_trace(model), str(script), x)
    expected = plain_fx_set_arg(model, "mul", 1, 10)
    for gm in (by_path, by_dict, by_gm):
        assert isinstance(gm, torch.fx.GraphModule) and torch.equal(gm(x), expected(x))
    exported = fxstudio.apply(model, script, x, tracer="export")
    assert torch.allclose(exported(x), expected(x))


def test_a_refused_edit_raises_edit_refused_as_the_cli_exits_1(tmp_path):
    model_file, script = _files(tmp_path, [EDITS[0], {"op": "set_arg", "node": "nope", "key": 0, "value": "1"}])
    with pytest.raises(EditRefused) as info:
        fxstudio.apply(Net(), script, example_input())
    assert info.value.index == 1 and "Edit 2 (set_arg) of 2 was refused" in str(info.value)
    proc = _cli("apply", model_file, script)
    assert proc.returncode == 1 and "Edit 2 (set_arg) of 2 was refused" in proc.stderr


def test_a_malformed_script_raises_script_error_as_the_cli_exits_2(tmp_path):
    model_file, script = _files(tmp_path, [{"op": "set_arg", "node": "mul", "key": 1}])
    with pytest.raises(ScriptError) as info:
        fxstudio.apply(Net(), script, example_input())
    proc = _cli("apply", model_file, script)
    assert proc.returncode == 2 and str(info.value).splitlines()[0] in proc.stderr
    with pytest.raises(ScriptError):
        fxstudio.apply(Net(), {"format": "fxstudio.edits/0", "edits": []}, example_input())
    with pytest.raises(ScriptError):
        fxstudio.apply(Net(), 42, example_input())


def test_a_pass_file_needs_trust_passes(tmp_path):
    passes = tmp_path / "my_passes.py"
    passes.write_text("def times_four(gm):\n    for node in gm.graph.nodes:\n        if node.name == 'mul':\n"
                      "            node.args = (node.args[0], 4)\n    gm.recompile()\n    return gm\n", encoding="utf-8")
    _, script = _files(tmp_path, [{"op": "run_pass", "file": "my_passes.py", "name": "times_four"}])
    with pytest.raises(FxStudioError, match="trust_passes=True") as info:
        fxstudio.apply(Net(), script, example_input())
    assert "--trust-passes" not in str(info.value)
    gm = fxstudio.apply(Net(), script, example_input(), trust_passes=True)
    assert torch.equal(gm(example_input()), plain_fx_set_arg(Net(), "mul", 1, 4)(example_input()))


def test_export_needs_inputs_and_a_non_module_is_refused():
    with pytest.raises(LoadError, match="example inputs"):
        fxstudio.apply(Net(), {"format": "fxstudio.edits/1", "edits": []}, tracer="export")
    with pytest.raises(LoadError, match="unknown tracer"):
        fxstudio.apply(Net(), {"format": "fxstudio.edits/1", "edits": []}, tracer="jit")
    with pytest.raises(LoadError, match="not int"):
        fxstudio.apply(3, {"format": "fxstudio.edits/1", "edits": []})


def test_import_fxstudio_imports_neither_torch_nor_qt():
    code = ("import sys, fxstudio; assert 'torch' not in sys.modules and 'PySide6' not in sys.modules;"
            "fxstudio.edit; fxstudio.apply; fxstudio.show;"
            "assert 'torch' not in sys.modules and 'PySide6' not in sys.modules; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr
