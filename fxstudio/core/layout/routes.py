"""Edge routes: polylines from the bottom of the source card to the top of the destination card.

A route drops straight down to the bottom of its source's layer band, then passes through its
dummy in every layer it crosses (down the dummy's slot, which no card occupies) and ends at the
destination's top centre. Between bands there are no cards, so a route never crosses a card.
Points in the middle of a straight vertical run are left out.
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.types import EdgeRoute


def route_edges(units, layer: np.ndarray, x: np.ndarray, ys: np.ndarray, heights: np.ndarray,
                tops: np.ndarray, layer_h: np.ndarray, dummy_base: np.ndarray) -> list[EdgeRoute]:
    """One ``EdgeRoute`` per distinct (src, dst, key) between the laid-out units, in graph order."""
    u_all, v_all, keys = units.edge_src, units.edge_dst, units.edge_keys
    if len(u_all) == 0:
        return []
    bottom = tops + layer_h
    fwd = layer[u_all] < layer[v_all]
    u, v = u_all[fwd], v_all[fwd]
    lu, lv = layer[u], layer[v]
    nd = lv - lu - 1
    src_bottom = ys[u] + heights[u]
    extra = (src_bottom < bottom[lu]).astype(np.int64)
    npts = 2 + extra + 2 * nd
    off = np.zeros(len(u) + 1, dtype=np.int64)
    np.cumsum(npts, out=off[1:])
    total = int(off[-1])
    px = np.empty(total)
    py = np.empty(total)
    o = off[:-1]
    px[o], py[o] = x[u], src_bottom
    e = np.nonzero(extra)[0]
    px[o[e] + 1], py[o[e] + 1] = x[u[e]], bottom[lu[e]]
    end = off[1:] - 1
    px[end], py[end] = x[v], ys[v]
    nd_total = int(nd.sum())
    if nd_total:
        owner = np.repeat(np.arange(len(u)), nd)
        k = np.arange(nd_total, dtype=np.int64) - np.repeat(np.cumsum(nd) - nd, nd)
        lyr = lu[owner] + 1 + k
        d = dummy_base[u[owner]] + k
        at = o[owner] + 1 + extra[owner] + 2 * k
        px[at], py[at] = x[d], tops[lyr]
        px[at + 1], py[at + 1] = x[d], bottom[lyr]
    # A lane that runs straight through many layers needs only its end points: drop interior
    # points in the middle of a straight vertical run (the polyline draws the same).
    if nd_total:
        same_prev = np.zeros(total, dtype=bool)
        same_prev[1:] = px[1:] == px[:-1]
        same_next = np.zeros(total, dtype=bool)
        same_next[:-1] = px[:-1] == px[1:]
        keep = ~(same_prev & same_next)
        keep[o] = True
        keep[end] = True
        counts = np.add.reduceat(keep.astype(np.int64), o) if len(o) else np.zeros(0, dtype=np.int64)
        px, py = px[keep], py[keep]
        off = np.zeros(len(u) + 1, dtype=np.int64)
        np.cumsum(counts, out=off[1:])
    flat = list(zip(px.tolist(), py.tolist()))
    bounds = off.tolist()
    points = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    if not fwd.all():
        rev = iter(_reversed_routes(u_all[~fwd], v_all[~fwd], layer, x, ys, heights, tops, bottom, dummy_base))
        fwd_points = iter(points)
        points = [next(fwd_points) if is_fwd else next(rev) for is_fwd in fwd.tolist()]
    names = units.names
    get = names.__getitem__
    # Positional arguments: a keyword call costs twice as much per route.
    return list(map(EdgeRoute, map(get, u_all.tolist()), map(get, v_all.tolist()), keys, points))


def _reversed_routes(us, vs, layer, x, ys, heights, tops, bottom, dummy_base) -> list[list[tuple[float, float]]]:
    """Routes of edges against the layering (a cycle made by collapsing a group), drawn upward
    through the dummies of their upper end."""
    out = []
    for u, v in zip(us.tolist(), vs.tolist()):
        lu, lv = int(layer[u]), int(layer[v])
        pts = [(float(x[u]), float(ys[u]))]
        if lu - lv > 1:
            b = int(dummy_base[v]) - lv - 1
            for lyr in range(lu - 1, lv, -1):
                dx = float(x[b + lyr])
                pts.append((dx, float(bottom[lyr])))
                pts.append((dx, float(tops[lyr])))
        pts.append((float(x[v]), float(ys[v] + heights[v])))
        out.append(pts)
    return out
