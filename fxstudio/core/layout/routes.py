"""Edge routes: polylines from the bottom of the source card to the top of the destination card.

A route drops straight down to the bottom of its source's layer band, then passes through its
dummy in every layer it crosses (down the dummy's slot, which no card occupies) and ends at the
destination's top centre. Between bands there are no cards, so a route never crosses a card.
Points in the middle of a straight vertical run are left out.

A source's long edges share its dummies, so every route of a fan-out runs down the same lane and
differs only in where it leaves it. The routes are built from that shared lane, which is kept once
as the points where it bends (``_Lanes``), never as one point per edge and layer: a source used in
50k layers costs its lane's bends per route, not 50k layers per route. The points are counted
before they are allocated; past ``point_limit`` the sources whose routes cost most run beside the
graph instead (``lanes.py``), six points a route. Edges of sources left without dummies
(``layers.add_dummies``) always do.
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.lanes import LANE_GAP, LANE_SPACING, ROUTE_POINTS, lane_columns, lane_points
from fxstudio.core.layout.types import EdgeRoute


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + k) for s, k in zip(starts, lengths)])`` without the loop."""
    total = int(lengths.sum())
    first = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(starts - first, lengths)


class _Lanes:
    """Every dummy's two route points (the top and the bottom of its layer's band) and which of them
    a route keeps: point ``2j`` is dummy ``j``'s top, kept where the lane steps sideways into it;
    ``2j + 1`` its bottom, kept where the lane steps sideways out of it (a route's last dummy's bottom
    is kept where the route steps to its destination, which ``keep`` cannot know)."""

    def __init__(self, n: int, x: np.ndarray, layer: np.ndarray, dummy_base: np.ndarray):
        self.n = n
        d = len(x) - n
        dx = x[n:]
        owners = np.nonzero(dummy_base >= 0)[0]
        first = np.zeros(d, dtype=bool)
        first[dummy_base[owners] - n] = True
        before = np.empty(d)
        before[1:] = dx[:-1]
        before[first] = x[owners]  # a lane's first dummy follows its source's card
        self.moves = dx != before
        keep = np.zeros(2 * d, dtype=bool)
        keep[0::2] = self.moves
        keep[1:-1:2] = self.moves[1:] & ~first[1:]
        # kept_before[i]: kept points before point i (one slot more, so a graph without dummies
        # can index it like any other)
        self.kept_before = np.zeros(2 * d + 2, dtype=np.int64)
        np.cumsum(keep, out=self.kept_before[1:2 * d + 1])
        self.kept_before[-1] = self.kept_before[2 * d]
        self.kept = np.nonzero(keep)[0]
        # dummies follow their source in ``owners`` order, one per layer from the one below it
        lane_of = np.cumsum(first) - 1
        step = np.arange(d, dtype=np.int64) - (dummy_base[owners] - n)[lane_of]
        self.x, self.layer = x, layer[owners][lane_of] + 1 + step

    def xy(self, idx: np.ndarray, tops: np.ndarray, bottom: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates of template points ``idx``."""
        j = idx // 2
        lyr = self.layer[j]
        return self.x[self.n + j], np.where(idx % 2 == 0, tops[lyr], bottom[lyr])


def route_edges(units, layer: np.ndarray, x: np.ndarray, ys: np.ndarray, heights: np.ndarray,
                tops: np.ndarray, layer_h: np.ndarray, dummy_base: np.ndarray, *, laned: np.ndarray | None = None,
                point_limit: int | None = None, right: float = 0.0, info: dict | None = None) -> list[EdgeRoute]:
    """One ``EdgeRoute`` per distinct (src, dst, key) between the laid-out units, in graph order.

    ``laned``: units without dummies (``add_dummies``), whose long edges run beside the graph, in
    columns from ``right`` (the right end of every card, dummy and frame) on. ``point_limit``: the
    most points all routes may have, counted before they are made. ``info`` gets ``lanes`` (routes
    beside the graph) and ``lane_columns``.
    """
    u_all, v_all, keys = units.edge_src, units.edge_dst, units.edge_keys
    if len(u_all) == 0:
        return []
    n = units.n
    bottom = tops + layer_h
    fwd = layer[u_all] < layer[v_all]
    a = np.where(fwd, u_all, v_all)  # the upper end, whose dummies a long edge runs down
    b = np.where(fwd, v_all, u_all)
    la, lb = layer[a], layer[b]
    nd = lb - la - 1
    long = nd > 0
    # Interior points are dropped only when some forward edge crosses a layer (as ever: a graph
    # of short edges keeps its routes' corner points).
    compress = bool((long & fwd).any())
    src_bottom = ys[a] + heights[a]
    extra = src_bottom < bottom[la]
    lane = long & laned[a] if laned is not None else np.zeros(len(a), dtype=bool)
    lanes = _Lanes(n, x, layer, dummy_base)
    j0 = np.where(long, dummy_base[a] - n, 0)
    jl = j0 + nd - 1

    def point_counts(lane: np.ndarray):
        thru = long & ~lane
        f_thru = thru & fwd
        j0t, jlt = np.where(thru, j0, 0), np.where(thru, jl, 0)
        mid = lanes.kept_before[2 * jlt + 1] - lanes.kept_before[2 * j0t]
        ex = extra & np.where(f_thru, lanes.moves[j0t] if len(lanes.moves) else False,
                              (x[b] != x[a]) | (not compress))
        last = x[b] != x[n + jlt] if len(x) > n else np.zeros(len(a), dtype=bool)
        cnt = np.where(fwd, 2 + ex + np.where(f_thru, mid + last, 0), 2 + np.where(thru, 2 * nd, 0))
        return np.where(lane, ROUTE_POINTS, cnt).astype(np.int64), mid, ex, last

    cnt, mid, ex, last = point_counts(lane)
    if point_limit is not None and int(cnt.sum()) > point_limit:
        lane = lane | _costly(a, long & ~lane, cnt, int(cnt.sum()) - point_limit, n)
        cnt, mid, ex, last = point_counts(lane)
    off = np.zeros(len(a) + 1, dtype=np.int64)
    np.cumsum(cnt, out=off[1:])
    px = np.empty(int(off[-1]))
    py = np.empty(int(off[-1]))
    o, end = off[:-1], off[1:] - 1
    thru = long & ~lane

    f = np.nonzero(fwd & ~lane)[0]  # downward: bottom of the source ... top of the destination
    px[o[f]], py[o[f]] = x[a[f]], src_bottom[f]
    e = f[ex[f]]
    px[o[e] + 1], py[o[e] + 1] = x[a[e]], bottom[la[e]]
    px[end[f]], py[end[f]] = x[b[f]], ys[b[f]]
    t = f[thru[f]]
    if len(t):
        src_idx = lanes.kept[_ranges(lanes.kept_before[2 * j0[t]], mid[t])]
        px[_ranges(o[t] + 1 + ex[t], mid[t])], py[_ranges(o[t] + 1 + ex[t], mid[t])] = lanes.xy(src_idx, tops, bottom)
        s = t[last[t]]
        px[end[s] - 1], py[end[s] - 1] = lanes.xy(2 * jl[s] + 1, tops, bottom)

    r = np.nonzero(~fwd & ~lane)[0]  # upward (a collapsed group's cycle): up the upper end's dummies
    px[o[r]], py[o[r]] = x[b[r]], ys[b[r]]
    px[end[r]], py[end[r]] = x[a[r]], src_bottom[r]
    t = r[thru[r]]
    if len(t):
        k = 2 * nd[t]
        # template points 2*jl+1 down to 2*j0: each dummy's bottom, then its top, bottom dummy first
        src_idx = np.repeat(2 * jl[t] + 1 + np.cumsum(k) - k, k) - np.arange(int(k.sum()), dtype=np.int64)
        px[_ranges(o[t] + 1, k)], py[_ranges(o[t] + 1, k)] = lanes.xy(src_idx, tops, bottom)

    w = np.nonzero(lane)[0]
    if len(w):
        column = lane_columns(a[w], b[w], la[w], lb[w] - 1, n)
        mids = (bottom[:-1] + tops[1:]) / 2  # the middle of the gap below each band
        lx, ly = lane_points(x[a[w]], src_bottom[w], x[b[w]], ys[b[w]], mids[la[w]], mids[lb[w] - 1],
                             right + LANE_GAP + LANE_SPACING * column, ~fwd[w])
        at = o[w][:, None] + np.arange(ROUTE_POINTS)
        px[at], py[at] = lx, ly
        if info is not None:
            info["lane_columns"] = int(column.max()) + 1
    if info is not None:
        info["lanes"] = len(w)
    flat = list(zip(px.tolist(), py.tolist()))
    bounds = off.tolist()
    points = [flat[i:j] for i, j in zip(bounds[:-1], bounds[1:])]
    names = units.names
    get = names.__getitem__
    # Positional arguments: a keyword call costs twice as much per route.
    return list(map(EdgeRoute, map(get, u_all.tolist()), map(get, v_all.tolist()), keys, points))


def _costly(owner: np.ndarray, through: np.ndarray, cnt: np.ndarray, excess: int, n: int) -> np.ndarray:
    """Per edge: whether its upper end is among the units whose routes, moved beside the graph
    (``ROUTE_POINTS`` each), save ``excess`` points, the units that save most first."""
    saving = np.bincount(owner[through], weights=(cnt - ROUTE_POINTS)[through], minlength=n)
    order = np.argsort(-saving, kind="stable")
    cum = np.cumsum(saving[order])
    k = int(np.searchsorted(cum, excess, side="left"))
    chosen = np.zeros(n, dtype=bool)
    chosen[order[:k + 1]] = True
    return through & chosen[owner]
