"""Module frames that never overlap: frame-aware layers, in-layer order and x separation.

The layered layout places cards; a module frame is the box around its members. Left alone, the
boxes of sibling modules overlap (an exported graph's ``bn`` weights sit in ``conv2d``'s layer,
beside it). Three passes keep frames apart (``docs/notes/repeated_blocks.md``, "Frames"):

* ``frame_layers``: a frame that feeds a sibling frame ends above it (compound layering: each frame
  gets an entry and an exit in a longest-path layering); weights still sit right above their
  consumer, inside their own frame. Frames that cannot be kept apart (one module called twice
  with a sibling's work in between) are dropped: their cards count for the parent frame.
* ``frame_order``: the cards and long-edge dummies of each frame are contiguous in every layer,
  siblings in one order across layers.
* ``separate_frames``: where sibling boxes still meet (their members sit at different x in
  different layers), everything right of the later one moves right.

``frame_checks.frame_problems`` checks a finished layout against the rule.
"""

from __future__ import annotations

import numpy as np

from fxstudio.core.layout.groups import ancestors, build_groups
from fxstudio.core.layout.sibling_boxes import SiblingBoxes

PAD = 12.0
FAKE_BAND = 100000.0  # y per layer in the provisional boxes of ``separate_frames``


class FrameTree:
    """The framed paths (every ancestor of a member path, collapsed groups excluded) as ids, with
    each unit's innermost frame (-1: none)."""

    def __init__(self, frames: dict[str, list[int]], n: int, collapsed):
        collapsed = set(collapsed)
        paths: set[str] = set()
        for p in frames:
            anc = ancestors(p)
            paths.update(a for a in (anc[:-1] if p in collapsed else anc))
        self.paths = sorted(paths, key=lambda s: (s.count("."), s))
        self.index = {p: i for i, p in enumerate(self.paths)}
        self.parent = np.asarray([self.index.get(p.rsplit(".", 1)[0], -1) if "." in p else -1
                                  for p in self.paths], dtype=np.int64)
        self.depth = np.asarray([p.count(".") for p in self.paths], dtype=np.int64)
        self.owner = np.full(n, -1, dtype=np.int64)
        ids: list[int] = []
        flat: list[int] = []
        for p, members in frames.items():
            q = p.rsplit(".", 1)[0] if p in collapsed and "." in p else ("" if p in collapsed else p)
            ids.append(self.index.get(q, -1))
            flat.extend(members)
        if flat:
            self.owner[np.asarray(flat, dtype=np.int64)] = np.repeat(
                np.asarray(ids, dtype=np.int64), [len(m) for m in frames.values()])
        chains: list[tuple[int, ...]] = []
        for f, q in enumerate(self.parent.tolist()):  # parents come first: sorted by depth
            chains.append(chains[q] + (f,) if q >= 0 else (f,))
        self.chains = chains

    def lca_children(self, fa: int, fb: int) -> tuple[int, int, int]:
        """(lca, child of lca towards fa or -1, child towards fb or -1) for frames fa, fb (-1: root)."""
        ca = self.chains[fa] if fa >= 0 else ()
        cb = self.chains[fb] if fb >= 0 else ()
        k = 0
        while k < len(ca) and k < len(cb) and ca[k] == cb[k]:
            k += 1
        lca = ca[k - 1] if k else -1
        return lca, (ca[k] if k < len(ca) else -1), (cb[k] if k < len(cb) else -1)


_last_tree: list = [None]


def frame_tree(frames: dict[str, list[int]], n: int, collapsed) -> FrameTree:
    """``FrameTree(frames, n, collapsed)``, kept for the next call with the same (read-only) frames."""
    key = (frames, n, frozenset(collapsed))
    last = _last_tree[0]
    if last is not None and last[0][0] is frames and last[0][1:] == key[1:]:
        return last[1]
    tree = FrameTree(frames, n, collapsed)
    _last_tree[0] = (key, tree)
    return tree


