"""An insert or an erase on the canvas is laid out locally (``Layout.local``) and the scene follows
it by moving what moved: the items it shows and its index are what a fresh build of the same
layout gives."""

from __future__ import annotations

import numpy as np

from fxstudio.qt.canvas.scene import CanvasScene, _framed
from fxstudio.qt.canvas.scene_index import SceneIndex
from fxstudio.qt.canvas.view import GraphCanvas
from tests.qt.canvas_support import focus, settle, synthetic_document_canvas, visible_rect


def _focused(qtbot, prefix: str, k: int):
    """(canvas, document, scene, node): the ``k``-th node named ``prefix…`` of a 2k-node graph in view."""
    canvas, doc = synthetic_document_canvas(qtbot, "skip_chain", 2_000)
    node = [n for n in doc.edited.graph.nodes if n.name.startswith(prefix)][k]
    focus(canvas, node.name)
    settle(qtbot, canvas)
    return canvas, doc, canvas.canvas_scene, node


def _same_index(scene: CanvasScene, canvas: GraphCanvas) -> None:
    """The scene's index (made from the one before the edit) is the index of a fresh build."""
    layout, table = scene.layout, scene.node_table
    fresh = SceneIndex(layout, table, _framed(canvas.document.edited, layout))
    got = scene.index
    assert got.names == fresh.names and got.pos == fresh.pos
    assert got.frame_paths == fresh.frame_paths
    assert got.edge_keys == fresh.edge_keys and got.label_key == fresh.label_key
    for a, b in zip(got._cards + got._frames + got._edges, fresh._cards + fresh._frames + fresh._edges):
        assert np.allclose(a, b)
    assert {i: scene.by_id.name_of(i) for i in map(canvas.document.id_of, table.values())
            if scene.by_id.name_of(i)} == {canvas.document.id_of(table[n]): n for n in fresh.names}


def _items_at_their_boxes(scene: CanvasScene) -> None:
    for name, card in scene.live_cards.items():
        box = scene.layout.nodes[name]
        assert (card.x(), card.y()) == (box.x, box.y), name
    for path, frame in scene.live_frames.items():
        g = scene.layout.groups[path]
        assert frame.group == g, path


def _snapshot(scene: CanvasScene) -> dict:
    """Every card's place and every edge's drawn points (all items made)."""
    cards = {name: (c.x(), c.y(), c.size(), c.info) for name, c in scene.cards.items()}
    edges = {k: tuple(e.points) for k, e in scene.edges.items()}
    return {"cards": cards, "edges": edges}


def _fresh_snapshot(canvas: GraphCanvas) -> dict:
    scene = CanvasScene()
    scene.show_graph(canvas.document.edited, canvas.canvas_scene.layout, canvas.document.id_of)
    return _snapshot(scene)


def test_insert_and_its_undo_move_only_what_moved(qtbot):
    canvas, doc, scene, add = _focused(qtbot, "add", 60)
    below = [n for n, c in scene.live_cards.items() if c.y() > scene.layout.nodes[add.name].y]
    assert below
    shown = {n: (scene.live_cards[n].x(), scene.live_cards[n].y()) for n in below}
    doc.apply_edit({"op": "insert", "after": add.name, "kind": "call_function", "target": "torch.relu",
                    "args": f"(%{add.name},)", "name": "probe"})
    canvas.flush()
    canvas.viewport().repaint()
    settle(qtbot, canvas)
    assert scene.layout.local is not None and scene.layout.local[1] == "probe"
    probe = scene.layout.nodes["probe"]
    assert "probe" in scene.live_cards   # in view: made at once
    assert visible_rect(canvas).intersects(scene.live_cards["probe"].sceneBoundingRect())
    dh = scene.layout.local[5][1]
    for n in below:   # what was below the new layer came down by its height, and only that
        assert scene.live_cards[n].y() == shown[n][1] + dh and scene.live_cards[n].x() == shown[n][0]
    assert probe.y > scene.layout.nodes[add.name].y
    _items_at_their_boxes(scene)
    _same_index(scene, canvas)
    doc.undo()
    canvas.flush()
    settle(qtbot, canvas)
    assert scene.layout.local is not None and scene.layout.local[2] == "probe"
    assert "probe" not in scene.live_cards and "probe" not in scene.cards
    _items_at_their_boxes(scene)
    _same_index(scene, canvas)
    assert _snapshot(scene) == _fresh_snapshot(canvas)


def test_erase_and_its_undo_put_the_card_back(qtbot):
    canvas, doc, scene, relu = _focused(qtbot, "relu", 80)
    path = relu.meta["fxs_module_path"]
    assert scene.layout.groups[path].members == 2   # the frame goes with it, and comes back with the undo
    linear = relu.args[0].name
    caption = scene.cards[linear].info.caption
    before = scene.layout.nodes[relu.name]
    user, source = next(iter(relu.users)).name, relu.args[0].name
    doc.apply_edit({"op": "erase", "node": relu.name, "replace_uses_with": source})
    canvas.flush()
    settle(qtbot, canvas)
    assert scene.layout.local is not None and scene.layout.local[2] == relu.name
    assert relu.name not in scene.live_cards
    assert any(k[0] == source and k[1] == user for k in scene.live_edges)   # the user's new input
    assert path not in scene.frames and scene.cards[linear].info.caption != caption   # named from further out
    assert scene.cards[linear].info.caption.endswith(caption)
    _items_at_their_boxes(scene)
    _same_index(scene, canvas)
    doc.undo()
    canvas.flush()
    settle(qtbot, canvas)
    assert scene.layout.local is not None and scene.layout.local[1] == relu.name
    assert scene.layout.nodes[relu.name] == before
    assert path in scene.frames and scene.cards[linear].info.caption == caption
    assert (scene.live_cards[relu.name].x(), scene.live_cards[relu.name].y()) == (before.x, before.y)
    _items_at_their_boxes(scene)
    _same_index(scene, canvas)
    assert _snapshot(scene) == _fresh_snapshot(canvas)
