"""The items drawn on the canvas: node cards with input ports, module frames, collapsed modules (edges:
``edge_item``).

Items only paint; they never touch the graph. Each paint checks the level of detail (the view's
scale) first, so a zoomed-out view of a big graph costs a filled rectangle per card and a
polyline per edge, and the BSP index of the scene skips every item outside the view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QStaticText
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from fxstudio.core.layout import GroupBox, NodeBox
from fxstudio.core.node_text import REJECTED_PREFIX
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.card_rows import RowFace, WeightRow, paint_rows, port_offsets, row_index_at, rows_height


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
    consts: str = ""      # the constant (non-node) arguments, short: ``× 2``, ``max=5.0``
    dead: bool = False    # no node uses its value and it is not the output: DCE would drop it
    rows: tuple[WeightRow, ...] = ()   # folded weights drawn inside the card (card_rows.py)
    error: str = ""       # "torch rejects this node: ..." (node_text.rejection_text): a red card
    line: str = ""        # the target line under the title, "" when the title says it (card_text.card_target_line)
    caption: str = ""     # its module when no frame shows it: ``conv1 · Conv2d`` (card_text.module_caption)


def _lod(painter: QPainter) -> float:
    return QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())


_PAD = 7.0
_MIN_GAP = 2.0   # the least space between a card's lines (the layout makes cards tall enough)
_METRICS: dict[str, QFontMetricsF] = {}


def _metrics(role: str) -> QFontMetricsF:
    if role not in _METRICS:
        _METRICS[role] = QFontMetricsF(st.font(role))
    return _METRICS[role]


def _static(text: str, role: str, width: float | None = None,
            mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> QStaticText:
    """A laid-out text (drawn many times without re-shaping), elided to ``width`` when given."""
    if width is not None and len(text) * _metrics(role).maxWidth() > width:   # else it fits for sure
        text = _metrics(role).elidedText(text, mode, width)
    t = QStaticText(text)
    t.setTextFormat(Qt.TextFormat.PlainText)
    return t


class _Face:
    """Everything a card paints that depends only on its content and size, computed once."""

    def __init__(self, info: CardInfo, w: float, h: float):
        hh = min(st.HEADER_H, h)
        header = QPainterPath()
        header.addRoundedRect(QRectF(0, 0, w, hh + st.CORNER_R), st.CORNER_R, st.CORNER_R)
        clip = QPainterPath()
        clip.addRect(QRectF(0, 0, w, hh))
        self.header = header.intersected(clip)
        inner = w - 2 * _PAD
        # A name that does not fit in the title font gets the narrower one before it is elided,
        # and then loses its middle, so ``layer3_1_relu_1`` and ``layer3_1_relu`` stay apart.
        self.title_role = "title" if _metrics("title").horizontalAdvance(info.name) <= inner else "title_narrow"
        fm = _metrics(self.title_role)
        self.title = _static(info.name, self.title_role, inner, Qt.TextElideMode.ElideMiddle)
        self.title_pos = QPointF(_PAD, (hh - fm.height()) / 2)
        # A rejected or unused node says so in its header, right-aligned, when the name leaves room.
        self.dead_tag = None
        tag = "✖ rejected" if info.error else "unused" if info.dead else ""
        if tag:
            tag_w = _metrics("small").horizontalAdvance(tag)
            if fm.horizontalAdvance(info.name) + tag_w + 8 <= inner:
                self.dead_tag = (_static(tag, "small"), QPointF(w - _PAD - tag_w, (hh - _metrics("small").height()) / 2))
        # Under the title: the module (when no frame says it), the target (when the title does
        # not say it), the constants, the shape; each line at its full height. Constants go after
        # the line above them (elided) only where the card has no room for their own line.
        body_h = h - hh - rows_height(len(info.rows))
        self.rows = RowFace(info.rows, w, h) if info.rows else None
        lines = [(info.caption, "body", st.FRAME_TEXT)] if info.caption else []
        if info.line:
            lines.append((_target_text(info.line, inner, info.name), "body", st.TEXT_DARK))
        shape = (("✖ " + info.error.removeprefix(REJECTED_PREFIX), "small", st.REJECTED) if info.error
                 else (info.shape, "body", st.TEXT_MUTED) if info.shape else None)
        inline = None   # (line index, x) of constants drawn after that line
        if info.consts:
            need = sum(_metrics(r).height() for _, r, _ in lines) + _metrics("small").height() + (
                _metrics(shape[1]).height() if shape else 0.0)
            count = len(lines) + 1 + (shape is not None)
            if lines and need + (count + 1) * _MIN_GAP > body_h:
                text = lines[-1][0]
                after = _metrics("body").horizontalAdvance(text + "  ")
                inline = (len(lines) - 1, after) if after < inner * 0.75 else None
            if inline is None:
                lines.append((info.consts, "small" if lines else "body", st.TEXT_CONST))
        if shape is not None:
            lines.append(shape)
        self.lines = []
        if lines and body_h > 8:
            heights = [_metrics(role).height() for _, role, _ in lines]
            gap = max(body_h - sum(heights), 0.0) / (len(lines) + 1)
            y = hh + gap
            for k, ((text, role, colour), lh) in enumerate(zip(lines, heights)):
                self.lines.append((_static(text, role, inner), QPointF(_PAD, y), st.pen(colour), role))
                if inline is not None and inline[0] == k:
                    self.lines.append((_static(info.consts, "body", inner - inline[1]), QPointF(_PAD + inline[1], y),
                                       st.pen(st.TEXT_CONST), "body"))
                y += lh + gap
        on_rows = {r.name for r in info.rows}
        top = [(p, x) for p, x in zip(info.ports, port_offsets(info.ports, info.rows, w, h)) if p.src not in on_rows]
        self.ports = [x for _, x in top]   # on the top edge; the rows paint their own
        sh = _metrics("small").height()
        # A single input needs no index: "0" over the only port says nothing (nor "1" beside rows).
        labelled = not (len(top) == 1 and (top[0][0].label == "0" or info.rows))
        self.port_labels = [(_static(p.label, "small"), QPointF(x.x() + st.PORT_R + 2, -3.0 - sh + 2))
                            for p, x in top] if labelled else []


def _target_text(target: str, width: float, name: str = "") -> str:
    """The target line fitted to ``width``: a submodule's path loses its middle before its class,
    and goes altogether when the card's title already spells it (``layer1_0_bn2``)."""
    fm = _metrics("body")
    if fm.horizontalAdvance(target) <= width:
        return target
    path, sep, cls = target.rpartition(" · ")
    if sep and path.replace(".", "_") == name:
        return cls
    if sep and fm.horizontalAdvance(sep + cls) < width * 0.65:   # the class tells more than the path
        room = width - fm.horizontalAdvance(sep + cls)
        return fm.elidedText(path, Qt.TextElideMode.ElideMiddle, room) + sep + cls
    return target


