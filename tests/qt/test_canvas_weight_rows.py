"""Weights folded into cards in the real window (issue #15): an exported model opens with its
parameters as rows of the cards that use them, a click on a row selects that weight, search finds
it, View ▸ Fold Weights into Cards brings the cards back, and an edit that gives a weight a second
user (and its undo) redraws through the document events. The first screen shows the inputs."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest
from torch import nn
from window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

from fxstudio.qt.canvas.card_rows import WEIGHT_ROW_H, rows_top
from fxstudio.qt.canvas.navigation import MIN_READABLE_ZOOM
from tests.model_files import save_small_cnn_pt2
from tests.qt.canvas_support import settle, visible_rect


@pytest.fixture(scope="module")
def cnn_pt2(tmp_path_factory):
    path = tmp_path_factory.mktemp("pt2") / "cnn.pt2"
    save_small_cnn_pt2(path)
    return path


def _open(qtbot, make_window, path):
    win = make_window()
    win.resize(1400, 900)
    open_and_wait(qtbot, win, str(path))
    # A .pt2 shows its structure first, view-only, then the document with its weights replaces it.
    qtbot.waitUntil(lambda: not win.open_flow.busy and win.document is not None and not win.document.read_only,
                    timeout=60_000)
    win.canvas.flush()
    return win, win.document


def _card(win, op_text: str):
    return next(c for c in win.canvas.canvas_scene.cards.values() if op_text in c.info.target)


def _row_point(win, card, label: str) -> QPointF:
    """Scene point in the middle of the row ``label`` of ``card`` (right of its port)."""
    i = next(k for k, r in enumerate(card.info.rows) if r.label == label)
    top = rows_top(card.size()[1], len(card.info.rows))
    return QPointF(card.x() + card.size()[0] / 2, card.y() + top + 3 + (i + 0.5) * WEIGHT_ROW_H)


def _click(win, scene_point: QPointF) -> None:
    canvas = win.canvas
    canvas.centerOn(scene_point)
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     canvas.mapFromScene(scene_point))


def test_an_exported_cnn_opens_with_its_weights_as_rows(qtbot, make_window, cnn_pt2):
    win, doc = _open(qtbot, make_window, cnn_pt2)
    scene = win.canvas.canvas_scene
    assert win.actions["fold_weights"].isChecked()
    bn = _card(win, "batch_norm")
    assert [(r.label, r.shape) for r in bn.info.rows] == [
        ("weight", "8"), ("bias", "8"), ("running_mean", "8"), ("running_var", "8")]
    assert [r.label for r in _card(win, "conv2d").info.rows] == ["weight"]
    assert [r.label for r in _card(win, "linear").info.rows] == ["weight", "bias"]
    for hidden in ("conv_weight", "bn_weight", "bn_num_batches_tracked", "_guards_fn", "fc_bias"):
        assert hidden not in scene.cards
    assert not any(k[0] in ("bn_weight", "_guards_fn") for k in scene.edges)
    # The folded inputs' ports sit at their rows' left ends, the drawn input on the top edge.
    ports = bn.info.ports
    data = next(i for i, p in enumerate(ports) if p.src not in {r.name for r in bn.info.rows})
    assert bn.port_pos(data).y() == bn.y()
    mean = next(i for i, p in enumerate(ports) if p.src == "bn_running_mean")
    pos = bn.port_pos(mean)
    assert pos.x() == bn.x() and bn.y() < pos.y() < bn.y() + bn.size()[1]
    win.canvas.centerOn(pos)
    assert win.canvas.port_under(win.canvas.mapFromScene(pos)) == (bn, mean)


def test_clicking_a_row_selects_the_weight_and_search_finds_it(qtbot, make_window, cnn_pt2):
    win, doc = _open(qtbot, make_window, cnn_pt2)
    bn = _card(win, "batch_norm")
    _click(win, _row_point(win, bn, "running_var"))
    assert doc.node(win.selection.current()).name == "bn_running_var"
    qtbot.waitUntil(lambda: win.properties.current_node() is not None
                    and win.properties.current_node().name == "bn_running_var")
    assert win.properties.name_field.text() == "bn_running_var"
    assert bn.row_selected == {doc.id_of(doc.find("bn_running_var"))} and not bn.selected
    _click(win, QPointF(bn.x() + bn.size()[0] / 2, bn.y() + 30))   # the card's body: the op itself
    assert win.selection.current() == bn.info.node_id and not bn.row_selected

    canvas = win.canvas
    assert canvas.search("fc_bias") == 1
    linear = _card(win, "linear")
    bias_id = doc.id_of(doc.find("fc_bias"))
    assert linear.row_marks == {bias_id: "current"} and win.selection.current() == bias_id
    assert visible_rect(canvas).contains(linear.sceneBoundingRect().center())
    assert canvas.search("running") == 2 and canvas.select_all_matches() == 2
    assert {doc.node(i).name for i in win.selection.ids()} == {"bn_running_mean", "bn_running_var"}
    canvas.search("")
    assert not linear.row_marks and not bn.row_marks


def test_the_view_toggle_restores_the_weight_cards_and_is_remembered(qtbot, make_window, cnn_pt2):
    win, doc = _open(qtbot, make_window, cnn_pt2)
    scene = win.canvas.canvas_scene
    folded_cards = len(scene.cards)
    action = win.actions["fold_weights"]
    action.trigger()
    assert not action.isChecked() and not win.prefs.fold_weights()
    assert {"conv_weight", "bn_weight", "bn_running_var", "fc_bias", "bn_num_batches_tracked"} <= scene.cards.keys()
    assert not any(c.info.rows for c in scene.cards.values())
    assert len(scene.cards) > folded_cards + 6
    assert any(k[:2] == ("bn_weight", _card(win, "batch_norm").info.name) for k in scene.edges)
    other = make_window()   # a new window reads the remembered setting
    assert not other.actions["fold_weights"].isChecked() and not other.canvas.fold_weights
    action.trigger()
    assert win.prefs.fold_weights() and "bn_weight" not in scene.cards
    assert len(_card(win, "batch_norm").info.rows) == 4


def test_an_edit_that_unfolds_a_weight_and_its_undo_redraw_the_cards(qtbot, make_window, cnn_pt2):
    win, doc = _open(qtbot, make_window, cnn_pt2)
    canvas, scene = win.canvas, win.canvas.canvas_scene
    mul = next(n for n in doc.edited.graph.nodes if "mul" in str(n.target))
    doc.apply_edit({"op": "set_arg", "node": mul.name, "key": 1, "value": "%fc_bias"})
    settle(qtbot, canvas)
    linear = _card(win, "linear")
    assert "fc_bias" in scene.cards and [r.label for r in linear.info.rows] == ["weight"]
    assert any(k[:2] == ("fc_bias", mul.name) for k in scene.edges)
    assert any(k[:2] == ("fc_bias", linear.info.name) for k in scene.edges)
    doc.undo()
    settle(qtbot, canvas)
    assert "fc_bias" not in scene.cards and [r.label for r in linear.info.rows] == ["weight", "bias"]
    assert not any(k[0] == "fc_bias" for k in scene.edges)
    assert linear.size()[1] == scene.layout.nodes[linear.info.name].h
    doc.redo()
    settle(qtbot, canvas)
    assert "fc_bias" in scene.cards and len(linear.info.rows) == 1


def test_a_big_graph_opens_at_its_inputs_at_a_readable_zoom(qtbot):
    from fxstudio.core.document import Document
    from fxstudio.core.model import LoadedModel
    from fxstudio.qt.canvas import GraphCanvas
    from fxstudio.qt.selection import SelectionModel
    from fxstudio.testing import synthetic

    gm = synthetic.as_graph_module(synthetic.make_graph("transformer", 3000))
    doc = Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                               example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))
    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(1000, 700)
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas.set_document(doc)   # opens with show_start
    scene = canvas.canvas_scene
    x0, y0, x1, y1 = scene.bounds
    assert (y1 - y0) * MIN_READABLE_ZOOM > canvas.viewport().height()   # not readable whole
    z = canvas.zoom()
    assert MIN_READABLE_ZOOM - 1e-9 <= z <= 1.0 and not scene.in_overview()
    view = visible_rect(canvas)
    inputs = [c for c in scene.cards.values() if c.info.op == "placeholder"]
    assert inputs and all(view.contains(c.sceneBoundingRect()) for c in inputs)
    shown = [c for c in scene.cards.values() if view.intersects(c.sceneBoundingRect())]
    assert sum(c.info.op == "call_function" for c in shown) >= 3   # the first operations
    # No empty band on the left: a card or frame reaches into the left third of the view.
    third = view.left() + view.width() / 3
    items = [c.sceneBoundingRect() for c in shown] + [f.sceneBoundingRect() for f in scene.frames.values()
                                                     if view.intersects(f.sceneBoundingRect())]
    assert any(r.left() < third and r.right() > view.left() for r in items)


def test_dropping_a_drag_on_a_row_feeds_the_input_from_that_weight(qtbot, make_window, cnn_pt2):
    from tests.qt.canvas_support import drag

    win, doc = _open(qtbot, make_window, cnn_pt2)
    canvas = win.canvas
    mul = next(n for n in doc.edited.graph.nodes if "mul" in str(n.target))
    linear = _card(win, "linear")
    canvas.zoom_by(1.0 / canvas.zoom())
    canvas.centerOn(linear.sceneBoundingRect().center())
    port = canvas.viewport_pos_of(mul.name, "port:0")
    drag(canvas, port, canvas.mapFromScene(_row_point(win, linear, "bias")))
    settle(qtbot, canvas)
    assert doc.edited.graph.find_nodes(op="call_function", target=mul.target)[0].args[0].name == "fc_bias"
    assert "fc_bias" in canvas.canvas_scene.cards   # a second user: its own card again
    doc.undo()
    settle(qtbot, canvas)
    assert "fc_bias" not in canvas.canvas_scene.cards


def test_a_rows_port_starts_a_rewire_drag_of_that_input(qtbot, make_window, cnn_pt2):
    win, doc = _open(qtbot, make_window, cnn_pt2)
    canvas = win.canvas
    linear = _card(win, "linear")
    index = next(i for i, p in enumerate(linear.info.ports) if p.src == "fc_bias")
    canvas.zoom_by(1.0 / canvas.zoom())
    canvas.centerOn(linear.sceneBoundingRect().center())
    start = canvas.mapFromScene(linear.port_pos(index))
    vp = canvas.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    assert canvas._drag is not None and canvas._drag.port.src == "fc_bias"
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)   # a click
    assert canvas._drag is None and win.selection.current() == linear.info.node_id
    assert not doc.dirty
