"""Crossing reduction for the layered layout, vectorised over all layers at once with numpy.

Every node (real or dummy) has a layer and a position in it. A sweep moves every other layer to
the barycentre of its neighbours in the fixed layers around it (red-black order, so one numpy pass
updates half of the layers), alternating between looking up and looking down; the order with the
fewest crossings seen is kept. Crossings are counted exactly, as inversions, for all layer gaps in
one vectorised merge count (``CrossingCounter`` keeps the pairs of segments that share a gap, so a
count after each sweep is one array comparison).

Moderate graphs then get exact layer-by-layer (Gauss-Seidel) sweeps, ``sweep_layers``: in numpy
rounds (``_VectorSweeps``) where changes stay local, else in plain Python lists (``_RowSweeps``),
with the same result either way.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from fxstudio.core.layout.layers import sorted_unique


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


PAIR_GAP_LIMIT = 64  # segments in one layer gap up to which ``CrossingCounter`` compares every pair
PAIRS_PER_SEGMENT = 8  # and the pairs it keeps, per segment (its memory stays linear in the segments)


class CrossingCounter:
    """Counts the crossings of a fixed set of unit-span segments for any positions in the layers.

    The sweeps count the same segments after every pass with only the positions changed, so the
    work that depends on the segments alone is done once: for every layer gap with at most
    ``PAIR_GAP_LIMIT`` segments, the pairs of segments in that gap (two segments cross when their
    ends are in opposite orders above and below). Wider gaps use ``count_inversions_segmented``.
    The pairs are counted before they are made: the gap width up to which they are kept comes down
    from ``PAIR_GAP_LIMIT`` until there are at most ``max_pairs`` (default ``PAIRS_PER_SEGMENT`` per
    segment) of them, as layers dozens of dummies wide all the way down would keep hundreds of
    pairs per segment. Gives the same number as ``count_layered_crossings``.
    """

    def __init__(self, layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, max_pairs: int | None = None):
        self.src, self.dst = seg_src, seg_dst
        gap = layer[seg_src]
        order = np.argsort(gap, kind="stable")
        g = gap[order]
        sizes = np.bincount(g) if len(g) else np.zeros(0, dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        limit = _pair_gap_limit(sizes, PAIRS_PER_SEGMENT * len(seg_src) + 4096 if max_pairs is None else max_pairs)
        self.gap_limit = limit
        firsts, seconds = [], []
        for size in sorted_unique(sizes[(sizes >= 2) & (sizes <= limit)]).tolist():
            i, j = np.triu_indices(size, 1)
            base = starts[sizes == size][:, None]
            firsts.append((base + i).ravel())
            seconds.append((base + j).ravel())
        a = order[np.concatenate(firsts)] if firsts else np.zeros(0, dtype=np.int64)
        b = order[np.concatenate(seconds)] if seconds else np.zeros(0, dtype=np.int64)
        self.src_a, self.src_b, self.dst_a, self.dst_b = seg_src[a], seg_src[b], seg_dst[a], seg_dst[b]
        wide = order[sizes[g] > limit]
        self.wide_gap, self.wide_src, self.wide_dst = gap[wide], seg_src[wide], seg_dst[wide]

    def __call__(self, pos: np.ndarray) -> int:
        """Crossings with every node at ``pos`` in its layer."""
        total = int(np.count_nonzero((pos[self.src_a] - pos[self.src_b]) * (pos[self.dst_a] - pos[self.dst_b]) < 0))
        if len(self.wide_gap):
            total += count_inversions_segmented(self.wide_gap, pos[self.wide_src], pos[self.wide_dst])
        return total


def _pair_gap_limit(sizes: np.ndarray, max_pairs: int) -> int:
    """The widest gap (at most ``PAIR_GAP_LIMIT`` segments) such that the pairs of all gaps up to
    that width number at most ``max_pairs``."""
    widths = np.arange(PAIR_GAP_LIMIT + 1, dtype=np.int64)
    gaps_of = np.bincount(np.minimum(sizes, PAIR_GAP_LIMIT + 1), minlength=PAIR_GAP_LIMIT + 2)[:PAIR_GAP_LIMIT + 1]
    cum = np.cumsum(gaps_of * widths * (widths - 1) // 2)
    return int(np.searchsorted(cum, max_pairs, side="right")) - 1


COUNTER_MIN = 100  # segments from which a ``CrossingCounter`` pays for its set-up


def crossing_counter(layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray):
    """A function ``pos -> crossings`` for these segments: a ``CrossingCounter``, or for a handful
    of segments ``count_layered_crossings`` itself."""
    if len(seg_src) >= COUNTER_MIN:
        return CrossingCounter(layer, seg_src, seg_dst)
    return lambda pos: count_layered_crossings(layer, pos, seg_src, seg_dst)


def reduce_crossings(
    layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, init_key: np.ndarray, sweeps: int = 8,
    counter=None,
) -> np.ndarray:
    """Position of every node in its layer after barycentre sweeps starting from ``init_key`` order.

    Stops early when a pair of sweeps gains less than 1% (the best order seen is returned).
    ``counter``: a ``crossing_counter`` of these segments, to share one between calls.
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
    count = counter or crossing_counter(layer, seg_src, seg_dst)
    best_cross = count(pos)
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
            cross = count(pos)
            if cross < best_cross:
                best, best_cross = pos.copy(), cross
            if cross == 0 or cross > 0.99 * last_check:
                break
            last_check = cross
    return best


