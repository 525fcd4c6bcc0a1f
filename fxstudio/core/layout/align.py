"""Vertical alignment and compaction (after Brandes & Köpf), vectorised with numpy.

Each node picks an upper partner among its inputs in the layer above: a dummy continues its long
edge; a real card prefers its real, non-weight inputs (so ``linear(x, w, b)`` aligns with ``x``,
not with the weight beside it), the median of them by position. A partner keeps one lower node
(a real consumer before a long edge). Aligned pairs that would cross are dropped, greedily left to
right per layer gap (a pair survives if no earlier pair reaches further right below). The aligned pairs form vertical blocks that share one x, so chains are
exactly straight. Blocks are packed left and right by longest paths over the "is left
of" constraints and the two packings are averaged (both feasible, so the mean is).
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.layers import sorted_unique


def _median_pick(cand_child: np.ndarray, cand_parent: np.ndarray, cand_pos: np.ndarray, pri: np.ndarray, n: int) -> np.ndarray:
    """For each child, the candidate parent of best (lowest) priority class, median by position."""
    pick = np.full(n, -1, dtype=np.int64)
    if len(cand_child) == 0:
        return pick
    order = np.lexsort((cand_pos, pri, cand_child))
    c, p, pr = cand_child[order], cand_parent[order], pri[order]
    first = np.ones(len(c), dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (pr[1:] != pr[:-1])
    grp = np.cumsum(first) - 1
    starts = np.nonzero(first)[0]
    sizes = np.bincount(grp)
    # Only the best class per child: the first group of each child.
    child_first = np.ones(len(starts), dtype=bool)
    child_first[1:] = c[starts[1:]] != c[starts[:-1]]
    med = starts + (sizes - 1) // 2
    chosen = med[child_first]
    pick[c[chosen]] = p[chosen]
    return pick


def align(layer, pos, is_dummy, heavy, seg_src, seg_dst) -> np.ndarray:
    """``up[v]``: the node v is aligned under (-1 if none). ``heavy`` marks weight-like nodes."""
    n = len(layer)
    s, d = seg_src, seg_dst
    # Upper partner candidates, best class first: for a dummy its single input; for a real card its
    # real data inputs, then long edges arriving through dummies, then weight-like inputs.
    pri = np.where(heavy[s], 3, np.where(is_dummy[s], 2, 1))
    pri = np.where(is_dummy[d], 0, pri)
    up = _median_pick(d, s, pos[s], pri, n)
    has = np.nonzero(up >= 0)[0]
    if len(has) == 0:
        return up
    # Each upper node keeps one lower: real consumers first (chains before long edges), median.
    child, parent = has, up[has]
    lpri = np.where(is_dummy[parent] & is_dummy[child], 0, np.where(is_dummy[child], 1, 0))
    lpri = np.where(is_dummy[parent], np.where(is_dummy[child], 0, 1), lpri)
    down = _median_pick(parent, child, pos[child], lpri, n)
    keep = down[parent] == child
    child, parent = child[keep], parent[keep]
    # Drop aligned pairs that cross an earlier kept one in the same gap (greedy, left to right).
    order = np.lexsort((pos[parent], layer[parent]))
    child, parent = child[order], parent[order]
    lay = layer[parent]
    span = float(pos.max() + 2)
    key = lay * span + pos[child]
    # A pair survives when it is a running record of the lower position: the survivors never cross.
    prev_max = np.maximum.accumulate(np.concatenate([[-1.0], key[:-1]]))
    ok = key > prev_max
    result = np.full(n, -1, dtype=np.int64)
    result[child[ok]] = parent[ok]
    return result


def block_roots(up: np.ndarray) -> np.ndarray:
    """Root (topmost node) of each node's block, by pointer jumping."""
    n = len(up)
    root = np.where(up >= 0, up, np.arange(n))
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            return root
        root = nxt


def compact(layer, pos, widths, gaps, root) -> np.ndarray:
    """x centre per node: blocks packed left and right by longest path, then averaged."""
    n = len(layer)
    if n == 0:
        return np.zeros(0)
    perm = np.lexsort((pos, layer))
    lp = layer[perm]
    same = lp[1:] == lp[:-1]
    a, b = perm[:-1][same], perm[1:][same]
    sep = (widths[a] + widths[b]) / 2 + np.maximum(gaps[a], gaps[b])
    ra, rb = root[a], root[b]
    if len(ra):
        # Keep the largest separation per block pair.
        pair = ra * n + rb
        o = np.lexsort((-sep, pair))
        pair, sep_s = pair[o], sep[o]
        firsts = np.ones(len(pair), dtype=bool)
        firsts[1:] = pair[1:] != pair[:-1]
        ra, rb, sep = pair[firsts] // n, pair[firsts] % n, sep_s[firsts]
    left = _longest_path(n, ra, rb, sep)
    if len(sep) and sep.min() > 0:
        right = -_longest_path_in_order(n, rb, ra, sep, np.argsort(-left[rb], kind="stable"))
    else:  # zero separations: the left packing's values do not order the constraints
        right = -_longest_path(n, rb, ra, sep)
    xl, xr = left[root], right[root]
    xr = xr + ((xl - widths / 2).min() - (xr - widths / 2).min())
    return (xl + xr) / 2


def _longest_path(n: int, a: np.ndarray, b: np.ndarray, sep: np.ndarray) -> np.ndarray:
    """Smallest non-negative values with value[b] >= value[a] + sep for every constraint, by one pass
    in topological order (the "is left of" relation between blocks is acyclic)."""
    value = [0.0] * n
    if len(a) == 0:
        return np.zeros(n)
    order = np.argsort(a, kind="stable")
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=off[1:])
    succ = b[order].tolist()
    gap = sep[order].tolist()
    offl = off.tolist()
    indeg = np.bincount(b, minlength=n).tolist()
    stack = [v for v in sorted_unique(np.concatenate([a, b])).tolist() if indeg[v] == 0]
    while stack:
        v = stack.pop()
        base = value[v]
        for k in range(offl[v], offl[v + 1]):
            w = succ[k]
            cand = base + gap[k]
            if cand > value[w]:
                value[w] = cand
            indeg[w] -= 1
            if indeg[w] == 0:
                stack.append(w)
    return np.asarray(value)


def _longest_path_in_order(n: int, a: np.ndarray, b: np.ndarray, sep: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``_longest_path`` when ``order`` already lists the constraints so that every constraint into
    a node comes before those out of it: one pass over the constraints, no search.

    For the right-to-left packing, the constraints sorted by the left packing's value of their
    source, descending, are in such an order (the left packing puts every block right of all the
    blocks it must be right of)."""
    value = [0.0] * n
    for u, w, g in zip(a[order].tolist(), b[order].tolist(), sep[order].tolist()):
        cand = value[u] + g
        if cand > value[w]:
            value[w] = cand
    return np.asarray(value)
