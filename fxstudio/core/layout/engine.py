"""The layered (Sugiyama-style) layout of an FX graph: ``compute_layout``.

Pipeline: flatten the graph (``graph_model``), map collapsed module groups to single cards,
assign layers (``layout_layers``), add shared dummies for long edges, reduce crossings
(``layout_crossings``), assign coordinates (``layout_coords``), route edges through the dummy
positions (``layout_routes``) and frame the module groups (``layout_groups``). Everything after
flattening works on numpy arrays, so 100k-node graphs lay out in seconds. Deterministic: the same
graph and arguments give the same layout. Dummies and route points are counted against the graph's
``LayoutBudget`` before they are made; past it, long edges run as lanes beside the graph (``lanes.py``).
"""

from __future__ import annotations

import gc
import math
import time
from typing import Callable, Mapping

import numpy as np
import torch.fx

from fxstudio.core.layout.budget import LayoutBudget
from fxstudio.core.layout.graph_model import GraphArrays, extract_graph, to_networkx  # noqa: F401 (re-exported)
from fxstudio.core.layout.coords import RowPacking, assign_x, band_tops
from fxstudio.core.layout.frames import frame_layers, frame_order, frame_tree, item_frames, separate_frames
from fxstudio.core.layout.crossings import best_of_starts, reduce_crossings, sweep_layers
from fxstudio.core.layout.groups import (build_groups, caption_lengths, class_names, collapse_owner, frame_gaps,
                                         frame_members, frame_structure, group_plan)
from fxstudio.core.layout.layers import add_dummies, assign_layers, sorted_unique
from fxstudio.core.layout.local_relayout import local_relayout
from fxstudio.core.layout.reroute import Placement, reroute
from fxstudio.core.layout.routes import route_edges
from fxstudio.core.layout.types import Layout, NodeBox

CARD_H = 56.0   # header and two lines (``card_text``); each further line adds CARD_LINE_H
CARD_LINE_H = 14.0
CARD_H_ONE_LINE = 44.0   # header and one line (the shape of an op its name says: ``relu``)
WEIGHT_ROW_H = 15.0   # one folded weight's row below a card's body (``folding.py``)
WEIGHT_ROWS_PAD = 6.0  # space under the last row
MIN_W, MAX_W = 140.0, 320.0
CHAR_W = 7.0
NODE_GAP = 36.0
DUMMY_GAP = 14.0
LAYER_GAP = 40.0
SWEEP_LIMIT = 30000  # nodes + dummies up to which the exact layer-by-layer sweeps run

Sizes = Mapping[str, tuple[float, float]] | Callable[[str], tuple[float, float]] | None


def card_width(label_len: int) -> float:
    """The width of a card whose longest text has ``label_len`` characters."""
    return min(max(CHAR_W * label_len + 32, MIN_W), MAX_W)


def card_heights(lines: np.ndarray) -> np.ndarray:
    """The height of cards showing ``lines`` lines under their title (no weight rows)."""
    return np.where(lines <= 1, CARD_H_ONE_LINE, CARD_H + CARD_LINE_H * np.maximum(lines - 2, 0)).astype(np.float64)


def _size_of(sizes: Sizes, name: str, fallback: tuple[float, float]) -> tuple[float, float]:
    if sizes is None:
        return fallback
    if callable(sizes):
        got = sizes(name)
    else:
        got = sizes.get(name)
    return fallback if got is None else (float(got[0]), float(got[1]))


