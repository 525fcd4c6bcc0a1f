"""A new layer opened under layer ``after`` of a finished layout, for one inserted card, or a
layer holding nothing but an erased card closed (``local_relayout``): ``Stretch``.

Everything below the line ``yb`` (the bottom of layer ``after``'s band) moves down by ``dh``
(the new card's height and the gap under it), and the layers below are numbered one more. That map
keeps y order, so nothing that was apart comes to overlap: a frame across the line grows by ``dh``
(and so holds the new layer where it crosses it), one below moves, one above stays. An edge across
the line keeps its bend above the line and runs straight down through the new layer, at the x where
it entered the layer under it before (a card or lane there: the new card keeps off those x).
Closing a layer (``step`` -1, ``dh`` < 0) is the inverse map: what lies below the closed band moves
up, the points of routes inside it go.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fxstudio.core.layout.types import EdgeRoute, GroupBox, NodeBox


@dataclass(frozen=True)
class Stretch:
    """Layers after ``after`` move down by ``dh`` and ``step`` numbers; ``yb`` is where the move
    starts. ``step`` -1: layer ``after`` (``yb`` to ``yb - dh``) is closed instead."""

    after: int
    yb: float
    dh: float
    top: float = 0.0   # the new layer's top and its card's height
    h: float = 0.0
    avoid: tuple[float, float] = (0.0, 0.0)   # the x an edge across the new layer keeps out of (its card)
    step: int = 1

    def node(self, b: NodeBox) -> NodeBox:
        """``b`` moved, if it lies below the line."""
        if b.layer <= self.after:
            return b
        return NodeBox(name=b.name, x=b.x, y=b.y + self.dh, w=b.w, h=b.h, layer=b.layer + 1)

    def nodes(self, boxes: dict, new: NodeBox | None = None, at: int = -1, gone: str | None = None) -> dict:
        """Every box of ``boxes`` (name → ``NodeBox``) but ``gone``, those below the line moved;
        ``new`` put in as the ``at``-th (graph order)."""
        after, dh, box, step = self.after, self.dh, NodeBox, self.step
        out = {}
        k = 0
        for n, b in boxes.items():
            if k == at:
                out[new.name] = new
            k += 1
            lyr = b.layer
            out[n] = b if lyr <= after else box(n, b.x, b.y + dh, b.w, b.h, lyr + step)
        out.pop(gone, None)
        if new is not None and new.name not in out:
            out[new.name] = new
        return out

    def routes(self, routes: list, at: list[int]) -> None:
        """``routes[k] = self.route(routes[k])`` for each ``k`` in ``at`` (those reaching below the line)."""
        yb, dh, route, er = self.yb, self.dh, self.route, EdgeRoute
        for k in at:
            r = routes[k]
            pts = r.points
            if pts and pts[0][1] > yb:
                routes[k] = er(r.src, r.dst, r.key, [(x, y + dh) for x, y in pts])
            else:
                routes[k] = route(r)

    def route(self, r: EdgeRoute) -> EdgeRoute:
        """``r`` moved where it runs below the line; across it, straight down through the new layer
        (round the new card where it would meet it)."""
        pts, yb, dh = r.points, self.yb, self.dh
        if not pts or pts[-1][1] <= yb:
            return r
        if pts[0][1] > yb:
            return EdgeRoute(src=r.src, dst=r.dst, key=r.key, points=[(x, y + dh) for x, y in pts])
        if self.step < 0:
            return self._closed(r)
        out: list[tuple[float, float]] = []
        below = False
        for x, y in pts:
            if y <= yb:
                out.append((x, y))
                continue
            if not below:
                below = True
                out.extend(self._through(out[-1], x, y))
            p = (x, y + dh)
            if p != out[-1]:
                out.append(p)
        return EdgeRoute(src=r.src, dst=r.dst, key=r.key, points=out)

    def _closed(self, r: EdgeRoute) -> EdgeRoute:
        """``r`` with its points inside the closed band left out and those below it moved up."""
        yb, dh = self.yb, self.dh
        out: list[tuple[float, float]] = []
        for x, y in r.points:
            if y > yb:
                if y <= yb - dh:   # in the band, or on its bottom (where a detour round its card ended)
                    continue
                y += dh
            if not out or out[-1] != (x, y):
                out.append((x, y))
        # A lane run straight down through the band comes out with a point in the middle of a
        # vertical run: a layout's routes have none (``route_edges``).
        keep = [out[0]] + [b for a, b, c in zip(out, out[1:], out[2:]) if not (a[0] == b[0] == c[0])] + out[-1:]
        return EdgeRoute(src=r.src, dst=r.dst, key=r.key, points=keep if len(out) > 1 else out)

    def _through(self, a: tuple[float, float], x: float, y: float) -> list[tuple[float, float]]:
        """The points of a segment from ``a`` (above the line) to (x, y) (below it) across the new
        layer: it enters the layer where it met the old layer's top, runs down, and leaves it there."""
        top, dh = self.top, self.dh
        xa, ya = a
        xt = x if y <= top or y == ya else xa + (x - xa) * (top - ya) / (y - ya)
        ty = min(y, top)
        lo, hi = self.avoid
        if lo < xt < hi:   # the new card is there: pass it on its nearer side
            side = lo if xt - lo <= hi - xt else hi
            return [(side, ty), (side, top + self.h), (xt, top + dh)]
        return [(xt, ty), (xt, ty + dh)]

    def groups(self, groups: dict) -> dict:
        """The frames: those below the line moved, those across it taller."""
        yb, dh, after, gb = self.yb, self.dh, self.after, GroupBox
        out = {}
        for p, g in groups.items():
            y = g.y
            if y > yb:
                lyr = g.layer
                g = gb(p, g.label, g.x, y + dh, g.w, g.h, g.depth, g.collapsed, g.members,
                       lyr + self.step if lyr > after else lyr)
            elif y + g.h > yb:
                g = gb(p, g.label, g.x, y, g.w, g.h + dh, g.depth, g.collapsed, g.members, g.layer)
            out[p] = g
        return out

    def frame_boxes(self, frames: np.ndarray) -> np.ndarray:
        """(x0, y0, x1, y1) rows of frames, moved and grown as ``groups`` does."""
        out = frames.copy()
        out[:, 3] += np.where(out[:, 3] > self.yb, self.dh, 0.0)
        out[:, 1] += np.where(out[:, 1] > self.yb, self.dh, 0.0)
        return out

    def layers(self, layer: np.ndarray) -> np.ndarray:
        """Layer numbers with those below the line one more."""
        return np.where(layer > self.after, layer + self.step, layer)

    def bands(self, tops: np.ndarray, bottoms: np.ndarray, top: float, h: float) -> tuple[np.ndarray, np.ndarray]:
        """Band tops and bottoms with the new layer's band (``top``, height ``h``) put in."""
        if self.step < 0:
            k = self.after
            return (np.concatenate([tops[:k], tops[k + 1:] + self.dh]),
                    np.concatenate([bottoms[:k], bottoms[k + 1:] + self.dh]))
        k = self.after + 1
        moved_t = np.concatenate([tops[:k], [top], tops[k:] + self.dh])
        moved_b = np.concatenate([bottoms[:k], [top + h], bottoms[k:] + self.dh])
        return moved_t, moved_b

    def layer_tops(self, layer_tops: dict | None, top: float) -> dict | None:
        """``Layout.layer_tops`` renumbered and moved, the new layer's top put in."""
        if layer_tops is None:
            return None
        after, dh, step = self.after, self.dh, self.step
        out = {(lyr if lyr <= after else lyr + step): (t if lyr <= after else t + dh)
               for lyr, t in layer_tops.items() if lyr != after or step > 0}
        if step > 0:
            out[after + 1] = top
        return out

    def sorted_rows(self, rows: tuple | None) -> tuple | None:
        """``Placement._sorted`` (layers, lefts, rights sorted by layer) renumbered."""
        if rows is None:
            return None
        layers, lo, hi = rows
        return self.layers(layers), lo, hi
