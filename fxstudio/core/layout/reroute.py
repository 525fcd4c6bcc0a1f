"""Redraw only the edges an argument edit changed, keeping every card where it is.

A rewire (``set_arg`` with another node, its undo) changes the input edges of a few nodes and
nothing else the layout reads. When every new edge still points down the existing layering, the
cards, frames and every other route stay exactly as they are: only the changed nodes' input edges
are routed anew, down free lanes between the cards of each layer they cross. That keeps the
user's place on a 10k-node graph and costs milliseconds instead of a relayout.

``reroute`` returns None whenever that is not enough (nodes added, removed, renamed or moved, a
label or module path changed, a node became or stopped being weight-like, an edge that would point
up, a collapsed group): ``compute_layout`` then runs its incremental relayout.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch.fx

from fxstudio.core.card_text import card_lines
from fxstudio.core.layout.folding import fold_host, row_text_len, rows_of
from fxstudio.core.layout.graph_model import node_inputs
from fxstudio.core.node_text import (META_DTYPE, META_HIDDEN, META_MODULE_PATH, META_MODULE_STACK, META_PARAM, META_SHAPE,
                                     target_label)
from fxstudio.core.layout.types import EdgeRoute, Layout

CARD_MARGIN = 12.0   # a lane keeps this far from a card's side
LANE_MARGIN = 6.0    # and this far from another edge's lane
FRAME_MARGIN = 8.0   # and from a module frame's side (a lane along a frame's border reads as part of it)
MIN_GAP = 4.0        # free stretches narrower than this count as taken
MEMORY = 512         # removed routes kept for the edit's undo


@dataclass
class Placement:
    """Where the last full or incremental layout put its units and dummies (``compute_layout`` arrays).

    ``x`` are centres, ``w`` widths (0 for dummies), ``layer`` layers of units then dummies;
    ``dummy_base[u]`` is unit ``u``'s first dummy (its lane through the layers below it), -1 if none;
    ``tops`` / ``bottoms`` the top and bottom of each layer's band. ``row(layer)`` gives that
    layer's merged taken x-intervals (cards with ``CARD_MARGIN``, lanes with ``LANE_MARGIN``),
    built on first use; a reroute's new lanes go into the copy of ``rows`` its layout keeps.
    """

    n: int
    layer: np.ndarray
    x: np.ndarray
    w: np.ndarray
    dummy_base: np.ndarray
    dummy_owner: np.ndarray
    tops: np.ndarray
    bottoms: np.ndarray
    rows: dict = field(default_factory=dict)  # layer -> merged taken (lefts, rights), filled on demand
    _sorted: tuple | None = None
    groups: dict | None = None  # the layout's module frames (``GroupBox`` by path)
    _frames: np.ndarray | None = None

    def row(self, lyr: int) -> tuple[list, list]:
        """The merged taken x-intervals of layer ``lyr``: (lefts, rights), sorted."""
        got = self.rows.get(lyr)
        if got is not None:
            return got
        if self._sorted is None:
            half = np.where(np.arange(len(self.x)) < self.n, self.w / 2 + CARD_MARGIN, LANE_MARGIN)
            lo, hi = self.x - half, self.x + half
            order = np.lexsort((lo, self.layer))
            layers = self.layer[order]
            self._sorted = (layers, lo[order], hi[order])
        layers, lo, hi = self._sorted
        a, b = np.searchsorted(layers, [lyr, lyr + 1]).tolist()
        lefts, rights = lo[a:b], hi[a:b]
        if self._frames is None:
            self._frames = frame_edges(self.groups or {})
        if len(self._frames) and 0 <= lyr < len(self.tops):
            f = self._frames
            across = f[(f[:, 1] < self.bottoms[lyr]) & (f[:, 3] > self.tops[lyr])]
            sides = np.concatenate([across[:, 0], across[:, 2]])
            lefts = np.concatenate([lefts, sides - FRAME_MARGIN])
            rights = np.concatenate([rights, sides + FRAME_MARGIN])
            order = np.argsort(lefts, kind="stable")
            lefts, rights = lefts[order], rights[order]
        row = self.rows[lyr] = _merged(lefts.tolist(), rights.tolist())
        return row

    def lanes_of(self, unit: int) -> dict[int, float]:
        """Layer → x of ``unit``'s own lane (its dummies), where it has one."""
        base = int(self.dummy_base[unit]) if unit < len(self.dummy_base) else -1
        if base < 0:
            return {}
        out = {}
        d = base
        owner = self.dummy_owner
        while d < len(self.layer) and owner[d - self.n] == unit:
            out[int(self.layer[d])] = float(self.x[d])
            d += 1
        return out


