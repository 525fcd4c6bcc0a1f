"""The report's graph drawing: the canvas layout (``core.layout``) written as one inline SVG.

Cards are coloured by op kind as on the canvas, weights used by one op are rows of its card, module
frames are drawn behind the cards, and nodes an edit added or changed, or whose value diverged in
the comparison, are outlined. Every text from the model is escaped (``markup.esc``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch.fx

from fxstudio.core.card_text import card_target_line, constants_text, shows_target_line
from fxstudio.core.layout import WEIGHT_ROW_H, compute_layout, is_exported, row_label, row_shape, rows_of
from fxstudio.core.node_text import shape_text
from fxstudio.core.report.markup import esc

OP_COLORS = {
    "placeholder": "#2f6f4f", "get_attr": "#7a6a3a", "call_function": "#335c8a",
    "call_method": "#5b4a8a", "call_module": "#8a4b3a", "output": "#3b3f46",
}
HEADER_H = 20.0
LINE_H = 14.0
CHAR_W = 6.6       # of the 11 px monospace-ish text used in cards: for cutting lines to the card
MARGIN = 24.0
STATUS_LABELS = {"added": "added by an edit", "changed": "changed by an edit",
                 "diverged": "diverged beyond tolerance", "first": "first divergence"}


def _cut(text: str, width: float) -> str:
    limit = max(4, int((width - 14) / CHAR_W))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _card_lines(node: torch.fx.Node, gm: torch.nn.Module) -> list[tuple[str, str]]:
    """(css class, text) of each line under a card's title, as ``card_text`` decides them."""
    lines = []
    if shows_target_line(node):
        try:
            target = card_target_line(node, gm)
        except Exception:  # noqa: BLE001 - a target that cannot be named is left out, not fatal
            target = ""
        if target:
            lines.append(("tgt", target))
    try:
        const = constants_text(node)
    except Exception:  # noqa: BLE001 - odd arguments: no constants line
        const = ""
    if const:
        lines.append(("const", const))
    shape = shape_text(node)
    if shape:
        lines.append(("shape", shape))
    return lines


def graph_svg(gm: torch.fx.GraphModule, status: Mapping[str, str], max_nodes: int = 20000) -> tuple[str, int]:
    """The SVG of ``gm``'s graph and the number of cards it draws. ``status``: node name →
    ``"added"`` / ``"changed"`` / ``"diverged"`` / ``"first"``, outlined and listed in a legend."""
    graph = gm.graph
    count = len(graph.nodes)
    if count > max_nodes:
        return (f'<p class="note">The graph has {count:,} nodes; drawings stop at {max_nodes:,}. '
                'The tables below still cover every node.</p>'), 0
    layout = compute_layout(graph, fold_weights=True)
    x0, y0, x1, y1 = layout.bounds() if layout.nodes else (0.0, 0.0, 100.0, 100.0)
    for edge in layout.edges:  # long skip edges run in lanes beside the cards
        for x, y in edge.points:
            x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
    width, height = x1 - x0 + 2 * MARGIN, y1 - y0 + 2 * MARGIN
    dx, dy = MARGIN - x0, MARGIN - y0
    nodes = {n.name: n for n in graph.nodes}
    exported = is_exported(graph)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="graph of {count} nodes">',
           '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#6d7580"/></marker></defs>']
    for group in sorted(layout.groups.values(), key=lambda g: g.depth):
        out.append(f'<g class="frame"><rect x="{group.x + dx:.1f}" y="{group.y + dy:.1f}" width="{group.w:.1f}" '
                   f'height="{group.h:.1f}" rx="6"/><text x="{group.x + dx + 8:.1f}" y="{group.y + dy + 14:.1f}">'
                   f'{esc(_cut(group.label, group.w))}</text><title>{esc(group.path)}</title></g>')
    for edge in layout.edges:
        if len(edge.points) < 2:
            continue
        pts = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for x, y in edge.points)
        out.append(f'<polyline class="edge" points="{pts}" marker-end="url(#arrow)"/>')
    drawn = 0
    for name, box in layout.nodes.items():
        node = nodes.get(name)
        if node is None:  # a collapsed frame's card: none are collapsed here
            continue
        drawn += 1
        out.append(_card(node, gm, box.x + dx, box.y + dy, box.w, box.h, status.get(name, ""), exported))
    out.append("</svg>")
    return "\n".join(out), drawn


def _card(node: torch.fx.Node, gm: torch.nn.Module, x: float, y: float, w: float, h: float, state: str,
          exported: bool) -> str:
    color = OP_COLORS.get(node.op, OP_COLORS["output"])
    dead = not node.users and node.op != "output"
    classes = " ".join(c for c in ("node", state, "dead" if dead else "") if c)
    tip = f"{node.name} ({node.op})" + (f": {STATUS_LABELS[state]}" if state in STATUS_LABELS else "")
    parts = [f'<g class="{classes}" data-name="{esc(node.name)}"><title>{esc(tip)}</title>',
             f'<rect class="body" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="5"/>',
             f'<path class="head" fill="{color}" d="M{x:.1f},{y + HEADER_H:.1f} v{-(HEADER_H - 5):.1f} '
             f'q0,-5 5,-5 h{w - 10:.1f} q5,0 5,5 v{HEADER_H - 5:.1f} z"/>',
             f'<text class="title" x="{x + 7:.1f}" y="{y + 14:.1f}">{esc(_cut(node.name, w))}</text>']
    ty = y + HEADER_H + 12
    for css, text in _card_lines(node, gm):
        parts.append(f'<text class="{css}" x="{x + 7:.1f}" y="{ty:.1f}">{esc(_cut(text, w))}</text>')
        ty += LINE_H
    if node.op not in ("placeholder", "get_attr", "output"):
        rows = rows_of(node, exported)
        ry = y + h - len(rows) * WEIGHT_ROW_H - 2
        for row in rows:
            text = f"{row_label(row)} {row_shape(row)}".strip()
            parts.append(f'<text class="row" x="{x + 7:.1f}" y="{ry + 11:.1f}">{esc(_cut(text, w))}</text>')
            ry += WEIGHT_ROW_H
    parts.append("</g>")
    return "".join(parts)


def legend(status: Mapping[str, str]) -> str:
    """The legend of the outlines the drawing uses (only those present), as HTML."""
    used = [s for s in ("added", "changed", "diverged", "first") if s in set(status.values())]
    if not used:
        return ""
    items = "".join(f'<li><span class="swatch {s}"></span>{esc(STATUS_LABELS[s])}</li>' for s in used)
    return f'<ul class="legend">{items}</ul>'
