"""Hostile ``.fxcap`` files: a capture is data, so opening one never runs code from it. Targets
outside the edit-script allow-list, code in argument text, path-like names, zip members that
climb out of their folder, a pickle where tensors belong, a bad version and a truncated zip are
each refused with one line (exit 2 on the CLI), and the marker file the payload would write
never appears."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model

FXSTUDIO = [sys.executable, "-m", "fxstudio"]


def _node(op, name, target, args="()", kwargs="{}", value=None):
    node = {"op": op, "name": name, "target": target, "args": args, "kwargs": kwargs}
    if value is not None:
        node["value"] = value
    return node


TENSOR = {"kind": "tensor", "shape": [2], "dtype": "float32", "requires_grad": False}


def _graph(middle: list[dict]) -> dict:
    return {"index": 0, "name": "graph_0", "compile_id": "0/0", "inputs": [TENSOR], "guards": "", "saved_inputs": False,
            "break": {"reason": "return_value", "graph_break": False, "frames": [], "user_frame": None},
            "nodes": [_node("placeholder", "x", "L_x_", value=TENSOR), *middle,
                      _node("output", "output", "output", f"((%{middle[-1]['name'] if middle else 'x'},),)")]}


def write_capture(path: Path, graphs: list[dict], *, version=1, extra: dict[str, bytes] | None = None,
                  fmt="fxstudio-capture") -> Path:
    """A capture file written by hand (not by the capture backend), as an attacker would."""
    manifest = {"format": fmt, "version": version, "torch": "2.13", "backend": "eager", "notes": [], "graphs": graphs}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("capture.json", json.dumps(manifest))
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return path


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists(), "a payload in the capture file ran"


def _refused(spec, match: str) -> str:
    with pytest.raises(LoadError, match=match) as info:
        load_model(spec)
    message = str(info.value)
    assert "\n" not in message and len(message) < 600
    return message


def test_a_benign_hand_written_capture_opens(tmp_path):
    path = write_capture(tmp_path / "ok.fxcap", [_graph([_node("call_function", "relu", "torch.relu", "(%x,)")])])
    loaded = load_model(f"{path}::0")
    assert [n.target for n in loaded.graph_module.graph.nodes][1].__name__ == "relu"


@pytest.mark.parametrize("op,target,args", [
    ("call_function", "os.system", "('touch {marker}',)"),
    ("call_function", "posix.system", "('touch {marker}',)"),
    ("call_function", "subprocess.call", "(['touch', '{marker}'],)"),
    ("call_function", "builtins.exec", "(\"open('{marker}', 'w')\",)"),
    ("call_function", "eval", "(\"open('{marker}', 'w')\",)"),
    ("call_function", "builtins.__import__", "('os',)"),
    ("call_function", "torch.save", "(%x, '{marker}')"),
    ("call_function", "torch.load", "('{marker}',)"),
    ("call_function", "torch.ops.aten.from_file.default", "('{marker}',)"),
    ("call_function", "getattr", "(%x, '__class__')"),
    ("call_function", "fxstudio.core.fileio.atomic_write_text", "('{marker}', 'x')"),
    ("call_method", "__reduce_ex__", "(%x, 2)"),
    ("call_method", "tofile", "(%x, '{marker}')"),
])
def test_targets_outside_the_allow_list_are_refused(tmp_path, marker, op, target, args):
    node = _node(op, "evil", target, args.format(marker=marker))
    path = write_capture(tmp_path / "evil.fxcap", [_graph([node])])
    message = _refused(f"{path}::0", "refused|not allowed|not a|no method|private")
    assert "evil.fxcap::0" in message


def test_code_in_argument_text_is_refused(tmp_path, marker):
    text = f"(__import__('os').system('touch {marker}'),)"
    path = write_capture(tmp_path / "args.fxcap", [_graph([_node("call_function", "relu", "torch.relu", text)])])
    _refused(f"{path}::0", "args.fxcap::0")


@pytest.mark.parametrize("name", ["../../etc/passwd", "a.b", "x; import os", "", "class", "a" * 300])
def test_path_like_or_odd_node_names_are_refused(tmp_path, name):
    path = write_capture(tmp_path / "names.fxcap", [_graph([_node("call_function", name, "torch.relu", "(%x,)")])])
    _refused(f"{path}::0", "identifier")


def test_a_placeholder_target_that_is_a_path_is_refused(tmp_path):
    graph = _graph([])
    graph["nodes"][0]["target"] = "../x"
    path = write_capture(tmp_path / "ph.fxcap", [graph])
    _refused(f"{path}::0", "identifier")


def test_a_call_module_node_is_refused_clearly(tmp_path):
    path = write_capture(tmp_path / "mod.fxcap", [_graph([_node("call_module", "lin", "lin", "(%x,)")])])
    _refused(f"{path}::0", "holds no module objects")


def test_zip_members_that_climb_out_are_never_written(tmp_path):
    folder = tmp_path / "inner"
    folder.mkdir()
    extra = {"../escape.txt": b"x", "/tmp/fxstudio_capture_abs.txt": b"x", "inputs/../../up.txt": b"x"}
    path = write_capture(folder / "climb.fxcap", [_graph([_node("call_function", "relu", "torch.relu", "(%x,)")])],
                         extra=extra)
    load_model(f"{path}::0")  # the stray members are ignored: only capture.json and inputs/graph_<k>.pt are read
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "up.txt").exists()
    assert not Path("/tmp/fxstudio_capture_abs.txt").exists()


class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_in_place_of_saved_tensors_is_refused(tmp_path, marker):
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["saved_inputs"] = True
    raw = pickle.dumps({"0": _Payload(marker)})
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as inner:  # also inside torch's own zip layout
        inner.writestr("archive/data.pkl", raw)
    for i, data in enumerate((raw, buffer.getvalue())):
        path = write_capture(tmp_path / f"pickle{i}.fxcap", [graph], extra={"inputs/graph_0.pt": data})
        _refused(f"{path}::0", "not a tensor file fxstudio can read safely")


def test_bad_version_bad_format_and_truncated_files_are_refused(tmp_path):
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    _refused(write_capture(tmp_path / "v2.fxcap", [graph], version=2), "version 2 is not supported")
    _refused(write_capture(tmp_path / "fmt.fxcap", [graph], fmt="other"), "not a capture file")
    good = write_capture(tmp_path / "good.fxcap", [graph]).read_bytes()
    (tmp_path / "cut.fxcap").write_bytes(good[: len(good) // 2])
    _refused(tmp_path / "cut.fxcap", "not a readable zip")
    (tmp_path / "text.fxcap").write_text("print('hi')")
    _refused(tmp_path / "text.fxcap", "not a readable zip")
    with zipfile.ZipFile(tmp_path / "nojson.fxcap", "w") as zf:
        zf.writestr("capture.json", "{not json")
    _refused(tmp_path / "nojson.fxcap", "not valid JSON")


def test_the_cli_refuses_with_one_line_and_exit_2(tmp_path, marker):
    node = _node("call_function", "evil", "os.system", f"('touch {marker}',)")
    path = write_capture(tmp_path / "evil.fxcap", [_graph([node])])
    for argv in (["inspect", f"{path}::0"], ["export", f"{path}::0", "-o", str(tmp_path / "out.py")]):
        proc = subprocess.run([*FXSTUDIO, *argv], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fxstudio: ") and "os.system" in lines[0]
    assert not (tmp_path / "out.py").exists()


def test_listing_a_capture_of_odd_field_types_never_shows_a_traceback(tmp_path):
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["inputs"] = [{"kind": "tensor", "shape": 7, "dtype": ["x"]}, "text", {"kind": "int", "value": 10**30}]
    graph["break"] = {"reason": ["not", "text"], "graph_break": "yes", "frames": "abc", "user_frame": {"file": 3}}
    path = write_capture(tmp_path / "odd.fxcap", [graph, {"nodes": []}])
    proc = subprocess.run([*FXSTUDIO, "inspect", str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "[1] graph_1: 0 op(s)" in proc.stdout
    proc = subprocess.run([*FXSTUDIO, "inspect", f"{path}::1"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no output node" in proc.stderr