def frame_edges(groups: dict) -> np.ndarray:
    """(x0, y0, x1, y1) of every expanded module frame, for ``Placement.frames``."""
    boxes = [(g.x, g.y, g.x + g.w, g.y + g.h) for g in groups.values() if not g.collapsed]
    return np.asarray(boxes, dtype=np.float64).reshape(-1, 4)


def _free_x(place: Placement, lyr: int, want: float, toward: float) -> float:
    """``want`` if no card or lane of layer ``lyr`` is there, else the nearer free side (toward ``toward``)."""
    lefts, rights = place.row(lyr)
    k = bisect.bisect_right(lefts, want) - 1
    if k < 0 or want > rights[k]:
        return want
    left, right = lefts[k] - MIN_GAP / 2, rights[k] + MIN_GAP / 2
    return left if abs(left - toward) <= abs(right - toward) else right


def _take(place: Placement, lyr: int, x: float) -> None:
    """Mark a new lane at ``x`` in layer ``lyr`` (the row is copied: earlier layouts share it)."""
    lefts, rights = place.row(lyr)
    lefts, rights = list(lefts), list(rights)
    a, b = x - LANE_MARGIN, x + LANE_MARGIN
    k = bisect.bisect_left(lefts, a)
    lefts.insert(k, a)
    rights.insert(k, b)
    place.rows[lyr] = _merged(lefts, rights)


def _merged(lefts: list[float], rights: list[float]) -> tuple[list[float], list[float]]:
    """Intervals sorted by left end, merged where they overlap or leave less than ``MIN_GAP``."""
    out_l: list[float] = []
    out_r: list[float] = []
    for lo, hi in zip(lefts, rights):
        if out_r and lo - out_r[-1] < MIN_GAP:
            out_r[-1] = max(out_r[-1], hi)
        else:
            out_l.append(lo)
            out_r.append(hi)
    return out_l, out_r


def _route(layout: Layout, place: Placement, src: str, dst: str, j: int) -> list[tuple[float, float]]:
    """A polyline from the bottom of ``src`` to the top of ``dst`` in the style of ``route_edges``:
    down the source's band, through one free lane per layer crossed, onto the destination's top."""
    sb, db = layout.nodes[src], layout.nodes[dst]
    lj, li = sb.layer, db.layer
    xs, xd = sb.x + sb.w / 2, db.x + db.w / 2
    bottom = float(place.bottoms[lj])
    pts = [(xs, sb.y + sb.h)]
    if sb.y + sb.h < bottom:
        pts.append((xs, bottom))
    own = place.lanes_of(j) if li - lj > 1 else {}
    cur = xs
    for lyr in range(lj + 1, li):
        lane = own.get(lyr)
        if lane is None:
            lane = _free_x(place, lyr, cur, xd)
            _take(place, lyr, lane)
        pts.append((lane, float(place.tops[lyr])))
        pts.append((lane, float(place.bottoms[lyr])))
        cur = lane
    pts.append((xd, db.y))
    # Interior points of a straight vertical run draw nothing (as in ``route_edges``).
    keep = [pts[0]]
    for a, b, c in zip(pts, pts[1:], pts[2:]):
        if not (a[0] == b[0] == c[0]):
            keep.append(b)
    keep.append(pts[-1])
    return keep


