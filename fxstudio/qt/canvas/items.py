"""The items drawn on the canvas: node cards with input ports, edges, module frames, collapsed modules.

Items only paint; they never touch the graph. Each paint checks the level of detail (the view's
scale) first, so a zoomed-out view of a big graph costs a filled rectangle per card and a
polyline per edge, and the BSP index of the scene skips every item outside the view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPainterPath, QPainterPathStroker, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from fxstudio.core.layout_types import EdgeRoute, GroupBox, NodeBox
from fxstudio.qt.canvas import style as st


@dataclass(frozen=True)
class PortSpec:
    """One node-valued input of a card: ``key`` (arg position or keyword), the feeding node's name,
    and ``path``, the index inside a list/tuple argument (``()`` when the argument is the node itself)."""

    key: int | str
    src: str
    path: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """What the port shows: ``0``, ``1``, ``alpha``, or ``0[1]`` inside a list argument."""
        return str(self.key) + "".join(f"[{i}]" for i in self.path)


@dataclass
class CardInfo:
    """What a node card shows, taken from the FX node when the scene is built or an event arrives."""

    name: str
    node_id: int
    op: str
    target: str
    shape: str
    ports: list[PortSpec] = field(default_factory=list)


def _lod(painter: QPainter) -> float:
    return QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())


class NodeCard(QGraphicsItem):
    """A node's card: a header in its op colour with the name, the target and output shape below,
    and one input port per node-valued input on the top edge."""

    def __init__(self, info: CardInfo, box: NodeBox):
        super().__init__()
        self.info = info
        self.selected = False
        self.match = 0            # 0: no search match, 1: a match, 2: the current match
        self.drag_state = ""      # rewire feedback: "", "legal", "hover", "cycle"
        self._elided: dict[str, str] = {}
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, False)
        self.setZValue(2)
        self.set_box(box)

    # -- geometry -----------------------------------------------------------------------------
    def set_box(self, box: NodeBox) -> None:
        """Move/resize the card to ``box`` (scene coordinates)."""
        size_changed = not hasattr(self, "_rect") or (self._rect.width(), self._rect.height()) != (box.w, box.h)
        if size_changed:
            self.prepareGeometryChange()
            self._rect = QRectF(0, 0, box.w, box.h)
            self._elided.clear()
        self.setPos(box.x, box.y)

    def size(self) -> tuple[float, float]:
        """(width, height) of the card."""
        return (self._rect.width(), self._rect.height())

    def set_info(self, info: CardInfo) -> None:
        """Show new node content (after an edit changed its target, arguments or name)."""
        self.info = info
        self._elided.clear()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The card plus room above it for port labels and the selection outline."""
        return self._rect.adjusted(-4, -14, 4, 4)

    def port_pos(self, index: int) -> QPointF:
        """Scene position of input port ``index`` (ports are spread evenly along the top edge)."""
        n = len(self.info.ports)
        w = self._rect.width()
        return self.scenePos() + QPointF(w * (index + 1) / (n + 1), 0.0)

    def port_pos_for(self, src: str, key: int | str) -> QPointF | None:
        """Scene position of the port fed by ``src`` at ``key``, or None."""
        for i, p in enumerate(self.info.ports):
            if p.src == src and p.key == key:
                return self.port_pos(i)
        return None

    def port_at(self, scene_pos: QPointF, radius: float = 9.0) -> int | None:
        """Index of the port within ``radius`` scene units of ``scene_pos``, or None."""
        best, best_d = None, radius * radius
        for i in range(len(self.info.ports)):
            d = self.port_pos(i) - scene_pos
            dd = d.x() * d.x() + d.y() * d.y()
            if dd <= best_d:
                best, best_d = i, dd
        return best

    # -- painting -----------------------------------------------------------------------------
    def _elide(self, role: str, text: str, width: float) -> str:
        key = role + "\0" + text
        if key not in self._elided:
            self._elided[key] = QFontMetricsF(st.font(role)).elidedText(text, Qt.TextElideMode.ElideRight, width)
        return self._elided[key]

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: D102 (Qt override)
        r = self._rect
        head = st.op_color(self.info.op)
        lod = _lod(painter)
        if lod < st.LOD_PLAIN:
            painter.fillRect(r, st.color(self._plain_color()) if self._plain_color() else head)
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        self._paint_highlight(painter, r)
        # Body and header band.
        painter.setPen(st.pen(st.CARD_BORDER, 1.0))
        painter.setBrush(st.brush(st.CARD_BODY))
        painter.drawRoundedRect(r, st.CORNER_R, st.CORNER_R)
        hh = min(st.HEADER_H, r.height())
        header = QPainterPath()
        header.addRoundedRect(QRectF(r.x(), r.y(), r.width(), hh + st.CORNER_R), st.CORNER_R, st.CORNER_R)
        clip = QPainterPath()
        clip.addRect(QRectF(r.x(), r.y(), r.width(), hh))
        painter.fillPath(header.intersected(clip), head)
        if self.drag_state == "cycle":
            painter.fillRect(r, st.color("#40d13c3c"))
        pad = 7.0
        painter.setPen(st.pen("#ffffff"))
        painter.setFont(st.font("title"))
        painter.drawText(QRectF(r.x() + pad, r.y(), r.width() - 2 * pad, hh),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         self._elide("title", self.info.name, r.width() - 2 * pad))
        if lod >= st.LOD_LABELS:
            body_h = r.height() - hh
            painter.setFont(st.font("body"))
            lines = [(self.info.target, st.TEXT_DARK), (self.info.shape, st.TEXT_MUTED)]
            lines = [(t, c) for t, c in lines if t]
            if lines and body_h > 8:
                line_h = body_h / len(lines)
                for i, (text, colour) in enumerate(lines):
                    painter.setPen(st.pen(colour))
                    painter.drawText(QRectF(r.x() + pad, r.y() + hh + i * line_h, r.width() - 2 * pad, line_h),
                                     Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                                     self._elide("body", text, r.width() - 2 * pad))
            self._paint_ports(painter, lod)
        self._paint_outline(painter, r)

    def _plain_color(self) -> str:
        if self.drag_state == "cycle":
            return st.CYCLE
        if self.selected:
            return st.SELECTED
        if self.match:
            return st.CURRENT_MATCH if self.match == 2 else st.MATCH
        return ""

    def _paint_highlight(self, painter: QPainter, r: QRectF) -> None:
        if self.match:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(st.brush(st.CURRENT_MATCH if self.match == 2 else st.MATCH))
            painter.drawRoundedRect(r.adjusted(-4, -4, 4, 4), st.CORNER_R + 3, st.CORNER_R + 3)

    def _paint_outline(self, painter: QPainter, r: QRectF) -> None:
        colour = {"legal": st.LEGAL_SOURCE, "hover": st.LEGAL_SOURCE, "cycle": st.CYCLE}.get(self.drag_state)
        width = 3.0 if self.drag_state in ("hover", "cycle") else 1.6
        if colour is None and self.selected:
            colour, width = st.SELECTED, 2.6
        if colour is None:
            return
        painter.setPen(st.pen(colour, width))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRoundedRect(r.adjusted(-1, -1, 1, 1), st.CORNER_R + 1, st.CORNER_R + 1)

    def _paint_ports(self, painter: QPainter, lod: float) -> None:
        painter.setPen(st.pen(st.PORT_BORDER, 1.2))
        painter.setBrush(st.brush(st.PORT_FILL))
        n = len(self.info.ports)
        w = self._rect.width()
        show_labels = lod >= st.LOD_DETAIL and n > 0
        for i, port in enumerate(self.info.ports):
            x = w * (i + 1) / (n + 1)
            painter.drawEllipse(QPointF(x, 0.0), st.PORT_R, st.PORT_R)
        if show_labels:
            painter.setFont(st.font("small"))
            painter.setPen(st.pen(st.TEXT_MUTED))
            for i, port in enumerate(self.info.ports):
                x = w * (i + 1) / (n + 1)
                painter.drawText(QPointF(x + st.PORT_R + 2, -3.0), port.label)


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

    def shape(self) -> QPainterPath:  # noqa: D102 (Qt override): a thin band around the route
        stroker = QPainterPathStroker()
        stroker.setWidth(8.0)
        return stroker.createStroke(self._rounded())

    def _rounded(self) -> QPainterPath:
        if self._path is None:
            self._path = _rounded_path(self.polygon())
        return self._path

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: D102 (Qt override)
        lod = _lod(painter)
        poly = self.polygon()
        if lod < st.LOD_PLAIN:
            painter.setPen(st.pen(st.EDGE_COLOR, 0.0, True))
            painter.drawPolyline(poly)
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(st.pen(st.EDGE_COLOR, 1.2))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._rounded())
        n = poly.size()
        if n >= 2:
            tip, prev = poly[n - 1], poly[n - 2]
            d = tip - prev
            length = max((d.x() ** 2 + d.y() ** 2) ** 0.5, 1e-6)
            ux, uy = d.x() / length, d.y() / length
            a = st.ARROW
            base = QPointF(tip.x() - ux * a * 1.4, tip.y() - uy * a * 1.4)
            head = QPolygonF([tip, QPointF(base.x() - uy * a * 0.6, base.y() + ux * a * 0.6),
                              QPointF(base.x() + uy * a * 0.6, base.y() - ux * a * 0.6)])
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(st.brush(st.EDGE_COLOR))
            painter.drawPolygon(head)
        if self.label and lod >= st.LOD_DETAIL:
            if self._label_pos is None:
                self._label_pos = _label_anchor(poly)
            painter.setFont(st.font("small"))
            painter.setPen(st.pen(st.EDGE_LABEL))
            painter.drawText(self._label_pos + QPointF(5, 3), self.label)


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


