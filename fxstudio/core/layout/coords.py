"""Coordinate assignment: x centres that keep chains straight and pack tightly, y from layer bands.

For a fixed order inside each layer, placing nodes at desired x values ``d`` subject to the
minimum separations is a monotone projection: with ``c`` the packed offsets, ``x - c`` must be
non-decreasing along the layer, so the closest feasible x is a weighted isotonic regression,
solved for every layer at once by pool-adjacent-violators rounds in numpy. Real cards weigh more
than dummies, so when a chain and a long edge compete for room the long edge steps aside.
Chains are made straight by vertical alignment into blocks (``layout_align``); the projection
then lets the nodes outside blocks slide towards their neighbours.
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.align import align, block_roots, compact


class RowPacking:
    """The packed order of all nodes: ``perm`` sorted by (layer, pos) and minimum offsets ``c``."""

    def __init__(self, layer: np.ndarray, pos: np.ndarray, widths: np.ndarray, gaps: np.ndarray):
        self.perm = np.lexsort((pos, layer))
        lp = layer[self.perm]
        wp = widths[self.perm]
        gp = gaps[self.perm]
        first = np.ones(len(lp), dtype=bool)
        first[1:] = lp[1:] != lp[:-1]
        sep = np.zeros(len(lp))
        sep[1:] = (wp[1:] + wp[:-1]) / 2 + np.maximum(gp[1:], gp[:-1])
        sep[first] = 0.0
        cum = np.cumsum(sep)
        starts = np.nonzero(first)[0]
        self.c = cum - cum[starts][np.cumsum(first) - 1]
        self.first = first
        self.seg = (np.cumsum(first) - 1).astype(np.float64)

    def project(self, desired: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
        """x closest to ``desired`` (weighted least squares) that respects every separation, by node id.

        Exact: weighted isotonic regression of ``desired - c`` per layer by pool-adjacent-violators,
        merging all violating neighbours of every layer in one numpy round.
        """
        m = len(self.perm)
        if m == 0:
            return desired.copy()
        t = desired[self.perm] - self.c
        w = np.ones(m) if weight is None else weight[self.perm]
        wt = w * t
        start = np.ones(m, dtype=bool)  # every node its own block to start with
        while True:
            idx = np.nonzero(start)[0]
            sw = np.add.reduceat(w, idx)
            val = np.add.reduceat(wt, idx) / sw
            viol = (val[:-1] > val[1:] + 1e-9) & ~self.first[idx[1:]]
            if not viol.any():
                break
            start[idx[1:][viol]] = False
        block = np.cumsum(start) - 1
        x = np.empty_like(desired, dtype=np.float64)
        x[self.perm] = val[block] + self.c
        return x

    def project_anchored(self, desired: np.ndarray, anchor: np.ndarray) -> np.ndarray:
        """Feasible x with every anchor exactly at ``desired`` (anchors must already be feasible
        among themselves); the other nodes are clamped between the anchors around them and
        spread by the mean of a left-to-right running max and a right-to-left running min."""
        m = len(self.perm)
        if m == 0:
            return desired.copy()
        t = desired[self.perm] - self.c
        a = anchor[self.perm]
        lo = float(t.min())
        u = t - lo + 1.0  # >= 1, so 0 can mean "no anchor to the left"
        r = float(u.max()) + 2.0
        off = self.seg * (r + 1.0)
        fw = np.maximum.accumulate(np.where(a, u, 0.0) + off) - off
        lb = np.where(fw <= 0.5, -np.inf, fw)
        bw = np.minimum.accumulate((np.where(a, u, r) + off)[::-1])[::-1] - off
        ub = np.where(bw >= r - 0.5, np.inf, bw)
        uu = np.where(a, u, np.clip(u, lb, ub))
        fwd = np.maximum.accumulate(uu + off) - off
        bwd = np.minimum.accumulate((uu + off)[::-1])[::-1] - off
        res = np.where(a, t, (fwd + bwd) / 2 + lo - 1.0)
        x = np.empty_like(desired, dtype=np.float64)
        x[self.perm] = res + self.c
        return np.where(anchor, desired, x)


def assign_x(
    layer: np.ndarray, pos: np.ndarray, widths: np.ndarray, gaps: np.ndarray, is_dummy: np.ndarray,
    heavy: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, *, init: np.ndarray | None = None,
    fixed: np.ndarray | None = None, iterations: int = 4,
) -> np.ndarray:
    """x centre of every node (real and dummy) for the given in-layer order.

    Fresh layout: aligned blocks (``layout_align``) packed and balanced, then nodes outside any
    block (weights, lone cards) slide next to their neighbours without moving the blocks.
    Incremental (``init`` and ``fixed`` given): fixed nodes stay at ``init`` where the room allows
    and the others settle between their neighbours.
    """
    n = len(layer)
    packing = RowPacking(layer, pos, widths, gaps)
    if init is None:
        root = block_roots(align(layer, pos, is_dummy, heavy, seg_src, seg_dst))
        x = compact(layer, pos, widths, gaps, root)
        anchor = np.bincount(root, minlength=n)[root] > 1
    else:
        x = packing.project(init.astype(np.float64), np.where(fixed, 1e6, 1.0))
        # Rounding noise of the huge weights: fixed nodes that did not have to move stay exact.
        x = np.where(fixed & (np.abs(x - init) < 1e-3), init, x)
        anchor = fixed
    if len(seg_src) == 0 or iterations == 0 or anchor.all():
        return x
    target = x.copy()
    w = (np.bincount(seg_dst, minlength=n) + np.bincount(seg_src, minlength=n)).astype(np.float64)
    for _ in range(iterations):
        s = np.bincount(seg_dst, weights=x[seg_src], minlength=n)
        s += np.bincount(seg_src, weights=x[seg_dst], minlength=n)
        desired = np.where(anchor, target, np.where(w > 0, s / np.maximum(w, 1.0), x))
        x = packing.project_anchored(desired, anchor)
    return x


def band_tops(layer_heights: np.ndarray, gaps) -> np.ndarray:
    """y of the top of each layer's band, bands stacked downward with ``gaps[l]`` below layer l."""
    tops = np.zeros(len(layer_heights))
    if len(layer_heights) > 1:
        gap = np.broadcast_to(np.asarray(gaps, dtype=np.float64), (len(layer_heights),))
        np.cumsum(layer_heights[:-1] + gap[:-1], out=tops[1:])
    return tops
