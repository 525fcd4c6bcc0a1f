"""Drag-and-drop rewiring on the canvas, driven by real mouse events on the viewport."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from tests.qt.canvas_support import drag, empty_spot, focus, open_canvas, settle


def test_drag_input_port_onto_a_node_records_one_set_arg(qtbot):
    canvas, doc, _, refusals = open_canvas(qtbot)
    # `add` (the first residual sum) takes bn2's output at position 0; feed it from relu instead.
    add = doc.find("add")
    assert [a.name for a in add.args] == ["layer1_0_bn2", "relu"]
    focus(canvas, "layer1_0_conv2", zoom=0.9)
    start = canvas.viewport_pos_of("add", "port:0")
    end = canvas.viewport_pos_of("layer1_0_relu")
    drag(canvas, start, end)
    assert refusals == []
    assert doc.edit_script()["edits"] == [{"op": "set_arg", "node": "add", "key": 0, "value": "%layer1_0_relu"}]
    assert "add = layer1_0_relu + relu" in doc.module().code
    settle(qtbot, canvas)
    # The canvas redrew from the document event: add's port 0 is now fed by layer1_0_relu.
    assert canvas.canvas_scene.cards["add"].info.ports[0].src == "layer1_0_relu"
    assert ("layer1_0_relu", "add", 0, 0) in canvas.canvas_scene.edges
    assert ("layer1_0_bn2", "add", 0, 0) not in canvas.canvas_scene.edges


def test_dragging_shows_legal_sources_and_a_cycle_in_red_then_refuses_it(qtbot):
    canvas, doc, _, refusals = open_canvas(qtbot)
    code_before = doc.module().code
    focus(canvas, "layer1_0_bn1", zoom=0.9)
    vp = canvas.viewport()
    start = canvas.viewport_pos_of("layer1_0_conv2", "port:0")
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    cards = canvas.canvas_scene.cards
    # Upstream nodes may feed conv2; conv2 itself and everything downstream of it may not.
    assert cards["layer1_0_bn1"].drag_state == "legal"
    assert cards["x"].drag_state == "legal"
    assert cards["layer1_0_bn2"].drag_state == ""
    assert cards["output"].drag_state == ""
    target = canvas.viewport_pos_of("layer1_0_bn2")
    QTest.mouseMove(vp, (start + target) / 2)
    QTest.mouseMove(vp, target)
    assert cards["layer1_0_bn2"].drag_state == "cycle"
    assert "cycle" in cards["layer1_0_bn2"].toolTip()
    assert "layer1_0_conv2 → layer1_0_bn2 → layer1_0_conv2" in cards["layer1_0_bn2"].toolTip()
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, target)
    assert len(refusals) == 1 and "would make a cycle" in refusals[0]
    assert doc.edit_script()["edits"] == []
    assert doc.module().code == code_before
    assert all(c.drag_state == "" for c in cards.values())
    assert "cycle" not in cards["layer1_0_bn2"].toolTip() and "BatchNorm2d" in cards["layer1_0_bn2"].toolTip()


def test_release_on_empty_space_cancels(qtbot):
    canvas, doc, _, refusals = open_canvas(qtbot)
    focus(canvas, "layer1_0_bn1", zoom=0.9)
    start = canvas.viewport_pos_of("layer1_0_conv2", "port:0")
    drag(canvas, start, empty_spot(canvas))
    assert refusals == [] and doc.edit_script()["edits"] == []
    assert not [i for i in canvas.canvas_scene.items() if type(i).__name__ == "RubberBand"]
    assert all(c.drag_state == "" for c in canvas.canvas_scene.cards.values())


def test_grabbing_the_end_of_an_edge_rewires_that_input_and_undo_redraws(qtbot):
    canvas, doc, _, refusals = open_canvas(qtbot)
    focus(canvas, "layer1_0_conv2", zoom=1.0)
    # Press on the edge a few pixels above add's port 1 (the residual input from relu).
    port = canvas.viewport_pos_of("add", "port:1")
    drag(canvas, port - QPoint(0, 6), canvas.viewport_pos_of("layer1_0_bn1"))
    assert refusals == []
    assert doc.edit_script()["edits"] == [{"op": "set_arg", "node": "add", "key": 1, "value": "%layer1_0_bn1"}]
    settle(qtbot, canvas)
    before = {n: (c.x(), c.y()) for n, c in canvas.canvas_scene.cards.items()}
    doc.undo()
    settle(qtbot, canvas)
    assert canvas.canvas_scene.cards["add"].info.ports[1].src == "relu"
    moved = [n for n, c in canvas.canvas_scene.cards.items() if (c.x(), c.y()) != before[n]]
    assert len(moved) <= len(before) // 4, f"an undo moved {len(moved)} cards"


CAT_MODEL = """
import torch
from torch import nn


class Cat(nn.Module):
    def forward(self, x):
        a = torch.relu(x)
        b = torch.sigmoid(x)
        c = torch.tanh(x)
        return torch.cat([a, b], 1) * 2


def example_inputs():
    return (torch.randn(2, 3),)
"""


def test_an_input_inside_a_list_is_rewired_keeping_the_list(qtbot, tmp_path):
    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model

    model = tmp_path / "cat_model.py"
    model.write_text(CAT_MODEL)
    canvas, _, _, refusals = open_canvas(qtbot)
    doc = Document(load_model(model))
    canvas.set_document(doc)
    ports = canvas.canvas_scene.cards["cat"].info.ports
    assert [(p.label, p.src) for p in ports] == [("0[0]", "relu"), ("0[1]", "sigmoid")]
    focus(canvas, "cat", zoom=1.0)
    drag(canvas, canvas.viewport_pos_of("cat", "port:0"), canvas.viewport_pos_of("tanh"))
    assert refusals == []
    assert doc.edit_script()["edits"] == [{"op": "set_arg", "node": "cat", "key": 0, "value": "[%tanh, %sigmoid]"}]
    assert "torch.cat([tanh, sigmoid], 1)" in doc.module().code


def test_dragging_to_the_border_scrolls_and_escape_cancels(qtbot):
    canvas, doc, _, refusals = open_canvas(qtbot)
    focus(canvas, "layer1_0_bn1", zoom=1.0)
    vp = canvas.viewport()
    start = canvas.viewport_pos_of("layer1_0_conv2", "port:0")
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    before = canvas.mapToScene(QPoint(0, 0))
    for _ in range(4):
        QTest.mouseMove(vp, QPoint(start.x(), 3))   # at the top border: the view scrolls up
    assert canvas.mapToScene(QPoint(0, 0)).y() < before.y() - 40
    QTest.keyClick(canvas, Qt.Key.Key_Escape)
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(start.x(), 3))
    assert doc.edit_script()["edits"] == [] and refusals == []
    assert all(c.drag_state == "" for c in canvas.canvas_scene.cards.values())