class _Units:
    """What the layout places: real nodes outside collapsed groups, and one card per collapsed group."""

    def __init__(self, ga: GraphArrays, collapsed, merged: Mapping[str, str] | None = None):
        collapsed = frozenset(collapsed)
        owners = ga.owners if ga.owners_for == collapsed else collapse_owner(ga.module_paths, collapsed)
        if merged:
            owners = [merged.get(o, o) if o is not None else None for o in owners]
        self.members: dict[str, int] = {}
        group_unit: dict[str, int] = {}
        if not any(o is not None for o in owners):
            self.names, self.paths, self.targets, self.ops = ga.names, ga.module_paths, ga.targets, ga.ops
            self.is_group = [False] * ga.n
            self.weight_like = ga.weight_like.tolist()
            self.label_len = ga.label_len
            self.rows = ga.rows if ga.rows is not None else np.zeros(ga.n, dtype=np.int64)
            self.lines = ga.lines if ga.lines is not None else np.full(ga.n, 2, dtype=np.int64)
            unit_of = np.arange(ga.n, dtype=np.int64)
        else:
            self.names, self.paths, self.targets, self.ops = [], [], [], []
            self.is_group, self.weight_like = [], []
            lens: list[int] = []
            rows: list[int] = []
            lines: list[int] = []
            unit_of = np.empty(ga.n, dtype=np.int64)
            wl = ga.weight_like.tolist()
            ll = ga.label_len.tolist()
            rl = ga.rows.tolist() if ga.rows is not None else [0] * ga.n
            nl = ga.lines.tolist() if ga.lines is not None else [2] * ga.n
            for i, owner in enumerate(owners):
                if owner is None:
                    unit_of[i] = len(self.names)
                    self.names.append(ga.names[i])
                    self.paths.append(ga.module_paths[i])
                    self.is_group.append(False)
                    self.weight_like.append(wl[i])
                    self.targets.append(ga.targets[i])
                    self.ops.append(ga.ops[i])
                    lens.append(ll[i])
                    rows.append(rl[i])
                    lines.append(nl[i])
                    continue
                u = group_unit.get(owner)
                if u is None:
                    u = group_unit[owner] = len(self.names)
                    self.names.append(owner)
                    self.paths.append(owner)
                    self.is_group.append(True)
                    self.weight_like.append(False)
                    self.targets.append("")
                    self.ops.append("group")
                    lens.append(0)
                    rows.append(0)
                    lines.append(2)   # a collapsed module's card: its path, then class and count
                self.members[owner] = self.members.get(owner, 0) + 1
                unit_of[i] = u
            self.label_len = np.asarray(lens, dtype=np.int64)
            self.rows = np.asarray(rows, dtype=np.int64)
            self.lines = np.asarray(lines, dtype=np.int64)
        self.group_unit = group_unit
        self.n = len(self.names)
        if group_unit:
            unit_of = self._renumber(ga, owners, unit_of)
        us, ud = unit_of[ga.src], unit_of[ga.dst]
        keep = us != ud
        self.edge_src, self.edge_dst = us[keep], ud[keep]
        self.edge_keys = [k for k, m in zip(ga.keys, keep.tolist()) if m]
        if collapsed:
            # Edges merged by a collapsed group are routed once.
            seen: set = set()
            mask = []
            grp = self.is_group
            for a, b, k in zip(self.edge_src.tolist(), self.edge_dst.tolist(), self.edge_keys):
                ident = (a, b) if grp[a] or grp[b] else (a, b, k)  # a group card has no input ports
                mask.append(ident not in seen)
                seen.add(ident)
            m = np.asarray(mask, dtype=bool)
            self.edge_src, self.edge_dst = self.edge_src[m], self.edge_dst[m]
            self.edge_keys = [k for k, keep_it in zip(self.edge_keys, mask) if keep_it]
        # Units are numbered by first member in graph order; an edge against that order (only possible
        # through a collapsed group) is laid out reversed.
        lo, hi = np.minimum(us, ud)[keep], np.maximum(us, ud)[keep]
        pair = sorted_unique(lo * max(self.n, 1) + hi)
        self.lay_src, self.lay_dst = pair // max(self.n, 1), pair % max(self.n, 1)


    def _renumber(self, ga: GraphArrays, owners, unit_of: np.ndarray) -> np.ndarray:
        """Number units in an order that keeps edges pointing forward where the graph allows.

        A collapsed group ranks at its first computing member (not at the parameters an exported
        graph lists first), and a weight-like card just before its first consumer.
        """
        n = self.n
        rank = np.full(n, np.inf)
        idx = np.arange(ga.n, dtype=np.float64)
        np.minimum.at(rank, unit_of[~ga.weight_like], idx[~ga.weight_like])
        fallback = np.full(n, np.inf)
        np.minimum.at(fallback, unit_of, idx)
        rank = np.where(np.isinf(rank), fallback, rank)
        us, ud = unit_of[ga.src], unit_of[ga.dst]
        heavy_units = [u for u in range(n) if self.weight_like[u]]
        if heavy_units:
            cons_off = np.zeros(n + 1, dtype=np.int64)
            order = np.argsort(us, kind="stable")
            np.cumsum(np.bincount(us, minlength=n), out=cons_off[1:])
            cons = ud[order].tolist()
            co = cons_off.tolist()
            r = rank.tolist()
            for u in reversed(heavy_units):
                users = cons[co[u]:co[u + 1]]
                if users:
                    r[u] = min(r[u], min(r[c] for c in users if c != u) - 1e-6) if any(c != u for c in users) else r[u]
            rank = np.asarray(r)
        perm = np.argsort(rank, kind="stable")
        new_id = np.empty(n, dtype=np.int64)
        new_id[perm] = np.arange(n)
        pl = perm.tolist()
        for attr in ("names", "paths", "is_group", "weight_like", "targets", "ops"):
            values = getattr(self, attr)
            setattr(self, attr, [values[i] for i in pl])
        self.label_len = self.label_len[perm]
        self.rows = self.rows[perm]
        self.lines = self.lines[perm]
        self.group_unit = {p: int(new_id[u]) for p, u in self.group_unit.items()}
        return new_id[unit_of]


