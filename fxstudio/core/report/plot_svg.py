"""The per-node plot of a comparison, as the Run pane draws it: each edited node's tolerance score
(``max |e - o| / (atol + rtol |o|)``) along the graph's order on a log scale, the tolerance (score 1)
as a dashed line, the first divergence in red. Inline SVG; each point's tooltip names its node."""

from __future__ import annotations

import math

from fxstudio.core.report.markup import esc

FLOOR = 1e-6          # scores below this (bitwise equal: 0) sit on the floor
W, H = 960.0, 280.0
LEFT, RIGHT, TOP, BOTTOM = 56.0, 16.0, 16.0, 40.0


def _y(score: float, lo: float, hi: float) -> float:
    """The y of a score (clamped to [lo, hi], log scale)."""
    v = math.log10(min(max(score, lo), hi))
    frac = (v - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    return TOP + (1 - frac) * (H - TOP - BOTTOM)


def node_plot(nodes: list, first_name: str | None) -> str:
    """The SVG plot of ``nodes`` (``CompareReport.nodes``); ``""`` when no node has a score."""
    points = [(i, n) for i, n in enumerate(nodes) if n.status != "no_counterpart"]
    if not points:
        return ""
    finite = [n.score for _, n in points if n.score is not None and math.isfinite(n.score) and n.score > 0]
    hi = 10 ** math.ceil(math.log10(max(max(finite, default=1.0), 10.0)))
    ceiling = hi * 10  # another shape, NaN: drawn above the largest finite score
    lo = FLOOR
    span = max(len(nodes) - 1, 1)
    plot_w = W - LEFT - RIGHT

    def x_of(i: int) -> float:
        return LEFT + plot_w * (i / span if len(nodes) > 1 else 0.5)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W:.0f}" height="{H:.0f}" '
           f'viewBox="0 0 {W:.0f} {H:.0f}" role="img" aria-label="tolerance score per node">']
    exp = round(math.log10(lo))
    while 10 ** exp <= ceiling * 1.0001:
        y = _y(10 ** exp, lo, ceiling)
        label = "∞" if 10 ** exp > hi * 1.0001 else f"1e{exp}"
        out.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        exp += 1 if ceiling / lo < 1e9 else 2
    y1 = _y(1.0, lo, ceiling)
    out.append(f'<line class="tol" x1="{LEFT}" x2="{W - RIGHT}" y1="{y1:.1f}" y2="{y1:.1f}"/>'
               f'<text x="{W - RIGHT}" y="{y1 - 4:.1f}" text-anchor="end">tolerance</text>')
    out.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{H - BOTTOM}"/>'
               f'<line class="axis" x1="{LEFT}" x2="{W - RIGHT}" y1="{H - BOTTOM}" y2="{H - BOTTOM}"/>'
               f'<text x="{LEFT + plot_w / 2:.0f}" y="{H - 8}" text-anchor="middle">node, in graph order '
               f'({len(nodes)} nodes)</text>'
               f'<text x="14" y="{TOP + (H - TOP - BOTTOM) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + (H - TOP - BOTTOM) / 2:.0f})">score</text>')
    radius = 3.5 if len(points) <= 400 else 2.0
    for i, n in points:
        score = n.score
        if n.status == "error" or score is None and n.status == "diverged" or score is not None and not math.isfinite(score):
            y = _y(ceiling, lo, ceiling)
        else:
            y = _y(score or 0.0, lo, ceiling)
        css = "p-first" if n.name == first_name else f"p-{n.status}"
        shown = "inf" if score is not None and not math.isfinite(score) else (f"{score:.3g}" if score is not None else "-")
        tip = f"{n.name}: {n.status}, score {shown}" + (f" ({n.note})" if n.note else "")
        r = radius * 1.8 if css == "p-first" else radius
        out.append(f'<circle class="{css}" cx="{x_of(i):.1f}" cy="{y:.1f}" r="{r:.1f}"><title>{esc(tip)}</title></circle>')
    out.append("</svg>")
    return "".join(out)
