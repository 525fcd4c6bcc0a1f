"""``count_crossings`` for layouts whose edges span too many node rows to cut each one at every row.

``metrics.count_crossings`` cuts every edge at every row it spans and counts, per gap between two
rows, the pairs whose order swaps. A fan-out of 50k edges over 100k rows makes that billions of
cuts. Here the same number comes from the gaps where an edge *moves* (its x differs on the two
rows): two edges that both run straight down a gap never swap there. Per edge, the polyline's
sideways pieces give its moving gaps, and between them it stands still at one x (a *run* of gaps).
A gap's crossings are then the swaps among the edges moving in it (a merge count) plus, for each
moving edge, the edges standing still in that gap strictly between its two ends, counted for all
moving edges at once as offline dominance counts. Work and memory grow with the pieces and
points of the polylines, not with the rows they span.
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.crossings import count_inversions_segmented


def interp_flat(vx: np.ndarray, vy: np.ndarray, vstart: np.ndarray, edge: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x at height ``y`` on polyline ``edge`` (vertices ``vstart[e]:vstart[e+1]`` of ``vx, vy``,
    ``vy`` non-decreasing within each), as ``np.interp`` (held constant past either end)."""
    nv = len(vx)
    v_edge = np.repeat(np.arange(len(vstart) - 1), np.diff(vstart))
    keys_e = np.concatenate([v_edge, edge])
    keys_y = np.concatenate([vy, y])
    is_q = np.concatenate([np.zeros(nv, dtype=bool), np.ones(len(y), dtype=bool)])
    order = np.lexsort((is_q, keys_y, keys_e))  # a vertex at the query's height counts as below it
    below = np.cumsum(~is_q[order])
    at = np.empty(len(order), dtype=np.int64)
    at[order] = below - 1
    j = at[nv:]  # the last vertex at or above the query's height (global index; clipped to its polyline)
    first, last = vstart[edge], vstart[edge + 1] - 1
    j = np.clip(j, first, last)
    nxt = np.minimum(j + 1, last)
    dy = vy[nxt] - vy[j]
    t = np.where(dy > 0, (y - vy[j]) / np.where(dy > 0, dy, 1.0), 0.0)
    t = np.clip(t, 0.0, 1.0)
    out = vx[j] + (vx[nxt] - vx[j]) * t
    return np.where(y < vy[first], vx[first], out)


