"""Folded weights drawn as rows of a node card (``core/layout/folding.py`` decides what folds).

A convolution's card reads ``weight 64×3×7×7`` under its target and shape, one row per folded
weight, as Netron draws it. A row is the weight node's place on the canvas: clicking it selects
that node, a search match or a selection of it marks the row, and the input port it feeds sits at
the row's left end (drag it to feed that input from another card). The card's other input ports
stay on its top edge, spread over the inputs that have edges.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QStaticText

from fxstudio.core.layout import WEIGHT_ROW_H, WEIGHT_ROWS_PAD, row_label, row_shape
from fxstudio.core.node_text import META_PARAM
from fxstudio.qt.canvas import style as st

ROW_PAD = 7.0
ROW_MARK = {"selected": st.SELECTED, "match": st.MATCH, "current": st.CURRENT_MATCH}


@dataclass(frozen=True)
class WeightRow:
    """One folded weight in a card: the weight node's name and id, the row's label and shape text,
    and the weight node's op and target text (what search matches besides the name)."""

    name: str
    node_id: int
    label: str
    shape: str
    op: str = "get_attr"
    target: str = ""


def weight_rows(node, folded: tuple[str, ...], id_of) -> tuple[WeightRow, ...]:
    """The rows of ``node``'s card: its inputs named in ``folded``, in input order (``id_of(node)``
    gives a node's id)."""
    if not folded:
        return ()
    rows = []
    wanted = set(folded)
    for inp in node.all_input_nodes:
        if inp.name in wanted:
            target = str(inp.target) if inp.op == "get_attr" else str(inp.meta.get(META_PARAM) or inp.target)
            rows.append(WeightRow(inp.name, id_of(inp), row_label(inp), row_shape(inp), inp.op, target))
    return tuple(rows)


def rows_height(n: int) -> float:
    """Height of ``n`` rows at the bottom of a card (as the layout sizes the card)."""
    return n * WEIGHT_ROW_H + WEIGHT_ROWS_PAD if n else 0.0


def rows_top(h: float, n: int) -> float:
    """Top of the rows block of a card ``h`` high with ``n`` rows."""
    return h - rows_height(n)


def port_offsets(ports, rows: tuple[WeightRow, ...], w: float, h: float) -> list[QPointF]:
    """Card-relative position of every input port: a folded weight's at its row's left end, the
    others spread evenly along the top edge."""
    row_of = {r.name: i for i, r in enumerate(rows)}
    top = [i for i, p in enumerate(ports) if p.src not in row_of]
    out = [QPointF()] * len(ports)
    for k, i in enumerate(top):
        out[i] = QPointF(w * (k + 1) / (len(top) + 1), 0.0)
    y0 = rows_top(h, len(rows)) + WEIGHT_ROWS_PAD / 2
    for i, p in enumerate(ports):
        r = row_of.get(p.src)
        if r is not None:
            out[i] = QPointF(0.0, y0 + (r + 0.5) * WEIGHT_ROW_H)
    return out


def row_index_at(rows: tuple[WeightRow, ...], w: float, h: float, x: float, y: float) -> int | None:
    """Which row the card-relative point (``x``, ``y``) is on, or None."""
    if not rows or not 0 <= x <= w:
        return None
    y0 = rows_top(h, len(rows)) + WEIGHT_ROWS_PAD / 2
    k = int((y - y0) // WEIGHT_ROW_H) if y >= y0 else -1
    return k if 0 <= k < len(rows) else None


class RowFace:
    """The texts of a card's rows, laid out once for its size."""

    def __init__(self, rows: tuple[WeightRow, ...], w: float, h: float):
        fm = QFontMetricsF(st.font("body"))
        self.top = rows_top(h, len(rows))
        y0 = self.top + WEIGHT_ROWS_PAD / 2
        inner = w - 2 * ROW_PAD
        self.texts = []
        for i, row in enumerate(rows):
            y = y0 + i * WEIGHT_ROW_H + (WEIGHT_ROW_H - fm.height()) / 2
            label = QStaticText(fm.elidedText(row.label, Qt.TextElideMode.ElideRight, inner))
            label.setTextFormat(Qt.TextFormat.PlainText)
            after = min(fm.horizontalAdvance(row.label + "  "), inner)
            shape = QStaticText(fm.elidedText(row.shape, Qt.TextElideMode.ElideLeft, max(inner - after, 0)))
            shape.setTextFormat(Qt.TextFormat.PlainText)
            self.texts.append((label, QPointF(ROW_PAD, y), shape, QPointF(ROW_PAD + after, y)))
        self.w = w


def paint_rows(painter: QPainter, face: RowFace, rows: tuple[WeightRow, ...], marks: dict[int, str],
               with_ports: bool) -> None:
    """Paint the rows (a divider, one line each, marks behind selected or matching rows) and the
    input ports at their left ends."""
    painter.setPen(st.pen(st.CARD_BORDER, 0.8))
    painter.drawLine(QPointF(4, face.top), QPointF(face.w - 4, face.top))
    y0 = face.top + WEIGHT_ROWS_PAD / 2
    if marks:
        painter.setPen(Qt.PenStyle.NoPen)
        for i, row in enumerate(rows):
            mark = marks.get(row.node_id)
            if mark:
                colour = QColor(st.color(ROW_MARK[mark]))
                colour.setAlpha(70 if mark == "selected" else 150)
                painter.setBrush(colour)
                painter.drawRoundedRect(QRectF(2, y0 + i * WEIGHT_ROW_H, face.w - 4, WEIGHT_ROW_H), 3, 3)
    painter.setFont(st.font("body"))
    dark, muted = st.pen(st.TEXT_DARK), st.pen(st.TEXT_MUTED)
    for label, lpos, shape, spos in face.texts:
        painter.setPen(dark)
        painter.drawStaticText(lpos, label)
        painter.setPen(muted)
        painter.drawStaticText(spos, shape)
    if with_ports:
        painter.setPen(st.pen(st.PORT_BORDER, 1.0))
        painter.setBrush(st.brush(st.PORT_FILL))
        r = st.PORT_R * 0.75
        for i in range(len(rows)):
            painter.drawEllipse(QPointF(0.0, y0 + (i + 0.5) * WEIGHT_ROW_H), r, r)


def mark_selected_rows(scene, ids: set[int], marked: list) -> list:
    """Mark the rows of the selected folded weights (``ids``) in their hosts' cards and unmark the
    rest of the cards in ``marked`` (the last call's result); returns the cards now marking rows."""
    hosts: dict = {}
    for nid in ids:
        host = scene.row_card(nid) if nid not in scene.by_id else None
        if host is not None:
            hosts.setdefault(host, set()).add(nid)
    for card in set(marked) | set(hosts):
        rows = frozenset(hosts.get(card, ()))
        if card.row_selected != rows:
            card.row_selected = rows
            card.update()
    return list(hosts)