class _Stamps:
    """Seconds spent in each stage, for ``Layout.stats`` (the benchmark prints them)."""

    def __init__(self, t0: float):
        self.last = t0
        self.times: dict[str, float] = {}

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.times[stage] = now - self.last
        self.last = now


def compute_layout(
    graph: torch.fx.Graph, *, collapsed=frozenset(), previous: Layout | None = None, sizes: Sizes = None,
    sweeps: int = 8, changed=None, fold_weights: bool = False, merged: Mapping[str, str] | None = None,
) -> Layout:
    """Lay out ``graph`` top to bottom; the result is keyed by node name (and collapsed group path).

    ``collapsed``: module paths shown as one card each (with their external edges).
    ``previous``: an earlier layout of (an earlier version of) this graph; nodes it holds keep their
    layer and x where the new graph allows, so an edit moves only what it must.
    ``sizes``: card sizes by node name (dict or callable returning (w, h) or None); default from
    the label length. Every edge points downward, no cards overlap.
    ``changed``: with ``previous``, the nodes an edit touched (a ``DocumentEvent``'s added and changed
    ids), everything else being as ``previous`` laid it out; when the edit only rewired inputs along
    the existing layering, every card stays put and only those nodes' input edges are routed anew
    (``layout_reroute``); when it inserted or erased one node, only that card, the layer it opens or
    closes and the changed edges are laid out (``local_relayout``); else this is an ordinary
    incremental layout.
    ``fold_weights``: weights used by one op are rows of that op's card, taller by ``WEIGHT_ROW_H``
    each, and export plumbing is left out (``folding.py``): those nodes get no box and no route.
    ``merged``: collapsed paths drawn on another collapsed path's card (path → that path): folded
    repeated blocks (``repeats.py``), one card for the whole run.
    """
    # The layout allocates hundreds of thousands of short-lived objects and frees them without
    # cycles; the cyclic collector would rescan the whole open model each time (10-25% of the run).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if previous is not None and changed is not None and sizes is None:
            rerouted = reroute(graph, previous, changed, frozenset(collapsed), time.perf_counter(), card_width,
                               fold_weights)
            if rerouted is not None:
                return rerouted
            if not collapsed and not merged:
                local = local_relayout(graph, previous, changed, time.perf_counter(), card_width, card_heights,
                                       fold_weights)
                if local is not None:
                    return local
        return _compute_layout(graph, collapsed=collapsed, previous=previous, sizes=sizes, sweeps=sweeps,
                               fold=fold_weights, merged=merged)
    finally:
        if collecting:
            gc.enable()


