"""The zoomed-out drawing of a whole graph: one item instead of thousands.

Below ``style.LOD_PLAIN`` a card would be a plain box without text anyway, so the scene hides
its detailed items (cards, edges, frames) and this one item draws the boxes (one ``drawRects``
per op colour) and edges (prebuilt ``QPainterPath``s) of the bands in view. Selected and matching
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
from fxstudio.qt.canvas.scene_index import box_arrays, route_bounds


class OverviewItem(QGraphicsItem):
    """Paints the recorded overview of a layout; ``highlights`` maps node names to a colour name.

    Cards, frames and edges are cut into bands of ``BAND`` by their top edge; a paint draws only
    the bands meeting the exposed rectangle, and a band's rectangles and path are built the first
    time it is painted (zoomed out on a 200k-node graph the view holds a few thousand cards)."""

    BAND = 2048

    def __init__(self):
        super().__init__()
        self.setZValue(5)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)   # exposedRect
        self._bands: list[_Band] = []
        self._bounds = QRectF()
        self._boxes: dict[str, tuple[float, float, float, float]] | None = None
        self._pending = None
        self._layout = Layout()
        self.highlights: dict[str, str] = {}

    def set_layout(self, layout: Layout, ops: dict[str, str],
                   box: tuple[float, float, float, float] | None = None) -> None:
        """Show ``layout``; ``ops`` gives each node's op kind (for its colour). The drawing is
        prepared when first needed (most edits happen zoomed in, where the overview is hidden)."""
        self.prepareGeometryChange()
        self._pending = (layout, ops)
        self._layout = layout
        self._boxes = None
        x0, y0, x1, y1 = bounds(layout) if box is None else box
        self._bounds = QRectF(x0, y0, x1 - x0, y1 - y0).adjusted(-20, -20, 20, 20)
        self.update()

    @property
    def boxes(self) -> dict[str, tuple[float, float, float, float]]:
        """(x, y, w, h) of every card by node name."""
        if self._boxes is None:
            self._boxes = {n: (b.x, b.y, b.w, b.h) for n, b in self._layout.nodes.items()}
        return self._boxes

    @property
    def _edges(self) -> QPainterPath:
        """Every edge as one path (the bands' paths joined; for checks, not for painting)."""
        self._prepare()
        path = QPainterPath()
        for band in self._bands:
            path.addPath(band.edge_path())
        return path

    def _prepare(self) -> None:
        if self._pending is None:
            return
        layout, ops = self._pending
        self._pending = None
        size = self.BAND
        nodes = list(layout.nodes.values())
        cards = _bands(nodes, box_arrays(nodes), size, lambda part, rect: _CardPart(part, rect, ops))
        groups = list(layout.groups.values())
        arrays = box_arrays(groups)
        depth = np.fromiter((g.depth for g in groups), float, len(groups))
        frames = _bands(groups, arrays, size, _FramePart, np.lexsort((depth, arrays[1])))   # outer first
        routes = [r for r in layout.edges if r.points]
        edges = _bands(routes, route_bounds(routes), size, _EdgePart)
        self._bands = frames + edges + cards   # frames under edges under cards

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The whole layout."""
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override): the bands in the exposed rectangle, a few calls each."""
        self._prepare()
        exposed = option.exposedRect if option is not None else QRectF()
        if exposed.isEmpty():
            exposed = self._bounds
        # Drawn directly: replaying a QPicture of the same calls is ~30x slower.
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        for band in self._bands:
            if band.rect.intersects(exposed):
                band.paint(painter)
        if not self.highlights:
            return
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        m = 3.0 / max(lod, 1e-9)   # at least ~6 px across on screen
        painter.setPen(Qt.PenStyle.NoPen)
        nodes = self._layout.nodes
        for name, colour in self.highlights.items():
            b = nodes.get(name)
            if b is None:
                continue
            hw, hh = max(b.w / 2, m), max(b.h / 2, m)
            painter.setBrush(st.color(colour))
            painter.drawRect(QRectF(b.x + b.w / 2 - hw, b.y + b.h / 2 - hh, 2 * hw, 2 * hh))


class _Band:
    """Some of the overview's boxes or edges and the rectangle around them; drawn lazily."""

    rect = QRectF()

    def paint(self, painter: QPainter) -> None:
        """Draw the band."""

    def edge_path(self) -> QPainterPath:
        """The band's edges as one path (empty for boxes)."""
        return QPainterPath()


class _CardPart(_Band):
    """Cards: one ``drawRects`` per op colour."""

    def __init__(self, part: list, rect: QRectF, ops: dict[str, str]):
        self.rect = rect
        self._part, self._ops = part, ops
        self._rects: list | None = None

    def paint(self, painter: QPainter) -> None:
        """Draw the band's cards."""
        if self._rects is None:
            by_op: dict[str, list[QRectF]] = {}
            for b in self._part:
                by_op.setdefault(self._ops.get(b.name, "output"), []).append(QRectF(b.x, b.y, b.w, b.h))
            self._rects = [(st.op_color(op), rects) for op, rects in by_op.items()]
        for fill, rects in self._rects:
            # A cosmetic outline in the fill colour keeps a card at least a pixel wide when tiny.
            painter.setPen(_outline(fill))
            painter.setBrush(fill)
            painter.drawRects(rects)


class _FramePart(_Band):
    """Module frames (and collapsed modules): filled rectangles, outer ones first."""

    def __init__(self, part: list, rect: QRectF):
        self.rect = rect
        self._part = part
        self._fills: list | None = None

    def paint(self, painter: QPainter) -> None:
        """Draw the band's frames."""
        if self._fills is None:
            self._fills = [(QRectF(g.x, g.y, g.w, g.h), st.color(st.GROUP_COLOR) if g.collapsed
                            else st.frame_fill(g.depth)) for g in self._part]
        painter.setPen(Qt.PenStyle.NoPen)
        for rect, fill in self._fills:
            painter.fillRect(rect, fill)


class _EdgePart(_Band):
    """Edges: one prebuilt path (pyqtgraph builds it from arrays in C++)."""

    def __init__(self, routes: list, rect: QRectF):
        self._routes = routes
        self._path: QPainterPath | None = None
        self.rect = rect

    def edge_path(self) -> QPainterPath:
        """The band's edges as one path."""
        if self._path is None:
            xs, ys, connect = [], [], []
            for e in self._routes:
                last = len(e.points) - 1
                for i, (x, y) in enumerate(e.points):
                    xs.append(x)
                    ys.append(y)
                    connect.append(i < last)
            self._path = arrayToQPath(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float),
                                      connect=np.asarray(connect, dtype=bool)) if xs else QPainterPath()
        return self._path

    def paint(self, painter: QPainter) -> None:
        """Draw the band's edges."""
        painter.setPen(st.pen(st.EDGE_COLOR, 0.0, True))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self.edge_path())


def _bands(items: list, arrays: tuple[np.ndarray, ...], size: int, make, order: np.ndarray | None = None) -> list:
    """``make(part, rect)`` for each run of ``size`` items in ``order`` (default: top to bottom by
    their boxes' ``arrays``), ``rect`` around the run's boxes."""
    x0, y0, x1, y1 = arrays
    if order is None:
        order = np.argsort(y0, kind="stable")
    out = []
    for start in range(0, len(order), size):
        idx = order[start:start + size]
        left, top = float(x0[idx].min()), float(y0[idx].min())
        rect = QRectF(left, top, float(x1[idx].max()) - left, float(y1[idx].max()) - top)
        out.append(make([items[i] for i in idx.tolist()], rect))
    return out


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
