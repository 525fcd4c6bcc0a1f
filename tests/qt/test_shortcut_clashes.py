"""F2 belongs to the canvas (docs/notes/canvas.md: focus the first argument field); Rename is Shift+F2, and no
window shortcut shares a key with the canvas's own keys, as Help ▸ Keyboard Shortcuts lists them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

from fxstudio.qt.actions.rename_dialog import RenameDialog
from fxstudio.qt.canvas.view import CANVAS_KEYS
from fxstudio.qt.properties.arg_editor import ValueField
from fxstudio.qt.shortcuts_dialog import SHARED_WITH_CANVAS, shortcut_rows
from fxstudio.resources import EXAMPLES_DIR

def _open(qtbot, make_window):
    win = make_window()
    win.resize(1400, 900)
    open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py")
    win.canvas.flush()
    return win


def _click_card(win, name: str) -> None:
    QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     win.canvas.viewport_pos_of(name))


def test_no_window_shortcut_takes_a_canvas_key(qtbot, make_window):
    win = _open(qtbot, make_window)
    canvas_keys = {k.strip() for keys, _ in CANVAS_KEYS for k in keys.split(" / ")}
    taken = {}
    for action in win.findChildren(QAction):
        for sc in action.shortcuts():
            text = sc.toString(QKeySequence.SequenceFormat.NativeText)
            if text in canvas_keys and text not in SHARED_WITH_CANVAS:
                taken[text] = action.text()
    assert taken == {}
    rows = shortcut_rows(win)
    assert [r for r in rows if r[2] not in ("window", "canvas")] == []  # no row notes a clash
    assert ("Shift+F2", "Rename", "window") in rows
    assert not any("F2" in keys.split(" / ") and where == "window" for keys, _, where in rows)


def test_f2_on_a_card_edits_its_first_argument_and_shift_f2_renames(qtbot, make_window):
    win = _open(qtbot, make_window)
    _click_card(win, "mul")
    assert QApplication.focusWidget() is win.canvas
    QTest.keyClick(win.canvas, Qt.Key.Key_F2)
    focused = QApplication.focusWidget()
    field = focused if isinstance(focused, ValueField) else focused.parent()
    assert field is win.properties.fields[0]
    assert win.structure.dialog is None  # F2 did not also open Rename

    _click_card(win, "mul")
    QTest.keyClick(win.canvas, Qt.Key.Key_F2, Qt.KeyboardModifier.ShiftModifier)
    dialog = win.structure.dialog
    assert isinstance(dialog, RenameDialog) and dialog.isVisible()
    dialog.reject()
    assert win.document.history == []
