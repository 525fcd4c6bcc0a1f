"""The zoomed-out drawing of a whole graph: one item instead of thousands.

Below ``style.LOD_PLAIN`` a card would be a plain box without text anyway, so the scene hides
its detailed items (cards, edges, frames) and this one item draws every box (one ``drawRects``
per op colour) and every edge (one prebuilt ``QPainterPath``). Selected and matching
nodes are drawn over it with a minimum on-screen size, so search hits stay visible as dots.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem
from pyqtgraph.functions import arrayToQPath

from fxstudio.core.layout import Layout
from fxstudio.qt.canvas import style as st


class OverviewItem(QGraphicsItem):
    """Paints the recorded overview of a layout; ``highlights`` maps node names to a colour name."""

    def __init__(self):
        super().__init__()
        self.setZValue(5)
        self._rects: list = []
        self._groups: list = []
        self._edges = QPainterPath()
        self._bounds = QRectF()
        self._boxes: dict[str, tuple[float, float, float, float]] = {}
        self._pending = None
        self.highlights: dict[str, str] = {}

    def set_layout(self, layout: Layout, ops: dict[str, str],
                   box: tuple[float, float, float, float] | None = None) -> None:
        """Show ``layout``; ``ops`` gives each node's op kind (for its colour). The drawing is
        prepared when first needed (most edits happen zoomed in, where the overview is hidden)."""
        self.prepareGeometryChange()
        self._pending = (layout, ops)
        x0, y0, x1, y1 = bounds(layout) if box is None else box
        self._bounds = QRectF(x0, y0, x1 - x0, y1 - y0).adjusted(-20, -20, 20, 20)
        self.update()

    @property
    def boxes(self) -> dict[str, tuple[float, float, float, float]]:
        """(x, y, w, h) of every card by node name."""
        self._prepare()
        return self._boxes

    def _prepare(self) -> None:
        if self._pending is None:
            return
        layout, ops = self._pending
        self._pending = None
        self._boxes = {n: (b.x, b.y, b.w, b.h) for n, b in layout.nodes.items()}
        by_op: dict[str, list[QRectF]] = {}
        for name, (x, y, w, h) in self._boxes.items():
            by_op.setdefault(ops.get(name, "output"), []).append(QRectF(x, y, w, h))
        self._rects = [(st.op_color(op), rects) for op, rects in by_op.items()]
        self._groups = [(QRectF(g.x, g.y, g.w, g.h), st.color(st.GROUP_COLOR) if g.collapsed else st.frame_fill(g.depth))
                        for g in sorted(layout.groups.values(), key=lambda g: g.depth)]
        xs, ys, connect = [], [], []
        for e in layout.edges:
            last = len(e.points) - 1
            for i, (x, y) in enumerate(e.points):
                xs.append(x)
                ys.append(y)
                connect.append(i < last)
        # pyqtgraph builds the path from arrays in C++ (one path for all edges, drawn in ~ms).
        self._edges = arrayToQPath(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float),
                                   connect=np.asarray(connect, dtype=bool)) if xs else QPainterPath()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The whole layout."""
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override); cheap at low zoom."""
        self._prepare()
        # Drawn directly: replaying a QPicture of the same calls is ~30x slower.
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.setPen(Qt.PenStyle.NoPen)
        for rect, fill in self._groups:
            painter.fillRect(rect, fill)
        painter.setPen(st.pen(st.EDGE_COLOR, 0.0, True))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._edges)
        for fill, rects in self._rects:
            # A cosmetic outline in the fill colour keeps a card at least a pixel wide when tiny.
            painter.setPen(_outline(fill))
            painter.setBrush(fill)
            painter.drawRects(rects)
        if not self.highlights:
            return
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        m = 3.0 / max(lod, 1e-9)   # at least ~6 px across on screen
        for name, colour in self.highlights.items():
            box = self._boxes.get(name)
            if box is None:
                continue
            x, y, w, h = box
            cx, cy = x + w / 2, y + h / 2
            painter.setBrush(st.color(colour))
            painter.drawRect(QRectF(cx - max(w / 2, m), cy - max(h / 2, m), 2 * max(w / 2, m), 2 * max(h / 2, m)))


def _outline(fill: QColor) -> QPen:
    pen = QPen(fill, 0.0)
    pen.setCosmetic(True)
    return pen


def bounds(layout: Layout) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) around every node and group, and the lane columns of a layout that has them
    (a faster ``Layout.bounds`` for big layouts)."""
    boxes = list(layout.nodes.values()) + list(layout.groups.values())
    if not boxes:
        return (0.0, 0.0, 0.0, 0.0)
    xs = np.fromiter(map(_X, boxes), float, len(boxes))
    ys = np.fromiter(map(_Y, boxes), float, len(boxes))
    ws = np.fromiter(map(_W, boxes), float, len(boxes))
    hs = np.fromiter(map(_H, boxes), float, len(boxes))
    x1 = float((xs + ws).max())
    if layout.stats.get("n_lanes"):  # long edges routed in columns right of every card (core/layout/lanes.py)
        x1 = max(x1, max((p[0] for e in layout.edges for p in e.points), default=x1))
    return (float(xs.min()), float(ys.min()), x1, float((ys + hs).max()))


_X, _Y, _W, _H = (attrgetter(a) for a in "xywh")
