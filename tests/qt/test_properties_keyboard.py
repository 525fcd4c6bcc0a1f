"""Keyboard behaviour of the Properties fields (issue #13 items 1, 2), with every key sent where a
window system sends it: ``QApplication.focusWidget()`` after a click into the field. For an
editable combo box that is the combo itself, not its inner line edit (the bug class of #13)."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QHBoxLayout, QPushButton, QWidget

from fxstudio.qt.properties import PropertiesPanel
from fxstudio.qt.properties.arg_editor import PENDING_TIP
from fxstudio.qt.selection import SelectionModel
from tests.qt.properties_support import click_into, keys, open_doc, replace_text, run, select


class Window:
    """A panel in a window with the editor's undo/redo actions (window-wide shortcuts) and a
    button to click away to."""

    def __init__(self, qtbot, example: str, node: str):
        self.doc = open_doc(example)
        self.selection = SelectionModel()
        self.window = QWidget()
        qtbot.addWidget(self.window)
        self.panel = PropertiesPanel(self.selection)
        self.panel.set_document(self.doc)
        self.elsewhere = QPushButton("elsewhere")
        layout = QHBoxLayout(self.window)
        layout.addWidget(self.panel)
        layout.addWidget(self.elsewhere)
        self.undo = QAction("Undo", self.window)
        self.undo.setShortcuts([QKeySequence("Ctrl+Z")])
        self.undo.triggered.connect(self.doc.undo)
        self.redo = QAction("Redo", self.window)
        self.redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        self.redo.triggered.connect(self.doc.redo)
        self.window.addActions([self.undo, self.redo])
        self.window.resize(500, 700)
        self.window.show()
        self.window.activateWindow()
        qtbot.waitUntil(self.window.isActiveWindow, timeout=3000)
        select(self.selection, self.doc, node)

    def field(self, key):
        """The field of argument ``key`` of the node on display (rebuilt after each edit)."""
        return self.panel.fields[key]


@pytest.fixture
def window(qtbot):
    return lambda example, node: Window(qtbot, example, node)


def test_enter_at_the_focus_widget_applies_once(window):
    w = window("add_mul.py", "mul")
    click_into(w.field(1))
    assert QApplication.focusWidget() is w.field(1)  # the combo, not its line edit, gets the keys
    replace_text(w.field(1), "10")
    assert w.doc.history == ["Set mul.args[1] = 10"]  # one edit, not two
    assert "mul = add * 10" in w.doc.module().code
    assert QApplication.focusWidget() is w.field(1)  # focus stays on the (rebuilt) field


def test_typed_text_is_marked_not_applied_until_enter(window):
    w = window("add_mul.py", "mul")
    replace_text(w.field(1), "7", enter=False)
    field = w.field(1)
    assert field.property("fxsState") == "pending" and field.toolTip() == PENDING_TIP
    assert w.doc.history == []
    keys(Qt.Key_Return)
    assert w.doc.history == ["Set mul.args[1] = 7"]
    assert w.field(1).property("fxsState") == "" and w.field(1).toolTip() != PENDING_TIP


def test_escape_reverts_to_the_current_value(window):
    w = window("add_mul.py", "mul")
    replace_text(w.field(1), "(1, ", enter=False)
    assert w.field(1).property("fxsState") == "invalid"
    keys(Qt.Key_Escape)
    assert w.field(1).currentText() == "2" and w.field(1).property("fxsState") == ""
    keys(Qt.Key_Return)  # nothing changed: nothing to apply
    assert w.doc.history == []


def test_tab_applies_and_walks_to_the_next_field(window):
    w = window("add_mul.py", "mul")
    replace_text(w.field(0), "%x", enter=False)
    keys(Qt.Key_Tab)
    assert w.doc.history == ["Set mul.args[0] = %x"]
    assert QApplication.focusWidget() is w.field(1)
    x = w.doc.loaded.example_inputs[0]
    assert torch.equal(run(w.doc), x * 2)


def test_tab_walks_the_fields_in_order(window):
    w = window("clamp.py", "clamp")
    click_into(w.panel.name_field)
    order = [w.panel.name_field, w.panel.target_field, w.field(0), w.field("min")]
    seen = [QApplication.focusWidget()]
    for _ in order[1:]:
        keys(Qt.Key_Tab)
        seen.append(QApplication.focusWidget())
    assert seen == order
    keys(Qt.Key_Tab, Qt.ShiftModifier)
    assert QApplication.focusWidget() is w.field(0)


def test_clicking_elsewhere_applies_the_typed_value(window):
    w = window("clamp.py", "clamp")
    replace_text(w.field("max"), "3.0", enter=False)
    QTest.mouseClick(w.elsewhere, Qt.LeftButton)
    assert w.doc.history == ["Set clamp.max = 3.0"]
    assert w.doc.find("clamp").kwargs["max"] == 3.0


def test_invalid_text_on_tab_is_refused_and_stays_marked(window, qtbot):
    w = window("add_mul.py", "mul")
    replace_text(w.field(1), "(1, ", enter=False)
    with qtbot.waitSignal(w.panel.edit_refused):
        keys(Qt.Key_Tab)
    assert w.doc.history == []
    assert w.field(1).property("fxsState") == "invalid" and w.field(1).currentText() == "(1, "


def test_undo_and_redo_from_a_field_are_the_windows(window):
    w = window("add_mul.py", "mul")
    replace_text(w.field(1), "10")
    assert w.doc.can_undo
    keys(Qt.Key_Z, Qt.ControlModifier)  # the focus is still in the field, which holds no typed text
    assert w.doc.history_index == 0 and w.field(1).currentText() == "2"
    assert QApplication.focusWidget() is w.field(1)  # and stays in the redrawn field
    keys(Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)
    assert w.doc.history_index == 1 and w.field(1).currentText() == "10"
    keys(Qt.Key_Z, Qt.ControlModifier)
    keys(Qt.Key_Y, Qt.ControlModifier)
    assert w.doc.history_index == 1 and "mul = add * 10" in w.doc.module().code


def test_ctrl_z_undoes_typing_while_text_is_unapplied(window):
    w = window("add_mul.py", "mul")
    replace_text(w.field(1), "10")
    click_into(w.field(1))
    keys(Qt.Key_End)
    keys("0")
    assert w.field(1).currentText() == "100" and w.field(1).property("fxsState") == "pending"
    keys(Qt.Key_Z, Qt.ControlModifier)  # the field's own text undo: the edit stays
    assert w.field(1).currentText() == "10" and w.doc.history_index == 1
    keys(Qt.Key_Z, Qt.ControlModifier)  # nothing typed is left: now the window undoes the edit
    assert w.doc.history_index == 0 and w.field(1).currentText() == "2"


def test_add_keyword_by_tab(window):
    w = window("two_linear.py", "add")
    row = w.panel.add_keyword
    click_into(row.name)
    keys("alpha")
    keys(Qt.Key_Tab, Qt.ShiftModifier)  # back out of the name: nothing to add yet
    click_into(row.value)
    keys(Qt.Key_Tab, Qt.ShiftModifier)  # an empty value: nothing added either
    assert w.doc.history == []
    click_into(row.value)
    keys("0.5")
    keys(Qt.Key_Tab)
    assert w.doc.find("add").kwargs == {"alpha": 0.5}
    assert w.panel.fields["alpha"].currentText() == "0.5"


def test_window_shortcuts_reach_the_window_from_every_field(window):
    w = window("clamp.py", "clamp")
    fired = []
    export = QAction("Export", w.window)
    export.setShortcut(QKeySequence("Ctrl+E"))
    export.triggered.connect(lambda: fired.append(QApplication.focusWidget()))
    w.window.addAction(export)
    for widget in (w.field("max"), w.panel.name_field, w.panel.target_field, w.panel.add_keyword.name):
        click_into(widget)
        keys(Qt.Key_E, Qt.ControlModifier)  # a line edit would take it as "end of line"
    assert fired == [w.field("max"), w.panel.name_field, w.panel.target_field, w.panel.add_keyword.name]
    click_into(w.field("max"))
    keys(Qt.Key_A, Qt.ControlModifier)  # the field's own keys stay the field's
    keys("3")
    assert w.field("max").currentText() == "3" and w.doc.history == []