class NodeCard(QGraphicsItem):
    """A node's card: a header in its op colour with the name, the target and output shape below,
    and one input port per node-valued input on the top edge."""

    def __init__(self, info: CardInfo, box: NodeBox):
        super().__init__()
        self.info = info
        self.selected = False
        self.match = 0            # 0: no search match, 1: a match, 2: the current match
        # rewire feedback: "", "legal", "misfit" (legal, but torch rejects its shape), "hover", "mismatch"
        # (a hovered misfit), "cycle"
        self.drag_state = ""
        self.tint: QColor | None = None   # divergence tint of the body (overlays.py), None: white
        self.score: float | None = None   # the tolerance score behind the tint (for the tooltip)
        self.metric_line = ""     # a numeric overlay's value, e.g. "time: 1.2 ms" (overlays.py)
        self.diff_kind = ""       # "added" / "changed" since the original graph: an outline
        self.diff_color: QColor | None = None
        self.row_marks: dict[int, str] = {}   # folded weight id -> "match" / "current" (search)
        self.row_selected: frozenset[int] = frozenset()   # selected folded weights
        self._ports: list[QPointF] | None = None   # card-relative port positions (card_rows.port_offsets)
        self._face: _Face | None = None
        self._rect = QRectF()
        self.box_key: tuple | None = None   # (x, y, w, h) of the layout box last applied (the scene's diff)
        self.setZValue(2)
        self.setToolTip(self.default_tooltip())
        self.set_box(box)

    # -- geometry -----------------------------------------------------------------------------
    def set_box(self, box: NodeBox) -> None:
        """Move/resize the card to ``box`` (scene coordinates)."""
        if (self._rect.width(), self._rect.height()) != (box.w, box.h):
            self.prepareGeometryChange()
            self._rect = QRectF(0, 0, box.w, box.h)
            self._face = self._ports = None
        self.setPos(box.x, box.y)
        self.box_key = (box.x, box.y, box.w, box.h)

    def size(self) -> tuple[float, float]:
        """(width, height) of the card."""
        return (self._rect.width(), self._rect.height())

    def set_info(self, info: CardInfo) -> None:
        """Show new node content (after an edit changed its target, arguments or name)."""
        self.info = info
        self._face = self._ports = None
        self.setToolTip(self.default_tooltip())
        self.update()

    def default_tooltip(self) -> str:
        """The card's full texts (the card itself elides them): name, op and target, shape, and
        what the overlays say (added/changed, error against tolerance of the last run)."""
        lines = [self.info.name, f"{self.info.op}: {self.info.target}"]
        if self.info.caption:
            lines.append(f"in module {self.info.caption}")
        if self.info.consts:
            lines.append(f"constants: {self.info.consts}")
        if self.info.error:
            lines.append(f"{self.info.error} (a run would fail here)")
        elif self.info.shape:
            lines.append(self.info.shape)
        if self.info.dead:
            lines.append("unused: no node uses its value (Edit ▸ Dead-code elimination drops it)")
        if self.diff_kind:
            lines.append("added by an edit" if self.diff_kind == "added" else "changed by an edit")
        if self.score is not None:
            verdict = "equal" if self.score == 0 else "within tolerance" if self.score <= 1 else "diverged"
            lines.append(f"last run: error/tolerance {self.score:.3g} ({verdict})")
        if self.metric_line:
            lines.append(self.metric_line)
        return "\n".join(lines)

    def set_overlay(self, tint: QColor | None, score: float | None, diff_kind: str,
                    diff_color: QColor | None) -> bool:
        """Show a divergence tint and a diff outline; repaints only when something changed."""
        if (self.tint == tint and self.score == score and self.diff_kind == diff_kind
                and self.diff_color == diff_color):
            return False
        self.tint, self.score, self.diff_kind, self.diff_color = tint, score, diff_kind, diff_color
        self.setToolTip(self.default_tooltip())
        self.update()
        return True

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The card plus room above it for port labels and the selection outline."""
        return self._rect.adjusted(-4, -14, 4, 4)

    def port_pos(self, index: int) -> QPointF:
        """Scene position of input port ``index`` (spread evenly along the top edge; a folded
        weight's port at its row's left end)."""
        if self._ports is None:
            self._ports = port_offsets(self.info.ports, self.info.rows, self._rect.width(), self._rect.height())
        return self.pos() + self._ports[index]

    def row_at(self, scene_pos: QPointF) -> WeightRow | None:
        """The folded weight's row under ``scene_pos``, or None."""
        p = scene_pos - self.pos()
        i = row_index_at(self.info.rows, self._rect.width(), self._rect.height(), p.x(), p.y())
        return self.info.rows[i] if i is not None else None

    def port_pos_for(self, src: str, key: int | str) -> QPointF | None:
        """Scene position of the port fed by ``src`` at ``key``, or None."""
        for i, p in enumerate(self.info.ports):
            if p.src == src and p.key == key:
                return self.port_pos(i)
        return None

    def port_at(self, scene_pos: QPointF, radius: float = st.PORT_HIT_R) -> int | None:
        """Index of the port within ``radius`` scene units of ``scene_pos``, or None."""
        best, best_d = None, radius * radius
        for i in range(len(self.info.ports)):
            d = self.port_pos(i) - scene_pos
            dd = d.x() * d.x() + d.y() * d.y()
            if dd <= best_d:
                best, best_d = i, dd
        return best

    # -- painting -----------------------------------------------------------------------------
    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override); cheap at low zoom."""
        r = self._rect
        head = st.color(st.DEAD_HEADER) if self.info.dead else st.op_color(self.info.op)
        lod = _lod(painter)
        if lod < st.LOD_PLAIN:
            plain = self._plain_color()
            painter.fillRect(r, st.color(plain) if plain else head)
            return
        face = self._face
        if face is None:
            face = self._face = _Face(self.info, r.width(), r.height())
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        if self.match:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(st.brush(st.CURRENT_MATCH if self.match == 2 else st.MATCH))
            painter.drawRoundedRect(r.adjusted(-4, -4, 4, 4), st.CORNER_R + 3, st.CORNER_R + 3)
        if self.tint is not None:   # divergence of the last run: a pale body, a border in the colour
            rgb = self.tint.rgb()
            painter.setPen(st.rgb_pen(rgb, 1.6))
            painter.setBrush(st.tint_brush(rgb))
        elif self.info.error:   # torch rejects the node: a red border on a pale red body
            painter.setPen(st.pen(st.REJECTED, 2.0))
            painter.setBrush(st.brush(st.REJECTED_BODY))
        elif self.info.dead:   # unused: a dashed grey border on a grey body
            painter.setPen(st.dashed_pen(st.DEAD_BORDER, 1.3))
            painter.setBrush(st.brush(st.DEAD_BODY))
        else:
            painter.setPen(st.pen(st.CARD_BORDER, 1.0))
            painter.setBrush(st.brush(st.CARD_BODY))
        painter.drawRoundedRect(r, st.CORNER_R, st.CORNER_R)
        painter.fillPath(face.header, head)
        if self.drag_state == "cycle":
            painter.fillRect(r, st.color("#40d13c3c"))
        painter.setPen(st.pen("#ffffff"))
        painter.setFont(st.font(face.title_role))   # a QStaticText is drawn in the painter's font
        painter.drawStaticText(face.title_pos, face.title)
        if lod >= st.LOD_LABELS:
            if face.dead_tag is not None:
                painter.setFont(st.font("small"))
                painter.drawStaticText(face.dead_tag[1], face.dead_tag[0])
            current = None
            for text, pos, pen, role in face.lines:
                if role != current:   # most cards use one font for every line
                    painter.setFont(st.font(role))
                    current = role
                painter.setPen(pen)
                painter.drawStaticText(pos, text)
            if face.rows is not None:
                marks = {**dict.fromkeys(self.row_selected, "selected"), **self.row_marks}
                paint_rows(painter, face.rows, self.info.rows, marks, True)
            if face.ports:
                painter.setPen(st.pen(st.PORT_BORDER, 1.2))
                painter.setBrush(st.brush(st.PORT_FILL))
                for pos in face.ports:
                    painter.drawEllipse(pos, st.PORT_R, st.PORT_R)
                if lod >= st.LOD_DETAIL:
                    painter.setPen(st.pen(st.TEXT_MUTED))
                    painter.setFont(st.font("small"))
                    for text, pos in face.port_labels:
                        painter.drawStaticText(pos, text)
        self._paint_outline(painter, r)

    def _plain_color(self) -> str:
        if self.drag_state == "cycle":
            return st.CYCLE
        if self.drag_state == "mismatch":
            return st.SHAPE_MISMATCH
        if self.selected:
            return st.SELECTED
        if self.info.error:
            return st.REJECTED
        if self.match:
            return st.CURRENT_MATCH if self.match == 2 else st.MATCH
        if self.tint is not None:
            return self.tint.name()
        return ""

    def _paint_outline(self, painter: QPainter, r: QRectF) -> None:
        if self.diff_color is not None or self.info.error:   # added/changed: a ring outside the selection's;
            d = st.DIFF_RING_W / 2 + 1.2                          # red where torch rejects the node
            painter.setPen(st.pen(st.REJECTED, st.DIFF_RING_W) if self.info.error
                           else st.rgb_pen(self.diff_color.rgb(), st.DIFF_RING_W))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(r.adjusted(-d, -d, d, d), st.CORNER_R + d, st.CORNER_R + d)
        colour = {"legal": st.LEGAL_SOURCE, "hover": st.LEGAL_SOURCE, "cycle": st.CYCLE,
                  "misfit": st.SHAPE_MISMATCH, "mismatch": st.SHAPE_MISMATCH}.get(self.drag_state)
        width = 3.0 if self.drag_state in ("hover", "cycle", "mismatch") else 1.6
        if colour is None and self.selected:
            colour, width = st.SELECTED, 2.6
        if colour is None:
            return
        painter.setPen(st.pen(colour, width))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRoundedRect(r.adjusted(-1, -1, 1, 1), st.CORNER_R + 1, st.CORNER_R + 1)


class _GroupItem(QGraphicsItem):
    """What a module frame and a collapsed module card share: a box from a ``GroupBox`` and a toggle."""

    MARGIN = 1.0  # pen overhang beyond the box
    TOGGLE_TOP = 3.0  # the toggle's offset from the box's top edge

    def __init__(self, group: GroupBox, z: float):
        super().__init__()
        self.group = group
        self.setZValue(z)
        self.set_group(group)

    def set_group(self, group: GroupBox) -> None:
        """Move/resize the item to ``group``."""
        self.prepareGeometryChange()
        self.group = group
        self._rect = QRectF(0, 0, group.w, group.h)
        self.setPos(group.x, group.y)

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The box and its pen's overhang."""
        m = self.MARGIN
        return self._rect.adjusted(-m, -m, m, m)

    def toggle_rect(self) -> QRectF:
        """Scene rectangle of the collapse/expand toggle (top-left corner)."""
        top_left = self.scenePos() + QPointF(5, self.TOGGLE_TOP)
        return QRectF(top_left, top_left + QPointF(st.TOGGLE, st.TOGGLE))