def reroute(graph: torch.fx.Graph, previous: Layout, changed, collapsed: frozenset, t0: float,
            width_of: Callable[[int], float], fold: bool = False) -> Layout | None:
    """``previous`` with the input edges of ``changed`` nodes routed anew, or None (see the module doc).

    ``changed``: every node whose arguments, target, name, position, users or metadata may differ
    from what ``previous`` laid out (a ``DocumentEvent``'s ``changed``); everything else must be as
    it was. ``width_of(label_length)``: a card's width (a label may change as long as that does not).
    ``fold``: weights are folded into cards (``folding.py``); a changed node that is or was folded
    (its host's rows change) needs the relayout.
    """
    place = previous.placement
    if (collapsed or previous.inputs is None or previous.lanes is None or not isinstance(place, Placement)):
        return None
    prev_collapsed, ga = previous.inputs
    if prev_collapsed or len(graph.nodes) != ga.n + ga.skipped or ga.fold != fold:
        return None
    index = previous.lanes[0]
    names = ga.names
    nodes = []
    exported = ga.exported
    for node in changed:
        i = index.get(node.name)
        if i is None or i >= ga.n or names[i] != node.name:
            return None
        if fold and fold_host(node, exported) is not False:
            return None
        before = _drawn(node, "prev", index, fold, exported)
        after = _drawn(node, "next", index, fold, exported)
        if before is None or after is None:
            return None
        if (before.op == "root") != (i == 0) or (i > 0 and before.name != names[i - 1]):
            return None
        if (after.op == "root") != (i == ga.n - 1) or (i < ga.n - 1 and after.name != names[i + 1]):
            return None
        nodes.append((i, node))
    nodes.sort(key=lambda p: p[0])
    wl = ga.weight_like
    new_wl: dict[int, bool] = {}
    new_edges: dict[int, list[tuple[int, object]]] = {}
    boxes = previous.nodes
    labels: dict[int, int] = {}
    for i, node in nodes:
        label = card_label(node, i, ga, width_of)
        if label is None:
            return None
        if label != ga.label_len[i]:
            labels[i] = label
        edges = node_edges(node, index, (lambda n: fold_host(n, exported) is not False) if fold else None)
        if edges is None:
            return None
        weights = all(new_wl.get(j, bool(wl[j])) for j, _ in edges)
        is_wl = node_weight_like(node, weights)
        if is_wl != bool(wl[i]):
            return None
        new_wl[i] = is_wl
        layer_i = boxes[node.name].layer
        if any(boxes[names[j]].layer >= layer_i for j, _ in edges):
            return None
        new_edges[i] = edges
    # Splice each changed node's edges into the flattened graph (edges are grouped by destination).
    src, dst, keys = ga.src, ga.dst, ga.keys
    starts = np.searchsorted(dst, [i for i, _ in nodes], side="left").tolist()
    ends = np.searchsorted(dst, [i for i, _ in nodes], side="right").tolist()
    old_by_dst = {i: list(zip(src[a:b].tolist(), keys[a:b])) for (i, _), a, b in zip(nodes, starts, ends)}
    redraw = {i for i, _ in nodes if old_by_dst[i] != new_edges[i]}
    label_len = ga.label_len
    if labels:
        label_len = label_len.copy()
        label_len[list(labels)] = list(labels.values())
    if not redraw:
        result = _copy_of(previous)
        result.inputs = (collapsed, ga if not labels else replace(ga, label_len=label_len))
        result.delta = (previous.serial, frozenset())
        return _stamp(result, previous, t0, 0)
    parts_s, parts_d, new_keys, at = [], [], [], 0
    for (i, _), a, b in zip(nodes, starts, ends):
        parts_s.append(src[at:a])
        parts_d.append(dst[at:a])
        new_keys.extend(keys[at:a])
        e = new_edges[i]
        parts_s.append(np.asarray([j for j, _ in e], dtype=np.int64))
        parts_d.append(np.full(len(e), i, dtype=np.int64))
        new_keys.extend(k for _, k in e)
        at = b
    parts_s.append(src[at:])
    parts_d.append(dst[at:])
    new_keys.extend(keys[at:])
    new_ga = replace(ga, label_len=label_len, src=np.concatenate(parts_s), dst=np.concatenate(parts_d),
                     keys=new_keys)
    # Routes: the redrawn nodes' old input routes go to memory (an undo brings them back as they were).
    dst_names = {names[i] for i in redraw}
    memory = dict(previous.route_memory or {})
    blocks = {i: routes_into(previous, i) for i in redraw}
    place = Placement(place.n, place.layer, place.x, place.w, place.dummy_base, place.dummy_owner,
                      place.tops, place.bottoms, dict(place.rows), place._sorted, place.groups, place._frames)
    fresh: dict[int, list[EdgeRoute]] = {}
    for i in sorted(redraw):
        name = names[i]
        lo, hi = blocks[i]
        keep = {}
        for r in previous.edges[lo:hi]:
            keep[(r.src, r.key)] = r
            memory[(r.src, r.dst, r.key)] = r.points
        routes = []
        for j, key in new_edges[i]:
            s = names[j]
            old = keep.get((s, key))
            if old is None:
                pts = _remembered(memory.get((s, name, key)), boxes[s], boxes[name])
                old = EdgeRoute(src=s, dst=name, key=key,
                                points=pts if pts is not None else _route(previous, place, s, name, j))
            routes.append(old)
        fresh[i] = routes
    # Splice, from the last block up so that earlier positions stay valid.
    edges = list(previous.edges)
    for i in sorted(redraw, reverse=True):
        lo, hi = blocks[i]
        edges[lo:hi] = fresh[i]
    while len(memory) > MEMORY:
        memory.pop(next(iter(memory)))
    result = _copy_of(previous)
    result.edges = edges
    result.inputs = (collapsed, new_ga)
    result.route_memory = memory
    result.placement = place
    result.delta = (previous.serial, frozenset(dst_names))
    return _stamp(result, previous, t0, len(redraw))


