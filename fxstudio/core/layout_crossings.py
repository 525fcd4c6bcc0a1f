"""Crossing reduction for the layered layout, vectorised over all layers at once with numpy.

Every node (real or dummy) has a layer and a position in it. A sweep moves every other layer to
the barycentre of its neighbours in the fixed layers around it (red-black order, so one numpy pass
updates half of the layers), alternating between looking up and looking down; the order with the
fewest crossings seen is kept. Crossings are counted exactly, as inversions, for all layer gaps in
one vectorised merge count.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from fxstudio.core.layout_layers import sorted_unique


def positions_from_keys(layer: np.ndarray, key: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """Rank of every node inside its layer when sorted by (key, tie)."""
    perm = np.lexsort((tie, key, layer))
    counts = np.bincount(layer, minlength=int(layer.max()) + 1 if len(layer) else 0)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    pos = np.empty(len(layer), dtype=np.int64)
    pos[perm] = np.arange(len(layer), dtype=np.int64) - starts[layer[perm]]
    return pos


def count_inversions_segmented(seg: np.ndarray, first: np.ndarray, second: np.ndarray) -> int:
    """Pairs i, j in the same segment with first[i] < first[j] and second[i] > second[j].

    This is the number of crossings between straight segments when ``seg`` is the layer gap and
    first/second are the end positions on the upper and lower layer. Ties cross nothing.
    """
    if len(seg) < 2:
        return 0
    order = np.lexsort((second, first, seg))
    seg, second = seg[order], second[order]
    sizes = np.bincount(seg)
    big = sizes[seg] > 1
    if not big.any():
        return 0
    seg, second = seg[big], second[big]
    total = 0
    # Segments are processed in classes of similar size, each padded to a power of two, so the
    # merge count needs only log2(size) passes instead of log2(total).
    seg_sizes = np.bincount(seg)
    cls = np.ceil(np.log2(np.maximum(seg_sizes, 2))).astype(np.int64)
    elem_cls = cls[seg]
    for c in sorted_unique(elem_cls):
        mask = elem_cls == c
        total += _inversions_padded(seg[mask], second[mask], 1 << int(c))
    return int(total)


def _inversions_padded(seg: np.ndarray, values: np.ndarray, slot: int) -> int:
    """Strict inversions inside each segment (sorted, contiguous) with every segment padded to ``slot``."""
    new = np.ones(len(seg), dtype=bool)
    new[1:] = seg[1:] != seg[:-1]
    seg_idx = np.cumsum(new) - 1
    nseg = int(seg_idx[-1]) + 1
    starts = np.nonzero(new)[0]
    offset_in_seg = np.arange(len(seg), dtype=np.int64) - starts[seg_idx]
    vmax = int(values.max()) + 2
    arr = np.full(nseg * slot, vmax - 1, dtype=np.int64)  # padding sorts last: adds no inversions
    arr[seg_idx * slot + offset_in_seg] = values
    arr = arr.reshape(nseg, slot)
    total = 0
    width = 1
    while width < slot:
        blocks = arr.reshape(nseg, slot // (2 * width), 2, width)
        left, right = blocks[:, :, 0, :], blocks[:, :, 1, :]
        # Left halves are sorted: count, for each right element, the left elements greater than it.
        flat_left = left.reshape(-1, width)
        nblk = flat_left.shape[0]
        base = (np.arange(nblk, dtype=np.int64) * vmax)[:, None]
        keys_left = (flat_left + base).ravel()
        q = (right.reshape(-1, width) + base).ravel()
        le = np.searchsorted(keys_left, q, side="right")
        block_end = np.repeat((np.arange(nblk, dtype=np.int64) + 1) * width, width)
        total += int((block_end - le).sum())
        arr = np.sort(blocks.reshape(nseg, slot // (2 * width), 2 * width), axis=2).reshape(nseg, slot)
        width *= 2
    return total


def count_layered_crossings(layer: np.ndarray, pos: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray) -> int:
    """Crossings between unit-span segments given each node's layer and position in it."""
    if len(seg_src) < 2:
        return 0
    if len(seg_src) <= SMALL_COUNT:
        return _count_small(layer[seg_src].tolist(), pos[seg_src].tolist(), pos[seg_dst].tolist())
    return count_inversions_segmented(layer[seg_src], pos[seg_src], pos[seg_dst])


SMALL_COUNT = 2000  # segments up to which crossings are counted in plain Python (numpy's overhead dominates)


