"""The Properties panel driven as a user does: select a node, read it, type into fields, press
Enter, pick from drop-downs, click links. Every edit goes through a real Document."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from fxstudio.core.argsyntax import parse_value
from fxstudio.core.errors import EditRefused
from fxstudio.qt.properties import PropertiesPanel
from fxstudio.qt.selection import SelectionModel
from tests.qt.properties_support import (
    click_into, keys, open_doc, pick_from_dropdown, replace_text, run, select,
)


@pytest.fixture
def panel_for(qtbot):
    """Factory: a shown panel on an example document with one node selected."""

    def make(example: str, node: str):
        doc = open_doc(example)
        selection = SelectionModel()
        panel = PropertiesPanel(selection)
        qtbot.addWidget(panel)
        panel.resize(380, 720)
        panel.set_document(doc)
        panel.show()
        panel.activateWindow()  # keys reach popups (completion, drop-downs) of the active window
        qtbot.waitUntil(panel.isActiveWindow, timeout=3000)
        select(selection, doc, node)
        return doc, selection, panel

    return make


def test_selected_node_shows_args_kwargs_defaults_and_shape(panel_for):
    doc, _, panel = panel_for("two_linear.py", "add")
    assert panel.name_field.text() == "add"
    assert panel.target_field.text() == "torch.add"
    assert panel.fields[0].currentText() == "%linear1"
    assert panel.fields[1].currentText() == "%linear2"
    alpha = panel.fields[("default", "alpha")]
    assert alpha.currentText() == "1" and alpha.property("fxsState") == "default"
    texts = [w.text() for w in panel.scroll.widget().findChildren(type(panel.name_error))]
    assert "2×3 float32" in texts
    assert "input" in texts and "other" in texts  # parameter names label the positional rows

    doc, selection, panel = panel_for("clamp.py", "clamp")
    assert panel.fields["min"].currentText() == "-5.0"
    assert panel.fields["max"].currentText() == "5.0"
    assert set(panel.remove_buttons) == {"min", "max"}


def test_call_module_shows_submodule_repr_and_source(panel_for):
    _, _, panel = panel_for("conv_bn_relu.py", "conv1")
    labels = [w.text() for w in panel.scroll.widget().findChildren(type(panel.name_error))]
    assert any(t.startswith("Conv2d(3, 8, kernel_size=(3, 3)") for t in labels)
    assert any("self.conv1(x)" in t for t in labels)
    assert any(t.startswith("conv_bn_relu.py, line") for t in labels)


def test_typing_a_constant_and_enter_applies_one_set_arg(panel_for):
    doc, _, panel = panel_for("add_mul.py", "mul")
    replace_text(panel.fields[1], "10")
    assert doc.history == ["Set mul.args[1] = 10"]
    assert "mul = add * 10" in doc.module().code
    x = doc.loaded.example_inputs[0]
    assert torch.equal(run(doc), (x + 5) * 10)
    assert panel.fields[1].currentText() == "10"  # redrawn from the document event
    assert panel.focusWidget() in (panel.fields[1], panel.fields[1].lineEdit())  # focus stays there


def test_invalid_entry_shows_the_parsers_message_and_changes_nothing(panel_for, qtbot):
    doc, _, panel = panel_for("add_mul.py", "mul")
    code = doc.module().code
    field = panel.fields[1]
    replace_text(field, "(1, ", enter=False)
    with pytest.raises(EditRefused) as expected:
        parse_value("(1, ", doc.find)
    assert field.message == str(expected.value)
    assert field.property("fxsState") == "invalid"
    with qtbot.waitSignal(panel.edit_refused) as refused:
        keys(Qt.Key_Return)
    assert refused.args == [str(expected.value)]
    assert doc.history == [] and doc.module().code == code
    keys(Qt.Key_Escape)
    assert field.currentText() == "2" and field.message is None


def test_document_refusal_marks_the_field(panel_for, qtbot):
    doc, _, panel = panel_for("sub_chain.py", "add")
    code = doc.module().code
    with qtbot.waitSignal(panel.edit_refused) as refused:
        replace_text(panel.fields[0], "%mul")
    assert "cycle" in refused.args[0]
    assert panel.fields[0].message == refused.args[0]
    assert doc.history == [] and doc.module().code == code


def test_rewire_through_the_node_dropdown(panel_for, qtbot):
    doc, _, panel = panel_for("sub_chain.py", "mul")
    field = panel.fields[0]
    pick_from_dropdown(qtbot, field, "%add")
    assert doc.history == ["Set mul.args[0] = %add"]
    assert doc.find("mul").args[0] is doc.find("add")
    x = doc.loaded.example_inputs[0]
    assert torch.equal(run(doc), (x + 10) * 2)


def test_dropdown_offers_only_nodes_that_may_legally_feed(panel_for):
    doc, _, panel = panel_for("sub_chain.py", "sub")
    field = panel.fields[0]
    field.populate()
    offered = [field.itemText(i) for i in range(field.count())]
    assert offered == ["%x", "%add"]  # not itself, not its users (mul), not the output
    for name in ("x", "add"):
        assert doc.would_cycle("sub", name) is None
    assert doc.would_cycle("sub", "mul") is not None


def test_add_keyword_alpha_to_torch_add(panel_for):
    doc, _, panel = panel_for("two_linear.py", "add")
    row = panel.add_keyword
    click_into(row.name)
    keys("alpha")
    keys(Qt.Key_Return)
    assert panel.focusWidget() in (row.value, row.value.lineEdit())
    keys("0.5")
    keys(Qt.Key_Return)
    assert doc.find("add").kwargs == {"alpha": 0.5}
    m, x = doc.loaded.module, doc.loaded.example_inputs[0]
    assert torch.allclose(run(doc), m.linear1(x) + 0.5 * m.linear2(x))
    assert panel.fields["alpha"].currentText() == "0.5"


def test_make_a_default_explicit_then_remove_it(panel_for):
    doc, _, panel = panel_for("two_linear.py", "add")
    click_into(panel.fields[("default", "alpha")])
    keys(Qt.Key_Return)  # same value, now explicit
    assert doc.find("add").kwargs == {"alpha": 1}
    assert ("default", "alpha") not in panel.fields
    replace_text(panel.fields["alpha"], "2")
    assert doc.find("add").kwargs == {"alpha": 2}
    QTest.mouseClick(panel.remove_buttons["alpha"], Qt.LeftButton)
    assert doc.find("add").kwargs == {}
    assert doc.history[-1] == "Delete add.alpha"
    assert panel.fields[("default", "alpha")].currentText() == "1"


def test_navigate_by_clicking_a_user_link(panel_for, qtbot):
    doc, selection, panel = panel_for("two_linear.py", "linear1")
    link = panel.links["users:add"]
    with qtbot.waitSignal(panel.navigate) as nav:
        QTest.mouseClick(link.button, Qt.LeftButton)
    assert nav.args == [doc.id_of(doc.find("add"))]
    assert selection.current() == doc.id_of(doc.find("add"))
    assert panel.name_field.text() == "add"
    QTest.mouseClick(panel.links["inputs:linear2"].button, Qt.LeftButton)
    assert panel.name_field.text() == "linear2"


def test_swap_the_target_by_typing(panel_for):
    doc, _, panel = panel_for("relu_add.py", "relu")
    field = panel.target_field
    replace_text(field, "my_re", enter=False)
    completer = field.completer()
    assert completer.completionCount() == 1 and completer.currentCompletion() == "relu_add.my_relu"
    assert "torch.sigmoid" in completer.model().stringList()
    popup = completer.popup()
    assert popup.isVisible()
    QTest.keyClick(popup, Qt.Key_Down)
    QTest.keyClick(popup, Qt.Key_Return)  # takes the completion and applies it
    assert doc.history == ["Set relu target torch.relu → relu_add.my_relu"]
    assert doc.find("relu").target is doc.loaded.user_module.my_relu
    x = doc.loaded.example_inputs[0]
    assert torch.allclose(run(doc), doc.loaded.user_module.my_relu(x) + 1)


def test_unknown_target_is_marked_and_nothing_changes(panel_for):
    doc, _, panel = panel_for("relu_add.py", "relu")
    replace_text(panel.target_field, "torch.no_such_fn")
    assert panel.target_field.message
    assert doc.history == []


def test_rename_from_the_header(panel_for):
    doc, selection, panel = panel_for("add_mul.py", "add")
    node_id = selection.current()
    replace_text(panel.name_field, "shifted")
    assert doc.node(node_id).name == "shifted"
    assert panel.name_field.text() == "shifted"
    assert "shifted = x + 5" in doc.module().code


def test_panel_follows_undo_and_erased_nodes(panel_for):
    doc, selection, panel = panel_for("add_mul.py", "mul")
    replace_text(panel.fields[1], "3")
    doc.undo()
    assert panel.fields[1].currentText() == "2"
    selection.set([10_000])
    assert panel.fields == {} and panel.name_field is None


def test_hidden_panel_catches_up_when_shown(panel_for):
    doc, selection, panel = panel_for("add_mul.py", "add")
    panel.hide()
    select(selection, doc, "mul")
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "7"})
    assert panel.name_field.text() == "add"  # not redrawn while hidden
    panel.show()
    assert panel.name_field.text() == "mul" and panel.fields[1].currentText() == "7"


def test_document_check_marks_a_cycle_before_enter(panel_for, qtbot):
    doc, _, panel = panel_for("sub_chain.py", "add")
    field = panel.fields[0]
    replace_text(field, "%mul", enter=False)
    assert field.message is None  # it parses: the parser has nothing to say
    qtbot.waitUntil(lambda: bool(field.message), timeout=3000)
    assert "cycle" in field.message and field.property("fxsState") == "invalid"
    assert doc.history == []


def test_an_edit_elsewhere_keeps_the_panel_and_refreshes_its_node_lists(panel_for):
    doc, _, panel = panel_for("residual_cnn.py", "fc")
    content, field = panel.scroll.widget(), panel.fields[0]
    field.populate()
    assert "%layer1_0_relu" in [field.itemText(i) for i in range(field.count())]
    # A constant far up the graph: nothing the panel shows for fc changes, so nothing is rebuilt...
    doc.apply_edit({"op": "set_arg", "node": "flatten", "key": 1, "value": "1"})
    assert panel.scroll.widget() is content and panel.fields[0] is field
    # ...but which nodes may feed fc is worked out again when its list next opens.
    assert not field._populated
    # An edit of fc itself, or of a node fc reads, rebuilds the panel.
    doc.apply_edit({"op": "set_arg", "node": "fc", "key": 0, "value": "%avgpool"})
    assert panel.scroll.widget() is not content
    assert panel.fields[0].currentText() == "%avgpool"
    content = panel.scroll.widget()
    doc.undo()
    assert panel.scroll.widget() is not content and panel.fields[0].currentText() == "%flatten"
