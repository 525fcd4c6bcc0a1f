"""Painting the minimap's thumbnails: the layout's frames and cards as plain rectangles in their op
colours, with a run's divergence tints over them, at any scale (the two axes may differ, for the
whole-height strip of a tall graph) and, for a band of a tall graph, only what lies in a range of y.
"""

from __future__ import annotations

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
    for g in layout.groups.values():
        if g.y <= hi and g.y + g.h >= lo:
            p.fillRect(QRectF(g.x, g.y, g.w, g.h), st.frame_fill(g.depth + 1) if not g.collapsed
                       else st.color(st.GROUP_COLOR))
    min_w, min_h = 1.0 / sx, 1.0 / sy
    by_op: dict[str, list[QRectF]] = {}
    ops = ops or {}
    nodes = layout.nodes
    for name, b in (nodes.items() if names is None else ((n, nodes[n]) for n in names)):
        if b.y <= hi and b.y + max(b.h, min_h) >= lo:
            by_op.setdefault(ops.get(name, ""), []).append(QRectF(b.x, b.y, max(b.w, min_w), max(b.h, min_h)))
    for op, rects in by_op.items():
        p.setBrush(st.op_color(op) if op else QColor("#6b7f99"))
        p.drawRects(rects)
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
