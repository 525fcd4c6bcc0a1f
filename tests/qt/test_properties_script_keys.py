"""Every argument label the Properties panel shows is a key an edit script accepts (issue #13
item 9): positional-only parameters (``operator.mul``'s ``a``, ``b``) are shown as positions
(``[1] b``, set with key ``1``); a name label, a default and a suggested keyword can be set by name."""

from __future__ import annotations

import pytest

from fxstudio.core.argsyntax import format_value
from fxstudio.core.edits.validation import check_call
from fxstudio.qt.properties import PropertiesPanel
from fxstudio.qt.properties.signature import parameter_view, position_label
from fxstudio.qt.selection import SelectionModel
from fxstudio.resources import EXAMPLES_DIR
from tests.qt.properties_support import open_doc, select

# the examples that trace without options (data_branch.py needs --concrete-arg)
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.py") if p.name != "data_branch.py")


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_label_of_every_call_is_a_key_the_script_accepts(example):
    doc = open_doc(example)
    for node in list(doc.edited.graph.nodes):
        if not node.op.startswith("call"):
            continue
        view = parameter_view(node, doc.edited)
        labels = view.positional_names
        for i, label in enumerate(labels):
            if label is None:
                continue
            if label.startswith("["):  # a position: the script's key is the int
                name = label.split("] ", 1)[1]
                assert label == position_label(i, name)
                edit = {"op": "set_arg", "node": node.name, "key": i, "value": format_value(node.args[i])}
                assert doc.check_edit(edit) is None, (node.name, label)
                refused = doc.check_edit({**edit, "key": name})
                assert refused and f"key {i}" in refused, (node.name, label, refused)
        # the named positionals from the first named one on, passed by keyword instead, still fit
        start = next((i for i in range(len(labels)) if all(
            lab and not lab.startswith("[") for lab in labels[i:])), None)
        if start is not None and node.op == "call_method":
            start = max(start, 1)  # args[0] is the tensor the method is called on
        if start is not None and start < len(node.args):
            kwargs = {**node.kwargs, **{labels[j]: node.args[j] for j in range(start, len(node.args))}}
            assert check_call(node.op, node.target, node.args[:start], kwargs, doc.edited) is None, \
                (node.name, labels)
        for key, value in view.defaults:
            edit = {"op": "set_arg", "node": node.name, "key": key, "value": format_value(value)}
            assert doc.check_edit(edit) is None, (node.name, key)


def test_the_panel_labels_mul_arguments_as_positions(qtbot):
    doc = open_doc("add_mul.py")
    selection = SelectionModel()
    panel = PropertiesPanel(selection)
    qtbot.addWidget(panel)
    panel.set_document(doc)
    panel.show()
    select(selection, doc, "mul")
    texts = [w.text() for w in panel.scroll.widget().findChildren(type(panel.name_error))]
    assert "[0] a" in texts and "[1] b" in texts
    assert "a" not in texts and "b" not in texts
