"""Sibling module frames that overlap, found on arrays (for ``frames.separate_frames``).

``build_groups`` followed by a sweep over each parent's children costs a Python object per frame
and a Python step per card each round; here the frames' boxes come level by level from numpy
reductions and the overlapping pairs from one sort by top and one search per box for its bottom.
"""

from __future__ import annotations

import numpy as np


class SiblingBoxes:
    """What ``build_groups`` and ``_overlap_shifts`` compute for ``separate_frames`` (no collapsed
    cards), on arrays: the frames' boxes level by level, and the overlapping siblings from one
    sort by top and a search for each box's bottom (``shifts``)."""

    PAIR_LIMIT = 2_000_000  # candidate pairs beyond which ``shifts`` leaves it to the sweep

    def __init__(self, frames: dict[str, list[int]], plan, n: int, roots: list[int], rank: dict, cpos: np.ndarray):
        paths = [p for p, *_ in plan]  # deepest first, as ``build_groups`` inserts them
        index = {p: i for i, p in enumerate(paths)}
        self.nf = len(paths)
        self.depth = np.asarray([d for _, d, _, _ in plan], dtype=np.int64)
        self.parent = np.asarray([index.get(q, -1) if q else -1 for _, _, q, _ in plan], dtype=np.int64)
        fi = [index[p] for p, m in frames.items() for _ in m]
        self.unit = np.asarray([u for m in frames.values() for u in m], dtype=np.int64)
        self.unit_frame = np.asarray(fi, dtype=np.int64)
        self.levels = [np.nonzero(self.depth == d)[0] for d in range(int(self.depth.max()) + 1)][::-1] if self.nf else []
        # The items each parent's siblings are drawn from, in ``_overlap_shifts``'s order: frames,
        # then each frame's own cards, then the cards in no frame.
        roots_a = np.asarray(roots, dtype=np.int64)
        self.item_parent = np.concatenate([self.parent, self.unit_frame, np.full(len(roots_a), -1, dtype=np.int64)])
        self.item_unit = np.concatenate([np.full(self.nf, -1, dtype=np.int64), self.unit, roots_a])
        cp = np.asarray(cpos, dtype=np.float64)
        self.item_rank = np.concatenate([np.asarray([rank.get(p, 0.0) for p in paths], dtype=np.float64),
                                         cp[self.unit], cp[roots_a]])
        self.keys = paths

    def frame_boxes(self, boxes: np.ndarray, pad: float = 12.0, label_room: float = 22.0) -> np.ndarray:
        """(x0, y0, x1, y1) of every frame, padded as ``build_groups`` draws it."""
        out = np.empty((self.nf, 4))
        out[:, :2] = np.inf
        out[:, 2:] = -np.inf
        ub = boxes[self.unit]
        for c, fn in ((0, np.minimum), (1, np.minimum), (2, np.maximum), (3, np.maximum)):
            fn.at(out[:, c], self.unit_frame, ub[:, c])
        grow = np.asarray([-pad, -pad - label_room, pad, pad])
        for lv in self.levels:  # deepest first: a parent's box takes in its children's padded frames
            out[lv] += grow
            ch = lv[self.parent[lv] >= 0]
            par = self.parent[ch]
            for c, fn in ((0, np.minimum), (1, np.minimum), (2, np.maximum), (3, np.maximum)):
                fn.at(out[:, c], par, out[ch, c])
        return out

    def shifts(self, boxes: np.ndarray, gap: float):
        """``_overlap_shifts``'s answer for unit ``boxes``, or None where there are too many
        candidate pairs (the caller then sweeps)."""
        fb = self.frame_boxes(boxes)
        ub = boxes[np.maximum(self.item_unit[self.nf:], 0)]
        b = np.concatenate([fb, ub]) if len(ub) else fb
        par = self.item_parent
        m = len(b)
        if m < 2:
            return []
        order = np.lexsort((b[:, 1], par))  # by parent, then top (stable: the sweep's order)
        y0s = b[order, 1]
        ps = par[order] + 1
        uy, ry = np.unique(y0s, return_inverse=True)
        key = ps * (len(uy) + 1) + ry.reshape(-1)
        stop = np.searchsorted(key, ps * (len(uy) + 1) + np.searchsorted(uy, b[order, 3], side="left"), side="left")
        start = np.arange(m) + 1
        count = np.maximum(stop - start, 0)
        total = int(count.sum())
        if total == 0:
            return []
        if total > self.PAIR_LIMIT:
            return None
        ia = np.repeat(np.arange(m), count)
        off = np.cumsum(count) - count
        ib = np.arange(total) - np.repeat(off, count) + np.repeat(start, count)
        a, bb = order[ia], order[ib]
        ok = (b[a, 2] + gap > b[bb, 0] + 1e-6) & (b[bb, 2] + gap > b[a, 0] + 1e-6)
        a, bb = a[ok], bb[ok]
        if len(a) == 0:
            return []
        ra, rb = self.item_rank[a], self.item_rank[bb]
        first = np.where(ra <= rb, a, bb)
        later = np.where(ra <= rb, bb, a)
        amount = b[first, 2] + gap - b[later, 0]
        # ``_overlap_shifts`` lists pairs in sweep order, then keeps each key's largest amount in
        # the order of the moving box's left edge.
        x0 = b[later, 0]
        pick = np.lexsort((-amount, x0))
        best: dict = {}
        for it, amt in zip(later[pick].tolist(), amount[pick].tolist()):
            k = self.keys[it] if it < self.nf else int(self.item_unit[it])
            if k not in best:
                best[k] = amt
        return list(best.items())
