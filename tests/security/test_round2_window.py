"""Issue #23 through the window: the round-2 hostile files opened and replayed by the real app
process (``fxstudio FILE [--replay EDITS.json] --screenshot OUT.png``: the window, offscreen, opens
the file, replays the script edit by edit as if typed, and renders itself), under the same 6 GiB
address-space and 90 s limits as the CLI runs, so a memory bomb or a hang fails the test and not the
machine. Each is refused with one line (exit 2 for a file, exit 1 for a refused edit); the marker
file the payload would create never appears; no image is written for a refused file.

And in-process, the window's own open flow: the same capture refused with its message in the failure
dialog, nothing opened."""

from __future__ import annotations

import pytest
from test_capture_hostile import TENSOR, _graph, _node, write_capture

LOAD_TIMEOUT_MS = 60_000


def _code(hostile) -> list[int]:
    return list(hostile.payload.encode())  # spelled without dots or quotes: survives any name splitting


def _kwarg_capture(hostile, op: str):
    key = f"dim=0) if exec(bytes({_code(hostile)})) else x.softmax(dim=0)#"
    if op == "call_function":
        node = _node("call_function", "relu", "torch.nn.functional.relu", "(%x,)",
                     "{" + repr(f"inplace=False) if exec(bytes({_code(hostile)})) else None#") + ": False}")
    else:
        node = _node("call_method", "softmax", "softmax", "(%x,)", "{" + repr(key) + ": 0}")
    return write_capture(hostile.dir / f"kw_{op}.fxcap", [_graph([node])])


def _float64_capture(hostile):
    big = {"kind": "tensor", "shape": [2**16, 2**16], "dtype": "float64", "requires_grad": False}  # 32 GiB
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["inputs"] = [big]
    graph["nodes"][0]["value"] = big
    return write_capture(hostile.dir / "f64.fxcap", [graph])


def _dunder_attr_capture(hostile):
    attr = _node("get_attr", "forward", "forward", value=TENSOR)
    graph = _graph([attr, _node("call_function", "add", "torch.add", "(%x, %forward)")])
    return write_capture(hostile.dir / "attr.fxcap", [graph])


def _overflow_capture(hostile):
    huge = {"kind": "tensor", "shape": [0, 2**62, 2**62], "dtype": "float32", "requires_grad": False}
    graph = _graph([_node("call_function", "relu", "torch.relu", "(%x,)")])
    graph["inputs"] = [huge]
    graph["nodes"][0]["value"] = huge
    return write_capture(hostile.dir / "overflow.fxcap", [graph])


FILES = {"kwargs_key_call_function": lambda h: _kwarg_capture(h, "call_function"),
         "kwargs_key_call_method": lambda h: _kwarg_capture(h, "call_method"),
         "float64_input_32GiB": _float64_capture,
         "get_attr_forward": _dunder_attr_capture,
         "shape_overflow": _overflow_capture}


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_window_refuses_a_hostile_capture(hostile, name):
    path = FILES[name](hostile)
    shot = hostile.dir / "shot.png"
    proc = hostile.run(f"{path}::0", "--screenshot", shot)
    hostile.assert_clean(proc, code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: ") and path.name in lines[0], proc.stderr
    assert not shot.exists()


# Edit scripts: (edits, text the refusal names)
SCRIPTS = {
    "complex128_16GiB": ([{"op": "insert", "after": "add", "kind": "call_function", "target": "torch.zeros",
                           "args": "((32768, 32768),)", "kwargs": "{'dtype': torch.complex128}"}], "budget"),
    "repeat_chain": ([{"op": "insert", "after": "add" if k == 0 else f"r{k - 1}", "kind": "call_method",
                       "target": "repeat", "args": f"(%{'add' if k == 0 else f'r{k - 1}'}, 1, 4)", "name": f"r{k}"}
                      for k in range(18)], "budget"),  # each x4: inside a "4x the largest operand" allowance
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_window_refuses_an_edit_over_the_budget(hostile, name):
    edits, words = SCRIPTS[name]
    model = hostile.model("relu_add.py")
    shot = hostile.dir / "shot.png"
    proc = hostile.run(model, "--replay", hostile.script(edits), "--screenshot", shot)
    hostile.assert_clean(proc, code=1)
    assert words in proc.stderr.lower(), proc.stderr
    assert not shot.exists()


@pytest.fixture
def window(qtbot, hostile, monkeypatch):
    """A real main window with a private state and config folder."""
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(hostile.state))
    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(hostile.dir / "config"))
    from fxstudio.qt.main_window import MainWindow

    win = MainWindow()
    win.show()
    yield win
    if win.last_failure_dialog is not None:
        win.last_failure_dialog.close()
    win.close()
    win.deleteLater()


@pytest.mark.parametrize("name", ["kwargs_key_call_function", "float64_input_32GiB"])
def test_the_open_flow_shows_the_refusal(qtbot, window, hostile, name):
    path = FILES[name](hostile)
    window.open_path(f"{path}::0", origin="argument")
    qtbot.waitUntil(lambda: window.last_failure_dialog is not None and not window.open_flow.busy,
                    timeout=LOAD_TIMEOUT_MS)
    text = window.last_failure_dialog.label.text()
    assert path.name in text and ("identifier" in text or "budget" in text), text
    assert window.document is None
    hostile.assert_clean()
