"""Measuring a layout, whoever computed it: edge crossings, overlapping cards, upward edges.

``count_crossings`` works on the geometry alone (node boxes and edge polylines), so the same
function scores fxstudio's layout and Graphviz ``dot``'s on the same graph: scan lines run
through every node centre row, each edge is cut at the lines it spans (its polyline extended to
its end nodes' centres), and two edges cross between two consecutive lines when their order
swaps. Edges sharing an end node tie there and do not count.
"""

from __future__ import annotations

from itertools import accumulate

import numpy as np

from fxstudio.core.layout.budget import LayoutBudget
from fxstudio.core.layout.crossings import count_inversions_segmented
from fxstudio.core.layout.layers import sorted_unique
from fxstudio.core.layout.sweep_crossings import sweep_count
from fxstudio.core.layout.types import Layout


def _edge_polylines(layout: Layout) -> list[tuple[list[float], list[float]]]:
    """Each edge's route extended to its end nodes' centres, as (xs, ys) lists from top to bottom
    with ys made non-decreasing (tiny backward wiggles of spline control points are tolerated);
    edges whose ends are not in ``layout`` are left out."""
    nodes, groups = layout.nodes, layout.groups
    out = []
    for route in layout.edges:
        src = nodes.get(route.src) or groups.get(route.src)
        dst = nodes.get(route.dst) or groups.get(route.dst)
        if src is None or dst is None:
            continue
        pts = [(src.x + src.w / 2, src.y + src.h / 2), *route.points, (dst.x + dst.w / 2, dst.y + dst.h / 2)]
        if pts[-1][1] < pts[0][1]:
            pts.reverse()
        xs = [p[0] for p in pts]
        ys = list(accumulate((p[1] for p in pts), max))
        out.append((xs, ys))
    return out


def count_crossings(layout: Layout, *, cut_limit: int | None = None) -> int:
    """Number of pairwise edge crossings in ``layout``, counted between consecutive node rows.

    The cuts of edges at the rows they span are counted first: past ``cut_limit`` (default: the
    graph's ``LayoutBudget``) the same count comes from the rows where edges move sideways
    (``sweep_crossings``), so a fan-out across 100k rows costs its routes' points, not 100k cuts
    per edge."""
    centres = [b.y + b.h / 2 for b in layout.nodes.values()]
    centres += [g.y + g.h / 2 for g in layout.groups.values() if g.collapsed]
    if not centres or len(layout.edges) < 2:
        return 0
    lines = sorted_unique(np.round(np.asarray(centres), 3))
    polys = _edge_polylines(layout)
    if not polys:
        return 0
    top = np.asarray([ys[0] for _, ys in polys])
    bottom = np.asarray([ys[-1] for _, ys in polys])
    lo = np.searchsorted(lines, top - 1e-6)
    hi = np.searchsorted(lines, bottom + 1e-6, side="right")
    cut = np.nonzero(hi - lo >= 2)[0]
    if len(cut) < 2:
        return 0
    if cut_limit is None:
        cut_limit = LayoutBudget.for_graph(len(layout.nodes), len(layout.edges)).cuts()
    if int((hi - lo)[cut].sum()) > cut_limit:
        sizes = np.asarray([len(polys[i][0]) for i in cut.tolist()], dtype=np.int64)
        vstart = np.zeros(len(cut) + 1, dtype=np.int64)
        np.cumsum(sizes, out=vstart[1:])
        vx = np.fromiter((v for i in cut.tolist() for v in polys[i][0]), dtype=np.float64, count=int(vstart[-1]))
        vy = np.fromiter((v for i in cut.tolist() for v in polys[i][1]), dtype=np.float64, count=int(vstart[-1]))
        return sweep_count(lines, vx, vy, vstart, lo[cut], hi[cut])
    gap_ids, first, second = [], [], []
    for i, a, b in zip(cut.tolist(), lo[cut].tolist(), hi[cut].tolist()):
        xs, ys = polys[i]
        cx = np.interp(lines[a:b], ys, xs)
        gap_ids.append(np.arange(a, b - 1))
        first.append(cx[:-1])
        second.append(cx[1:])
    g = np.concatenate(gap_ids)
    a = np.concatenate(first)
    b = np.concatenate(second)
    return count_inversions_segmented(g, _ranks(g, a), _ranks(g, b))


def _ranks(gap: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Dense rank of each value inside its gap (equal values share a rank)."""
    order = np.lexsort((values, gap))
    v, gg = values[order], gap[order]
    new = np.ones(len(v), dtype=bool)
    new[1:] = (gg[1:] != gg[:-1]) | (v[1:] > v[:-1] + 1e-6)
    dense = np.cumsum(new)
    out = np.empty(len(v), dtype=np.int64)
    out[order] = dense
    return out


def overlapping_pairs(layout: Layout, limit: int = 10) -> list[tuple[str, str]]:
    """Up to ``limit`` pairs of node cards (and collapsed group cards) whose boxes overlap."""
    items = [(n, b.x, b.y, b.w, b.h) for n, b in layout.nodes.items()]
    items += [(p, g.x, g.y, g.w, g.h) for p, g in layout.groups.items() if g.collapsed]
    if len(items) < 2:
        return []
    names = [i[0] for i in items]
    arr = np.asarray([i[1:] for i in items], dtype=np.float64)
    order = np.argsort(arr[:, 1], kind="stable")
    x0, y0 = arr[order, 0], arr[order, 1]
    x1, y1 = x0 + arr[order, 2], y0 + arr[order, 3]
    eps = 1e-6
    found: list[tuple[str, str]] = []
    for k in range(1, len(items)):
        i = np.arange(len(items) - k)
        j = i + k
        ycand = y0[j] < y1[i] - eps
        if not ycand.any():
            break
        hit = ycand & (x0[j] < x1[i] - eps) & (x0[i] < x1[j] - eps)
        for a, b in zip(i[hit][:limit], j[hit][:limit]):
            found.append((names[order[a]], names[order[b]]))
        if len(found) >= limit:
            break
    return found[:limit]


def upward_edges(layout: Layout, limit: int = 10) -> list[tuple[str, str]]:
    """Up to ``limit`` edges whose route does not go strictly downward from source to destination."""
    bad = []
    for e in layout.edges:
        src = layout.nodes.get(e.src) or layout.groups.get(e.src)
        dst = layout.nodes.get(e.dst) or layout.groups.get(e.dst)
        ys = [p[1] for p in e.points]
        down = all(a <= b for a, b in zip(ys, ys[1:]))
        if src is None or dst is None or not down or src.y + src.h > dst.y or ys[0] < src.y + src.h - 1e-6 \
                or ys[-1] > dst.y + 1e-6:
            bad.append((e.src, e.dst))
            if len(bad) >= limit:
                break
    return bad