def _longest(nn: int, src: list[int], dst: list[int], wt: list[int], base: np.ndarray):
    """Longest-path values from ``base`` over the weighted edges; (values, nodes left in cycles)."""
    a = np.asarray(src, dtype=np.int64)
    b = np.asarray(dst, dtype=np.int64)
    w = np.asarray(wt, dtype=np.int64)
    order = np.argsort(a, kind="stable")
    off = np.zeros(nn + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=nn), out=off[1:])
    succ, sw = b[order].tolist(), w[order].tolist()
    indeg = np.bincount(b, minlength=nn).tolist()
    val = base.tolist()
    stack = [v for v in range(nn) if indeg[v] == 0]
    stack.reverse()
    o = off.tolist()
    done = 0
    while stack:
        v = stack.pop()
        done += 1
        lv = val[v]
        for k in range(o[v], o[v + 1]):
            u = succ[k]
            if lv + sw[k] > val[u]:
                val[u] = lv + sw[k]
            indeg[u] -= 1
            if indeg[u] == 0:
                stack.append(u)
    left = np.nonzero(np.asarray(indeg) > 0)[0] if done < nn else np.zeros(0, dtype=np.int64)
    return np.asarray(val, dtype=np.int64), left


def frame_layers(n: int, lay_src: np.ndarray, lay_dst: np.ndarray, layer: np.ndarray, weight_like: np.ndarray,
                 frames: dict[str, list[int]], collapsed, computing: np.ndarray | None = None):
    """Layers where no frame shares a layer with a sibling frame it feeds; (layer, frames) with
    ``frames`` the given dict, or a new one without the frames that could not be kept apart."""
    if not frames or n == 0:
        return layer, frames
    for _attempt in range(6):
        tree = frame_tree(frames, n, collapsed)
        nf = len(tree.paths)
        if nf == 0:
            return layer, frames
        fin = n + 2 * np.arange(nf)
        fout = fin + 1
        owner = tree.owner
        src: list[int] = []
        dst: list[int] = []
        wt: list[int] = []
        ls, ld = lay_src.tolist(), lay_dst.tolist()
        ol = owner.tolist()
        same = (owner[lay_src] == owner[lay_dst]).tolist() if len(lay_src) else []
        fin_l, fout_l = fin.tolist(), fout.tolist()
        lca: dict[tuple[int, int], tuple[int, int, int]] = {}  # many edges join the same two frames
        for a, b, s in zip(ls, ld, same):
            if s:
                src.append(a), dst.append(b), wt.append(1)
                continue
            fa, fb = ol[a], ol[b]
            got = lca.get((fa, fb))
            if got is None:
                got = lca[(fa, fb)] = tree.lca_children(fa, fb)
            _, ca, cb = got
            src.append(a if ca < 0 else fout_l[ca])
            dst.append(b if cb < 0 else fin_l[cb])
            wt.append(1)
        ends = (src[:], dst[:])  # each layer edge as it binds: unit or frame entry/exit
        has_owner = owner >= 0
        members = np.nonzero(has_owner)[0]
        src += fin[owner[members]].tolist() + members.tolist()
        dst += members.tolist() + fout[owner[members]].tolist()
        wt += [0] * (2 * len(members))
        child = np.nonzero(tree.parent >= 0)[0]
        src += fin[tree.parent[child]].tolist() + fout[child].tolist()
        dst += fin[child].tolist() + fout[tree.parent[child]].tolist()
        wt += [0] * (2 * len(child))
        base = np.concatenate([layer.astype(np.int64), np.zeros(2 * nf, dtype=np.int64)])
        val, left = _longest(n + 2 * nf, src, dst, wt, base)
        if len(left) == 0:
            return _sink_weights(val, n, ends, weight_like, owner, fout), frames
        frames = _drop_cyclic(frames, tree, left, n, n + 2 * nf, src, dst, computing)
    return layer, {}


