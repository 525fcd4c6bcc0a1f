"""The minimap: a thumbnail of the whole layout in the canvas corner, with the visible area outlined.

The thumbnail is painted once per layout into an image (one rectangle per card, so it costs a few
milliseconds even at 100k nodes) and the view rectangle is drawn over it. Clicking or dragging in
the minimap centres the canvas on that point. It is translucent (the cards under it show through)
and a small toggle in its top-right corner collapses it to that toggle alone, and expands it back.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen
from PySide6.QtWidgets import QToolButton, QWidget

from fxstudio.core.layout import Layout
from fxstudio.qt.canvas import style as st


BACKGROUND_ALPHA = 150   # of the minimap's white ground: the canvas under it stays visible
THUMB_OPACITY = 0.75     # of the thumbnail's cards
TOGGLE_SIZE = 18


class Minimap(QWidget):
    """A thumbnail of the layout; emits ``navigate(QPointF)`` with the scene point clicked and
    ``expanded_changed(bool)`` when its toggle collapses or expands it (``set_expanded``)."""

    navigate = Signal(QPointF)
    expanded_changed = Signal(bool)

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

    def set_expanded(self, expanded: bool, notify: bool = False) -> None:
        """Show the thumbnail (True) or only the toggle (False); ``notify`` emits ``expanded_changed``."""
        if expanded == self.expanded:
            return
        self.expanded = expanded
        w, h = self._full_size if expanded else (TOGGLE_SIZE, TOGGLE_SIZE)
        self.setFixedSize(w, h)
        self._sync_toggle()
        self.update()
        if notify:
            self.expanded_changed.emit(expanded)

    def _sync_toggle(self) -> None:
        self.toggle.move(self.width() - TOGGLE_SIZE, 0)
        self.toggle.setText("–" if self.expanded else "▣")
        self.toggle.setToolTip("Hide the minimap (View ▸ Minimap)" if self.expanded
                               else "Show the minimap (View ▸ Minimap)")

    def set_layout(self, layout: Layout | None, scene_rect: QRectF, ops: dict[str, str] | None = None,
                   tints: dict[str, QColor] | None = None) -> None:
        """Repaint the thumbnail for a new layout (``scene_rect``: the area it shows; ``ops``: each
        node's op kind, for its colour; ``tints``: colours by node name that replace it, the
        divergence of a run, so where a model diverges shows on the whole-graph view too)."""
        self._scene_rect = QRectF(scene_rect)
        width, height = self._full_size
        w, h = width - 8, height - 8
        sw, sh = max(scene_rect.width(), 1.0), max(scene_rect.height(), 1.0)
        self._scale = min(w / sw, h / sh)
        self._offset = QPointF(4 + (w - sw * self._scale) / 2, 4 + (h - sh * self._scale) / 2)
        img = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(Qt.GlobalColor.transparent)
        if layout is not None:
            p = QPainter(img)
            p.translate(self._offset)
            p.scale(self._scale, self._scale)
            p.translate(-scene_rect.topLeft())
            p.setPen(Qt.PenStyle.NoPen)
            for g in layout.groups.values():
                p.fillRect(QRectF(g.x, g.y, g.w, g.h), st.frame_fill(g.depth + 1) if not g.collapsed
                           else st.color(st.GROUP_COLOR))
            # Cards are a pixel at least, so a long chain still shows as a line.
            min_w = 1.0 / self._scale
            by_op: dict[str, list[QRectF]] = {}
            for name, b in layout.nodes.items():
                by_op.setdefault((ops or {}).get(name, ""), []).append(QRectF(b.x, b.y, max(b.w, min_w), max(b.h, min_w)))
            for op, rects in by_op.items():
                p.setBrush(st.op_color(op) if op else QColor("#6b7f99"))
                p.drawRects(rects)
            by_tint: dict[int, tuple[QColor, list[QRectF]]] = {}
            for name, colour in (tints or {}).items():
                b = layout.nodes.get(name)
                if b is not None:
                    # Tinted cards at least 3 px across: a divergence must be visible at any size.
                    m = 1.5 / self._scale
                    cx, cy = b.x + b.w / 2, b.y + b.h / 2
                    w, h = max(b.w / 2, m), max(b.h / 2, m)
                    by_tint.setdefault(colour.rgba(), (colour, []))[1].append(QRectF(cx - w, cy - h, 2 * w, 2 * h))
            for colour, rects in by_tint.values():
                p.setBrush(colour)
                p.drawRects(rects)
            p.end()
        self._image = img
        self.update()

    def set_view_rect(self, rect: QRectF) -> None:
        """Outline ``rect`` (the scene area the canvas shows)."""
        self._view_rect = QRectF(rect)
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
        if self._image is not None:
            p.setOpacity(THUMB_OPACITY)
            p.drawImage(0, 0, self._image)
            p.setOpacity(1.0)
        if not self._view_rect.isEmpty():
            r = QRectF(self.from_scene(self._view_rect.topLeft()), self.from_scene(self._view_rect.bottomRight()))
            r = r.intersected(QRectF(self.rect()).adjusted(1, 1, -1, -1))
            p.setPen(QPen(QColor(st.CURRENT_MATCH), 1.5))
            p.setBrush(QColor(224, 122, 16, 40))
            p.drawRect(r)
        p.setPen(QPen(QColor(st.FRAME_BORDER), 1))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5))

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Centre the canvas on the clicked point."""
        if event.button() == Qt.MouseButton.LeftButton and self.expanded:
            self.navigate.emit(self.to_scene(event.position()))
            event.accept()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Dragging keeps centring the canvas under the cursor."""
        if event.buttons() & Qt.MouseButton.LeftButton and self.expanded:
            self.navigate.emit(self.to_scene(event.position()))
            event.accept()
