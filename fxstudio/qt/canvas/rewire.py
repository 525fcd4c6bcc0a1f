"""Drag-and-drop rewiring: press on an input port, drag, release over the node that should feed it.

Tracked as plain press/move/release in the view (QDrag cannot be driven headless). While dragging,
a rubber band follows the cursor, every card that may legally feed the input is outlined green,
and a card that would close a cycle turns red with the reason in its tooltip. A legal source whose
shape torch would reject for the dragged input (``Document.input_fit``: one fake-tensor call of the
node being fed, per distinct source shape, cached for the drag) is outlined amber instead, before
the drop: the cards in view a few per event-loop turn from the press on (``TICK_BUDGET_S``; once
torch's fake-tensor machinery is warm, ``warm_fake_checks``), the card under the cursor at once;
where it cannot be told the card stays green. Releasing over a card yields
exactly one ``set_arg`` edit; the view hands it to ``Document.apply_edit``.
"""

from __future__ import annotations

import threading
import time

import torch.fx
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from fxstudio.core.argsyntax import format_value
from fxstudio.core.edits import fake_mode_ready, warm_fake_mode
from fxstudio.core.node_checks import Fit, fit_key
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.items import NodeCard, PortSpec
from fxstudio.qt.canvas.scene import CanvasScene

TICK_BUDGET_S = 0.012
"""Seconds of fake-tensor checks per event-loop turn while dragging (the cards in view, a few each turn)."""
WAIT_MS = 100
"""How often a drag looks whether the fake mode is warm (``warm_fake_checks``) before it checks."""
_warming: list[threading.Thread] = []


