"""After an edit the canvas touches only the items whose geometry or text changed (issue 6)."""

from __future__ import annotations

import pytest
import torch

from fxstudio.testing import synthetic
from fxstudio.core.document import Document
from fxstudio.core.model import LoadedModel
from fxstudio.qt.canvas.scene import CanvasScene
from fxstudio.qt.canvas.view import GraphCanvas
from fxstudio.qt.selection import SelectionModel
from tests.qt.canvas_support import settle


def _canvas(qtbot, n_nodes: int = 2_000, fold_weights: bool = True):
    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", n_nodes))
    doc = Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                               example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))
    canvas = GraphCanvas(SelectionModel())
    canvas.fold_weights = fold_weights   # the generated graph's parameters are get_attr nodes
    qtbot.addWidget(canvas)
    canvas.resize(900, 700)
    canvas.show()
    canvas.set_document(doc)
    return canvas, doc


def _snapshot(scene: CanvasScene):
    cards = {name: (c.x(), c.y(), c.size(), c.info) for name, c in scene.cards.items()}
    edges = {k: (e.points, e.label) for k, e in scene.edges.items()}
    frames = {p: (f.x(), f.y(), f.group) for p, f in scene.frames.items()}
    return cards, edges, frames


def _fresh(canvas: GraphCanvas) -> CanvasScene:
    scene = CanvasScene()
    scene.show_graph(canvas.document.edited, canvas.canvas_scene.layout, canvas.document.id_of)
    return scene


def _rewire(doc: Document, which: int) -> None:
    adds = [n for n in doc.edited.graph.nodes if n.op == "call_function" and n.name.startswith("add")]
    node = adds[which]
    doc.apply_edit({"op": "set_arg", "node": node.name, "key": 1,
                    "value": f"%{node.args[0].all_input_nodes[0].name}"})


@pytest.mark.parametrize("fold_weights", [False, True], ids=["weight-cards", "weights-folded"])
def test_a_rewire_touches_few_items_and_matches_a_fresh_build(qtbot, fold_weights):
    canvas, doc = _canvas(qtbot, fold_weights=fold_weights)
    scene = canvas.canvas_scene
    assert scene.last_update["incremental"] is False
    n_cards, n_edges = len(scene.cards), len(scene.edges)
    # Folded, the ~900 parameters are rows of their linear's card instead of cards of their own.
    assert n_cards > (1000 if fold_weights else 1500)
    assert any(c.info.rows for c in scene.cards.values()) == fold_weights
    before_items = {name: id(c) for name, c in scene.cards.items()}

    _rewire(doc, len([n for n in doc.edited.graph.nodes if n.name.startswith("add")]) // 2)
    settle(qtbot, canvas)
    u = scene.last_update
    assert u["incremental"] is True
    assert u["geometry"] is False   # rerouted: no card moved
    touched = (u["cards_added"] + u["cards_moved"] + u["cards_retexted"] + u["cards_removed"]
               + u["edges_added"] + u["edges_rerouted"] + u["edges_removed"]
               + u["groups_added"] + u["groups_moved"] + u["groups_removed"])
    # One edge moved and a long edge appeared: a handful of items, not thousands.
    assert 0 < touched < 40, u
    assert u["cards_added"] == u["cards_removed"] == 0
    # Untouched cards are the same objects.
    assert sum(id(c) == before_items[name] for name, c in scene.cards.items()) == n_cards

    assert _snapshot(scene) == _snapshot(_fresh(canvas))

    doc.undo()
    settle(qtbot, canvas)
    assert scene.last_update["incremental"] is True
    assert _snapshot(scene) == _snapshot(_fresh(canvas))


def test_minimap_follows_an_incremental_redraw_after_a_short_delay(qtbot):
    canvas, doc = _canvas(qtbot, 600)
    image = canvas.minimap._image
    # A rewire moves no card: the thumbnail (cards and frames) stays as it is.
    _rewire(doc, 3)
    settle(qtbot, canvas)
    assert canvas.canvas_scene.last_update["geometry"] is False
    assert not canvas._minimap_timer.isActive() and canvas.minimap._image is image
    # An insert moves cards: the thumbnail follows a moment later.
    add = next(n for n in doc.edited.graph.nodes if n.name.startswith("add"))
    doc.apply_edit({"op": "insert", "after": add.name, "kind": "call_function", "target": "torch.relu",
                    "args": f"(%{add.name},)"})
    settle(qtbot, canvas)
    qtbot.waitUntil(lambda: canvas.minimap._image is not image and not canvas._minimap_timer.isActive(),
                    timeout=3000)


def test_the_zoomed_out_overview_follows_a_rerouted_edge(qtbot):
    canvas, doc = _canvas(qtbot, 600)
    scene = canvas.canvas_scene
    scene.overview.boxes   # prepared for the layout as opened
    _rewire(doc, 3)
    settle(qtbot, canvas)
    assert scene.last_update["geometry"] is False
    fresh = _fresh(canvas)
    scene.overview.boxes, fresh.overview.boxes   # prepare both
    path, expected = scene.overview._edges, fresh.overview._edges
    assert path.elementCount() == expected.elementCount()
    assert all(path.elementAt(i).x == expected.elementAt(i).x and path.elementAt(i).y == expected.elementAt(i).y
               for i in range(path.elementCount()))