TRANSPOSE_LIMIT = 3000  # nodes + dummies up to which adjacent transpositions run
VECTOR_ROUNDS = 24  # numpy rounds a vectorised sweep may take before the sweeps go on in plain Python
VECTOR_WORK = 2  # nor may its rounds after the first revisit more than this many times every node


def _pair_crossings(nu: list[int], nv: list[int], posl: list[int]) -> int:
    """Crossings between the edges of u and of v (u left of v) towards one neighbouring layer."""
    return sum(1 for a in nu for b in nv if posl[a] > posl[b])


def _unsorted_layers(
    layer: np.ndarray, pos: np.ndarray, nbr: np.ndarray, me: np.ndarray, nlayers: int
) -> list[bool]:
    """Per layer: whether sorting it by the barycentre of its neighbours over the segments
    ``me`` → ``nbr`` (nodes without neighbours keep their position as key, ties by position)
    would change its order, for all layers at once from the positions ``pos``.

    The keys are the exact floats ``sweep_layers`` computes in Python (a sum of small ints divided
    by a count), so "already sorted" here means the Python sort leaves the layer as it is.
    """
    n = len(layer)
    posf = pos.astype(np.float64)
    sums = np.bincount(me, weights=posf[nbr], minlength=n)
    deg = np.bincount(me, minlength=n)
    key = np.where(deg > 0, sums / np.maximum(deg, 1), posf)
    order = np.lexsort((pos, layer))
    ko, lo = key[order], layer[order]
    bad = (ko[1:] < ko[:-1]) & (lo[1:] == lo[:-1])
    need = np.zeros(nlayers, dtype=bool)
    need[lo[1:][bad]] = True
    return need.tolist()


