"""Drag-and-drop rewiring: press on an input port, drag, release over the node that should feed it.

Tracked as plain press/move/release in the view (QDrag cannot be driven headless). While dragging,
a rubber band follows the cursor, every card that may legally feed the input is outlined green,
and a card that would close a cycle turns red with the reason in its tooltip. Releasing over a
card yields exactly one ``set_arg`` edit; the view hands it to ``Document.apply_edit``.
"""

from __future__ import annotations

import torch.fx
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from fxstudio.core.argsyntax import format_value
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.items import NodeCard, PortSpec
from fxstudio.qt.canvas.scene import CanvasScene


def downstream(node: torch.fx.Node) -> set[str]:
    """Names of ``node`` and every node that (transitively) uses it: the sources that would make a cycle."""
    seen = {node.name}
    stack = [node]
    while stack:
        for user in stack.pop().users:
            if user.name not in seen:
                seen.add(user.name)
                stack.append(user)
    return seen


def replaced_value(node: torch.fx.Node, port: PortSpec, src: torch.fx.Node) -> str:
    """Argument text for ``port``'s argument with the port's input replaced by ``src``.

    A direct node argument becomes ``%src``; an element of a list/tuple argument keeps the
    container and replaces only that element (``[%a, %src]``)."""
    if not port.path:
        return f"%{src.name}"
    value = node.args[port.key] if isinstance(port.key, int) else node.kwargs[port.key]

    def rebuild(v, path):
        if not path:
            return src
        items = list(v)
        items[path[0]] = rebuild(items[path[0]], path[1:])
        return type(v)(items) if isinstance(v, tuple) else items

    return format_value(rebuild(value, port.path))


class RewireDrag:
    """One drag from an input port of ``card``: feedback while moving, an edit (or a refusal) on release."""

    def __init__(self, scene: CanvasScene, document, card: NodeCard, port_index: int):
        self.scene = scene
        self.document = document
        self.card = card
        self.port = card.info.ports[port_index]
        self.user: torch.fx.Node = document.find(card.info.name)
        self.blocked = downstream(self.user)
        self.blocked |= {c.info.name for c in scene.cards.values() if c.info.op == "output"}
        self.band = RubberBand(card.port_pos(port_index))
        scene.addItem(self.band)
        self.hover: NodeCard | None = None
        self.hover_src: str | None = None   # the hovered card's node, or the folded weight of its row
        self._reasons: dict[str, str | None] = {}
        for name, c in scene.cards.items():
            c.drag_state = "" if name in self.blocked else "legal"
            c.update()

    def edit_for(self, src_name: str) -> dict:
        """The one ``set_arg`` edit that makes ``src_name`` feed the dragged input."""
        src = self.document.find(src_name)
        return {"op": "set_arg", "node": self.user.name, "key": self.port.key,
                "value": replaced_value(self.user, self.port, src)}

    def reason(self, src_name: str) -> str | None:
        """Why ``src_name`` cannot feed the dragged input, or None when it can (cached per drag)."""
        if src_name not in self._reasons:
            self._reasons[src_name] = self._compute_reason(src_name)
        return self._reasons[src_name]

    def _compute_reason(self, src_name: str) -> str | None:
        src = self.document.find(src_name)
        if src is None:
            return f"{src_name} is not a node of the graph."
        if src.op == "output":
            return "The output node produces no value another node could use."
        if src_name in self.blocked:
            path = self.document.would_cycle(self.user.name, src_name)
            if path:
                return f"Feeding {self.user.name} from {src_name} would make a cycle: {' → '.join(path)}."
        if isinstance(self.port.key, str) and isinstance(self.user.kwargs.get(self.port.key), dict):
            return "Inputs inside a dict argument are edited in the Properties panel."
        if src_name == self.port.src:
            return None   # dropping back on the current source changes nothing; the release cancels
        return self.document.check_edit(self.edit_for(src_name))

    def move(self, pos: QPointF) -> None:
        """Follow the cursor; colour the card under it green (legal) or red (refused, with tooltip).
        Over a folded weight's row the source is that weight."""
        card = self.scene.card_at(pos)
        if card is self.card and card.port_at(pos) is not None:
            card = None
        row = card.row_at(pos) if card is not None else None
        src = row.name if row is not None else card.info.name if card is not None else None
        if card is not self.hover or src != self.hover_src:
            if self.hover is not None:
                self.hover.drag_state = "" if self.hover.info.name in self.blocked else "legal"
                self.hover.setToolTip(self.hover.default_tooltip())
                self.hover.update()
            self.hover, self.hover_src = card, src
            if card is not None:
                why = self.reason(src)
                card.drag_state = "cycle" if why else "hover"
                card.setToolTip(why or f"Feed {self.user.name}[{self.port.label}] from {src}")
                card.update()
        state = "" if self.hover is None else ("cycle" if self.hover.drag_state == "cycle" else "legal")
        self.band.move_to(pos, state)

    def release(self, pos: QPointF) -> tuple[dict | None, str | None]:
        """End the drag at ``pos``: ``(edit, None)`` to apply, ``(None, reason)`` for a refusal, or
        ``(None, None)`` when released on empty space or on the current source (a cancel)."""
        self.move(pos)
        src = self.hover_src if self.hover is not None else None
        self.finish()
        if src is None or src == self.port.src:
            return None, None
        why = self.reason(src)
        if why:
            return None, why
        return self.edit_for(src), None

    def finish(self) -> None:
        """Remove the rubber band and every highlight."""
        if self.band.scene() is not None:
            self.scene.removeItem(self.band)
        for c in self.scene.cards.values():
            if c.drag_state:
                c.drag_state = ""
                c.update()
        if self.hover is not None:
            self.hover.setToolTip(self.hover.default_tooltip())


class RubberBand(QGraphicsItem):
    """The dashed edge that follows the cursor while an input is being dragged to a new source."""

    def __init__(self, anchor: QPointF):
        super().__init__()
        self.anchor = anchor
        self.cursor = anchor
        self.state = ""     # "", "legal", "cycle": colours the band like the hovered card
        self.setZValue(20)

    def move_to(self, pos: QPointF, state: str = "") -> None:
        """Follow the cursor at ``pos``."""
        self.prepareGeometryChange()
        self.cursor = pos
        self.state = state
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The rectangle spanned by anchor and cursor."""
        return QRectF(self.anchor, self.cursor).normalized().adjusted(-6, -6, 6, 6)

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override); cheap at low zoom."""
        colour = {"legal": st.LEGAL_SOURCE, "cycle": st.CYCLE}.get(self.state, st.EDGE_COLOR)
        p = QPen(st.pen(colour, 2.0))
        p.setStyle(Qt.PenStyle.DashLine)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(p)
        painter.drawLine(self.cursor, self.anchor)
        painter.setBrush(st.brush(colour))
        painter.drawEllipse(self.cursor, 3.5, 3.5)