class GroupFrame(QGraphicsItem):
    """The frame of an expanded module group, with its label and a collapse toggle."""

    def __init__(self, group: GroupBox):
        super().__init__()
        self.group = group
        self.setZValue(-10 + min(group.depth, 9) * 0.1)
        self.set_group(group)

    def set_group(self, group: GroupBox) -> None:
        """Move/resize the frame to ``group``."""
        self.prepareGeometryChange()
        self.group = group
        self._rect = QRectF(0, 0, group.w, group.h)
        self.setPos(group.x, group.y)

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The frame's rectangle."""
        return self._rect.adjusted(-1, -1, 1, 1)

    def toggle_rect(self) -> QRectF:
        """Scene rectangle of the collapse toggle (top-left corner)."""
        return QRectF(self.scenePos() + QPointF(5, 3), self.scenePos() + QPointF(5 + st.TOGGLE, 3 + st.TOGGLE))

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: D102 (Qt override)
        lod = _lod(painter)
        fill = st.frame_fill(self.group.depth)
        if lod < st.LOD_PLAIN:
            painter.fillRect(self._rect, fill)
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(st.pen(st.FRAME_BORDER, 1.0))
        painter.setBrush(fill)
        painter.drawRoundedRect(self._rect, 7, 7)
        if lod >= st.LOD_LABELS:
            _paint_toggle(painter, QRectF(5, 3, st.TOGGLE, st.TOGGLE), expanded=True)
            painter.setPen(st.pen(st.FRAME_TEXT))
            painter.setFont(st.font("frame"))
            text = QFontMetricsF(st.font("frame")).elidedText(
                self.group.label, Qt.TextElideMode.ElideRight, self._rect.width() - st.TOGGLE - 16)
            painter.drawText(QRectF(st.TOGGLE + 10, 2, self._rect.width() - st.TOGGLE - 14, st.FRAME_LABEL_H - 2),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)