def card_label(node: torch.fx.Node, i: int, ga, width_of: Callable[[int], float]) -> int | None:
    """The label length of unit ``i`` (``node``) when its card is drawn as ``ga`` recorded it (same
    op, target, module, lines, folded rows and width), else None: the card changed shape."""
    op, target, path, stack, label = node_facts(node)
    if (op, target, path, stack) != (ga.ops[i], ga.targets[i], ga.module_paths[i], ga.module_stacks[i]):
        return None
    if ga.lines is not None and card_lines(node) != ga.lines[i]:   # a line more or less: a taller card
        return None
    if ga.fold:
        rows = rows_of(node, ga.exported)
        if len(rows) != (ga.rows[i] if ga.rows is not None else 0):
            return None
        label = max([label] + [row_text_len(r) for r in rows])
    if label != ga.label_len[i] and width_of(label) != width_of(int(ga.label_len[i])):
        return None
    return label


def node_facts(node: torch.fx.Node) -> tuple:
    """(op, target text, module path, module stack, label length) of one node, as ``extract_graph``
    records them."""
    name, target, meta = node.name, target_label(node), node.meta
    shape = meta.get(META_SHAPE)
    shape_len = len("×".join(str(d) for d in shape)) if type(shape) is tuple else 0
    dtype = meta.get(META_DTYPE)
    if type(shape) is tuple and type(dtype) is str:   # as ``extract_graph`` counts "1×64×56×56 float32"
        shape_len += 1 + len(dtype)
    return (node.op, target, meta.get(META_MODULE_PATH) or "", meta.get(META_MODULE_STACK) or [],
            max(len(name), len(target), shape_len))


def node_edges(node: torch.fx.Node, index: dict[str, int],
               off_canvas: Callable[[torch.fx.Node], bool] | None = None) -> list[tuple[int, int | str]] | None:
    """The (source index, key) input edges of one node in ``extract_graph``'s order; ``index`` maps
    node names to their index. None when an input is not in ``index`` (unless ``off_canvas`` says
    it is drawn nowhere or folded into a card: it has no edge then)."""
    out = []
    for inp, key in node_inputs(node):
        j = index.get(inp.name)
        if j is None:
            if off_canvas is not None and off_canvas(inp):
                continue
            return None
        out.append((j, key))
    return out


def _drawn(node: torch.fx.Node, direction: str, index: dict[str, int], fold: bool, exported: bool):
    """The nearest node before (``"prev"``) or after ``node`` that the layout holds (the root when
    none), skipping folded ones; None when a node in between is neither held nor folded."""
    other = getattr(node, direction)
    while other.op != "root" and other.name not in index:
        if not fold or fold_host(other, exported) is False:
            return None
        other = getattr(other, direction)
    return other


def node_weight_like(node: torch.fx.Node, all_inputs_weight_like: bool) -> bool:
    """The layout's "weight-like" rule for one node (as ``extract_graph`` applies it)."""
    op, meta = node.op, node.meta
    if op == "get_attr" or (op == "placeholder" and (meta.get(META_HIDDEN) or meta.get(META_PARAM))):
        return True
    return op in ("call_function", "call_method") and (
        all_inputs_weight_like or (META_SHAPE in meta and meta.get(META_SHAPE) is None and bool(node.users)))


def _remembered(points, sb, db) -> list[tuple[float, float]] | None:
    """A remembered route, if it still starts under its source and ends on its destination."""
    if not points:
        return None
    (x0, y0), (x1, y1) = points[0], points[-1]
    if (x0, y0) == (sb.x + sb.w / 2, sb.y + sb.h) and (x1, y1) == (db.x + db.w / 2, db.y):
        return points
    return None


def routes_into(layout: Layout, i: int) -> tuple[int, int]:
    """The slice ``[lo, hi)`` of ``layout.edges`` holding the routes into unit ``i`` (the routes of
    a layout without collapsed groups are grouped by destination, in graph order)."""
    index = layout.lanes[0]
    edges = layout.edges

    def first_at_least(k: int) -> int:
        lo, hi = 0, len(edges)
        while lo < hi:
            mid = (lo + hi) // 2
            if index[edges[mid].dst] < k:
                lo = mid + 1
            else:
                hi = mid
        return lo

    return first_at_least(i), first_at_least(i + 1)


def _copy_of(previous: Layout) -> Layout:
    result = Layout(nodes=dict(previous.nodes), edges=list(previous.edges), groups=dict(previous.groups))
    result.lanes, result.layer_tops, result.group_cache = previous.lanes, previous.layer_tops, previous.group_cache
    result.placement, result.route_memory = previous.placement, previous.route_memory
    return result


def _stamp(result: Layout, previous: Layout, t0: float, count: int) -> Layout:
    result.seconds = time.perf_counter() - t0
    result.stats = {**{k: v for k, v in previous.stats.items() if k in ("n_dummies", "n_layers")},
                    "rerouted": count, "reroute": result.seconds}
    return result