def _row_keys(row: list[int], adj: list[list[int]], posl: list[int], median: bool) -> list[float]:
    """Sort key of each node of ``row``: the barycentre (or, with ``median``, the median) of the
    positions of its neighbours ``adj``; its own position when it has none."""
    getp = posl.__getitem__
    keys: list[float] = []
    for v in row:
        nb = adj[v]
        k = len(nb)
        if k == 1:
            keys.append(posl[nb[0]])
        elif not k:
            keys.append(posl[v])
        elif median and k > 2:
            ps = sorted(map(getp, nb))
            keys.append(ps[(k - 1) // 2] if k % 2 else (ps[k // 2 - 1] + ps[k // 2]) / 2)
        else:
            keys.append(sum(map(getp, nb)) / k)
    return keys


class _RowSweeps:
    """The sweeps in plain Python lists: rows of node ids and every node's position, kept in step."""

    def __init__(self, layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, pos: np.ndarray, nlayers: int):
        n = len(layer)
        self.layer, self.seg_src, self.seg_dst, self.nlayers = layer, seg_src, seg_dst, nlayers
        self.preds: list[list[int]] = [[] for _ in range(n)]
        self.succs: list[list[int]] = [[] for _ in range(n)]
        for a, b in zip(seg_src.tolist(), seg_dst.tolist()):
            self.succs[a].append(b)
            self.preds[b].append(a)
        order = np.lexsort((pos, layer))
        self.rows: list[list[int]] = [[] for _ in range(nlayers)]
        for v, lyr in zip(order.tolist(), layer[order].tolist()):
            self.rows[lyr].append(v)
        self.posl = pos.tolist()
        self.wide = [row for row in self.rows if len(row) > 1]

    def barycentre(self, pos: np.ndarray, down: bool, median: bool) -> None:
        """Sort every layer by its neighbours in the layer sorted just before (Gauss-Seidel), top
        down or bottom up; ``pos`` is ``posl`` as an array.

        Only layers whose order can change are sorted: the layers already in barycentre order are
        found for all layers at once (numpy), and such a layer is still sorted when the layer
        before it changed. The result is the same as sorting every layer.
        """
        nlayers, rows, posl = self.nlayers, self.rows, self.posl
        span = range(1, nlayers) if down else range(nlayers - 2, -1, -1)
        adj = self.preds if down else self.succs
        step = 1 if down else -1
        if median:
            need = [True] * nlayers
        elif down:
            need = _unsorted_layers(self.layer, pos, self.seg_src, self.seg_dst, nlayers)
        else:
            need = _unsorted_layers(self.layer, pos, self.seg_dst, self.seg_src, nlayers)
        for lyr in span:
            if not need[lyr]:
                continue
            row = rows[lyr]
            m = len(row)
            if m < 2:
                continue
            keys = _row_keys(row, adj, posl, median)
            # A stable sort by key alone: ties keep the row's order, which is the order by position.
            new_row = list(map(row.__getitem__, sorted(range(m), key=keys.__getitem__)))
            if new_row != row:
                row[:] = new_row
                for i, v in enumerate(new_row):
                    posl[v] = i
                if 0 <= lyr + step < nlayers:
                    need[lyr + step] = True  # its barycentres moved: sort it in Python

    def transpose(self, passes: int, ties: bool) -> None:
        """Swap neighbours in a layer while that removes crossings (``ties``: also when it keeps them)."""
        preds, succs, posl = self.preds, self.succs, self.posl
        for _ in range(passes):
            improved = False
            for row in self.wide:
                for i in range(len(row) - 1):
                    u, v = row[i], row[i + 1]
                    now = _pair_crossings(preds[u], preds[v], posl) + _pair_crossings(succs[u], succs[v], posl)
                    if not now:
                        continue
                    swapped = _pair_crossings(preds[v], preds[u], posl) + _pair_crossings(succs[v], succs[u], posl)
                    if swapped < now or (ties and swapped == now):
                        row[i], row[i + 1] = v, u
                        posl[u], posl[v] = i + 1, i
                        improved = True
            if not improved:
                break


class _VectorSweeps:
    """The barycentre sweep of ``_RowSweeps`` (same result, exactly) in whole-array numpy rounds.

    Gauss-Seidel sorts layer l against the new order of layer l-1 (in sweep order), so its result
    is the unique solution of new[l] = sort(start[l] by barycentres from new[l-1]). Round 0 sorts
    every layer against the start order of its neighbours; each later round re-sorts, all at once,
    the layers whose neighbour layer changed in the round before. When nothing changes, every
    layer is sorted against its neighbour layer's final order: that is the solution. It takes one
    round more than the longest run of consecutive layers that change, which is a handful on
    graphs made of repeated blocks. Where a change runs through hundreds of layers (a long skip
    chain) each round settles one layer per run: ``sweep`` gives up (returns None) once its rounds
    after the first have visited ``VECTOR_WORK`` times as many nodes as there are, or after
    ``VECTOR_ROUNDS`` rounds.
    """

    def __init__(self, layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, nlayers: int):
        n = len(layer)
        self.layer, self.n, self.nlayers = layer, n, nlayers
        counts = np.bincount(layer, minlength=nlayers)
        self.slot = (np.cumsum(counts) - counts)[layer]  # first slot of each node's layer in layer order
        self.ids = np.arange(n, dtype=np.int64)
        self.dirs = {True: (seg_src, seg_dst, np.bincount(seg_dst, minlength=n)),
                     False: (seg_dst, seg_src, np.bincount(seg_src, minlength=n))}

    def sweep(self, start: np.ndarray, down: bool) -> np.ndarray | None:
        """Positions after one barycentre sweep from ``start`` (top down or bottom up), or None."""
        nbr, me, deg = self.dirs[down]
        n, layer, nlayers = self.n, self.layer, self.nlayers
        step = 1 if down else -1
        order = np.empty(n, dtype=np.int64)
        order[self.slot + start] = self.ids  # nodes by layer, then start position
        order_layer = layer[order]
        has = deg > 0
        div = np.maximum(deg, 1)
        startf = start.astype(np.float64)
        x = start.copy()
        sel, sel_layer = order, order_layer
        work = 0
        for _ in range(VECTOR_ROUNDS):
            sums = np.bincount(me, weights=x[nbr].astype(np.float64), minlength=n)
            key = np.where(has, sums / div, startf)
            ks = key[sel]
            bad = (ks[1:] < ks[:-1]) & (sel_layer[1:] == sel_layer[:-1])
            old = x[sel]
            x[sel] = start[sel]  # a layer in barycentre order keeps its start order
            if bad.any():
                unsorted = np.zeros(nlayers, dtype=bool)
                unsorted[sel_layer[1:][bad]] = True
                pick = unsorted[sel_layer]
                sub, sub_layer = sel[pick], sel_layer[pick]
                # By layer, then key; lexsort is stable, so ties keep the start order.
                o = np.lexsort((key[sub], sub_layer))
                sub, sub_layer = sub[o], sub_layer[o]
                x[sub] = np.arange(len(sub), dtype=np.int64) - np.searchsorted(sub_layer, sub_layer)
            moved = x[sel] != old
            if not moved.any():
                return x
            # The layers after the changed ones (in sweep order) go again; slot nlayers takes
            # the one past the end (index nlayers going down, -1 going up).
            after = np.zeros(nlayers + 1, dtype=bool)
            after[sel_layer[moved] + step] = True
            active = after[:nlayers]
            pick = active[order_layer]
            sel, sel_layer = order[pick], order_layer[pick]
            work += len(sel)
            if work > VECTOR_WORK * n:
                return None  # long runs of changing layers: plain Python is faster
        return None


def sweep_layers(
    layer: np.ndarray, seg_src: np.ndarray, seg_dst: np.ndarray, pos: np.ndarray, sweeps: int = 6,
    transpose_passes: int = 3, median: bool = False, reverse_ties: bool = False, counter=None,
) -> np.ndarray:
    """Classic layer-by-layer barycentre sweeps with adjacent transpositions.

    Exact Gauss-Seidel order: each layer is sorted against the layer just sorted, down then up;
    then (graphs up to ``TRANSPOSE_LIMIT`` nodes) neighbours in a layer are swapped while that
    removes crossings (as ``dot`` does). Returns the best order seen. ``reverse_ties``: on odd
    sweeps also swap neighbours whose swap keeps their crossings (dot's "reverse"
    transpositions), which walks a node across a plateau. ``pos`` must be each node's rank in its
    layer. ``counter``: a ``crossing_counter`` of these segments, to share one between calls.

    Without transpositions or ``median`` a sweep runs as numpy rounds (``_VectorSweeps``) while
    they converge fast, else in plain Python lists (``_RowSweeps``); both give the same order. A
    sweep that returns to the order of two sweeps ago (the sweeps oscillate) ends the loop: from
    there on every order would repeat one already scored.
    """
    n = len(layer)
    if n == 0 or len(seg_src) == 0:
        return pos
    nlayers = int(layer.max()) + 1
    count = counter or crossing_counter(layer, seg_src, seg_dst)
    transposing = transpose_passes > 0 and n <= TRANSPOSE_LIMIT
    vector = None if median or transposing else _VectorSweeps(layer, seg_src, seg_dst, nlayers)
    rows: _RowSweeps | None = None
    cur = pos
    best = pos.copy()
    best_cross = count(pos)
    stale = 0
    history: list[np.ndarray] = []
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        new = vector.sweep(cur, down) if vector is not None else None
        if new is None:
            vector = None  # in plain Python from here on: ``rows`` stays in step with ``cur``
            if rows is None:
                rows = _RowSweeps(layer, seg_src, seg_dst, cur, nlayers)
            rows.barycentre(cur, down, median)
            if transposing:
                rows.transpose(transpose_passes, reverse_ties and sweep % 2 == 1)
            new = np.asarray(rows.posl, dtype=np.int64)
        cur = new
        cross = count(cur)
        if cross < best_cross:
            best, best_cross, stale = cur, cross, 0
        else:
            stale += 1
        if cross == 0 or stale >= 2:
            break
        # The next sweep depends only on this order and the sweep's parity (down/up, ties): back
        # at the order of two sweeps ago, every later order repeats one already scored.
        if len(history) >= 2 and np.array_equal(cur, history[-2]):
            break
        history.append(cur)
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
    counter=None,
) -> np.ndarray:
    """``pos`` or an order with strictly fewer crossings from other starting orders (small graphs).

    The sweeps stop in a local optimum that depends on where they start (more sweeps do not
    leave it). Three more tries: the same order swept again with dot's "reverse" transpositions
    (equal-crossing swaps on odd sweeps: ``two_linear.py`` (export) goes from 2 to dot's 0) and,
    like dot, depth-first starting orders: from the sinks up (barycentre sweeps) and from the
    sources down (median sweeps). This is what brings ``transformer_block.py`` (fx) from 30 crossings to dot's
    27. Deterministic; ties keep ``pos``. ``counter``: a ``crossing_counter`` of these segments.
    """
    n = len(layer)
    if n < 2 or len(seg_src) < 2 or n > EXTRA_START_LIMIT:
        return pos
    best = pos
    count = counter or crossing_counter(layer, seg_src, seg_dst)
    best_cross = count(pos)
    for start in ("ties", "bottom", "top"):
        if best_cross == 0:
            break
        if start == "ties":
            cand = sweep_layers(layer, seg_src, seg_dst, pos, sweeps=sweeps, reverse_ties=True, counter=count)
        else:
            key = dfs_key(n, seg_src, seg_dst, from_bottom=start == "bottom")
            cand = reduce_crossings(layer, seg_src, seg_dst, key, sweeps=sweeps, counter=count)
            cand = sweep_layers(layer, seg_src, seg_dst, cand, sweeps=sweeps, median=start == "top", counter=count)
        cross = count(cand)
        if cross < best_cross:
            best, best_cross = cand, cross
    return best