class GroupCard(QGraphicsItem):
    """A collapsed module group shown as one card, with an expand toggle."""

    def __init__(self, group: GroupBox):
        super().__init__()
        self.group = group
        self.selected = False
        self.setZValue(2)
        self.set_group(group)

    def set_group(self, group: GroupBox) -> None:
        """Move/resize the card to ``group``."""
        self.prepareGeometryChange()
        self.group = group
        self._rect = QRectF(0, 0, group.w, group.h)
        self.setPos(group.x, group.y)

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The card's rectangle."""
        return self._rect.adjusted(-2, -2, 2, 2)

    def toggle_rect(self) -> QRectF:
        """Scene rectangle of the expand toggle."""
        return QRectF(self.scenePos() + QPointF(5, 4), self.scenePos() + QPointF(5 + st.TOGGLE, 4 + st.TOGGLE))

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: D102 (Qt override)
        r = self._rect
        lod = _lod(painter)
        if lod < st.LOD_PLAIN:
            painter.fillRect(r, st.color(st.GROUP_COLOR))
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(st.pen(st.GROUP_COLOR, 1.2))
        # A second card offset behind suggests a stack of folded nodes.
        painter.setBrush(st.frame_fill(self.group.depth + 2))
        painter.drawRoundedRect(r.adjusted(3, 3, 3, 3), st.CORNER_R, st.CORNER_R)
        painter.setBrush(st.frame_fill(self.group.depth))
        painter.drawRoundedRect(r, st.CORNER_R, st.CORNER_R)
        _paint_toggle(painter, QRectF(5, 4, st.TOGGLE, st.TOGGLE), expanded=False)
        painter.setPen(st.pen(st.TEXT_DARK))
        painter.setFont(st.font("title"))
        fm = QFontMetricsF(st.font("title"))
        painter.drawText(QRectF(st.TOGGLE + 10, 2, r.width() - st.TOGGLE - 14, st.HEADER_H),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         fm.elidedText(self.group.label, Qt.TextElideMode.ElideRight, r.width() - st.TOGGLE - 16))
        if lod < st.LOD_LABELS:
            return
        painter.setPen(st.pen(st.TEXT_MUTED))
        painter.setFont(st.font("body"))
        painter.drawText(QRectF(8, st.HEADER_H, r.width() - 16, r.height() - st.HEADER_H),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         f"{self.group.members} nodes (collapsed)")


def _paint_toggle(painter: QPainter, r: QRectF, expanded: bool) -> None:
    painter.setPen(st.pen(st.FRAME_BORDER, 1.0))
    painter.setBrush(st.brush("#ffffff"))
    painter.drawRoundedRect(r, 3, 3)
    painter.setPen(st.pen(st.FRAME_TEXT, 1.6))
    c = r.center()
    painter.drawLine(QPointF(c.x() - 3.5, c.y()), QPointF(c.x() + 3.5, c.y()))
    if not expanded:
        painter.drawLine(QPointF(c.x(), c.y() - 3.5), QPointF(c.x(), c.y() + 3.5))
