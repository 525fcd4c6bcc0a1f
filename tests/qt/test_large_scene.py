"""Guard: a scene of thousands of nodes builds and paints without crashing.

PySide6 6.12.0 on Python 3.11 aborts (``Fatal Python error: none_dealloc``) after a few thousand
Qt calls returning None; pyproject pins PySide6 < 6.12. This test makes far more than that many
such calls (building 3,000+ cards and painting every one of them in full detail), so an upgrade
that brings the crash back fails here instead of in a user's session.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QStyleOptionGraphicsItem

from fxstudio.qt.canvas import style as st
from tests.qt.canvas_support import synthetic_canvas


def test_a_scene_of_3000_nodes_builds_and_paints_every_item(qtbot):
    canvas, gm = synthetic_canvas(qtbot, "transformer", 3100)
    scene = canvas.canvas_scene
    assert len(scene.cards) >= 3000 and len(scene.edges) >= 3000 and scene.frames
    canvas.fit()
    # The whole graph at once is drawn as the overview, in op colours.
    assert scene.in_overview()
    img = canvas.grab().toImage()
    assert QColor(st.OP_COLORS["call_function"]).name() in {
        img.pixelColor(x, y).name() for x in range(0, img.width(), 2) for y in range(0, img.height(), 2)}
    # Every card, edge and frame painted in full detail: tens of thousands of None-returning calls.
    # (Each is painted in its own place, mostly outside the small target, so the raster engine
    # culls the pixels and the calls are what is tested.)
    target = QImage(300, 300, QImage.Format.Format_ARGB32_Premultiplied)
    target.fill(0)
    painter = QPainter(target)
    option = QStyleOptionGraphicsItem()
    items = list(scene.cards.values()) + list(scene.edges.values()) + list(scene.frames.values())
    for item in items:
        painter.resetTransform()
        painter.translate(item.pos())
        item.paint(painter, option, None)
    painter.end()
    assert len(items) > 6000 and not target.isNull()
    # And through the view at a readable zoom, cycling search hits.
    hits = canvas.search("softmax")
    assert hits == sum(1 for n in gm.graph.nodes if "softmax" in n.name) > 10
    canvas.zoom_by(1.0 / canvas.zoom())
    assert not scene.in_overview()
    for _ in range(3):
        canvas.next_match()
        assert not canvas.grab().isNull()
