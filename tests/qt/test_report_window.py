"""File ▸ Save Report…: the open document, its edits and a fresh comparison written as one HTML report
by a worker; the window stays responsive and says where the report went."""

from __future__ import annotations

import re

from PySide6.QtWidgets import QFileDialog

from fxstudio.resources import EXAMPLES_DIR
from window_support import isolated, make_window, open_and_wait  # noqa: F401

REPORT_TIMEOUT_MS = 120_000


def _file_menu_action(win, text: str):
    (file_menu,) = [m for m in win.menuBar().actions() if m.text() == "&File"]
    return next(a for a in file_menu.menu().actions() if a.text() == text)


def test_save_report_writes_the_edited_document(qtbot, make_window, tmp_path, monkeypatch):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    asked = []

    def answer(parent, title, default, filters, selected=""):
        asked.append((title, default, filters))
        return str(tmp_path / "mine"), filters   # no suffix typed: .html is added

    monkeypatch.setattr(QFileDialog, "getSaveFileName", answer)
    action = _file_menu_action(win, "Save &Report…")
    with qtbot.waitSignal(win.report_action.saved, timeout=REPORT_TIMEOUT_MS) as saved:
        action.trigger()
        assert win.report_action.task is not None   # the work went to a worker; the click returned
    assert asked[0][0] == "Save Report" and asked[0][1].endswith("add_mul_report.html")
    out = tmp_path / "mine.html"
    assert saved.args == [out] and sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".html") == ["mine.html"]
    page = out.read_text()
    assert "Set mul.args[1] = 10" in page                       # the history's label of the edit
    assert "first divergence at node mul" in page               # the comparison ran on the example inputs
    assert re.search(r'<g class="node first" data-name="mul">', page)
    assert '<tr class="add">' in page and "mul = add * 10" in page
    assert win.statusBar().currentMessage() == f"Saved the report {out}"
    assert win.report_action.task is None
    # the next report is offered in the folder of the last one; cancelling the dialog starts nothing
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: asked.append(a[1:3]) or ("", ""))
    assert not win.report_action.ask()
    assert asked[-1] == ("Save Report", str(tmp_path / "add_mul_report.html"))
    assert win.report_action.task is None