def dominance_counts(pk: np.ndarray, pv: np.ndarray, qk: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """For every query i, the points j with ``pk[j] <= qk[i]`` and ``pv[j] <= qv[i]`` (non-negative
    int values), by a bottom-up merge count over the points and queries sorted by key."""
    q = len(qk)
    counts = np.zeros(q, dtype=np.int64)
    if q == 0 or len(pk) == 0:
        return counts
    sentinel = int(max(pv.max(), qv.max())) + 1  # a query's own slot never counts
    is_q = np.concatenate([np.zeros(len(pk), dtype=bool), np.ones(q, dtype=bool)])
    order = np.lexsort((is_q, np.concatenate([pk, qk])))  # points before queries at equal keys
    size = 1 << max(int(len(order) - 1).bit_length(), 1)
    cur = np.full(size, sentinel, dtype=np.int64)
    cur[:len(order)] = np.where(is_q[order], sentinel, np.concatenate([pv, qv])[order])
    slot = np.empty(len(order), dtype=np.int64)
    slot[order] = np.arange(len(order), dtype=np.int64)
    qpos, qval = slot[len(pk):], qv.astype(np.int64)
    big = sentinel + 1
    width = 1
    while width < size:
        # cur is sorted within blocks of ``width``: each query in the right half of a block of twice
        # that counts the points in the left half (one searchsorted over all blocks at once)
        right = (qpos // width) % 2 == 1
        left_block = qpos[right] // width - 1
        keyed = cur + (np.arange(size, dtype=np.int64) // width) * big
        found = np.searchsorted(keyed, qval[right] + left_block * big, side="right")
        counts[right] += found - left_block * width
        cur = np.sort(cur.reshape(-1, 2 * width), axis=1, kind="stable").reshape(-1)
        width *= 2
    return counts


def sweep_count(lines: np.ndarray, vx: np.ndarray, vy: np.ndarray, vstart: np.ndarray,
                lo: np.ndarray, hi: np.ndarray) -> int:
    """Crossings between consecutive ``lines`` of the polylines ``vstart[e]:vstart[e+1]`` of
    ``vx, vy`` (extended to their end nodes' centres, ``vy`` non-decreasing), each cut at the lines
    ``lo[e]:hi[e]`` (at least two): the count of ``count_crossings``'s dense path."""
    ne = len(lo)
    if ne < 2:
        return 0
    v_edge = np.repeat(np.arange(ne), np.diff(vstart))
    # Sideways pieces and the gaps they may touch (touching counts: a jump exactly at a line).
    k = np.nonzero((v_edge[:-1] == v_edge[1:]) & (vx[:-1] != vx[1:]))[0]
    pe = v_edge[k]
    g0 = np.maximum(np.searchsorted(lines, vy[k], side="left") - 1, lo[pe])
    g1 = np.minimum(np.searchsorted(lines, vy[k + 1], side="right") - 1, hi[pe] - 2)
    ok = g0 <= g1
    pe, g0, g1 = pe[ok], g0[ok], g1[ok]
    span = g1 - g0 + 1
    cand_e = np.repeat(pe, span)
    cand_g = np.arange(int(span.sum()), dtype=np.int64) + np.repeat(g0 - (np.cumsum(span) - span), span)
    key = np.unique(cand_e * len(lines) + cand_g)
    cand_e, cand_g = key // len(lines), key % len(lines)
    xa = interp_flat(vx, vy, vstart, cand_e, lines[cand_g])
    xb = interp_flat(vx, vy, vstart, cand_e, lines[cand_g + 1])
    xa, xb = np.round(xa, 6), np.round(xb, 6)
    moving = xa != xb
    me, mg, ma, mb = cand_e[moving], cand_g[moving], xa[moving], xb[moving]
    # Runs where an edge stands still: from its first gap, and after each moving gap, to the gap
    # before its next moving one (or its last gap); its x there is where the move before ended.
    x_lo = np.round(interp_flat(vx, vy, vstart, np.arange(ne), lines[lo]), 6)
    run_e = np.concatenate([np.arange(ne), me])
    run_s = np.concatenate([lo, mg + 1])
    run_x = np.concatenate([x_lo, mb])
    o = np.lexsort((run_s, run_e))
    run_e, run_s, run_x = run_e[o], run_s[o], run_x[o]
    run_t = np.empty(len(run_e), dtype=np.int64)
    same = run_e[1:] == run_e[:-1]
    run_t[:-1] = np.where(same, run_s[1:] - 2, hi[run_e[:-1]] - 2)
    run_t[-1] = hi[run_e[-1]] - 2
    keep = run_s <= run_t
    run_s, run_t, run_x = run_s[keep], run_t[keep], run_x[keep]
    values, ranks = np.unique(np.concatenate([run_x, ma, mb]), return_inverse=True)
    r_run = ranks[:len(run_x)]
    ra, rb = ranks[len(run_x):len(run_x) + len(ma)], ranks[len(run_x) + len(ma):]
    total = count_inversions_segmented(mg, ra, rb) if len(mg) > 1 else 0
    low, high = np.minimum(ra, rb), np.maximum(ra, rb)
    # Runs holding gap g strictly between low and high: started by g, minus ended before g.
    started = dominance_counts(run_s, r_run, np.concatenate([mg, mg]), np.concatenate([high - 1, low]))
    ended = dominance_counts(run_t, r_run, np.concatenate([mg - 1, mg - 1]), np.concatenate([high - 1, low]))
    m = len(mg)
    between = (started[:m] - started[m:]) - (ended[:m] - ended[m:])
    return int(total + between.sum())
