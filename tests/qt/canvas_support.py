"""Shared set-up for the canvas tests: a shown ``GraphCanvas`` on a real example model, and
mouse helpers that send real events to the viewport."""

from __future__ import annotations

import functools

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.qt.canvas import GraphCanvas
from fxstudio.qt.selection import SelectionModel
from fxstudio.resources import example_path


@functools.lru_cache(maxsize=None)
def loaded(name: str):
    """An example model loaded once per test process (a Document copies it and never edits it)."""
    return load_model(example_path(name))


def open_canvas(qtbot, name: str = "residual_cnn.py", size=(1000, 760)):
    """(canvas, document, selection, refusals) for a fresh Document on example ``name``."""
    doc = Document(loaded(name))
    selection = SelectionModel()
    canvas = GraphCanvas(selection)
    qtbot.addWidget(canvas)
    canvas.resize(*size)
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas.activateWindow()
    refusals: list[str] = []
    canvas.edit_refused.connect(refusals.append)
    canvas.set_document(doc)
    return canvas, doc, selection, refusals


def synthetic_document_canvas(qtbot, kind: str, nodes: int, size=(1000, 700)):
    """(canvas, document) for a shown ``GraphCanvas`` on a ``Document`` of a generated graph of
    ``nodes`` nodes (``fxstudio.testing.synthetic``)."""
    import torch

    from fxstudio.core.document import Document
    from fxstudio.core.model import LoadedModel
    from fxstudio.testing import synthetic

    gm = synthetic.as_graph_module(synthetic.make_graph(kind, nodes))
    doc = Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                               example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))
    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(*size)
    canvas.show()
    canvas.set_document(doc)
    return canvas, doc


def synthetic_canvas(qtbot, kind: str, nodes: int, size=(1280, 800)):
    """(canvas, graph module) for a shown ``GraphCanvas`` on a generated graph of ``nodes`` nodes
    (``fxstudio.testing.synthetic``), without a Document."""
    from fxstudio.testing import synthetic
    from fxstudio.core.layout import compute_layout

    gm = synthetic.as_graph_module(synthetic.make_graph(kind, nodes))
    ids = {node: i for i, node in enumerate(gm.graph.nodes)}
    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(*size)
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas.canvas_scene.show_graph(gm, compute_layout(gm.graph), ids.__getitem__)
    return canvas, gm


def focus(canvas: GraphCanvas, name: str, zoom: float = 1.0) -> None:
    """Zoom to ``zoom`` and centre the view on the card of node ``name``."""
    canvas.zoom_by(zoom / canvas.zoom())
    canvas.centerOn(canvas.canvas_scene.cards[name].sceneBoundingRect().center())


def drag(canvas: GraphCanvas, start: QPoint, end: QPoint, steps: int = 6) -> None:
    """Press at ``start``, move in ``steps`` to ``end`` and release there (viewport pixels)."""
    vp = canvas.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for i in range(1, steps + 1):
        p = QPointF(start) + (QPointF(end) - QPointF(start)) * (i / steps)
        QTest.mouseMove(vp, p.toPoint())
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)


def settle(qtbot, canvas: GraphCanvas) -> None:
    """Let the event loop run until the canvas has drawn the document's pending events."""
    qtbot.waitUntil(lambda: not canvas.redraw_pending(), timeout=5000)


def visible_rect(canvas: GraphCanvas):
    """The scene rectangle the viewport shows."""
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect()


def empty_spot(canvas: GraphCanvas) -> QPoint:
    """A viewport point with no card, edge or frame under it."""
    scene = canvas.canvas_scene
    for y in range(20, canvas.viewport().height() - 20, 23):
        for x in range(20, canvas.viewport().width() - 220, 29):
            p = QPoint(x, y)
            sp = canvas.mapToScene(p)
            if not [i for i in scene.items(sp) if i.isVisible()] and scene.card_at(sp) is None \
                    and scene.edge_end_at(sp) is None:
                return p
    raise AssertionError("no empty spot in the view")
