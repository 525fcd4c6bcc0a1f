"""The classic torch.fx editing walk-throughs, done only through the Properties panel and the
structure actions' dialogs (keyboard and mouse), each checked by running the edited module."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QHBoxLayout, QWidget

from fxstudio.qt.actions import StructureActions
from fxstudio.qt.properties import PropertiesPanel
from fxstudio.qt.selection import SelectionModel
from tests.qt.properties_support import list_items, open_doc, pick_from_dropdown, replace_text, run, select


class Editor:
    """The panel and the actions on one selection, in one active window."""

    def __init__(self, qtbot, example: str):
        self.doc = open_doc(example)
        self.x = self.doc.loaded.example_inputs[0]
        self.selection = SelectionModel()
        self.window = QWidget()
        qtbot.addWidget(self.window)
        self.panel = PropertiesPanel(self.selection)
        self.panel.set_document(self.doc)
        self.actions = StructureActions(lambda: self.doc, self.selection, self.window)
        self.window.addActions(self.actions.actions())
        self.panel.set_actions([self.actions.insert_after, self.actions.erase, self.actions.duplicate])
        QHBoxLayout(self.window).addWidget(self.panel)
        self.window.resize(400, 700)
        self.window.show()
        self.window.activateWindow()
        qtbot.waitUntil(self.window.isActiveWindow, timeout=3000)

    def select(self, name: str) -> None:
        """Select a node as a click on the canvas would."""
        select(self.selection, self.doc, name)


@pytest.fixture
def editor(qtbot):
    return lambda example: Editor(qtbot, example)


def test_change_a_constant(editor):
    ed = editor("add_mul.py")
    ed.select("mul")
    replace_text(ed.panel.fields[1], "10")
    assert torch.equal(run(ed.doc), (ed.x + 5) * 10)


def test_rewire(editor, qtbot):
    ed = editor("sub_chain.py")
    ed.select("mul")
    pick_from_dropdown(qtbot, ed.panel.fields[0], "%add")
    assert torch.equal(run(ed.doc), (ed.x + 10) * 2)


def test_edit_a_keyword(editor):
    ed = editor("clamp.py")
    ed.select("clamp")
    replace_text(ed.panel.fields["max"], "10.0")
    assert torch.equal(run(ed.doc), torch.clamp(ed.x, min=-5.0, max=10.0))
    assert ed.doc.edit_script()["edits"] == [{"op": "set_arg", "node": "clamp", "key": "max", "value": "10.0"}]


def test_swap_a_function(editor):
    ed = editor("relu_add.py")
    ed.select("relu")
    replace_text(ed.panel.target_field, "relu_add.my_relu")
    assert torch.allclose(run(ed.doc), ed.doc.loaded.user_module.my_relu(ed.x) + 1)


def test_insert_relu_in_two_clicks(editor, qtbot):
    ed = editor("add_mul.py")
    ed.select("add")
    ed.actions.insert_after.trigger()  # click 1: Insert after…
    dialog = ed.actions.dialog
    qtbot.waitExposed(dialog)
    targets = dialog.targets
    item = targets.findItems("torch.relu", Qt.MatchExactly)[0]
    center = targets.visualItemRect(item).center()
    # click 2, a double click: the press/release that opens it, then the double-click event
    QTest.mouseClick(targets.viewport(), Qt.LeftButton, Qt.NoModifier, center)
    QTest.mouseDClick(targets.viewport(), Qt.LeftButton, Qt.NoModifier, center)
    assert ed.actions.dialog is None
    assert torch.equal(run(ed.doc), torch.relu(ed.x + 5) * 2)
    assert len(ed.doc.history) == 1
    assert ed.panel.name_field.text() == "relu"  # the new node is selected and shown


def test_rebuild_mul_as_add(editor):
    ed = editor("add_mul.py")
    ed.select("mul")
    ed.actions.insert_after.trigger()
    dialog = ed.actions.dialog
    QTest.keyClicks(dialog.search, "operator.add")
    assert list_items(dialog.targets)[0] == "operator.add"
    replace_text(dialog.args, "(%add, 2)", enter=False)
    dialog.reroute.setChecked(False)
    QTest.mouseClick(dialog.ok_button, Qt.LeftButton)
    new = ed.doc.node(ed.selection.current()).name
    ed.select("mul")
    ed.actions.replace_uses.trigger()
    picker = ed.actions.dialog
    QTest.keyClicks(picker.filter, new)
    QTest.keyClick(picker.filter, Qt.Key_Return)
    ed.window.activateWindow()  # the dialog closed: a window manager activates the editor again
    QTest.qWaitForWindowActive(ed.window, 2000)
    QTest.keyClick(ed.window, Qt.Key_Delete)  # mul has no users left: erased without a question
    assert ed.doc.find("mul") is None
    assert torch.equal(run(ed.doc), (ed.x + 5) + 2)
    assert [e["op"] for e in ed.doc.edit_script()["edits"]] == ["insert", "replace_uses", "erase"]


def test_erase_batchnorm_with_replacement(editor):
    ed = editor("conv_bn_relu.py")
    ed.select("bn1")
    erase = next(b for b in ed.panel.action_buttons if b.defaultAction() is ed.actions.erase)
    QTest.mouseClick(erase, Qt.LeftButton)  # the Erase button under the node's name
    picker = ed.actions.dialog
    assert picker.selected_name() == "conv1"  # its input is offered first
    QTest.mouseClick(picker.ok_button, Qt.LeftButton)
    assert ed.doc.find("bn1") is None
    assert ed.panel.name_field.text() == "conv1"  # the replacement is selected and shown
    m = ed.doc.loaded.module
    with torch.no_grad():
        expected = m.relu2(m.bn2(m.conv2(m.relu1(m.conv1(ed.x)))))
        assert torch.allclose(run(ed.doc), expected)