def _compute_layout(graph: torch.fx.Graph, *, collapsed, previous: Layout | None, sizes: Sizes, sweeps: int,
                    fold: bool = False, merged: Mapping[str, str] | None = None) -> Layout:
    t0 = time.perf_counter()
    ga = extract_graph(graph, fold=fold, collapsed=frozenset(collapsed))
    stamp = _Stamps(t0)
    stamp("extract")
    collapsed = frozenset(collapsed)
    merged = {k: v for k, v in (merged or {}).items() if k in collapsed and v in collapsed}
    key = (collapsed, tuple(sorted(merged.items()))) if merged else collapsed  # what ``inputs`` records
    if previous is not None and sizes is None and previous.inputs is not None:
        same_collapsed, prev_ga = previous.inputs
        if same_collapsed == key and _same_arrays(prev_ga, ga):
            # Nothing the layout reads changed (an argument became another constant, a kwarg
            # was set): the previous layout is this graph's incremental layout, as it stands.
            return _reused(previous, ga, key, t0)
    units = _Units(ga, collapsed, merged)
    stamp("units")
    n = units.n
    label_len = units.label_len.astype(np.float64)
    for path, u in units.group_unit.items():
        label_len[u] = len(f"{path} ({units.members[path]} nodes)")
    for path in set(merged.values()) & set(units.group_unit):
        # a folded run's card names its range and count (``repeats.py``): room for the longer text
        label_len[units.group_unit[path]] = 2 * len(path) + 34
    widths = np.clip(CHAR_W * label_len + 32, MIN_W, MAX_W)
    heights = card_heights(units.lines)
    if units.rows.any():
        heights = heights + np.where(units.rows > 0, units.rows * WEIGHT_ROW_H + WEIGHT_ROWS_PAD, 0.0)
    if sizes is not None:
        for i, name in enumerate(units.names):
            widths[i], heights[i] = _size_of(sizes, name, (widths[i], heights[i]))

    prev_layer = prev_x = None
    known = np.zeros(n, dtype=bool)
    if previous is not None:
        prev_layer = np.full(n, -1, dtype=np.int64)
        prev_x = np.zeros(n)
        for i, name in enumerate(units.names):
            box = previous.groups.get(name) if units.is_group[i] else previous.nodes.get(name)
            if box is None or (units.is_group[i] and not box.collapsed):
                continue
            lay = getattr(box, "layer", -1)
            if lay is None or lay < 0:
                continue
            prev_layer[i] = lay
            prev_x[i] = box.x + box.w / 2
            known[i] = True
        if known.sum() < n // 2:
            prev_layer = prev_x = None
            known[:] = False

    layer = assign_layers(n, units.lay_src, units.lay_dst, np.asarray(units.weight_like, dtype=bool), prev_layer)
    stamp("layers")
    leaf = [not g and t == p and op == "call_module"
            for g, t, p, op in zip(units.is_group, units.targets, units.paths, units.ops)]
    leaf = (leaf, units.is_group)
    cached = previous.group_cache if previous is not None else None
    if cached is not None and cached[0] == units.paths and cached[1] == leaf:
        frames = cached[2]  # same module paths: the same frames (read-only)
    else:
        frames = frame_members(units.paths, *leaf)
    wl_units = np.asarray(units.weight_like, dtype=bool)
    layer, kept = frame_layers(n, units.lay_src, units.lay_dst, layer, wl_units, frames, units.group_unit,
                               computing=~wl_units)
    if kept is not frames:
        frames, cached = kept, None
    structure = cached[6] if cached is not None and frames is cached[2] else frame_structure(frames)
    if cached is not None and cached[3] == ga.module_paths and cached[4] == ga.module_stacks:
        classes = cached[5]
    else:
        classes = class_names(ga.module_stacks, ga.module_paths)
    if sizes is None:   # a module without a frame is named on its card: a line more, room for the text
        captions = caption_lengths(units.paths, units.ops, units.group_unit, frames, classes)
        if captions:
            at = np.fromiter(captions, np.int64, len(captions))
            wide = np.fromiter(captions.values(), np.int64, len(captions))
            widths[at] = np.clip(CHAR_W * np.maximum(label_len[at], wide) + 32, MIN_W, MAX_W)
            heights[at] += card_heights(units.lines[at] + 1) - card_heights(units.lines[at])
    stamp("frame layers")
    # Dummies are counted against the budget before they are made; past it, the longest lanes
    # run beside the graph instead (``lanes.py``).
    budget = LayoutBudget.for_graph(n, max(len(units.lay_src), len(units.edge_src)))
    depth = 1 + max((p.count(".") for p in frames), default=-1)
    all_layer, seg_src, seg_dst, dummy_base, dummy_owner, laned = add_dummies(
        n, layer, units.lay_src, units.lay_dst, limit=budget.dummies(n, depth))
    stamp("dummies")
    total = len(all_layer)
    if len(seg_src):
        pair = sorted_unique(seg_src * total + seg_dst)
        seg_src, seg_dst = pair // total, pair % total
    is_dummy = np.zeros(total, dtype=bool)
    is_dummy[n:] = True
    all_w = np.concatenate([widths, np.zeros(total - n)])
    gaps = np.where(is_dummy, DUMMY_GAP, NODE_GAP)
    wl = np.asarray(units.weight_like, dtype=bool)
    heavy = np.concatenate([wl, wl[dummy_owner]])

    if prev_x is not None:
        lane_x, lane_known = _previous_lanes(previous, units.names, dummy_owner, all_layer[n:])
        stamp("previous lanes")
        known_all = np.concatenate([known, lane_known])
        init_x = _initial_x(total, known_all, np.concatenate([prev_x, lane_x]), seg_src, seg_dst)
        pos = reduce_crossings(all_layer, seg_src, seg_dst, init_x, sweeps=0)
        fixed = known_all
        stamp("crossings (kept order)")
        pos = _framed_order(frames, units, n, layer, all_layer, pos, dummy_owner, (seg_src, seg_dst))
        x = assign_x(all_layer, pos, all_w, gaps, is_dummy, heavy, seg_src, seg_dst, init=init_x, fixed=fixed)
        stamp("coordinates")
    else:
        init_key = np.concatenate([np.arange(n, dtype=np.float64), dummy_owner.astype(np.float64) + 0.5])
        pos = reduce_crossings(all_layer, seg_src, seg_dst, init_key, sweeps=sweeps)
        stamp("crossings (vectorised)")
        if total <= SWEEP_LIMIT and sweeps:
            pos = sweep_layers(all_layer, seg_src, seg_dst, pos, sweeps=sweeps)
            stamp("crossings (sweeps)")
            pos = best_of_starts(all_layer, seg_src, seg_dst, pos, sweeps=sweeps)
            stamp("crossings (other starts)")
        pos = _framed_order(frames, units, n, layer, all_layer, pos, dummy_owner, (seg_src, seg_dst))
        x = assign_x(all_layer, pos, all_w, gaps, is_dummy, heavy, seg_src, seg_dst)
        stamp("coordinates")
        if total:
            x -= (x[:n] - widths / 2).min() if n else x.min()

    group_cards = {name: (i, units.members[name]) for i, name in enumerate(units.names) if units.is_group[i]}
    if (cached is not None and frames is cached[2] and classes is cached[5]
            and cached[7][0] == tuple(group_cards)):
        plan = cached[7][1]
    else:
        plan = group_plan(frames, group_cards, classes)
    if frames:
        x = separate_frames(x, all_w, all_layer, frames, group_cards, classes, plan, n,
                            packing=RowPacking(all_layer, pos, all_w, gaps))
        stamp("frame separation")
    nlayers = int(all_layer.max()) + 1 if total else 0
    layer_h = np.zeros(nlayers)
    if n:
        np.maximum.at(layer_h, layer, heights)
    band_gaps = frame_gaps(frames, layer, nlayers, LAYER_GAP, structure=structure)
    tops = band_tops(layer_h, band_gaps)
    if prev_x is not None:
        # Frames may squeeze until the next fresh layout: keeping cards in place comes first.
        tops = _keep_previous_tops(previous, layer_h, np.minimum(band_gaps, LAYER_GAP))
    stamp("band tops")

    result = Layout()
    result.lanes, result.layer_tops = _lane_cache(units, layer, all_layer, dummy_owner, x, tops)
    stamp("lane cache")
    left = x[:n] - widths / 2
    ys = tops[layer] if n else np.zeros(0)
    lx, ly, lw, lh, ll = left.tolist(), ys.tolist(), widths.tolist(), heights.tolist(), layer.tolist()
    for i, name in enumerate(units.names):
        if not units.is_group[i]:
            result.nodes[name] = NodeBox(name=name, x=lx[i], y=ly[i], w=lw[i], h=lh[i], layer=ll[i])
    stamp("bands")
    boxes = np.stack([left, ys, left + widths, ys + heights], axis=1) if n else np.zeros((0, 4))
    result.group_cache = (units.paths, leaf, frames, ga.module_paths, ga.module_stacks, classes, structure,
                          (tuple(group_cards), plan))
    result.groups = build_groups(frames, boxes, group_cards, classes, plan=plan)
    for path, (i, _) in group_cards.items():
        result.groups[path].layer = ll[i]
    stamp("groups")
    lane_info: dict = {}
    result.edges = route_edges(units, layer, x, ys, heights, tops, layer_h, dummy_base, laned=laned,
                               point_limit=budget.points(len(units.edge_src)),
                               right=_right_end(x, all_w, result.groups), info=lane_info)
    stamp("routes")
    result.inputs = (key, ga) if sizes is None else None
    result.placement = Placement(n, all_layer, x, all_w, dummy_base, dummy_owner, tops, tops + layer_h,
                                 groups=result.groups)
    result.seconds = time.perf_counter() - t0
    result.stats = {"n_dummies": total - n, "n_layers": nlayers, "n_lanes": lane_info.get("lanes", 0),
                    "n_lane_columns": lane_info.get("lane_columns", 0),
                    "budget": budget.bytes, **stamp.times}
    return result


