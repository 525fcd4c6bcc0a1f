"""The minimap: a thumbnail of the whole layout in the canvas corner, with the visible area outlined.

The thumbnail is painted once per layout into an image (one rectangle per card, so it costs a few
milliseconds even at 100k nodes) and the view rectangle is drawn over it. Clicking or dragging in
the minimap centres the canvas on that point. It is translucent (the cards under it show through)
and a small toggle in its top-right corner collapses it to that toggle alone, and expands it back.
A graph much taller than wide, which one scale would squeeze into a hairline, gets a taller box
that scrolls with the view and a whole-height strip beside it (``minimap_tall.py``).
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen
from PySide6.QtWidgets import QToolButton, QWidget

from fxstudio.core.layout import Layout
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.minimap_paint import graph_bounds, thumbnail
from fxstudio.qt.canvas.minimap_tall import TallOverview, choose_scale


BACKGROUND_ALPHA = 150   # of the minimap's white ground: the canvas under it stays visible
THUMB_OPACITY = 0.75     # of the thumbnail's cards
TOGGLE_SIZE = 18


class Minimap(QWidget):
    """A thumbnail of the layout; emits ``navigate(QPointF)`` with the scene point clicked and
    ``expanded_changed(bool)`` when its toggle collapses or expands it (``set_expanded``)."""

    navigate = Signal(QPointF)
    expanded_changed = Signal(bool)
    resized = Signal()   # a new layout changed the box's size (a tall graph's box is taller)

    def __init__(self, parent: QWidget | None = None, size: tuple[int, int] = (180, 180)):
        super().__init__(parent)
        self._full_size = size
        self.setFixedSize(*size)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Minimap: click or drag to move the view")
        self.expanded = True
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("minimapToggle")
        self.toggle.setFixedSize(TOGGLE_SIZE, TOGGLE_SIZE)
        self.toggle.setAutoRaise(True)
        self.toggle.setCursor(Qt.CursorShape.ArrowCursor)
        self.toggle.clicked.connect(lambda: self.set_expanded(not self.expanded, notify=True))
        self._sync_toggle()
        self._image: QImage | None = None
        self._scene_rect = QRectF()
        self._view_rect = QRectF()
        self._scale = 1.0
        self._offset = QPointF()
        self._graph_rect = QRectF()
        self._tall: TallOverview | None = None
        self._fit_size = size   # the box that holds the whole thumbnail (taller for a tall graph)
        self._room = 1 << 20   # the height the canvas leaves for the box (``set_room``)
        self._painted: tuple | None = None   # set_layout's arguments, to paint again for a new room
        self._drag: str | None = None   # "track" or "thumb" while the left button is down

    def _box_size(self) -> tuple[int, int]:
        if self._tall is not None:
            return self._tall.box_size(self._full_size, self._room)
        return self._fit_size

    def _apply_size(self) -> None:
        """Size the box for what it shows (the toggle alone when collapsed)."""
        w, h = self._box_size() if self.expanded else (TOGGLE_SIZE, TOGGLE_SIZE)
        if (w, h) != (self.width(), self.height()):
            self.setFixedSize(w, h)
        if self._tall is not None:   # laid out for the expanded box, even while collapsed
            self._tall.place(*self._box_size(), TOGGLE_SIZE)
            self._tall.follow(self._view_rect)
            self._offset = self._tall.offset()
            self._image = self._tall.track_image()   # the whole-graph picture: the strip
        self._sync_toggle()

    def set_room(self, height: int) -> None:
        """The most height the canvas has for the box (a tall graph's box grows up to it)."""
        if height == self._room:
            return
        before = choose_scale(self._graph_rect, self._scene_rect, self._full_size, self._room)
        self._room = height
        if self._painted is not None and choose_scale(self._graph_rect, self._scene_rect, self._full_size,
                                                      height) != before:
            self.set_layout(*self._painted)
        elif self._tall is not None:
            self._apply_size()
            self.update()

    def set_expanded(self, expanded: bool, notify: bool = False) -> None:
        """Show the thumbnail (True) or only the toggle (False); ``notify`` emits ``expanded_changed``."""
        if expanded == self.expanded:
            return
        self.expanded = expanded
        self._apply_size()
        self.update()
        if notify:
            self.expanded_changed.emit(expanded)

    def _sync_toggle(self) -> None:
        self.toggle.move(self.width() - TOGGLE_SIZE, 0)
        self.toggle.setText("–" if self.expanded else "▣")
        self.toggle.setToolTip("Hide the minimap (View ▸ Minimap)" if self.expanded
                               else "Show the minimap (View ▸ Minimap)")

    def set_layout(self, layout: Layout | None, scene_rect: QRectF, ops: dict[str, str] | None = None,
                   tints: dict[str, QColor] | None = None, graph: QRectF | None = None) -> None:
        """Repaint the thumbnail for a new layout (``scene_rect``: the area it shows; ``ops``: each
        node's op kind, for its colour; ``tints``: colours by node name that replace it, the
        divergence of a run, so where a model diverges shows on the whole-graph view too;
        ``graph``: the layout's cards and frames, when the caller knows it)."""
        self._painted = (layout, scene_rect, ops, tints, graph)
        self._scene_rect = QRectF(scene_rect)
        self._graph_rect = QRectF(graph) if graph is not None else graph_bounds(layout)
        before = self._box_size()
        self._scale, box = choose_scale(self._graph_rect, scene_rect, self._full_size, self._room)
        if box is None and layout is not None:
            self._tall = TallOverview(layout, scene_rect, self._graph_rect, self._scale, ops, tints)
        else:
            self._tall = None
            self._fit_size = box or self._full_size
            w, h = self._fit_size[0] - 8, self._fit_size[1] - 8
            sw, sh = scene_rect.width() * self._scale, scene_rect.height() * self._scale
            self._offset = QPointF(4 + (w - sw) / 2, 4 + (h - sh) / 2)
            origin = QRectF(self.to_scene(QPointF(0, 0)), scene_rect.size())   # the image's pixel (0, 0)
            self._image = thumbnail(self._fit_size, layout, ops, tints, origin, self._scale, self._scale)
        self._apply_size()
        if self._box_size() != before:
            self.resized.emit()
        self.update()

    def set_view_rect(self, rect: QRectF) -> None:
        """Outline ``rect`` (the scene area the canvas shows)."""
        self._view_rect = QRectF(rect)
        if self._tall is not None:
            self._tall.follow(self._view_rect)
            self._offset = self._tall.offset()
        self.update()

    def to_scene(self, pos: QPointF) -> QPointF:
        """Scene point under minimap point ``pos``."""
        return (pos - self._offset) / self._scale + self._scene_rect.topLeft()

    def from_scene(self, pos: QPointF) -> QPointF:
        """Minimap point of scene point ``pos``."""
        return (pos - self._scene_rect.topLeft()) * self._scale + self._offset

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """The cached thumbnail over a translucent ground, the view outline and a border
        (only the toggle's ground when collapsed)."""
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(255, 255, 255, BACKGROUND_ALPHA))
        if not self.expanded:
            p.setPen(QPen(QColor(st.FRAME_BORDER), 1))
            p.drawRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5))
            return
        if self._tall is not None:
            self._tall.paint(p, self._view_rect, THUMB_OPACITY)
        elif self._image is not None:
            p.setOpacity(THUMB_OPACITY)
            p.drawImage(0, 0, self._image)
            p.setOpacity(1.0)
        if not self._view_rect.isEmpty() and self._tall is None:
            r = QRectF(self.from_scene(self._view_rect.topLeft()), self.from_scene(self._view_rect.bottomRight()))
            r = r.intersected(QRectF(self.rect()).adjusted(1, 1, -1, -1))
            p.setPen(QPen(QColor(st.CURRENT_MATCH), 1.5))
            p.setBrush(QColor(224, 122, 16, 40))
            p.drawRect(r)
        p.setPen(QPen(QColor(st.FRAME_BORDER), 1))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5))

    def _navigate_to(self, pos: QPointF) -> None:
        if self._drag == "track" and self._tall is not None:   # the strip: that height of the graph, the view's x kept
            x = self._view_rect.center().x() if not self._view_rect.isEmpty() else self._graph_rect.center().x()
            self.navigate.emit(QPointF(x, self._tall.scene_y_at_track(pos.y())))
        else:
            self.navigate.emit(self.to_scene(pos))

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Centre the canvas on the clicked point (of the whole-height strip: on that height)."""
        if event.button() == Qt.MouseButton.LeftButton and self.expanded:
            tall = self._tall
            self._drag = "track" if tall is not None and tall.track.adjusted(-3, 0, 3, 0).contains(event.position()) \
                else "thumb"
            if tall is not None and self._drag == "thumb":
                tall.frozen = True
            self._navigate_to(event.position())
            event.accept()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Dragging keeps centring the canvas under the cursor."""
        if event.buttons() & Qt.MouseButton.LeftButton and self.expanded and self._drag is not None:
            self._navigate_to(event.position())
            event.accept()

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """The end of a drag: a tall graph's thumbnail follows the view again."""
        if event.button() == Qt.MouseButton.LeftButton and self._drag is not None:
            self._drag = None
            if self._tall is not None:
                self._tall.frozen = False
                self.set_view_rect(self._view_rect)
            event.accept()

    def report(self) -> dict:
        """What the box shows, in its own pixels (for ``--test-geometry``): ``graph_rect`` (the
        graph as drawn, within the thumbnail), ``view_rect`` (the view's outline as drawn),
        ``track`` (a tall graph's whole-height strip, else None), ``scale`` and ``tall``."""
        def box(r: QRectF | None) -> list[int] | None:
            return None if r is None or r.isEmpty() else [round(r.x()), round(r.y()), round(r.width()), round(r.height())]

        inner = QRectF(self.rect()).adjusted(1, 1, -1, -1)
        if self._tall is not None:
            graph, area = self._tall.graph_rect(), self._tall.area
        else:
            graph = QRectF(self.from_scene(self._graph_rect.topLeft()), self.from_scene(self._graph_rect.bottomRight()))
            area = inner
        view = QRectF(self.from_scene(self._view_rect.topLeft()), self.from_scene(self._view_rect.bottomRight()))
        return {"graph_rect": box(graph.intersected(area)), "view_rect": box(view.intersected(area.adjusted(1, 1, -1, -1))),
                "track": box(self._tall.track) if self._tall is not None else None,
                "scale": self._scale, "tall": self._tall is not None, "expanded": self.expanded}
