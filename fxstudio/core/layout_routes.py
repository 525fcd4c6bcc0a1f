"""Edge routes: polylines from the bottom of the source card to the top of the destination card.

A route drops straight down to the bottom of its source's layer band, then passes through its
dummy in every layer it crosses (down the dummy's slot, which no card occupies) and ends at the
destination's top centre. Between bands there are no cards, so a route never crosses a card.
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout_types import EdgeRoute


def route_edges(units, layer: np.ndarray, x: np.ndarray, ys: np.ndarray, heights: np.ndarray,
                tops: np.ndarray, layer_h: np.ndarray, dummy_base: np.ndarray) -> list[EdgeRoute]:
    """One ``EdgeRoute`` per distinct (src, dst, key) between the laid-out units."""
    names = units.names
    lay = layer.tolist()
    xs = x.tolist()
    y = ys.tolist()
    h = heights.tolist()
    top = tops.tolist()
    bottom = (tops + layer_h).tolist()
    base = dummy_base.tolist()
    routes: list[EdgeRoute] = []
    seen = set()
    for u, v, key in zip(units.edge_src.tolist(), units.edge_dst.tolist(), units.edge_keys):
        if (u, v, key) in seen:
            continue
        seen.add((u, v, key))
        lu, lv = lay[u], lay[v]
        if lu < lv:
            pts = [(xs[u], y[u] + h[u])]
            if y[u] + h[u] < bottom[lu]:
                pts.append((xs[u], bottom[lu]))
            if lv - lu > 1:
                b = base[u] - lu - 1
                for lyr in range(lu + 1, lv):
                    dx = xs[b + lyr]
                    pts.append((dx, top[lyr]))
                    pts.append((dx, bottom[lyr]))
            pts.append((xs[v], y[v]))
        else:
            # Against the layering (a cycle made by collapsing a group): drawn upward through the
            # dummies of the upper end.
            pts = [(xs[u], y[u])]
            if lu - lv > 1:
                b = base[v] - lv - 1
                for lyr in range(lu - 1, lv, -1):
                    dx = xs[b + lyr]
                    pts.append((dx, bottom[lyr]))
                    pts.append((dx, top[lyr]))
            pts.append((xs[v], y[v] + h[v]))
        routes.append(EdgeRoute(src=names[u], dst=names[v], key=key, points=pts))
    return routes
