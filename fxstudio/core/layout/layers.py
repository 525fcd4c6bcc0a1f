"""Layer assignment and long-edge dummies for the layered layout.

Layers grow downward. Ordinary nodes take the longest-path layer from the top (as early as their
inputs allow); weight-like nodes (get_attr, lifted parameters, constants) are pulled down to the
layer right above their first consumer, so an exported graph's thousands of parameters sit next to
the ops that use them instead of in one enormous top row.
"""

from __future__ import annotations

import numpy as np


def csr(n: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency of ``a[i] -> b[i]`` as (offsets, neighbours): neighbours of v are nb[off[v]:off[v+1]]."""
    order = np.argsort(a, kind="stable")
    counts = np.bincount(a, minlength=n)
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return off, b[order]


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (np.unique's hash path is slower here and imports numpy.ma)."""
    if len(a) == 0:
        return a.copy()
    s = np.sort(a)
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] != s[:-1]
    return s[keep]


def assign_layers(
    n: int, src: np.ndarray, dst: np.ndarray, weight_like: np.ndarray, previous: np.ndarray | None = None,
    sink: bool = False,
) -> np.ndarray:
    """Layer of each node; edges (src < dst in topological index order) all point to a later layer.

    ``previous`` (a layer per node, -1 where unknown) keeps known nodes on their old layer unless an
    input forces them lower, so an edit moves only what it has to. ``sink`` also lets a node with
    at least as many outputs as inputs sink towards its consumers (an alternative layering).
    """
    layer = np.zeros(n, dtype=np.int64)
    if n == 0:
        return layer
    if previous is not None and not sink:
        fast = _layers_from_previous(n, src, dst, weight_like, previous)
        if fast is not None:
            return _without_empty_layers(fast)
    pred_off, preds = csr(n, dst, src)
    prev = previous.tolist() if previous is not None else None
    lay = [0] * n
    po = pred_off.tolist()
    pl = preds.tolist()
    get = lay.__getitem__
    for v in range(n):
        lo, hi = po[v], po[v + 1]
        if hi - lo == 1:  # most nodes: one input
            best = lay[pl[lo]] + 1
        elif lo == hi:
            best = 0
        else:
            best = max(map(get, pl[lo:hi])) + 1
        if prev is not None and prev[v] > best:
            best = prev[v]
        lay[v] = best
    succ_off, succs = csr(n, src, dst)
    so = succ_off.tolist()
    sl = succs.tolist()
    # Sinking pass, bottom up: weight-like nodes go right above their first consumer.
    if not sink:
        for v in np.nonzero(weight_like)[0][::-1].tolist():
            lo, hi = so[v], so[v + 1]
            if lo != hi:
                lay[v] = (lay[sl[lo]] if hi - lo == 1 else min(map(get, sl[lo:hi]))) - 1
    else:
        wl = weight_like.tolist()
        for v in range(n - 1, -1, -1):
            lo, hi = so[v], so[v + 1]
            if lo == hi:
                continue
            below = min(lay[w] for w in sl[lo:hi]) - 1
            if wl[v]:
                lay[v] = below
            elif below > lay[v] and hi - lo >= po[v + 1] - po[v] > 0 and (prev is None or prev[v] < 0):
                lay[v] = below  # as many outputs as inputs: sinking does not lengthen its edges
    layer[:] = lay
    return _without_empty_layers(layer) if previous is not None else layer


def _without_empty_layers(layer: np.ndarray) -> np.ndarray:
    """``layer`` renumbered over the layers that hold a node: an erase or a pass that emptied a
    layer of the previous layout closes the gap instead of leaving a hole (the order is kept, so
    every edge still points down)."""
    used = np.unique(layer)
    if len(used) == 0 or (used[0] == 0 and used[-1] == len(used) - 1):
        return layer
    return np.searchsorted(used, layer).astype(np.int64)


FIXPOINT_ROUNDS = 8