def _count_small(gap: list[int], first: list[int], second: list[int]) -> int:
    """``count_inversions_segmented`` in plain Python, for a few thousand segments at most."""
    items = sorted(zip(gap, first, second))
    total = 0
    seen: list[int] = []
    cur = None
    for g, _, b in items:
        if g != cur:
            cur, seen = g, []
        at = bisect_right(seen, b)
        total += len(seen) - at
        seen.insert(at, b)
    return total


def reduce_crossings(
    layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, init_key: np.ndarray, sweeps: int = 8
) -> np.ndarray:
    """Position of every node in its layer after barycentre sweeps starting from ``init_key`` order.

    Stops early when a pair of sweeps gains less than 1% (the best order seen is returned).
    """
    n = len(layer)
    perm = np.lexsort((np.arange(n), init_key.astype(np.float64), layer))
    counts = np.bincount(layer) if n else np.zeros(0, dtype=np.int64)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    within = np.arange(n, dtype=np.int64) - np.repeat(starts, counts)
    pos = np.empty(n, dtype=np.int64)
    pos[perm] = within
    if n == 0 or len(seg_src) == 0 or sweeps == 0:
        return pos
    best = pos.copy()
    best_cross = count_layered_crossings(layer, pos, seg_src, seg_dst)
    if best_cross == 0:
        return best
    in_deg = np.bincount(seg_dst, minlength=n).astype(np.float64)
    out_deg = np.bincount(seg_src, minlength=n).astype(np.float64)
    moving = [(layer % 2) == p for p in (0, 1)]
    # Sorting (layer * scale + key) keeps layers apart; a stable sort of the current order breaks
    # ties by the current position.
    scale = float(counts.max() + 2)
    layer_off = layer * scale
    last_check = best_cross
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        for p in (1, 0) if downward else (0, 1):
            posf = pos.astype(np.float64)
            if downward:
                sums = np.bincount(seg_dst, weights=posf[seg_src], minlength=n)
                deg = in_deg
            else:
                sums = np.bincount(seg_src, weights=posf[seg_dst], minlength=n)
                deg = out_deg
            key = np.where(moving[p] & (deg > 0), sums / np.maximum(deg, 1.0), posf)
            comp = (layer_off + key)[perm]
            perm = perm[np.argsort(comp, kind="stable")]
            pos[perm] = within
        if sweep % 2 == 1 or sweep == sweeps - 1:
            cross = count_layered_crossings(layer, pos, seg_src, seg_dst)
            if cross < best_cross:
                best, best_cross = pos.copy(), cross
            if cross == 0 or cross > 0.99 * last_check:
                break
            last_check = cross
    return best


TRANSPOSE_LIMIT = 3000  # nodes + dummies up to which adjacent transpositions run


def _pair_crossings(nu: list[int], nv: list[int], posl: list[int]) -> int:
    """Crossings between the edges of u and of v (u left of v) towards one neighbouring layer."""
    return sum(1 for a in nu for b in nv if posl[a] > posl[b])


