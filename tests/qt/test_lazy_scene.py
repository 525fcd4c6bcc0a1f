"""The canvas makes only the items in view (issue #28): a 10k-node graph opens with a screenful of
cards, scrolling makes those coming into view, and find, select, overlays and rewiring work on
cards that were far off screen when the graph opened."""

from __future__ import annotations

import functools

import torch
from PySide6.QtCore import QRectF

from fxstudio.core.document import Document
from fxstudio.core.model import LoadedModel
from fxstudio.qt.canvas.realize import MARGIN
from fxstudio.qt.canvas.scene import CanvasScene
from fxstudio.qt.canvas.view import GraphCanvas
from fxstudio.qt.selection import SelectionModel
from fxstudio.testing import synthetic
from tests.qt.canvas_support import drag, focus, settle, visible_rect

N_NODES = 10_000


@functools.lru_cache(maxsize=None)
def _graph():
    return synthetic.as_graph_module(synthetic.make_graph("skip_chain", N_NODES))


def _open(qtbot) -> tuple[GraphCanvas, Document]:
    gm = _graph()
    doc = Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                               example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))
    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(1200, 800)
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas.set_document(doc)
    return canvas, doc


def _meeting(scene: CanvasScene, rect: QRectF) -> set[str]:
    """Names of the cards whose layout box meets ``rect`` (from the layout, not from items)."""
    return {n for n, b in scene.layout.nodes.items() if n in scene.cards and QRectF(b.x, b.y, b.w, b.h).intersects(rect)}


def _wide(rect: QRectF) -> QRectF:
    mx, my = rect.width() * MARGIN, rect.height() * MARGIN
    return rect.adjusted(-mx, -my, mx, my)


def _wait_margin(qtbot, canvas: GraphCanvas) -> None:
    qtbot.waitUntil(lambda: canvas.canvas_scene.covers(_wide(visible_rect(canvas))), timeout=5000)


def test_opening_10k_nodes_makes_only_the_cards_in_and_around_the_view(qtbot):
    canvas, _ = _open(qtbot)
    scene = canvas.canvas_scene
    _wait_margin(qtbot, canvas)
    view = visible_rect(canvas)
    live = set(scene.live_cards)
    assert len(scene.cards) > 5000 and len(scene.edges) > 5000   # the mappings still cover every card
    assert _meeting(scene, view) <= live                          # all in view are made...
    assert live <= _meeting(scene, _wide(view))                   # ...and nothing beyond the margin
    assert len(live) < len(scene.cards) / 20
    assert len(scene.live_edges) < len(scene.edges) / 20
    # The items Qt paints are the made ones: a card in view is an item of the scene.
    shown = {i.info.name for i in scene.items(view) if hasattr(i, "info")}
    assert shown and shown <= live


def test_scrolling_makes_the_cards_coming_into_view_and_keeps_the_count_bounded(qtbot):
    canvas, doc = _open(qtbot)
    scene = canvas.canvas_scene
    x0, y0, x1, y1 = scene.bounds
    seen_max = 0
    for k in range(1, 9):   # down the whole graph in big jumps
        canvas.centerOn((x0 + x1) / 2, y0 + (y1 - y0) * k / 8)
        qtbot.wait(1)
        view = visible_rect(canvas)
        expected = _meeting(scene, view)
        assert expected and expected <= set(scene.live_cards)
        seen_max = max(seen_max, len(scene.live_cards) + len(scene.live_edges))
    assert seen_max <= CanvasScene.LIVE_CAP + 2 * len(_meeting(scene, _wide(visible_rect(canvas)))) + 200
    # A made card is painted where its layout box is.
    name = next(iter(_meeting(scene, visible_rect(canvas))))
    box = scene.layout.nodes[name]
    assert (scene.live_cards[name].x(), scene.live_cards[name].y()) == (box.x, box.y)
    assert not canvas.grab().isNull()