def _right_end(x: np.ndarray, w: np.ndarray, groups: dict) -> float:
    """The rightmost x of any card, dummy or module frame (where lanes beside the graph begin)."""
    right = float((x + w / 2).max()) if len(x) else 0.0
    if groups:
        right = max(right, max(g.x + g.w for g in groups.values()))
    return right


def _framed_order(frames, units, n, layer, all_layer, pos, dummy_owner, seg=None):
    """``pos`` with each module frame's cards and dummies contiguous in every layer (``frame_order``)."""
    if not frames:
        return pos
    tree = frame_tree(frames, n, units.group_unit)
    if not tree.paths:
        return pos
    span = layer[units.lay_dst] - layer[units.lay_src]
    long_edges = zip(units.lay_src[span > 1].tolist(), units.lay_dst[span > 1].tolist())
    item_frame = item_frames(tree, n, layer, dummy_owner, all_layer[n:], long_edges)
    return frame_order(all_layer, pos, item_frame, tree, n, seg=seg)


def _same_arrays(a: GraphArrays, b: GraphArrays) -> bool:
    """Whether two flattened graphs give the layout the same input (names, ops, targets, module
    paths and stacks, label lengths, weight-likeness, and every edge with its key)."""
    return (a.names == b.names and np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst)
            and a.keys == b.keys and np.array_equal(a.label_len, b.label_len)
            and np.array_equal(a.weight_like, b.weight_like) and a.ops == b.ops and a.targets == b.targets
            and a.module_paths == b.module_paths and a.module_stacks == b.module_stacks
            and a.fold == b.fold and a.skipped == b.skipped
            and (a.rows is None) == (b.rows is None) and (a.rows is None or np.array_equal(a.rows, b.rows))
            and (a.lines is None) == (b.lines is None) and (a.lines is None or np.array_equal(a.lines, b.lines)))