def sweep_layers(
    layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, pos: np.ndarray, sweeps: int = 6,
    transpose_passes: int = 3, median: bool = False, reverse_ties: bool = False,
) -> np.ndarray:
    """Classic layer-by-layer barycentre sweeps with adjacent transpositions (plain Python lists).

    Exact Gauss-Seidel order: each layer is sorted against the layer just sorted, down then up;
    then neighbours in a layer are swapped while that removes crossings (as ``dot`` does). Costs a
    few microseconds per node and sweep, so it is used when the graph (with dummies) is moderate.
    Returns the best order seen. ``reverse_ties``: on odd sweeps also swap neighbours whose swap
    keeps their crossings (dot's "reverse" transpositions), which walks a node across a plateau.
    """
    n = len(layer)
    if n == 0 or len(seg_src) == 0:
        return pos
    nlayers = int(layer.max()) + 1
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(seg_src.tolist(), seg_dst.tolist()):
        succs[a].append(b)
        preds[b].append(a)
    order = np.lexsort((pos, layer))
    rows: list[list[int]] = [[] for _ in range(nlayers)]
    for v, lyr in zip(order.tolist(), layer[order].tolist()):
        rows[lyr].append(v)
    posl = pos.tolist()
    best = pos.copy()
    best_cross = count_layered_crossings(layer, pos, seg_src, seg_dst)
    wide = [row for row in rows if len(row) > 1]
    stale = 0
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        span = range(1, nlayers) if down else range(nlayers - 2, -1, -1)
        adj = preds if down else succs
        for lyr in span:
            row = rows[lyr]
            if len(row) < 2:
                continue
            if down and not any(len(preds[v]) for v in row):
                continue
            keyed = []
            for v in row:
                nb = adj[v]
                if not nb:
                    keyed.append((posl[v], posl[v], v))
                elif median and len(nb) > 2:
                    ps = sorted(posl[a] for a in nb)
                    keyed.append((ps[(len(ps) - 1) // 2] if len(ps) % 2 else (ps[len(ps) // 2 - 1] + ps[len(ps) // 2]) / 2,
                                  posl[v], v))
                else:
                    keyed.append((sum(posl[a] for a in nb) / len(nb), posl[v], v))
            keyed.sort()
            row[:] = [k[2] for k in keyed]
            for i, v in enumerate(row):
                posl[v] = i
        for _ in range(transpose_passes if n <= TRANSPOSE_LIMIT else 0):
            improved = False
            for row in wide:
                for i in range(len(row) - 1):
                    u, v = row[i], row[i + 1]
                    now = _pair_crossings(preds[u], preds[v], posl) + _pair_crossings(succs[u], succs[v], posl)
                    if not now:
                        continue
                    swapped = _pair_crossings(preds[v], preds[u], posl) + _pair_crossings(succs[v], succs[u], posl)
                    if swapped < now or (reverse_ties and sweep % 2 == 1 and swapped == now):
                        row[i], row[i + 1] = v, u
                        posl[u], posl[v] = i + 1, i
                        improved = True
            if not improved:
                break
        cur = np.asarray(posl, dtype=np.int64)
        cross = count_layered_crossings(layer, cur, seg_src, seg_dst)
        if cross < best_cross:
            best, best_cross, stale = cur, cross, 0
        else:
            stale += 1
        if cross == 0 or stale >= 2:
            break
    return best



EXTRA_START_LIMIT = 600  # nodes + dummies up to which other starting orders are tried too (adds ≤ ~20 ms)


def dfs_key(n: int, seg_src: np.ndarray, seg_dst: np.ndarray, from_bottom: bool) -> np.ndarray:
    """Depth-first visiting order of every node, from the sinks upward through the inputs
    (``from_bottom``) or from the sources downward through the outputs; roots in index order."""
    nbrs: list[list[int]] = [[] for _ in range(n)]
    has_next = [False] * n  # has an edge in the direction the search comes from
    for a, b in zip(seg_src.tolist(), seg_dst.tolist()):
        if from_bottom:
            nbrs[b].append(a)
            has_next[a] = True
        else:
            nbrs[a].append(b)
            has_next[b] = True
    seen = [False] * n
    order: list[int] = []
    for root in range(n):
        if has_next[root] or seen[root]:
            continue
        stack = [root]
        while stack:
            v = stack.pop()
            if seen[v]:
                continue
            seen[v] = True
            order.append(v)
            stack.extend(reversed(nbrs[v]))
    order += [v for v in range(n) if not seen[v]]
    key = np.empty(n, dtype=np.float64)
    key[np.asarray(order, dtype=np.int64)] = np.arange(n, dtype=np.float64)
    return key


def best_of_starts(
    layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, pos: np.ndarray, sweeps: int = 8,
) -> np.ndarray:
    """``pos`` or an order with strictly fewer crossings from other starting orders (small graphs).

    The sweeps stop in a local optimum that depends on where they start (more sweeps do not
    leave it). Three more tries: the same order swept again with dot's "reverse" transpositions
    (equal-crossing swaps on odd sweeps: ``two_linear.py`` (export) goes from 2 to dot's 0) and,
    like dot, depth-first starting orders: from the sinks up (barycentre sweeps) and from the
    sources down (median sweeps). This is what brings ``transformer_block.py`` (fx) from 30 crossings to dot's
    27. Deterministic; ties keep ``pos``.
    """
    n = len(layer)
    if n < 2 or len(seg_src) < 2 or n > EXTRA_START_LIMIT:
        return pos
    best = pos
    best_cross = count_layered_crossings(layer, pos, seg_src, seg_dst)
    for start in ("ties", "bottom", "top"):
        if best_cross == 0:
            break
        if start == "ties":
            cand = sweep_layers(layer, seg_src, seg_dst, pos, sweeps=sweeps, reverse_ties=True)
        else:
            key = dfs_key(n, seg_src, seg_dst, from_bottom=start == "bottom")
            cand = reduce_crossings(layer, seg_src, seg_dst, key, sweeps=sweeps)
            cand = sweep_layers(layer, seg_src, seg_dst, cand, sweeps=sweeps, median=start == "top")
        cross = count_layered_crossings(layer, cand, seg_src, seg_dst)
        if cross < best_cross:
            best, best_cross = cand, cross
    return best