def warm_fake_checks() -> None:
    """Make torch's fake-tensor machinery cheap to use on this thread, once per process, on a worker
    thread (about a second, importing ``torch._dynamo``): the window calls it when a model opens,
    a drag when it finds it cold."""
    if _warming or fake_mode_ready():
        return
    from fxstudio.qt.workers import start_importer

    thread = threading.Thread(target=warm_fake_mode, name="fxstudio-warm-fake", daemon=True)
    _warming.append(thread)
    start_importer(thread)  # background tasks started meanwhile wait for it: no two threads import torch._dynamo


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
        self.blocked |= {n.name for n in self.user.graph.nodes if n.op == "output"}
        self.band = RubberBand(card.port_pos(port_index))
        scene.addItem(self.band)
        self.hover: NodeCard | None = None
        self.hover_src: str | None = None   # the hovered card's node, or the folded weight of its row
        self._reasons: dict[str, str | None] = {}
        self._fits: dict[tuple, Fit] = {}     # by the source's shape (node_checks.fit_key)
        self._misfits: set[str] = set()       # legal cards whose shape torch rejects here: amber
        self._decided: set[str] = set()       # cards whose fit was told (or cannot be)
        for c in list(scene.live_cards.values()):   # a card made during the drag: ``decorate``
            self.decorate(c)
        self._timer = QTimer()   # tells the fits of the cards in view a few at a time, the drag going on
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._tick)
        self._kick()

    def decorate(self, card: NodeCard) -> None:
        """Give ``card`` its feedback at rest: legal (green), misfit (amber, once told) or none."""
        card.drag_state = self._rest_state(card.info.name)
        card.update()

    def fit(self, src_name: str) -> Fit:
        """Whether ``src_name``'s shape fits the dragged input, by torch's fake-tensor check (cached
        per drag by the source's shape, stride and dtype)."""
        src = self.document.find(src_name)
        if src is None or src_name == self.port.src:
            return Fit("unknown")
        key = fit_key(src)
        hit = self._fits.get(key)
        if hit is None:
            hit = self._fits[key] = self.document.input_fit(self.user.name, self.port.key, self.port.path, src_name)
        return hit

    def _cards_in_view(self) -> list[NodeCard]:
        """The cards the canvas shows now (all of them when it cannot tell)."""
        views = self.scene.views()
        if not views:
            return list(self.scene.live_cards.values())
        view = views[0]
        rect = view.mapToScene(view.viewport().rect()).boundingRect()
        return [i for i in self.scene.items(rect) if isinstance(i, NodeCard)]

    def _kick(self) -> None:
        """Go on telling fits on the next turns (once the fake mode is warm: ``warm_fake_checks``)."""
        if not self._timer.isActive():
            self._timer.start()

    def _tick(self) -> None:
        if self.band.scene() is None:
            return
        if not fake_mode_ready():  # a worker makes the first fake mode of the process meanwhile
            warm_fake_checks()
            self._timer.start(WAIT_MS)
        elif self._decide(self._cards_in_view(), TICK_BUDGET_S):
            self._timer.start(0)

    def _decide(self, cards: list[NodeCard], budget: float) -> bool:
        """Tell the fit of the legal ``cards`` not told yet, for at most ``budget`` seconds: amber
        ("misfit") where torch rejects the source's shape, green where it fits or cannot be told.
        True when some are left for later."""
        deadline = time.perf_counter() + budget
        for card in cards:
            name = card.info.name
            if name in self._decided or card.drag_state != "legal":
                continue
            if time.perf_counter() > deadline:
                return True
            self._decided.add(name)
            if self.fit(name).status == "rejected":
                self._misfits.add(name)
                card.drag_state = "misfit"
                card.update()
        return False

    def _rest_state(self, name: str) -> str:
        """A card's drag state when the cursor is not on it."""
        return "" if name in self.blocked else "misfit" if name in self._misfits else "legal"

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
        """Follow the cursor; colour the card under it green (legal), amber (legal, but torch rejects
        its shape here; tooltip with torch's message) or red (refused, with tooltip). Over a folded
        weight's row the source is that weight."""
        self._kick()   # the view may show other cards now
        card = self.scene.card_at(pos)
        if card is self.card and card.port_at(pos) is not None:
            card = None
        row = card.row_at(pos) if card is not None else None
        src = row.name if row is not None else card.info.name if card is not None else None
        if card is not self.hover or src != self.hover_src:
            if self.hover is not None:
                self.hover.drag_state = self._rest_state(self.hover.info.name)
                self.hover.setToolTip(self.hover.default_tooltip())
                self.hover.update()
            self.hover, self.hover_src = card, src
            if card is not None:
                self._hover_state(card, src)
        state = "" if self.hover is None else {"cycle": "cycle", "mismatch": "mismatch"}.get(self.hover.drag_state, "legal")
        self.band.move_to(pos, state)

    def _hover_state(self, card: NodeCard, src: str) -> None:
        """Colour and explain the card under the cursor as the source ``src``."""
        why = self.reason(src)
        feed = f"Feed {self.user.name}[{self.port.label}] from {src}"
        fit = self.fit(src) if not why else Fit("unknown")
        if why:
            card.drag_state, tip = "cycle", why
        elif fit.status == "rejected":
            card.drag_state = "mismatch"
            tip = (f"{feed}: its shape does not fit. torch rejects {self.user.name} with it: {fit.message} "
                   "(the edit applies, and the node turns red)")
        else:
            card.drag_state, tip = "hover", feed
        card.setToolTip(tip)
        card.update()

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
        self._timer.stop()
        if self.band.scene() is not None:
            self.scene.removeItem(self.band)
        for c in list(self.scene.live_cards.values()):
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
        self.state = ""     # "", "legal", "mismatch", "cycle": colours the band like the hovered card
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
        colour = {"legal": st.LEGAL_SOURCE, "mismatch": st.SHAPE_MISMATCH, "cycle": st.CYCLE}.get(self.state, st.EDGE_COLOR)
        p = QPen(st.pen(colour, 2.0))
        p.setStyle(Qt.PenStyle.DashLine)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(p)
        painter.drawLine(self.cursor, self.anchor)
        painter.setBrush(st.brush(colour))
        painter.drawEllipse(self.cursor, 3.5, 3.5)