def test_find_and_select_a_node_far_off_screen(qtbot):
    canvas, doc = _open(qtbot)
    scene = canvas.canvas_scene
    far = "add_585"   # the last add, thousands of cards below the opening view
    assert far in scene.cards and far not in scene.live_cards
    assert canvas.search(r"^add_585$") == 1
    assert canvas.next_match() == far
    card = scene.live_cards[far]
    assert card.match == 2 and card.selected
    assert visible_rect(canvas).intersects(card.sceneBoundingRect())
    # Selecting by id (the Properties panel, --select) scrolls to a card not made yet.
    other = doc.find("relu_1200")
    assert "relu_1200" not in scene.live_cards
    canvas.selection.set([doc.id_of(other)])
    assert scene.live_cards["relu_1200"].selected
    assert visible_rect(canvas).intersects(scene.live_cards["relu_1200"].sceneBoundingRect())
    # A search's matches that are not made yet get their mark when they are.
    assert canvas.search("relu_30") > 5
    assert "relu_305" not in scene.live_cards
    focus(canvas, "relu_305")
    assert scene.live_cards["relu_305"].match == 1


def test_overlays_reach_cards_made_later(qtbot):
    canvas, doc = _open(qtbot)
    scene = canvas.canvas_scene
    far = doc.find("relu_2000")
    canvas.set_divergence({doc.id_of(far): 5.0})
    assert "relu_2000" not in scene.live_cards
    focus(canvas, "relu_2000")
    card = scene.live_cards["relu_2000"]
    assert card.tint is not None and card.score == 5.0


def test_rewire_a_node_far_off_screen(qtbot):
    canvas, doc = _open(qtbot)
    scene = canvas.canvas_scene
    assert "add_585" not in scene.live_cards
    focus(canvas, "add_585", zoom=0.9)
    add = doc.find("add_585")
    assert [a.name for a in add.args] == ["relu_2351", "relu_2334"]
    start = canvas.viewport_pos_of("add_585", "port:1")
    end = canvas.viewport_pos_of("relu_2350")
    drag(canvas, start, end)
    assert doc.edit_script()["edits"] == [{"op": "set_arg", "node": "add_585", "key": 1, "value": "%relu_2350"}]
    settle(qtbot, canvas)
    assert scene.cards["add_585"].info.ports[1].src == "relu_2350"
    assert ("relu_2350", "add_585", 1, 0) in scene.live_edges
    assert ("relu_2334", "add_585", 1, 0) not in scene.edges
    assert all(not c.drag_state for c in scene.live_cards.values())


def test_the_zoomed_out_overview_paints_only_the_bands_in_view(qtbot):
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QStyleOptionGraphicsItem

    canvas, _ = _open(qtbot)
    scene = canvas.canvas_scene
    canvas.zoom_by(0.05 / canvas.zoom())
    assert scene.in_overview()
    made = len(scene.live_cards)
    assert not canvas.grab().isNull()
    assert len(scene.live_cards) == made   # zoomed out: no card item is made, the overview draws
    overview = scene.overview
    bands = overview._bands
    assert len(bands) > 3
    painted = [b for b in bands if getattr(b, "_rects", None) is not None]
    assert painted and len(painted) < len([b for b in bands if hasattr(b, "_rects")])   # far bands not built

    def render(exposed: QRectF | None) -> QImage:
        img = QImage(300, 300, QImage.Format.Format_ARGB32)
        img.fill(0xFFFFFFFF)
        p = QPainter(img)
        p.scale(0.02, 0.02)
        p.translate(-scene.bounds[0], -scene.bounds[1] - 200_000)
        option = QStyleOptionGraphicsItem()
        option.exposedRect = exposed if exposed is not None else overview.boundingRect()
        overview.paint(p, option, None)
        p.end()
        return img

    view = QRectF(scene.bounds[0], scene.bounds[1] + 200_000, 300 / 0.02, 300 / 0.02)
    assert render(view) == render(None)   # culling to the exposed rectangle changes no pixel
