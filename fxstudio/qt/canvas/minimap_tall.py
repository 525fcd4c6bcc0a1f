"""The minimap of a graph much taller than wide (a deep chain of blocks): a scrolling overview.

Squeezed whole into the minimap's box at one scale, such a graph is a hairline. A graph that fits
a narrower box up to twice as tall as the usual one at a width where its columns show is drawn
whole in that box; a taller one is drawn at the scale that makes it ``MIN_GRAPH_PX`` wide, in such
a box, showing the stretch of graph around the view and scrolling with it (as a code editor's minimap
does); a strip at the box's right edge is the whole height squeezed (columns pressed into a few
pixels, a run's divergence tints kept), with the part the box shows bracketed and the view marked.
Clicking the strip jumps to that height of the graph; clicking the thumbnail centres the view there.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QImage, QPainter, QPen

from fxstudio.core.layout import Layout
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.minimap_paint import thumbnail

MIN_GRAPH_PX = 32     # the graph's drawn width at least: its columns (and cards) stay apart
MIN_FIT_PX = 24       # ... unless the whole graph fits a taller box at this width (no scrolling)
TRACK_W = 9           # the whole-height strip
TALL_FACTOR = 2.0     # the box grows up to this many times its usual height
MIN_BOX_H = 120
MIN_BOX_W = 110       # a narrow graph's box is narrower than the usual one, as it is taller
BAND_SCREENS = 3      # the cached thumbnail covers this many boxes' heights around the one shown


def choose_scale(graph: QRectF, scene: QRectF, usual: tuple[int, int], room: int) -> tuple[float, tuple[int, int] | None]:
    """How a minimap of ``usual`` (w, h) pixels shows ``scene`` (``graph``: the cards and frames
    in it; ``room``: the most height the canvas has for the box): ``(scale, (w, h))``, the whole
    scene fitted into a box of that size (the usual one, or a narrower one up to ``TALL_FACTOR``
    times as tall, which still draws ``graph`` ``MIN_FIT_PX`` wide), or ``(scale, None)``: too tall
    for either, the scrolling overview at that scale."""
    w, h = usual[0] - 8, usual[1] - 8
    sw, sh = max(scene.width(), 1.0), max(scene.height(), 1.0)
    fit = min(w / sw, h / sh)
    if graph.isEmpty() or graph.width() * fit >= MIN_GRAPH_PX or h / sh >= w / sw:
        return fit, usual
    tall_h = min(usual[1] * TALL_FACTOR, room) - 8
    taller = min(w / sw, tall_h / sh)
    if graph.width() * taller >= MIN_FIT_PX:
        return taller, (min(usual[0], max(MIN_BOX_W, math.ceil(sw * taller) + 8)), math.ceil(sh * taller) + 8)
    return max(fit, min((w - TRACK_W - 4) / sw, MIN_GRAPH_PX / graph.width())), None


class TallOverview:
    """Geometry and painting of the scrolling overview for a ``Minimap`` of size ``box``:
    ``area`` (the thumbnail's part of the box), ``track`` (the whole-height strip), ``scroll``
    (pixels of drawn graph above the area's top) and ``frozen`` (a drag in the thumbnail: the
    stretch shown stays put, or it would run away under the pointer)."""

    def __init__(self, layout: Layout, scene: QRectF, graph: QRectF, scale: float,
                 ops: dict[str, str] | None, tints: dict[str, QColor] | None):
        self.layout, self.scene, self.graph, self.scale = layout, QRectF(scene), QRectF(graph), scale
        self.ops, self.tints = ops, tints
        self.content_h = max(scene.height(), 1.0) * scale
        self.area = QRectF()
        self.track = QRectF()
        self.scroll = 0.0
        self.frozen = False
        self._band: tuple[float, QImage] | None = None   # (content y of its top, image)
        self._track_image: QImage | None = None
        # The cards by their top, to find those of a band without looking at all 100k of them.
        self._tops = sorted((b.y, name) for name, b in layout.nodes.items())
        self._tallest = max((b.h for b in layout.nodes.values()), default=0.0)

    def box_size(self, usual: tuple[int, int], room: int) -> tuple[int, int]:
        """The box's size: as wide as the drawn graph and the strip need (``MIN_BOX_W`` at least,
        the ``usual`` width at most); as tall as the graph needs, up to ``TALL_FACTOR`` × the
        usual height and ``room``."""
        w = min(usual[0], max(MIN_BOX_W, int(self.scene.width() * self.scale) + TRACK_W + 16))
        h = max(min(self.content_h + 8, usual[1] * TALL_FACTOR, room), min(usual[1], MIN_BOX_H))
        return w, int(h)

    def place(self, width: int, height: int, top_reserved: int) -> None:
        """Lay out the thumbnail area and the strip in a ``width`` × ``height`` box; the strip
        starts below ``top_reserved`` pixels (the toggle)."""
        self.area = QRectF(4, 4, width - 8 - TRACK_W - 4, height - 8)
        self.track = QRectF(width - 4 - TRACK_W, top_reserved + 4, TRACK_W, height - top_reserved - 8)
        self._band = None
        self._track_image = None
        self.scroll = min(self.scroll, self.max_scroll())

    def max_scroll(self) -> float:
        """How far the drawn graph scrolls (0 when the area holds it all)."""
        return max(self.content_h - self.area.height(), 0.0)

    def follow(self, view: QRectF) -> None:
        """Scroll so the view's centre is in the middle of the area (clamped to the graph's ends)."""
        if self.frozen or view.isEmpty():
            return
        y = (view.center().y() - self.scene.top()) * self.scale - self.area.height() / 2
        self.scroll = min(max(y, 0.0), self.max_scroll())

    def offset(self) -> QPointF:
        """Minimap point of the scene rectangle's top-left corner (the graph centred across the area)."""
        return QPointF(self.area.left() + (self.area.width() - self.scene.width() * self.scale) / 2,
                       self.area.top() - self.scroll)

    def track_y(self, scene_y: float) -> float:
        """The strip's y for a scene y."""
        return self.track.top() + (scene_y - self.scene.top()) / max(self.scene.height(), 1.0) * self.track.height()

    def scene_y_at_track(self, y: float) -> float:
        """The scene y a point of the strip stands for."""
        f = min(max((y - self.track.top()) / max(self.track.height(), 1.0), 0.0), 1.0)
        return self.scene.top() + f * self.scene.height()

    def shown(self) -> QRectF:
        """The scene rectangle the thumbnail area shows."""
        off = self.offset()
        top_left = (self.area.topLeft() - off) / self.scale + self.scene.topLeft()
        return QRectF(top_left.x(), top_left.y(), self.area.width() / self.scale, self.area.height() / self.scale)

    def _band_image(self) -> tuple[float, QImage]:
        """The cached stretch of thumbnail around the area, repainted when the area leaves it."""
        h = self.area.height()
        if self._band is not None:
            top, img = self._band
            if top <= self.scroll and self.scroll + h <= top + img.height():
                return self._band
        top = max(self.scroll - h * (BAND_SCREENS - 1) / 2, 0.0)
        band_h = int(h * BAND_SCREENS) + 2
        origin = QRectF((self.area.left() - self.offset().x()) / self.scale + self.scene.left(),
                        self.scene.top() + top / self.scale, 1, 1)
        span = (origin.top(), origin.top() + band_h / self.scale)
        i0 = bisect_left(self._tops, (span[0] - self._tallest - 1 / self.scale,))
        i1 = bisect_right(self._tops, (span[1], "\uffff"))
        img = thumbnail((int(self.area.width()), band_h), self.layout, self.ops, self.tints, origin,
                        self.scale, self.scale, span, [name for _, name in self._tops[i0:i1]])
        self._band = (top, img)
        return self._band

    def paint(self, p: QPainter, view: QRectF, thumb_opacity: float) -> QRectF | None:
        """Paint the thumbnail's stretch, the strip and their view marks; returns the view
        rectangle as drawn in the area (None when it is not in the area)."""
        top, img = self._band_image()
        p.save()
        p.setClipRect(self.area)
        p.setOpacity(thumb_opacity)
        p.drawImage(QPointF(self.area.left(), self.area.top() + top - self.scroll), img)
        p.setOpacity(1.0)
        drawn = None
        if not view.isEmpty():
            off = self.offset()
            r = QRectF((view.topLeft() - self.scene.topLeft()) * self.scale + off,
                       (view.bottomRight() - self.scene.topLeft()) * self.scale + off)
            drawn = r.intersected(self.area.adjusted(1, 1, -1, -1))
            if not drawn.isEmpty():
                p.setPen(QPen(QColor(st.CURRENT_MATCH), 1.5))
                p.setBrush(QColor(224, 122, 16, 40))
                p.drawRect(drawn)
            else:
                drawn = None
        p.restore()
        self._paint_track(p, view)
        return drawn

    def track_image(self) -> QImage:
        """The whole graph squeezed into the strip (painted once per layout and box size)."""
        if self._track_image is None:
            t = self.track
            sw, sh = max(self.scene.width(), 1.0), max(self.scene.height(), 1.0)
            # One colour: at many cards to a pixel, op colours would only show which was drawn last.
            self._track_image = thumbnail((int(t.width()), int(t.height())), self.layout, None, self.tints,
                                          self.scene, t.width() / sw, t.height() / sh)
        return self._track_image

    def _paint_track(self, p: QPainter, view: QRectF) -> None:
        t = self.track
        p.fillRect(t, QColor(90, 100, 120, 30))
        p.drawImage(t.topLeft(), self.track_image())
        shown = self.shown()
        y0, y1 = self.track_y(shown.top()), self.track_y(shown.bottom())
        p.setPen(QPen(QColor(70, 80, 100, 170), 1))
        p.setBrush(QColor(70, 80, 100, 40))
        p.drawRect(QRectF(t.left() - 1.5, max(y0, t.top()), t.width() + 3, max(min(y1, t.bottom()) - max(y0, t.top()), 2)))
        if not view.isEmpty():
            v0, v1 = self.track_y(view.top()), self.track_y(view.bottom())
            mid, h = (v0 + v1) / 2, max(v1 - v0, 4.0)
            mid = min(max(mid, t.top() + h / 2), t.bottom() - h / 2)
            p.setPen(QPen(QColor(st.CURRENT_MATCH), 1))
            p.setBrush(QColor(st.CURRENT_MATCH))
            p.drawRect(QRectF(t.left() - 2, mid - h / 2, t.width() + 4, h))

    def graph_rect(self) -> QRectF:
        """The graph's drawn rectangle, clipped to the area (for tests: is it readable?)."""
        off = self.offset()
        r = QRectF((self.graph.topLeft() - self.scene.topLeft()) * self.scale + off,
                   (self.graph.bottomRight() - self.scene.topLeft()) * self.scale + off)
        return r.intersected(self.area)