def _reused(previous: Layout, ga: GraphArrays, collapsed: frozenset, t0: float) -> Layout:
    """A copy of ``previous`` (boxes and routes shared, containers new) for an unchanged input."""
    result = Layout(nodes=dict(previous.nodes), edges=list(previous.edges), groups=dict(previous.groups))
    result.lanes, result.layer_tops, result.group_cache = previous.lanes, previous.layer_tops, previous.group_cache
    result.placement, result.route_memory = previous.placement, previous.route_memory
    result.inputs = (collapsed, ga)
    result.seconds = time.perf_counter() - t0
    result.stats = {**{k: v for k, v in previous.stats.items() if k in ("n_dummies", "n_layers")},
                    "reused": 1, "extract": result.seconds}
    return result


def _lane_cache(units, layer: np.ndarray, all_layer: np.ndarray, dummy_owner: np.ndarray, x: np.ndarray,
                tops: np.ndarray) -> tuple[tuple, dict]:
    """What ``_previous_lanes`` and ``_keep_previous_tops`` would read off this layout's boxes and
    routes, taken from the arrays directly: the x of each (source, layer) dummy in a layer holding a
    node card, as (unit index by name, sorted keys source index × span + layer, x, span), and the top
    of each layer holding a card."""
    n = units.n
    is_group = np.asarray(units.is_group, dtype=bool) if n else np.zeros(0, dtype=bool)
    card_layers = np.unique(layer) if n else np.zeros(0, dtype=np.int64)
    layer_tops = dict(zip(card_layers.tolist(), tops[card_layers].tolist())) if len(card_layers) else {}
    span = int(all_layer.max()) + 1 if len(all_layer) else 1
    dl = all_layer[n:]
    if len(dl):
        has_node = np.zeros(span, dtype=bool)
        has_node[layer[~is_group]] = True
        ok = has_node[dl]
        keys = dummy_owner[ok] * span + dl[ok]
        xs = x[n:][ok]
        order = np.argsort(keys, kind="stable")
        keys, xs = keys[order], xs[order]
    else:
        keys, xs = np.zeros(0, dtype=np.int64), np.zeros(0)
    index = dict(zip(units.names, range(n)))
    return (index, keys, xs, span), layer_tops