def _layers_from_previous(n: int, src: np.ndarray, dst: np.ndarray, weight_like: np.ndarray,
                          previous: np.ndarray) -> np.ndarray | None:
    """``assign_layers`` with ``previous`` and no ``sink``, as whole-array passes.

    Both of its passes define each layer by a recurrence over the DAG (top down: the previous
    layer or one below the lowest input; bottom up: a weight-like node right above its first
    consumer), whose solution is unique; iterating the recurrence on whole arrays from the
    previous layers reaches it in as many rounds as the edit pushes nodes down a chain, which is
    one or two for most edits. After ``FIXPOINT_ROUNDS`` without settling: None (use the loop).
    """
    prev = np.asarray(previous, dtype=np.int64)
    base = np.maximum(prev, 0)
    has_pred = np.zeros(n, dtype=bool)
    has_pred[dst] = True
    lay = base.copy()
    for _ in range(FIXPOINT_ROUNDS):
        top = np.full(n, -1, dtype=np.int64)
        np.maximum.at(top, dst, lay[src])
        new = np.where(has_pred, np.maximum(top + 1, prev), base)
        if np.array_equal(new, lay):
            break
        lay = new
    else:
        return None
    movers = np.zeros(n, dtype=bool)
    movers[src] = True
    movers &= weight_like  # weight-like nodes with a consumer sink to right above the first one
    if not movers.any():
        return lay
    big = np.iinfo(np.int64).max
    for _ in range(FIXPOINT_ROUNDS + 1):
        below = np.full(n, big, dtype=np.int64)
        np.minimum.at(below, src, lay[dst])
        new = lay.copy()
        new[movers] = below[movers] - 1
        if np.array_equal(new, lay):
            return lay
        lay = new
    return None


def dummy_counts(n: int, layer: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """How many dummies ``add_dummies`` gives each unit (its shared lane down to the layer above its
    lowest long-edge consumer; 0 without long edges), counted without allocating them."""
    span = layer[dst] - layer[src]
    long = span > 1
    reach = np.full(n, -1, dtype=np.int64)
    np.maximum.at(reach, src[long], layer[dst[long]] - 1)
    return np.where(reach >= 0, reach - layer, 0)


def lanes_over(counts: np.ndarray, limit: int | None) -> np.ndarray:
    """Units whose long edges become lanes beside the graph so that the other units' dummies fit
    ``limit``: the units with the most dummies first (ties in index order). None: no limit."""
    laned = np.zeros(len(counts), dtype=bool)
    total = int(counts.sum())
    if limit is None or total <= limit:
        return laned
    order = np.argsort(-counts, kind="stable")
    cum = np.cumsum(counts[order])
    # Dropping order[:k + 1] leaves total - cum[k] dummies: the smallest k that fits.
    k = int(np.searchsorted(cum, total - limit, side="left"))
    laned[order[:k + 1]] = True
    return laned


def add_dummies(
    n: int, layer: np.ndarray, src: np.ndarray, dst: np.ndarray, limit: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Dummy nodes for edges spanning more than one layer, shared by all long edges of one source.

    A source ``u`` with long edges gets one dummy per layer from ``layer[u]+1`` down to the layer
    above its lowest long-edge consumer; each consumer ``v`` hangs off the dummy at ``layer[v]-1``.
    ``limit``: the most dummies there may be, counted before any is made; past it, the sources with
    the longest lanes get none (``lanes_over``): their long edges are left out of the segments and
    drawn as lanes beside the graph (``lanes.py``).
    Returns (all_layer, seg_src, seg_dst, dummy_base, dummy_owner, laned): layers of real+dummy
    nodes, the unit-span segments, the id of ``u``'s first dummy (-1 if none), the source of each
    dummy and the sources left without dummies.
    """
    counts = dummy_counts(n, layer, src, dst)
    laned = lanes_over(counts, limit)
    span = layer[dst] - layer[src]
    long = span > 1
    dummy_base = np.full(n, -1, dtype=np.int64)
    if laned.any():
        counts = np.where(laned, 0, counts)
        keep = ~(long & laned[src])
        src, dst, span = src[keep], dst[keep], span[keep]
        long = span > 1
    if not long.any():
        return layer.copy(), src.copy(), dst.copy(), dummy_base, np.zeros(0, dtype=np.int64), laned
    lsrc, ldst = src[long], dst[long]
    owners = np.nonzero(counts > 0)[0]
    counts = counts[owners]
    total = int(counts.sum())
    starts = np.zeros(len(owners), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    dummy_base[owners] = n + starts
    owner_of = np.repeat(owners, counts)
    step = np.arange(total, dtype=np.int64) - np.repeat(starts, counts)
    dummy_layer = layer[owner_of] + 1 + step
    dummy_ids = n + np.arange(total, dtype=np.int64)
    chain_src = np.where(step == 0, owner_of, dummy_ids - 1)
    hang = dummy_base[lsrc] + (layer[ldst] - 1 - layer[lsrc] - 1)
    short = ~long
    seg_src = np.concatenate([src[short], chain_src, hang])
    seg_dst = np.concatenate([dst[short], dummy_ids, ldst])
    all_layer = np.concatenate([layer, dummy_layer])
    return all_layer, seg_src, seg_dst, dummy_base, owner_of, laned
