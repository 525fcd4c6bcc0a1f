"""An edge of the canvas: its route, arrow head and the tensor shape written beside it."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPainter, QPainterPath, QPainterPathStroker, QPolygonF
from PySide6.QtWidgets import QGraphicsItem

from fxstudio.core.layout import EdgeRoute
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.items import _lod, _metrics, _static


class EdgeItem(QGraphicsItem):
    """An edge along its layout route, ending in an arrow on the input port, with the tensor shape
    it carries written beside it when zoomed in (as Netron does).

    The polygon and path are built on first paint: a big scene creates tens of thousands of edges
    and most are never painted in detail."""

    def __init__(self, route: EdgeRoute, points: list[tuple[float, float]], label: str = ""):
        super().__init__()
        self.route = route
        self.label = label
        self.points: tuple = ()
        self.source_points: list = []   # the layout's route this edge was drawn from
        self.anchor = None              # where its input port was (the scene checks for moves)
        self.setZValue(1)
        self.set_points(points)

    def set_points(self, points) -> None:
        """Reroute the edge along ``points`` (scene coordinates, top to bottom)."""
        pts = tuple(points)
        if pts == self.points:
            return
        self.prepareGeometryChange()
        self.points = pts
        self._poly = self._path = self._label_pos = None
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        a = st.ARROW
        x0, x1 = min(xs) - a, max(xs) + a
        if self.label:   # the label sits right of a segment midpoint: ~6 units per character is ample
            x1 += 8 + 6.0 * len(self.label)
        self._bounds = QRectF(x0, min(ys) - a - 8, x1 - x0, max(ys) - min(ys) + 2 * a + 16)

    def set_label(self, label: str) -> None:
        """Show another shape beside the edge."""
        self.label = label
        pts, self.points = self.points, ()
        self.set_points(pts)   # recomputes the bounds for the new label width
        self.update()

    def polygon(self) -> QPolygonF:
        """The route as a polygon (built on demand)."""
        if self._poly is None:
            self._poly = QPolygonF([QPointF(x, y) for x, y in self.points])
        return self._poly

    def end_point(self) -> QPointF:
        """Where the edge meets its input port."""
        x, y = self.points[-1]
        return QPointF(x, y)

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The route plus the arrow head and shape label."""
        return self._bounds

    def shape(self) -> QPainterPath:
        """A thin band around the route, for hit tests (Qt override)."""
        stroker = QPainterPathStroker()
        stroker.setWidth(8.0)
        return stroker.createStroke(self._rounded())

    def _rounded(self) -> QPainterPath:
        if self._path is None:
            self._prepare()
        return self._path

    def _prepare(self) -> None:
        poly = self.polygon()
        self._path = _rounded_path(poly)
        n = poly.size()
        self._head = None
        if n >= 2:
            tip, prev = poly[n - 1], poly[n - 2]
            d = tip - prev
            length = max((d.x() ** 2 + d.y() ** 2) ** 0.5, 1e-6)
            ux, uy = d.x() / length, d.y() / length
            a = st.ARROW
            base = QPointF(tip.x() - ux * a * 1.4, tip.y() - uy * a * 1.4)
            self._head = QPolygonF([tip, QPointF(base.x() - uy * a * 0.6, base.y() + ux * a * 0.6),
                                    QPointF(base.x() + uy * a * 0.6, base.y() - ux * a * 0.6)])
        if self.label:
            self._label_text = _static(self.label, "small")
            self._label_pos = self._free_label_pos(poly)

    def _free_label_pos(self, poly: QPolygonF) -> QPointF:
        """Where the shape label goes: beside the middle of the longest segment, or the nearest
        point along the route whose label does not cover a module frame's title (an edge entering
        a frame crosses its title band). Asked on first paint: only edges on screen pay for it."""
        fm = _metrics("small")
        size = QPointF(fm.horizontalAdvance(self.label) + 2, fm.height())

        def placed(p: QPointF) -> QPointF:
            return p + QPointF(5, -size.y() / 2)

        scene = self.scene()
        first = placed(_label_anchor(poly))
        near = getattr(scene, "frame_titles_near", None)  # not scene.items(): no index queries in paint
        titles = near(self._bounds) if near is not None else []
        if not titles:
            return first
        segments = sorted(range(poly.size() - 1), key=lambda i: -_length(poly[i + 1] - poly[i]))
        for i in segments:
            for t in (0.5, 0.65, 0.35, 0.8, 0.2, 0.9, 0.1):
                pos = placed(poly[i] + (poly[i + 1] - poly[i]) * t)
                rect = QRectF(pos, pos + size)
                if not any(rect.intersects(r) for r in titles):
                    return pos
        return first

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override); cheap at low zoom."""
        lod = _lod(painter)
        if lod < st.LOD_PLAIN:
            painter.setPen(st.pen(st.EDGE_COLOR, 0.0, True))
            painter.drawPolyline(self.polygon())
            return
        if self._path is None:
            self._prepare()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(st.pen(st.EDGE_COLOR, 1.2))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._path)
        if self._head is not None:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(st.brush(st.EDGE_COLOR))
            painter.drawPolygon(self._head)
        if self.label and lod >= st.LOD_DETAIL:
            painter.setPen(st.pen(st.EDGE_LABEL))
            painter.setFont(st.font("small"))
            painter.drawStaticText(self._label_pos, self._label_text)


def _rounded_path(poly: QPolygonF, radius: float = 10.0) -> QPainterPath:
    """The polyline with its bends rounded (quadratic corners of at most ``radius``)."""
    path = QPainterPath()
    n = poly.size()
    if n == 0:
        return path
    path.moveTo(poly[0])
    for i in range(1, n - 1):
        p0, p1, p2 = poly[i - 1], poly[i], poly[i + 1]
        d0, d1 = p1 - p0, p2 - p1
        l0 = max((d0.x() ** 2 + d0.y() ** 2) ** 0.5, 1e-6)
        l1 = max((d1.x() ** 2 + d1.y() ** 2) ** 0.5, 1e-6)
        r = min(radius, l0 / 2, l1 / 2)
        a = p1 - d0 * (r / l0)
        b = p1 + d1 * (r / l1)
        path.lineTo(a)
        path.quadTo(p1, b)
    if n > 1:
        path.lineTo(poly[n - 1])
    return path


def _length(d: QPointF) -> float:
    return (d.x() ** 2 + d.y() ** 2) ** 0.5


def _label_anchor(poly: QPolygonF) -> QPointF:
    """Middle of the longest segment: where the shape label sits."""
    n = poly.size()
    if n < 2:
        return poly[0] if n else QPointF()
    best, best_len = 0, -1.0
    for i in range(n - 1):
        d = poly[i + 1] - poly[i]
        length = d.x() ** 2 + d.y() ** 2
        if length > best_len:
            best, best_len = i, length
    return (poly[best] + poly[best + 1]) / 2
