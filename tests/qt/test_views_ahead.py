"""The GUI thread only draws (issue #25): opening a model and installing a pass lay the graph out,
generate its code and diff it in the worker that made the graph (``fxstudio/qt/views_ahead.py``).
The real functions run; a wrapper records on which thread each call ran and what it returned."""

from __future__ import annotations

import threading

import pytest
from window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait  # noqa: F401

import fxstudio.core.layout as layout_pkg
from fxstudio.core.code_text import IncrementalCode
from fxstudio.core.compare import GraphDiffer
from fxstudio.testing.residual_mlp import write_residual_mlp

INSERT_PASS = '''import torch


def insert_relu(gm):
    first = next(n for n in gm.graph.nodes if n.op == "call_module")
    with gm.graph.inserting_after(first):
        relu = gm.graph.call_function(torch.relu, (first,))
    first.replace_all_uses_with(relu)
    relu.args = (first,)
    gm.recompile()
    return gm
'''


@pytest.fixture
def calls(monkeypatch):
    """(what, on the GUI thread?, result) of each layout, code generation and full diff."""
    seen: list = []

    def spy(owner, name, what):
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            result = real(*args, **kwargs)
            seen.append((what, threading.current_thread() is threading.main_thread(), result))
            return result
        monkeypatch.setattr(owner, name, wrapper)

    spy(layout_pkg, "compute_layout", "layout")
    spy(IncrementalCode, "full", "code")
    spy(GraphDiffer, "diff", "diff")
    return seen


def test_open_and_a_pass_leave_only_drawing_to_the_gui_thread(qtbot, make_window, tmp_path, calls):
    win = make_window()
    doc = open_and_wait(qtbot, win, str(write_residual_mlp(tmp_path, blocks=100)))
    qtbot.wait(50)
    kinds = {what for what, _, _ in calls}
    assert {"layout", "code", "diff"} <= kinds, calls
    assert not [c for c in calls if c[1]], "computed on the GUI thread at open"
    shown = win.canvas.canvas_scene.layout
    assert any(result is shown for what, _, result in calls if what == "layout")

    calls.clear()
    pass_file = tmp_path / "insert_pass.py"
    pass_file.write_text(INSERT_PASS)
    win.passes.trust_files([str(pass_file)])
    assert win.passes.run(pass_file, "insert_relu") is None
    qtbot.waitUntil(lambda: not win.canvas.redraw_pending(), timeout=LOAD_TIMEOUT_MS)
    qtbot.wait(300)   # the code view's and the change list's deferred refreshes
    win.views["code"].lazy.flush()
    assert "relu" in win.canvas.canvas_scene.layout.nodes and "relu" in doc.edited.code
    assert win.canvas.canvas_scene.layout is not shown
    assert [w for w, _, _ in calls if w == "layout"] and not [c for c in calls if c[1]], calls
    diff = win.views["run"].diff_view.diff
    assert diff is not None and len(diff.added) == 1, diff