class GroupFrame(_GroupItem):
    """The frame of an expanded module group, with its label and a collapse toggle."""

    def __init__(self, group: GroupBox):
        super().__init__(group, -10 + min(group.depth, 9) * 0.1)

    def set_group(self, group: GroupBox) -> None:
        """Move/resize the frame to ``group``; its tooltip is the whole path and class."""
        super().set_group(group)
        self.setToolTip(group.label)

    def title(self) -> str:
        """The title it shows: ``self_attn · MultiheadAttention`` for ``enc.layers.0.self_attn``
        (the frames around it say the rest)."""
        return st.frame_title(self.group.label, self.group.depth)

    def title_rect(self) -> QRectF:
        """Scene rectangle of the title band (toggle and "path · Class")."""
        top_left = self.scenePos() + self._rect.topLeft()
        return QRectF(top_left, top_left + QPointF(self._rect.width(), st.FRAME_LABEL_H))

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override); cheap at low zoom."""
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
            text = st.frame_label_text(self.title(), QFontMetricsF(st.font("frame")), self._rect.width() - st.TOGGLE - 16)
            painter.drawText(QRectF(st.TOGGLE + 10, 2, self._rect.width() - st.TOGGLE - 14, st.FRAME_LABEL_H - 2),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)


class GroupCard(_GroupItem):
    """A collapsed module group shown as one card, with an expand toggle."""

    MARGIN = 2.0
    TOGGLE_TOP = 4.0

    def __init__(self, group: GroupBox):
        super().__init__(group, 2)
        self.selected = False

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override); cheap at low zoom."""
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
        fm = _metrics("title")
        # The label is "path · Class": the path is the title, the class goes with the count.
        path, _, cls = self.group.label.partition(" · ")
        painter.drawText(QRectF(st.TOGGLE + 10, 2, r.width() - st.TOGGLE - 14, st.HEADER_H),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         fm.elidedText(path, Qt.TextElideMode.ElideRight, r.width() - st.TOGGLE - 16))
        if lod < st.LOD_LABELS:
            return
        painter.setPen(st.pen(st.TEXT_MUTED))
        painter.setFont(st.font("body"))
        detail = f"{cls} · {self.group.members:,} nodes" if cls else f"{self.group.members:,} nodes"
        painter.drawText(QRectF(8, st.HEADER_H, r.width() - 16, r.height() - st.HEADER_H),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         _metrics("body").elidedText(detail, Qt.TextElideMode.ElideRight, r.width() - 16))


def _paint_toggle(painter: QPainter, r: QRectF, expanded: bool) -> None:
    painter.setPen(st.pen(st.FRAME_BORDER, 1.0))
    painter.setBrush(st.brush("#ffffff"))
    painter.drawRoundedRect(r, 3, 3)
    painter.setPen(st.pen(st.FRAME_TEXT, 1.6))
    c = r.center()
    painter.drawLine(QPointF(c.x() - 3.5, c.y()), QPointF(c.x() + 3.5, c.y()))
    if not expanded:
        painter.drawLine(QPointF(c.x(), c.y() - 3.5), QPointF(c.x(), c.y() + 3.5))
