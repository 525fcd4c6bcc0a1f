"""Painting the minimap's thumbnails: the layout's frames and cards as plain rectangles in their op
colours, with a run's divergence tints over them, at any scale (the two axes may differ, for the
whole-height strip of a tall graph) and, for a band of a tall graph, only what lies in a range of y.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter

from fxstudio.core.layout import Layout
from fxstudio.qt.canvas import style as st


def graph_bounds(layout: Layout | None) -> QRectF:
    """The scene rectangle of the layout's cards and frames (empty for no layout)."""
    boxes = list(layout.nodes.values()) + list(layout.groups.values()) if layout is not None else []
    if not boxes:
        return QRectF()
    x0, y0 = min(b.x for b in boxes), min(b.y for b in boxes)
    x1, y1 = max(b.x + b.w for b in boxes), max(b.y + b.h for b in boxes)
    return QRectF(x0, y0, x1 - x0, y1 - y0)


def paint_layout(p: QPainter, layout: Layout, ops: dict[str, str] | None, tints: dict[str, QColor] | None,
                 sx: float, sy: float, y_range: tuple[float, float] | None = None,
                 names: list[str] | None = None) -> None:
    """Paint ``layout`` with ``p`` already transformed to scene units, drawn at ``sx`` × ``sy``
    pixels per unit: every card a pixel at least on each axis (a long chain still shows as a
    line), a tinted card 3 px at least (a divergence is visible at any size). ``y_range``: only
    what overlaps these scene ys; ``names``: only these cards (those near ``y_range``, found
    without looking at every card). ``ops`` None: every card in one slate colour."""
    lo, hi = y_range if y_range is not None else (float("-inf"), float("inf"))
    p.setPen(Qt.PenStyle.NoPen)
    min_w, min_h = 1.0 / sx, 1.0 / sy
    # Frames one drawRects per fill (outer depths first, inner ones over them), cards one per op:
    # a 200k-node graph is a few calls, its rectangles made from arrays cached per layout.
    geo = _geometry(layout)
    fx, fy, fw, fh = geo.frames
    near = (fy <= hi) & (fy + fh >= lo)
    for key in np.unique(geo.fill_keys[near]).tolist():
        sel = np.flatnonzero(near & (geo.fill_keys == key))
        depth, collapsed = divmod(key, 2)
        p.setBrush(st.frame_fill(depth + 1) if not collapsed else st.color(st.GROUP_COLOR))
        p.drawRects(_pixel_rects(fx[sel], fy[sel], fw[sel], fh[sel], min_w, min_h))
    cx, cy, cw, ch = geo.cards
    if names is None:
        idx = np.arange(len(geo.names))
    else:
        pos = geo.positions()
        idx = np.fromiter((pos[n] for n in names), np.int64, len(names))
    x, y = cx[idx], cy[idx]
    w, h = np.maximum(cw[idx], min_w), np.maximum(ch[idx], min_h)
    keep = (y <= hi) & (y + h >= lo)
    kinds, codes = geo.op_codes(ops)
    codes = codes[idx]
    for code, op in enumerate(kinds):
        sel = np.flatnonzero(keep & (codes == code))
        if len(sel):
            p.setBrush(st.op_color(op) if op else QColor("#6b7f99"))
            p.drawRects(_pixel_rects(x[sel], y[sel], w[sel], h[sel], min_w, min_h))
    by_tint: dict[int, tuple[QColor, list[QRectF]]] = {}
    mx, my = 1.5 / sx, 1.5 / sy
    for name, colour in (tints or {}).items():
        b = layout.nodes.get(name)
        if b is not None and b.y - my <= hi and b.y + b.h + my >= lo:
            cx, cy = b.x + b.w / 2, b.y + b.h / 2
            w, h = max(b.w / 2, mx), max(b.h / 2, my)
            by_tint.setdefault(colour.rgba(), (colour, []))[1].append(QRectF(cx - w, cy - h, 2 * w, 2 * h))
    for colour, rects in by_tint.values():
        p.setBrush(colour)
        p.drawRects(rects)