def _previous_lanes(previous: Layout, names: list[str], dummy_owner: np.ndarray, dummy_layer: np.ndarray):
    """x of each dummy where the previous layout routed the same source through the same layer
    (read off the previous route at the middle of that layer's band)."""
    xs = np.zeros(len(dummy_owner))
    found = np.zeros(len(dummy_owner), dtype=bool)
    if previous.lanes is not None:
        index, keys, lane_x, span = previous.lanes
        if len(keys) and len(dummy_owner):
            get = index.get
            prev_unit = np.fromiter((get(nm, -1) for nm in names), dtype=np.int64, count=len(names))
            po = prev_unit[dummy_owner]
            valid = (po >= 0) & (dummy_layer < span)
            q = po * span + dummy_layer
            at = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
            hit = valid & (keys[at] == q)
            xs[hit] = lane_x[at[hit]]
            found = hit
        return xs, found
    top: dict[int, float] = {}
    height: dict[int, float] = {}
    for b in previous.nodes.values():
        top[b.layer] = min(top.get(b.layer, b.y), b.y)
        height[b.layer] = max(height.get(b.layer, 0.0), b.h)
    lane: dict[tuple[str, int], float] = {}
    covered: dict[str, int] = {}  # per source, the lowest layer its lane was read at (a fan-out: once)
    for e in previous.edges:
        s = previous.nodes.get(e.src) or previous.groups.get(e.src)
        d = previous.nodes.get(e.dst) or previous.groups.get(e.dst)
        if s is None or d is None or d.layer - s.layer < 2 or s.layer < 0:
            continue
        first = max(s.layer + 1, covered.get(e.src, -1) + 1)
        covered[e.src] = max(covered.get(e.src, -1), d.layer - 1)
        layers = [lyr for lyr in range(first, d.layer) if lyr in top and (e.src, lyr) not in lane]
        if not layers:
            continue
        pts = np.asarray(e.points)
        mids = np.asarray([top[lyr] + height[lyr] / 2 for lyr in layers])
        for lyr, xv in zip(layers, np.interp(mids, pts[:, 1], pts[:, 0]).tolist()):
            lane[(e.src, lyr)] = xv
    xs = np.zeros(len(dummy_owner))
    found = np.zeros(len(dummy_owner), dtype=bool)
    if lane:
        for i, (o, lyr) in enumerate(zip(dummy_owner.tolist(), dummy_layer.tolist())):
            got = lane.get((names[o], lyr))
            if got is not None:
                xs[i], found[i] = got, True
    return xs, found


def _initial_x(total, have, x, seg_src, seg_dst) -> np.ndarray:
    """Starting x for an incremental layout: previous x where known, else the mean of known neighbours."""
    x = x.astype(np.float64).copy()
    have = have.copy()
    for _ in range(3):
        if have.all():
            break
        ok = have[seg_src]
        s = np.bincount(seg_dst[ok], weights=x[seg_src[ok]], minlength=total)
        c = np.bincount(seg_dst[ok], minlength=total)
        ok2 = have[seg_dst]
        s += np.bincount(seg_src[ok2], weights=x[seg_dst[ok2]], minlength=total)
        c += np.bincount(seg_src[ok2], minlength=total)
        new = (~have) & (c > 0)
        x[new] = s[new] / c[new]
        have |= new
    return x


def _keep_previous_tops(previous: Layout, layer_h: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """Band tops that stay where the previous layout had them, pushed down only where needed."""
    prev_top: dict[int, float] = {}
    if previous.layer_tops is not None:
        prev_top = previous.layer_tops
    else:
        for box in list(previous.nodes.values()) + [g for g in previous.groups.values() if g.collapsed]:
            if box.layer >= 0:
                prev_top[box.layer] = min(prev_top.get(box.layer, box.y), box.y)
    hs, gs = layer_h.tolist(), gaps.tolist()
    out = [0.0] * len(hs)
    floor = -math.inf
    get = prev_top.get
    for lyr in range(len(hs)):
        want = get(lyr, floor)
        top = want if want > floor else floor
        top = top if math.isfinite(top) else 0.0
        out[lyr] = top
        floor = top + hs[lyr] + gs[lyr]
    return np.asarray(out, dtype=np.float64)