def _drop_cyclic(frames, tree: FrameTree, left: np.ndarray, n: int, nn: int, src, dst, computing):
    """``frames`` without the frames on a cycle of the compound graph (their members and those of
    their descendants go to the nearest kept ancestor)."""
    # Nodes left by the forward pass lie on or below a cycle; those also left by the backward pass
    # lie on or between cycles.
    _, back = _longest(nn, dst, src, [0] * len(src), np.zeros(nn, dtype=np.int64))
    on = np.intersect1d(left, back)
    cyc = sorted({int((v - n) // 2) for v in on.tolist() if v >= n})
    if not cyc:
        cyc = sorted({int((v - n) // 2) for v in left.tolist() if v >= n})
    # Prefer dropping frames whose computing members are not consecutive in graph order (a module
    # called twice): the frames between its calls can then stay.
    under: dict[str, list[int]] = {tree.paths[f]: [] for f in cyc}  # each frame's units, its descendants' too
    for q, m in frames.items():
        for a in ancestors(q):
            got = under.get(a)
            if got is not None:
                got.extend(m)
    spread = []
    for f in cyc:
        units = [u for u in under[tree.paths[f]] if computing is None or computing[u]]
        spread.append(len(units) > 1 and max(units) - min(units) + 1 > len(units))
    drop = {tree.paths[f] for f, s in zip(cyc, spread) if s} or {tree.paths[f] for f in cyc}
    out: dict[str, list[int]] = {}
    for p, m in frames.items():
        q = p
        for a in ancestors(p):
            if a in drop:
                q = a.rsplit(".", 1)[0] if "." in a else ""
                break
        if q:
            out.setdefault(q, []).extend(m)
    return out


def _sink_weights(val: np.ndarray, n: int, ends, weight_like, owner, fout) -> np.ndarray:
    """Weight-like units right above their first consumer (or above the frame that consumer sits
    in), without leaving their own frame's layers."""
    lay = val[:n].tolist()
    wl = np.nonzero(weight_like)[0]
    src, dst = ends
    if len(wl) == 0 or not src:
        return np.asarray(lay, dtype=np.int64)
    a = np.asarray(src, dtype=np.int64)
    keep = a < n  # edges leaving a unit itself (not the exit of a frame it sits in)
    a, b = a[keep], np.asarray(dst, dtype=np.int64)[keep]
    wl_mask = np.asarray(weight_like, dtype=bool)
    into_unit = b < n
    if not (wl_mask[a] & into_unit & wl_mask[np.where(into_unit, b, 0)]).any():
        # No weight feeds another: each moves on its own, all at once.
        lay_a = np.asarray(lay, dtype=np.int64)
        target = np.where(into_unit, lay_a[np.where(into_unit, b, 0)], val[b])
        pick = wl_mask[a]
        want = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(want, a[pick], target[pick])
        has = want < np.iinfo(np.int64).max
        want = np.where(has, want - 1, lay_a)
        f = np.asarray(owner, dtype=np.int64)
        cap = np.where(f >= 0, val[fout[np.maximum(f, 0)]] if len(fout) else 0, np.iinfo(np.int64).max)
        want = np.minimum(want, cap)
        return np.where(wl_mask & has & (want > lay_a), want, lay_a)
    order = np.argsort(a, kind="stable")
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=off[1:])
    succ = b[order].tolist()
    o = off.tolist()
    v_all = val.tolist()
    ceiling = [int(val[fout[f]]) if f >= 0 else None for f in owner.tolist()]
    for v in wl[::-1].tolist():
        lo, hi = o[v], o[v + 1]
        if lo == hi:
            continue
        cap = ceiling[v]
        want = min((lay[u] if u < n else v_all[u]) for u in succ[lo:hi]) - 1
        if cap is not None and want > cap:
            want = cap
        if want > lay[v]:
            lay[v] = want
    return np.asarray(lay, dtype=np.int64)


def item_frames(tree: FrameTree, n: int, layer: np.ndarray, dummy_owner: np.ndarray, dummy_layer: np.ndarray,
                dummy_edges) -> np.ndarray:
    """Frame of every unit and dummy. A long edge runs inside its source's frames until they end,
    then in the common frame of its ends, then inside its destinations' frames once they begin:
    a dummy at layer L belongs to the deepest such frame (for a source's shared dummies, the
    frames that all its destinations below L share)."""
    out = np.concatenate([tree.owner, np.full(len(dummy_owner), -1, dtype=np.int64)])
    if len(dummy_owner) == 0:
        return out
    nf = len(tree.paths)
    lo = np.full(nf, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(nf, -1, dtype=np.int64)
    f = tree.owner.copy()
    units = np.arange(n)
    while True:
        ok = f >= 0
        if not ok.any():
            break
        np.minimum.at(lo, f[ok], layer[units[ok]])
        np.maximum.at(hi, f[ok], layer[units[ok]])
        f = np.where(ok, tree.parent[np.maximum(f, 0)], -1)
    ol = tree.owner.tolist()
    dests: dict[int, list[int]] = {}
    for a, b in dummy_edges:
        dests.setdefault(a, []).append(b)
    chains = tree.chains
    # Per source: the frame both ends share (base), then its own frames below that (src) and the
    # frames all its destinations share below that (common), as columns by depth.
    sources = np.unique(dummy_owner)
    depth_n = int(tree.depth.max()) + 1
    base = np.full(len(sources), -1, dtype=np.int64)
    src = np.full((depth_n, len(sources)), -1, dtype=np.int64)
    com = np.full((depth_n, len(sources)), -1, dtype=np.int64)
    for j, o in enumerate(sources.tolist()):
        src_chain = chains[ol[o]] if ol[o] >= 0 else ()
        common = None
        for b in dests.get(o, ()):
            c = chains[ol[b]] if ol[b] >= 0 else ()
            common = c if common is None else common[:_prefix(common, c)]
        common = common or ()
        k = _prefix(src_chain, common)
        if k:
            base[j] = src_chain[k - 1]
        src[:len(src_chain) - k, j] = src_chain[k:]
        com[:len(common) - k, j] = common[k:]
    which = np.searchsorted(sources, dummy_owner)
    L = dummy_layer.astype(np.int64)
    res = base[which].copy()
    s_cols, c_cols = src[:, which], com[:, which]
    s_ok = (s_cols >= 0) & (hi[np.maximum(s_cols, 0)] >= L)
    c_ok = (c_cols >= 0) & (lo[np.maximum(c_cols, 0)] <= L)
    s_ok = np.logical_and.accumulate(s_ok, axis=0)
    c_ok = np.logical_and.accumulate(c_ok, axis=0)
    for d in range(depth_n):  # the deepest frame of the run that holds at this layer
        res = np.where(s_ok[d], s_cols[d], np.where(~s_ok[0] & c_ok[d], c_cols[d], res))
    out[n:] = res
    return out


def _prefix(a: tuple, b: tuple) -> int:
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return k


def frame_order(all_layer: np.ndarray, pos: np.ndarray, item_frame: np.ndarray, tree: FrameTree, n: int,
                seg=None) -> np.ndarray:
    """``pos`` re-ordered so that each frame's items are contiguous in every layer, frames (and
    the cards beside them) ordered by the mean position of their cards. ``seg``: the (src, dst)
    segments, to swap sibling frames side by side where that removes crossings."""
    total = len(all_layer)
    if total == 0 or not tree.paths or (item_frame < 0).all():
        return pos
    counts = np.bincount(all_layer, minlength=int(all_layer.max()) + 1)
    cpos = pos.astype(np.float64) - (counts[all_layer] - 1) / 2.0
    nf = len(tree.paths)
    s = np.zeros(nf)
    c = np.zeros(nf)
    units = np.nonzero(tree.owner >= 0)[0]
    for depth in range(int(tree.depth.max()) + 1):
        # every unit counts for each ancestor frame: walk the owners up one level at a time
        f = tree.owner[units]
        for _ in range(depth):
            f = np.where(f >= 0, tree.parent[np.maximum(f, 0)], -1)
        ok = f >= 0
        np.add.at(s, f[ok], cpos[units[ok]])
        np.add.at(c, f[ok], 1.0)
    rank = np.where(c > 0, s / np.maximum(c, 1.0), 0.0).tolist()
    first = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])

    # Items sort by (layer, then rank and id of each frame of their chain, outermost first, then
    # their own position): one lexsort over per-depth columns.
    depth_n = int(tree.depth.max()) + 2
    anc = np.full((depth_n, total), -1, dtype=np.int64)
    idx = np.arange(total)
    cur = item_frame.copy()
    while True:
        ok = cur >= 0
        if not ok.any():
            break
        anc[tree.depth[cur[ok]], idx[ok]] = cur[ok]
        cur = np.where(ok, tree.parent[np.maximum(cur, 0)], -1)
    own = np.where(item_frame >= 0, tree.depth[np.maximum(item_frame, 0)] + 1, 0)
    ids = np.where(anc >= 0, anc, -2)
    ids[own, idx] = -1

    def ordered(rank: list[float]) -> np.ndarray:
        r = np.asarray(rank + [0.0])[np.where(anc >= 0, anc, len(rank))]
        r[anc < 0] = -np.inf
        r[own, idx] = cpos
        cols = []
        for d in range(depth_n - 1, -1, -1):
            cols += [ids[d], r[d]]
        order = np.lexsort(tuple(cols) + (all_layer,))
        new = np.empty(total, dtype=np.int64)
        new[order] = np.arange(total) - first[all_layer[order]]
        return new

    new = ordered(rank)
    if seg is not None and total <= SWAP_LIMIT:
        new = _swap_siblings(new, rank, ordered, tree, all_layer, item_frame, seg, n)
    return new


SWAP_LIMIT = 4000  # items (cards and dummies) up to which sibling frames sharing layers try swapping


def _swap_siblings(new, rank, ordered, tree: FrameTree, all_layer, item_frame, seg, n: int, tries: int = 12) -> np.ndarray:
    """Swap the order of two sibling frames that share layers where that removes crossings (at
    most ``tries`` trials: each sorts every row again)."""
    from fxstudio.core.layout.crossings import count_layered_crossings

    seg_src, seg_dst = seg
    span: dict[int, tuple[int, int]] = {}
    ok = item_frame[:n] >= 0  # the cards' layers (dummies pass through)
    for f, lyr in zip(item_frame[:n][ok].tolist(), all_layer[:n][ok].tolist()):
        for g in tree.chains[f]:
            lo, hi = span.get(g, (lyr, lyr))
            span[g] = (min(lo, lyr), max(hi, lyr))
    by_parent: dict[int, list[int]] = {}
    for g in span:
        by_parent.setdefault(int(tree.parent[g]), []).append(g)
    best = count_layered_crossings(all_layer, new, seg_src, seg_dst)
    if best == 0:
        return new
    seg_layer = all_layer[seg_src]
    for sibs in by_parent.values():
        sibs.sort(key=lambda g: rank[g])
        for a, b in zip(sibs, sibs[1:]):
            if span[a][1] < span[b][0] or span[b][1] < span[a][0]:
                continue  # one above the other: their order changes no crossing
            if tries == 0:
                return new
            tries -= 1
            trial = list(rank)
            trial[a], trial[b] = rank[b], rank[a]
            cand = ordered(trial)
            # Only the rows the two frames span move: count the segments that touch them.
            lo, hi = min(span[a][0], span[b][0]), max(span[a][1], span[b][1])
            near = (seg_layer >= lo - 1) & (seg_layer <= hi)
            ss, sd = seg_src[near], seg_dst[near]
            change = (count_layered_crossings(all_layer, cand, ss, sd)
                      - count_layered_crossings(all_layer, new, ss, sd))
            if change < 0:
                best, new, rank[:] = best + change, cand, trial
                if best == 0:
                    return new
    return new


def separate_frames(x: np.ndarray, widths: np.ndarray, layer: np.ndarray, frames: dict[str, list[int]],
                    collapsed_units: dict, classes: dict, plan, n: int, packing, gap: float = 16.0,
                    rounds: int = 30) -> np.ndarray:
    """x moved right where sibling frames (or a frame and a sibling card) would overlap: of two
    siblings, the one later in the rows' order moves right of the other, with everything after it
    in each of its rows (so every row keeps its order and separations). ``packing``: the rows'
    ``RowPacking``."""
    if not frames or n == 0:
        return x
    x = x.copy()
    perm, seg = packing.perm, packing.seg.astype(np.int64)
    starts = np.nonzero(packing.first)[0]
    in_row = np.empty(len(x))
    in_row[perm] = np.arange(len(x)) - starts[seg]
    counts = np.bincount(seg, minlength=len(starts))
    row_of = np.empty(len(x), dtype=np.int64)
    row_of[perm] = seg
    cpos = in_row - (counts[row_of] - 1) / 2.0
    inv = np.empty(len(x), dtype=np.int64)
    inv[perm] = np.arange(len(x))  # item -> place in row order
    seg_sorted = seg  # the row of each place in row order
    index: dict[str, int] = {}
    ks: list[int] = []  # (frame, ancestor) pairs: the ancestor's index, and the frame's cards
    lens: list[int] = []
    ui: list[int] = []
    for q, m in frames.items():
        a = ancestors(q)
        ks.extend(index.setdefault(anc, len(index)) for anc in a)
        lens.extend([len(m)] * len(a))
        ui.extend(m * len(a))
    pa = np.repeat(np.asarray(ks, dtype=np.int64), np.asarray(lens, dtype=np.int64))
    ua = np.asarray(ui, dtype=np.int64)
    sums = np.bincount(pa, weights=cpos[ua], minlength=len(index))
    sizes = np.bincount(pa, minlength=len(index))
    means = (sums / np.maximum(sizes, 1)).tolist()
    rank = {q: means[k] for q, k in index.items()}
    by_pair = np.argsort(pa, kind="stable")
    off = np.zeros(len(index) + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    members = lambda q: ua[by_pair[off[index[q]]:off[index[q] + 1]]]  # noqa: E731 - a frame's cards
    inside = np.zeros(n, dtype=bool)
    for m in frames.values():
        inside[m] = True
    roots = np.nonzero(~inside)[0].tolist()
    fast = SiblingBoxes(frames, plan, n, roots, rank, cpos) if not collapsed_units else None
    for _ in range(rounds):
        left = x[:n] - widths[:n] / 2
        ys = layer[:n] * FAKE_BAND
        boxes = np.stack([left, ys, left + widths[:n], ys + 56.0], axis=1)
        shifts = fast.shifts(boxes, gap) if fast is not None else None
        if shifts is None:
            groups = build_groups(frames, boxes, collapsed_units, classes, plan=plan)
            shifts = _overlap_shifts(groups, frames, boxes, collapsed_units, gap, roots, rank, cpos)
        if not shifts:
            break
        # Each move shifts its sibling's cards and everything after the first of them in each row;
        # all of a round's moves add up: one delta at each (move, row) start, summed along rows.
        delta = np.zeros(len(x))
        parts = [members(key) if isinstance(key, str) else np.asarray([key], dtype=np.int64) for key, _ in shifts]
        which = np.repeat(np.arange(len(shifts)), [len(m) for m in parts])
        sp = inv[np.concatenate(parts)]
        o = np.lexsort((sp, which))  # each move's places in row order
        sp, which = sp[o], which[o]
        r = seg_sorted[sp]
        keep = np.ones(len(sp), dtype=bool)
        keep[1:] = (r[1:] != r[:-1]) | (which[1:] != which[:-1])
        amounts = np.asarray([amount for _, amount in shifts], dtype=np.float64)
        np.add.at(delta, sp[keep], amounts[which[keep]])
        cs = np.cumsum(delta)
        base = cs[starts] - delta[starts]
        x[perm] += cs - base[seg_sorted]
    return x


def _overlap_shifts(groups, frames, boxes: np.ndarray, collapsed_units: dict, gap: float, roots, rank, cpos) -> list[tuple]:
    """(sibling to move, amount) for each overlapping pair of siblings (frames, collapsed cards and
    the cards directly in their parent, ``roots`` the cards in no frame): the later one in the
    rows' order (``rank``: a frame's mean position in its rows, ``cpos`` a card's) moves."""
    by_parent: dict[str, list[tuple]] = {}
    for p, g in groups.items():
        parent = p.rsplit(".", 1)[0] if "." in p else ""
        key = p if not g.collapsed else collapsed_units[p][0]
        r = rank.get(p, 0.0) if not g.collapsed else float(cpos[key])
        by_parent.setdefault(parent, []).append((g.x, g.y, g.x + g.w, g.y + g.h, key, r))
    for p, m in frames.items():
        if p in collapsed_units:
            continue
        for u in m:
            by_parent.setdefault(p, []).append((*boxes[u].tolist(), u, float(cpos[u])))
    for u in roots:
        by_parent.setdefault("", []).append((*boxes[u].tolist(), u, float(cpos[u])))
    shifts = []
    for items in by_parent.values():
        if len(items) < 2:
            continue
        # Sweep down: only the siblings whose boxes reach below this one's top can overlap it.
        items.sort(key=lambda b: b[1])
        active: list[tuple] = []
        for b in items:
            active = [a for a in active if a[3] > b[1]]
            for a in active:
                if a[2] + gap > b[0] + 1e-6 and b[2] + gap > a[0] + 1e-6:
                    first, later = (a, b) if a[5] <= b[5] else (b, a)
                    shifts.append((later[0], later[4], first[2] + gap - later[0]))
            active.append(b)
    best: dict = {}
    for x0, key, amount in sorted(shifts, key=lambda t: t[0]):
        best[key] = max(best.get(key, 0.0), amount)
    return list(best.items())