class _Geometry:
    """A layout's cards (in layout order) and frames as arrays, and op-kind codes per ``ops``."""

    def __init__(self, layout: Layout):
        self.names = list(layout.nodes)
        self.cards = _xywh(list(layout.nodes.values()))
        groups = list(layout.groups.values())
        self.frames = _xywh(groups)
        # One key per fill: depth * 2 + collapsed (sorted keys draw outer frames first).
        self.fill_keys = np.fromiter((g.depth * 2 + bool(g.collapsed) for g in groups), np.int64, len(groups))
        self._pos: dict[str, int] | None = None
        self._codes: tuple | None = None

    def positions(self) -> dict[str, int]:
        """Card name → its index in the arrays."""
        if self._pos is None:
            self._pos = {n: i for i, n in enumerate(self.names)}
        return self._pos

    def op_codes(self, ops: dict[str, str] | None) -> tuple[list[str], np.ndarray]:
        """(kinds, codes): each card's op kind as an index into ``kinds`` (one kind without ``ops``)."""
        if not ops:
            return [""], np.zeros(len(self.names), np.int64)
        if self._codes is None or self._codes[0] is not ops:
            code_of: dict[str, int] = {}
            codes = np.fromiter((code_of.setdefault(ops.get(n, ""), len(code_of)) for n in self.names),
                                np.int64, len(self.names))
            self._codes = (ops, list(code_of), codes)
        return self._codes[1], self._codes[2]


def _xywh(boxes: list) -> tuple[np.ndarray, ...]:
    return tuple(np.fromiter(map(attrgetter(a), boxes), float, len(boxes)) for a in "xywh")


_RECENT: list[tuple] = []   # (layout, _Geometry), newest last: a layout's thumbnails share them


def _geometry(layout: Layout) -> _Geometry:
    for seen, geo in _RECENT:
        if seen is layout:
            return geo
    geo = _Geometry(layout)
    _RECENT[:] = _RECENT[-1:] + [(layout, geo)]
    return geo


def _pixel_rects(x, y, w, h, min_w: float, min_h: float) -> list[QRectF]:
    """The rectangles to draw; many cards a pixel or less across (a big graph in a thumbnail) are
    snapped to the pixel grid and drawn once per pixel."""
    small = (w <= min_w * 1.5) & (h <= min_h * 1.5)
    if small.sum() > 4096:
        gx, gy = np.floor(x[small] / min_w), np.floor(y[small] / min_h)
        cells = np.unique(np.stack([gx, gy], axis=1), axis=0)
        big = ~small
        xs = np.concatenate([cells[:, 0] * min_w, x[big]])
        ys = np.concatenate([cells[:, 1] * min_h, y[big]])
        ws = np.concatenate([np.full(len(cells), min_w), w[big]])
        hs = np.concatenate([np.full(len(cells), min_h), h[big]])
        x, y, w, h = xs, ys, ws, hs
    return list(map(QRectF, x.tolist(), y.tolist(), w.tolist(), h.tolist()))


def thumbnail(size: tuple[int, int], layout: Layout | None, ops: dict[str, str] | None,
              tints: dict[str, QColor] | None, origin: QRectF, sx: float, sy: float,
              y_range: tuple[float, float] | None = None, names: list[str] | None = None) -> QImage:
    """A transparent image of ``size`` with the layout painted so that scene point
    ``origin.topLeft()`` lands on pixel (0, 0), at ``sx`` × ``sy`` pixels per scene unit
    (``y_range``, ``names``: as for ``paint_layout``)."""
    img = QImage(max(size[0], 1), max(size[1], 1), QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    if layout is not None:
        p = QPainter(img)
        p.scale(sx, sy)
        p.translate(-origin.topLeft())
        paint_layout(p, layout, ops, tints, sx, sy, y_range, names)
        p.end()
    return img
