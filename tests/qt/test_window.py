"""The main window driven like a user: open, edit, undo/redo by shortcut, history clicks, code and
table views following the selection, the unsaved-changes prompt, persisted settings."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox
from window_support import isolated, make_window, open_and_wait, user_copy  # noqa: F401 (fixtures)

from fxstudio.core import journal
from fxstudio.resources import EXAMPLES_DIR

SET_10 = {"op": "set_arg", "node": "mul", "key": 1, "value": "10"}


def _click_line(qtbot, editor, line: int) -> None:
    block = editor.document().findBlockByNumber(line - 1)
    cursor = QTextCursor(block)
    rect = editor.cursorRect(cursor)
    QTest.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(rect.x() + 30, rect.center().y()))


def test_open_edit_undo_redo_history_code_table(qtbot, make_window, tmp_path):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py")
    assert win.windowTitle().startswith("add_mul.py") and "*" not in win.windowTitle()
    assert win.status_nodes.text() == f"{len(doc.edited.graph.nodes)} nodes"
    assert "ok" in win.status_lint.text()
    assert {"properties", "code", "table", "problems", "history", "run"} <= set(win.docks)
    assert win.centralWidget() is win.canvas

    # One gesture = one command; the chrome follows the document's events.
    doc.apply_edit(SET_10)
    assert win.windowTitle().endswith("* — fxstudio")
    assert win.actions["undo"].isEnabled() and "Set" in win.actions["undo"].text()
    # The code view regenerates (deferred to the next event-loop turn).
    qtbot.waitUntil(lambda: "mul = add * 10" in win.code.edited.toPlainText(), timeout=5000)

    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    QTest.keyClick(win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert doc.history_index == 0 and "mul = add * 2" in doc.module().code
    assert "*" not in win.windowTitle()
    QTest.keyClick(win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert doc.history_index == 1
    doc.undo()
    QTest.keyClick(win, Qt.Key.Key_Y, Qt.KeyboardModifier.ControlModifier)
    assert doc.history_index == 1

    doc.apply_edit({"op": "set_arg", "node": "add", "key": 1, "value": "7"})
    # History: row 0 is the model as opened; clicking row 1 undoes the second edit.
    win.docks["history"].raise_()
    qtbot.waitUntil(lambda: win.history.list.count() == 3, timeout=5000)
    lst = win.history.list
    rect = lst.visualItemRect(lst.item(1))
    QTest.mouseClick(lst.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center())
    assert doc.history_index == 1 and doc.can_redo
    qtbot.waitUntil(lambda: lst.item(2).font().italic(), timeout=5000)  # undone: greyed, italic
    rect = lst.visualItemRect(lst.item(0))
    QTest.mouseClick(lst.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center())
    assert doc.history_index == 0

    # Clicking a line of the edited code selects the node it defines; the table follows.
    win.docks["code"].raise_()
    code = win.code
    qtbot.waitUntil(lambda: code.line_for("mul") > 0, timeout=5000)
    _click_line(qtbot, code.edited, code.line_for("mul"))
    assert win.selection.current() == doc.id_of(doc.find("mul"))
    assert code.edited.current_line() == code.line_for("mul")
    assert "selected: mul" in win.status_selected.text()
    win.docks["table"].raise_()
    table = win.table
    qtbot.waitUntil(lambda: table.model.rowCount() == len(doc.edited.graph.nodes), timeout=5000)
    rows = table.table.selectionModel().selectedRows()
    assert rows and table.proxy.data(rows[0].siblingAtColumn(2)) == "mul"
    # Filtering keeps matching rows; clicking one selects its node everywhere.
    QTest.keyClicks(table.filter, "operator.add")
    names = [table.proxy.data(table.proxy.index(r, 2)) for r in range(table.proxy.rowCount())]
    assert names == ["add"]
    row = 0
    rect = table.table.visualRect(table.proxy.index(row, 2))
    QTest.mouseClick(table.table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center())
    assert win.selection.current() == doc.id_of(doc.find("add"))
    # Clicking the "name" header sorts by name (rows start in graph order).
    table.filter.clear()
    header = table.table.horizontalHeader()
    QTest.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(header.sectionViewportPosition(2) + 10, header.height() // 2))
    names = [table.proxy.data(table.proxy.index(r, 2)) for r in range(table.proxy.rowCount())]
    assert names == sorted(names) and len(names) == len(doc.edited.graph.nodes)
    # The source tab shows the model file at the node's source line.
    src = doc.find("add").meta.get("fxs_source")
    if src:
        assert code.source.current_line() == src["line"]


def test_autosave_journal_and_unsaved_prompt(qtbot, make_window, tmp_path, monkeypatch):
    model = user_copy(tmp_path, "add_mul.py")
    win = make_window()
    doc = open_and_wait(qtbot, win, model)
    path = win.journal.path  # this window's own journal
    assert not path.exists()
    doc.apply_edit(SET_10)
    assert journal.read_journal(path).script == doc.edit_script()  # after every edit
    doc.undo()
    assert not path.exists()  # back to the saved state: nothing to recover
    doc.redo()
    assert path.exists()

    asked = []

    def answer(button):
        def fake(parent, title, text, buttons, default):
            asked.append(text)
            return button
        return fake

    # Cancel keeps the window open and the edits.
    monkeypatch.setattr(QMessageBox, "warning", answer(QMessageBox.StandardButton.Cancel))
    assert not win.close()
    assert win.isVisible() and asked and "not saved" in asked[0]
    # Opening another model asks too; Cancel keeps this one.
    assert not win.open_path(EXAMPLES_DIR / "clamp.py", origin="example")
    assert win.document is doc
    # Save asks where (patched dialog), writes the script atomically and clears the journal.
    out = tmp_path / "edits.json"
    from PySide6.QtWidgets import QFileDialog
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    monkeypatch.setattr(QMessageBox, "warning", answer(QMessageBox.StandardButton.Save))
    assert win.close()
    from fxstudio.core.edits.script import load_script
    assert load_script(out)["edits"] == [SET_10]
    assert not path.exists() and not doc.dirty


def test_discard_on_open_another_clears_journal(qtbot, make_window, tmp_path, monkeypatch):
    model = user_copy(tmp_path, "add_mul.py")
    win = make_window()
    doc = open_and_wait(qtbot, win, model)
    doc.apply_edit(SET_10)
    assert [e.path for e in journal.journals_of(model)] == [win.journal.path]
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: QMessageBox.StandardButton.Discard)
    other = open_and_wait(qtbot, win, EXAMPLES_DIR / "sub_chain.py", origin="example")
    assert other is not doc and win.windowTitle().startswith("sub_chain.py")
    assert journal.journals_of(model) == []


def test_settings_persist_geometry_docks_recent(qtbot, make_window, tmp_path):
    model = user_copy(tmp_path, "clamp.py")
    win = make_window()
    open_and_wait(qtbot, win, model)
    win.resize(760, 540)  # inside the offscreen screen (800x600): restoreGeometry clamps to it
    assert win.height() == 540  # (the width is held at the window's minimum, which varies)
    win.docks["history"].hide()
    win.close()
    win2 = make_window()
    assert win2.height() == 540
    assert win2.docks["history"].isHidden() and not win2.docks["code"].isHidden()
    win2.populate_recent()
    specs = [a.data() for a in win2.menus["recent"].actions() if a.data()]
    assert specs == [str(model)]
    # Recent files are real menu entries: triggering one opens the model.
    recent = next(a for a in win2.menus["recent"].actions() if a.data())
    recent.trigger()
    qtbot.waitUntil(lambda: win2.document is not None, timeout=60_000)
    assert win2.document.loaded.path.name == "clamp.py"
    win2.reset_layout()
    assert not win2.docks["history"].isHidden()


def test_delete_key_erases_and_refusals_reach_problems(qtbot, make_window):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "sub_chain.py", origin="example")
    # A replayed edit that the core refuses (sub still has users) is reported, nothing changes.
    code_before = doc.module().code
    assert not win.apply_edits([{"op": "erase", "node": "sub"}], source="test")
    assert doc.module().code == code_before
    errors = [m for m in win.problems.messages() if m[0] == "error"]
    assert errors and errors[0][1] == "edit" and "sub" in errors[0][2]
    assert "Refused" in win.statusBar().currentMessage()
    # The refusal names its node: clicking the row selects it.
    win.docks["problems"].raise_()
    tree = win.problems.tree
    row = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount()) if tree.topLevelItem(i).text(1) == "edit")
    assert row.text(3) == "sub"
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     tree.visualItemRect(row).center())
    assert win.selection.current() == doc.id_of(doc.find("sub"))
    # Rewire mul to add: sub loses its users; Delete on the selected sub erases it, Ctrl+Z brings it back.
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%add"})
    win.selection.set([doc.id_of(doc.find("sub"))])
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    win.canvas.setFocus()
    QTest.keyClick(win, Qt.Key.Key_Delete)
    assert doc.find("sub") is None and doc.history_index == 2
    QTest.keyClick(win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert doc.find("sub") is not None
    # Ctrl+F opens the canvas's find bar; typing finds nodes by name.
    QTest.keyClick(win, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert win.canvas.search_bar.isVisible()
    assert win.canvas.search("mul") >= 1
