"""Colours, pens, fonts and level-of-detail thresholds of the node canvas.

One calm palette: every op kind has a header colour (dark enough for white text) and the card
body is near-white, as in Netron; module frames are pale tints that deepen with nesting.
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPen

# Header colour of a card per FX op kind.
OP_COLORS: dict[str, str] = {
    "placeholder": "#2f6f4f",    # inputs: green
    "get_attr": "#7a6a3a",       # weights and buffers: olive
    "call_function": "#335c8a",  # functions: blue
    "call_method": "#5b4a8a",    # tensor methods: violet
    "call_module": "#8a4b3a",    # submodules: brick
    "output": "#3b3f46",         # output: graphite
}
GROUP_COLOR = "#5a6472"          # collapsed module cards

CANVAS_BACKGROUND = "#f4f5f7"
CARD_BODY = "#ffffff"
CARD_BORDER = "#9aa3ae"
TEXT_DARK = "#22262b"
TEXT_MUTED = "#5f6770"
TEXT_CONST = "#8a4b0f"           # a card's constant arguments (``× 2``, ``max=5.0``)
DEAD_HEADER = "#9aa1a9"          # unused nodes (no users, not the output): grey, dashed border
DEAD_BODY = "#f1f2f4"
DEAD_BORDER = "#7d858f"
EDGE_COLOR = "#6d7580"
EDGE_LABEL = "#4b525a"
SELECTED = "#1f6feb"             # selection outline (blue)
MATCH = "#f4d35e"                # search matches
CURRENT_MATCH = "#e07a10"
LEGAL_SOURCE = "#3a9a5b"         # rewire: a node that may feed the dragged input
CYCLE = "#d13c3c"                # rewire: a node that would make a cycle
SHAPE_MISMATCH = "#d4880f"       # rewire: a legal source whose shape torch's fake check rejects (amber)
REJECTED = "#c62828"             # a node torch rejects after an edit (a run would fail there): outline, text
REJECTED_BODY = "#fdecea"        # ... its card's body
PORT_FILL = "#ffffff"
PORT_BORDER = "#56606b"
FRAME_FILLS = ("#e6ebf2", "#dde4ee", "#d3dce9", "#cad5e4")
FRAME_BORDER = "#b4bfcc"
FRAME_TEXT = "#3e4854"
# Overlays (fxstudio/qt/canvas/overlays.py): divergence tints and diff outlines take their hues
# from fxstudio/qt/divergence_colors.py; these only say how strongly a card shows them.
TINT_STRENGTH = 0.30             # how much of the divergence colour is blended into a card's white body
DIFF_RING_W = 2.4                # width of the added/changed outline (inside the card's 4-unit margin)

# Geometry (scene units).
HEADER_H = 22.0
PORT_R = 4.5
PORT_HIT_R = 13.0                # a press this close to a port grabs it (scene units)
CORNER_R = 5.0
ARROW = 6.0
TOGGLE = 14.0
FRAME_LABEL_H = 20.0

# Level of detail (the view's scale): below PLAIN, cards are plain boxes and no text is drawn;
# below LABELS, cards show their name only; edges drop arrows and shape labels below DETAIL.
LOD_PLAIN = 0.33
LOD_LABELS = 0.55
LOD_DETAIL = 0.8


def op_color(op: str) -> QColor:
    """Header colour for an FX op kind (unknown kinds get the output colour)."""
    return _color(OP_COLORS.get(op, OP_COLORS["output"]))


@lru_cache(maxsize=None)
def _color(name: str) -> QColor:
    return QColor(name)


def color(name: str) -> QColor:
    """A cached QColor from a hex name."""
    return _color(name)


@lru_cache(maxsize=None)
def pen(name: str, width: float = 1.0, cosmetic: bool = False) -> QPen:
    """A cached solid pen; cosmetic pens keep their width at every zoom."""
    p = QPen(QColor(name), width)
    p.setCosmetic(cosmetic)
    p.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    p.setCapStyle(Qt.PenCapStyle.RoundCap)
    return p


@lru_cache(maxsize=None)
def dashed_pen(name: str, width: float = 1.0) -> QPen:
    """A cached dashed pen (the border of an unused node's card)."""
    p = QPen(pen(name, width))
    p.setStyle(Qt.PenStyle.DashLine)
    return p


@lru_cache(maxsize=None)
def brush(name: str) -> QBrush:
    """A cached solid brush."""
    return QBrush(QColor(name))


@lru_cache(maxsize=None)
def font(role: str) -> QFont:
    """The font for a text role: ``title`` (card name), ``body``, ``small`` (ports, edge shapes), ``frame``."""
    f = QFont()
    f.setFamilies(["Inter", "Noto Sans", "DejaVu Sans", "Sans Serif"])
    sizes = {"title": 10.0, "title_narrow": 8.5, "body": 8.5, "small": 7.0, "frame": 9.0}
    f.setPointSizeF(sizes.get(role, 9.0))
    if role in ("title", "title_narrow", "frame"):
        f.setWeight(QFont.Weight.DemiBold)
    return f


@lru_cache(maxsize=None)
def tint_brush(rgb: int) -> QBrush:
    """The card body for a divergence tint (``QColor.rgb()``): the colour blended into white."""
    c, a = QColor.fromRgb(rgb), TINT_STRENGTH
    return QBrush(QColor(round(255 + (c.red() - 255) * a), round(255 + (c.green() - 255) * a),
                         round(255 + (c.blue() - 255) * a)))


@lru_cache(maxsize=None)
def rgb_pen(rgb: int, width: float = 1.0, cosmetic: bool = False) -> QPen:
    """A cached solid pen of an rgb value (``QColor.rgb()``)."""
    return pen(QColor.fromRgb(rgb).name(), width, cosmetic)


def frame_fill(depth: int) -> QColor:
    """Fill of a module frame at nesting ``depth`` (0 = outermost)."""
    return _color(FRAME_FILLS[min(depth, len(FRAME_FILLS) - 1)])


def frame_title(label: str, depth: int) -> str:
    """What a module frame's title says: its path relative to the frame around it, then its class
    (``self_attn · MultiheadAttention`` inside ``0 · TransformerEncoderLayer``), as Model Explorer's
    layers read; a frame at the top (``depth`` 0) says its whole path."""
    path, sep, rest = label.partition(" · ")
    return (path.rsplit(".", 1)[-1] if depth > 0 else path) + sep + rest


def frame_label_text(label: str, fm, room: float) -> str:
    """A frame's title as it fits in ``room`` pixels (``fm``: the frame font's metrics), elided."""
    if fm.horizontalAdvance(label) <= room:
        return label
    return fm.elidedText(label, Qt.TextElideMode.ElideRight, room)
