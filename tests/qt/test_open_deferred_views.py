"""The turn that shows a newly opened graph does no more than draw it (issue #25): the code view's
text, generated ahead by the loading worker, is set on a later turn (and is fx's code, scrolled to
the computation, with its line maps); the Run pane's largest-tensor check was measured by the worker.
The real functions run; a wrapper records on which thread each was called."""

from __future__ import annotations

import threading

from window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait  # noqa: F401

from fxstudio.core import threads as thread_policy
from fxstudio.core.code_text import IncrementalCode
from fxstudio.qt import run_pane
from fxstudio.qt.code_view import PREAMBLE_LINES
from fxstudio.testing.residual_mlp import write_residual_mlp


def _on_gui_thread_calls(monkeypatch, owner, name: str) -> list[bool]:
    """Whether each call of ``owner.name`` (the real one runs) was on the GUI thread."""
    seen: list[bool] = []
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        seen.append(threading.current_thread() is threading.main_thread())
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, wrapper)
    return seen


def test_an_opened_graph_gets_its_code_text_on_a_later_turn(qtbot, make_window, tmp_path, monkeypatch):
    generated = _on_gui_thread_calls(monkeypatch, IncrementalCode, "full")
    measured = _on_gui_thread_calls(monkeypatch, thread_policy, "largest_tensor_elements")
    monkeypatch.setattr(run_pane, "_warming", [])   # as in a fresh process: showing the pane checks the sizes
    win = make_window()
    win.docks["code"].raise_()
    code = win.code
    at_open: dict = {}
    win.open_flow.opened.connect(lambda doc: at_open.update(text=code.edited.toPlainText(), pending=code.lazy.pending))

    doc = open_and_wait(qtbot, win, str(write_residual_mlp(tmp_path, blocks=60)))
    assert at_open == {"text": "", "pending": True}   # the document's turn did not set 370 lines
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=LOAD_TIMEOUT_MS)
    assert code.edited.toPlainText() == doc.edited.graph.python_code(root_module="self").src.lstrip("\n")
    assert generated and not any(generated), "the code was generated on the GUI thread"

    # The line maps are the text's, and the view opened scrolled to the computation.
    last = [n for n in doc.edited.graph.nodes if n.op == "call_module"][-1]
    line = code.line_for(last.name)
    assert code.edited.document().findBlockByNumber(line - 1).text().startswith(f"    {last.name} = ")
    first = code.first_op_line()
    assert first and code.edited.verticalScrollBar().value() == (first - 1 if first > PREAMBLE_LINES else 0)

    # Selecting a node marks its line: the view follows the selection once the text is there.
    win.selection.set([doc.id_of(last)])
    assert code.edited.current_line() == line

    win.docks["run"].raise_()   # the pane, shown, asks whether the comparison kernel is worth loading
    qtbot.waitUntil(lambda: win.views["run"].isVisible(), timeout=5000)
    assert measured and not any(measured), "the Run pane walked the weights on the GUI thread"
    assert run_pane._largest[doc] == thread_policy.largest_tensor_elements(doc.original, doc.loaded.example_inputs)


def test_an_opened_graph_behind_a_hidden_code_dock_gets_its_text_when_shown(qtbot, make_window, tmp_path):
    win = make_window()
    win.docks["code"].hide()
    doc = open_and_wait(qtbot, win, str(write_residual_mlp(tmp_path, blocks=20)))
    qtbot.wait(200)
    assert win.code.lazy.pending and win.code.edited.toPlainText() == ""
    win.docks["code"].show()
    win.docks["code"].raise_()
    qtbot.waitUntil(lambda: not win.code.lazy.pending, timeout=LOAD_TIMEOUT_MS)
    assert win.code.edited.toPlainText() == doc.edited.graph.python_code(root_module="self").src.lstrip("\n")
