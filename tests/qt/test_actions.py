"""The structure actions driven through their shortcuts and dialogs on real example documents."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from tests.qt.properties_support import actions_host, list_items, replace_text, run, select


@pytest.fixture
def actions_for(qtbot):
    """Factory: a shown host window carrying the actions, on an example with one node selected."""

    def make(example: str, node: str | None):
        return actions_host(qtbot, example, node)

    return make


def test_insert_before_feeds_the_node_from_the_new_one(actions_for, qtbot):
    doc, selection, actions, _ = actions_for("add_mul.py", "mul")
    actions.insert_before.trigger()
    dialog = actions.dialog
    assert dialog.args.text() == "(%add,)"  # prefilled with mul's input
    assert dialog.reroute.isChecked()
    QTest.keyClicks(dialog.search, "sigmoid")
    assert list_items(dialog.targets)[0] == "torch.sigmoid"
    QTest.keyClick(dialog.search, Qt.Key_Return)
    assert actions.dialog is None
    assert len(doc.history) == 1  # one undoable command
    sigmoid = doc.find("sigmoid")
    assert selection.current() == doc.id_of(sigmoid)
    assert doc.find("mul").args[0] is sigmoid
    x = doc.loaded.example_inputs[0]
    assert torch.allclose(run(doc), torch.sigmoid(x + 5) * 2)
    doc.undo()
    assert doc.find("sigmoid") is None and doc.find("mul").args[0] is doc.find("add")


def test_refused_insert_keeps_the_dialog_open_with_the_reason(actions_for, qtbot):
    doc, _, actions, _ = actions_for("add_mul.py", "mul")
    code = doc.module().code
    refusals = []
    actions.edit_refused.connect(refusals.append)
    actions.insert_before.trigger()
    dialog = actions.dialog
    dialog.reroute.setChecked(False)
    replace_text(dialog.args, "(%mul,)", enter=False)
    QTest.keyClick(dialog.search, Qt.Key_Return)
    assert actions.dialog is dialog and dialog.isVisible()
    assert "defined after the insertion point" in dialog.error.text()
    assert refusals == [dialog.error.text()]
    assert doc.module().code == code and doc.history == []
    replace_text(dialog.args, "(%add", enter=False)  # does not parse: marked before any attempt
    assert dialog.args.property("fxsState") == "invalid" and dialog.error.isVisible()
    QTest.mouseClick(dialog.buttons.button(dialog.buttons.StandardButton.Cancel), Qt.LeftButton)
    assert actions.dialog is None and doc.history == []


def test_replace_all_uses_through_the_picker(actions_for, qtbot):
    doc, _, actions, _ = actions_for("sub_chain.py", "sub")
    actions.replace_uses.trigger()
    dialog = actions.dialog
    assert [i.split()[0] for i in list_items(dialog.list)] == ["x", "add"]  # never a user of sub
    assert dialog.selected_name() == "add"  # its input, preselected
    QTest.keyClicks(dialog.filter, "x")
    assert dialog.selected_name() == "x"
    QTest.mouseClick(dialog.ok_button, Qt.LeftButton)
    assert doc.find("mul").args[0] is doc.find("x")
    assert doc.history == ["Replace uses of sub with x (1 user)"]


def test_duplicate_then_erase_the_unused_copy_by_shortcut(actions_for, qtbot):
    doc, selection, actions, host = actions_for("relu_add.py", "relu")
    QTest.keyClick(host, Qt.Key_D, Qt.ControlModifier)
    copy = doc.node(selection.current())
    assert copy.name != "relu" and copy.target is torch.relu and copy.args == doc.find("relu").args
    assert not copy.users
    QTest.keyClick(host, Qt.Key_Delete)  # no users: erased at once, no question
    assert doc.find(copy.name) is None and actions.dialog is None
    assert selection.current() is None
    assert len(doc.history) == 2


def test_dead_code_elimination_reports_what_it_removed(actions_for, qtbot):
    doc, selection, actions, _ = actions_for("sub_chain.py", None)
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%add"})
    with qtbot.waitSignal(actions.status) as status:
        actions.eliminate_dead_code.trigger()
    assert status.args == ["Dead-code elimination removed 1 node(s)"]
    assert doc.find("sub") is None


def test_rename_dialog_checks_as_you_type(actions_for, qtbot):
    doc, selection, actions, host = actions_for("add_mul.py", "add")
    node_id = selection.current()
    QTest.keyClick(host, Qt.Key_F2, Qt.ShiftModifier)  # Shift+F2: plain F2 edits the first argument
    dialog = actions.dialog
    replace_text(dialog.field, "2x", enter=False)
    assert not dialog.ok_button.isEnabled() and "identifier" in dialog.error.text()
    replace_text(dialog.field, "mul", enter=False)
    assert "already exists" in dialog.error.text()
    replace_text(dialog.field, "shifted")
    assert actions.dialog is None
    assert doc.node(node_id).name == "shifted"
    assert doc.history == ["Rename add to shifted"]


def test_actions_follow_the_selection(actions_for):
    doc, selection, actions, _ = actions_for("add_mul.py", "x")
    assert not actions.erase.isEnabled() and not actions.insert_before.isEnabled()
    assert actions.insert_after.isEnabled()
    select(selection, doc, "output")
    assert not actions.insert_after.isEnabled() and not actions.rename.isEnabled()
    selection.clear()
    assert not any(a.isEnabled() for a in actions.actions() if a is not actions.eliminate_dead_code)


def test_actions_follow_document_events(actions_for):
    doc, _, actions, _ = actions_for("sub_chain.py", "sub")
    assert actions.replace_uses.isEnabled()
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%add"})  # sub loses its user
    assert not actions.replace_uses.isEnabled()
    doc.undo()
    assert actions.replace_uses.isEnabled()


def test_insert_a_new_submodule_after_a_conv(actions_for, qtbot):
    doc, selection, actions, _ = actions_for("conv_bn_relu.py", "conv1")
    actions.insert_after.trigger()
    dialog = actions.dialog
    dialog.kind.setFocus()
    QTest.keyClicks(dialog.kind, "call_mod")  # keyboard search in the op-kind box
    assert dialog.kind.currentText() == "call_module"
    assert list_items(dialog.targets)[:2] == ["conv1", "bn1"]  # existing submodules first
    QTest.keyClicks(dialog.search, "Dropout(p")
    assert dialog.target.text() == "torch.nn.Dropout(p=0.1)"
    QTest.mouseClick(dialog.ok_button, Qt.LeftButton)
    new = doc.node(selection.current())
    assert new.op == "call_module" and isinstance(doc.edited.get_submodule(new.target), torch.nn.Dropout)
    assert doc.find("bn1").args[0] is new and new.args == (doc.find("conv1"),)
    doc.undo()
    assert doc.find(new.name) is None and doc.find("bn1").args[0] is doc.find("conv1")
