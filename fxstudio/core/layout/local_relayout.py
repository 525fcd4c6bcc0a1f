"""Insert or erase one node without laying the graph out again: ``local_relayout``.

An insert (after X, its undo, the redo of an erase) and an erase (uses replaced, its undo) change
one card and the input edges of a few others. Instead of a whole incremental layout (0.3 s at 10k
nodes), the previous layout is kept and only that changes:

* an added node goes where it stood before (the undo of its erase, the redo of its insert) if that
  place is free, else into a free place of a layer under its inputs (above its users) near its
  first input, inside its module's frame and in no other; else a new layer is opened under its
  inputs for it (``row_insert.Stretch``: what lies below moves down one band, the frames across
  grow, the edges across run straight through the new layer and round the card);
* an erased node's card goes. If it was alone in its layer (an insert's own layer: its undo) the
  layer closes again, giving back the layout before the insert; else its place stays empty, so no
  other card moves (the user keeps their place, the cost is the node's edges) and the undo puts the
  card back in the same spot, its routes remembered. Its users' new input edges run through it;
* the input edges of the added node and of the nodes whose inputs changed are routed anew
  (remembered routes first, else down free lanes: ``reroute._route``); every other route, card and
  frame is the previous layout's, moved with its band.

``local_relayout`` returns None when the edit is not that (more nodes added or removed, a card that
changes shape, a collapsed or merged group, a module frame that would come or go, no place): then
``compute_layout`` runs its incremental relayout. The result keeps what an incremental layout and a
reroute read (``inputs``, ``lanes``, ``placement``, ``layer_tops``), so the next edit is local or
rerouted too, and says what changed in ``Layout.local`` for the canvas.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

import numpy as np
import torch.fx

from fxstudio.core.card_text import card_lines, frame_relative
from fxstudio.core.layout.folding import fold_host, rows_of
from fxstudio.core.layout.groups import ancestors
from fxstudio.core.layout.reroute import (CARD_MARGIN, MEMORY, Placement, _remembered, _route, card_label,
                                          frame_edges, node_edges, node_facts, node_weight_like)
from fxstudio.core.layout.free_places import (cards_row, fits, framed_right, free_centres, with_interval,
                                              without_interval)
from fxstudio.core.layout.row_insert import Stretch
from fxstudio.core.layout.types import EdgeRoute, Layout, NodeBox

SLOT_REACH = 1500.0  # a free place farther than this from the first input is no local place
LAYERS_TRIED = 3     # layers under the inputs searched for a free place
NEW_LAYER_GAP = 40.0  # above a new last layer (``engine.LAYER_GAP``)


def local_relayout(graph: torch.fx.Graph, previous: Layout, changed, t0: float,
                   width_of: Callable[[int], float], heights: Callable[[np.ndarray], np.ndarray],
                   fold: bool) -> Layout | None:
    """``previous`` with one node added or removed (see the module doc), or None.

    ``changed``: the nodes the edit touched that are still in the graph (a ``DocumentEvent``'s
    added and changed ids); everything else must be as ``previous`` laid it out.
    ``width_of(label_length)`` / ``heights(lines)``: card sizes as ``compute_layout`` makes them."""
    place = previous.placement
    if previous.inputs is None or previous.lanes is None or not isinstance(place, Placement):
        return None
    key, ga = previous.inputs
    if key or ga.fold != fold or previous.stats.get("n_lanes") or len(previous.edges) != len(ga.src):
        return None
    index = previous.lanes[0]
    count = len(graph.nodes)
    exported = ga.exported
    off_canvas = (lambda n: fold_host(n, exported) is not False) if fold else None
    changed = [n for n in changed if n.name in index or off_canvas is None or not off_canvas(n)]
    if count == ga.n + ga.skipped + 1:
        new = [n for n in changed if n.name not in index]
        if len(new) != 1 or (fold and fold_host(new[0], exported) is not False):
            return None
        edit = _Edit(previous, index, added=new[0])
    elif count == ga.n + ga.skipped - 1:
        present = {n.name for n in graph.nodes}
        gone = [nm for nm in ga.names if nm not in present]
        if len(gone) != 1 or any(n.name not in index for n in changed):
            return None
        edit = _Edit(previous, index, removed=gone[0])
    else:
        return None
    return edit.run(changed, off_canvas, width_of, heights, t0)


class _Edit:
    """One local insert or erase against ``previous`` (its flattened graph ``ga``, unit ``index``)."""

    def __init__(self, previous: Layout, index: dict, added: torch.fx.Node | None = None,
                 removed: str | None = None):
        self.prev, self.index = previous, index
        self.key, self.ga = previous.inputs
        self.added, self.removed = added, removed
        self.place: Placement = previous.placement
        self.memory = dict(previous.route_memory or {})
        self.stretch: Stretch | None = None   # a layer opened for the added card, or the erased one's closed
        self._routing_place: Placement | None = None   # the new placement, made for routing (``_routes``)
        self.dropped: str | None = None   # the frame an erase left with one card: it goes
        self.restored = None   # that frame, back with the card (the erase's undo)
        self.captioned: list[str] = []   # the card of such a frame: its module caption changes

    # -- the new unit numbering ----------------------------------------------------------------
    def _renumber(self) -> None:
        ga = self.ga
        if self.added is not None:
            node = self.added
            before = node.prev
            while before.op != "root" and before.name not in self.index:
                before = before.prev
            self.at = 0 if before.op == "root" else self.index[before.name] + 1
            names = ga.names[:self.at] + [node.name] + ga.names[self.at:]
            self.old_to_new = np.arange(ga.n, dtype=np.int64) + (np.arange(ga.n) >= self.at)
        else:
            self.at = self.index[self.removed]
            names = ga.names[:self.at] + ga.names[self.at + 1:]
            self.old_to_new = np.arange(ga.n, dtype=np.int64) - (np.arange(ga.n) > self.at)
            self.old_to_new[self.at] = -1
        self.names = names
        self.new_index = dict(zip(names, range(len(names))))

    def run(self, changed, off_canvas, width_of, heights, t0: float) -> Layout | None:
        """The local layout, or None when this edit needs the relayout."""
        ga, prev = self.ga, self.prev
        self._renumber()
        redo = [n for n in changed if n is not self.added]
        old_layer = self.place.layer
        # The cards that stay must be drawn as before (nodes whose users changed included).
        for node in redo:
            i = self.index[node.name]
            if card_label(node, i, ga, width_of) != ga.label_len[i] or ga.weight_like[i]:
                return None
        if self.added is not None:
            got = self._add(off_canvas, width_of, heights, redo)
            if got is None:
                return None
            nodes, box, facts = got
        else:
            e = self.at
            if ga.weight_like[e] or (ga.rows is not None and ga.rows[e]) or not self._frames_keep(width_of):
                return None
            if ga.weight_like[ga.src[ga.dst == e]].any():
                return None   # a weight losing a user may fold into another card
            box = prev.nodes.get(self.removed)
            if box is None:
                return None
            if not (ga.src == e).any():   # no users: its layer closes if it holds nothing else
                self.stretch = self._closing(box)
            if self.stretch is not None:
                nodes = self.stretch.nodes(prev.nodes, gone=self.removed)
            else:
                nodes = {n: b for n, b in prev.nodes.items() if n != self.removed}
            self.memory[("box", self.removed)] = box
        # Edges: those into redone units (and the added one) are made anew, the rest kept in order.
        src, dst = self.old_to_new[ga.src], self.old_to_new[ga.dst]
        redo_old = np.asarray([self.index[n.name] for n in redo], dtype=np.int64)
        out_of_removed = ga.src == self.at if self.removed is not None else np.zeros(len(ga.src), bool)
        keep = ~np.isin(ga.dst, redo_old)
        if self.removed is not None:
            if (out_of_removed & keep & (ga.dst != self.at)).any():
                return None   # a user of the erased node that the edit did not list
            keep &= ga.dst != self.at
        layer = self._new_layers(old_layer, box)
        targets = list(redo) + ([self.added] if self.added is not None else [])
        fresh: list[tuple[int, int, object]] = []
        for node in targets:
            edges = node_edges(node, self.new_index, off_canvas)
            if edges is None:
                return None
            d = self.new_index[node.name]
            for j, k in edges:
                if layer[j] >= layer[d]:
                    return None
                fresh.append((j, d, k))
        self.nodes = nodes
        routes = self._routes(fresh, keep, layer)
        if routes is None:
            return None
        # Kept edges stay in order; each new one goes after the kept edges into lower-numbered
        # units (edges are grouped by destination, in graph order: ``reroute.routes_into``).
        kept_pos = np.flatnonzero(keep)
        drop = np.flatnonzero(~keep).tolist()
        by_dst = sorted(range(len(fresh)), key=lambda i: fresh[i][1])
        at = np.searchsorted(dst[keep], [fresh[i][1] for i in by_dst], side="right").tolist()
        edges = _without(prev.edges, drop)
        if self.stretch is not None:   # the routes that reach below the new layer
            self.stretch.routes(edges, np.flatnonzero(self.place.layer[ga.dst[kept_pos]] > self.stretch.after).tolist())
        edges = _inserted(edges, at, [routes[i] for i in by_dst])
        keys = _inserted(_without(ga.keys, drop), at, [fresh[i][2] for i in by_dst])
        old_pos = np.insert(kept_pos, at, -1) if at else kept_pos
        new_src = np.insert(src[keep], at, [fresh[i][0] for i in by_dst]) if at else src[keep]
        new_dst = np.insert(dst[keep], at, [fresh[i][1] for i in by_dst]) if at else dst[keep]
        result = Layout(nodes=nodes, edges=edges, groups=self._groups())
        result.inputs = (self.key, self._arrays(new_src, new_dst, keys, facts if self.added is not None else None))
        result.lanes = self._lanes()
        result.layer_tops, result.group_cache = prev.layer_tops, prev.group_cache
        shift = None
        if self.stretch is not None:
            result.layer_tops = self.stretch.layer_tops(prev.layer_tops, box.y)
            shift = (self.stretch.yb, self.stretch.dh)
        result.placement = self._placement(result.groups)
        while len(self.memory) > MEMORY:
            self.memory.pop(next(iter(self.memory)))
        result.route_memory = self.memory
        dsts = frozenset(self.names[d] for _, d, _ in fresh) | frozenset(n.name for n in redo)
        result.local = (prev.serial, self.added.name if self.added is not None else None, self.removed, dsts,
                        old_pos, shift, self.dropped, self.restored.path if self.restored is not None else None,
                        frozenset(self.captioned))
        result.seconds = time.perf_counter() - t0
        result.stats = {**{k: v for k, v in prev.stats.items() if k in ("n_dummies", "n_layers", "n_lanes")},
                        "local": 1, "local relayout": result.seconds}
        if shift is not None and "n_layers" in result.stats:
            result.stats["n_layers"] += self.stretch.step
        return result

    # -- the added card ------------------------------------------------------------------------
    def _add(self, off_canvas, width_of, heights, redo):
        """(new boxes, the added card's box, its flattened facts), or None: no local place."""
        node, ga, prev = self.added, self.ga, self.prev
        if node.op == "placeholder" or (self.ga.fold and rows_of(node, ga.exported)):
            return None
        inputs = node_edges(node, self.index, off_canvas)
        if not inputs:
            return None
        op, target, path, stack, label = node_facts(node)
        if path and path not in prev.groups and not self._frame_back(path):
            return None   # a module that had no frame may get one, or its card a caption
        if any(ga.weight_like[j] for j, _ in inputs) or node_weight_like(node, False):
            return None
        users = [u for u in node.users]
        if any(u.name not in self.index for u in users) or {u.name for u in users} - {n.name for n in redo}:
            return None
        layer = self.place.layer
        lo = max(int(layer[j]) for j, _ in inputs) + 1
        hi = min((int(layer[self.index[u.name]]) for u in users), default=lo + LAYERS_TRIED) - 1
        lines = card_lines(node)
        w, h = width_of(label), float(heights(np.asarray([lines]))[0])
        first = prev.nodes[ga.names[inputs[0][0]]]
        want = first.x + first.w / 2
        box = self._slot(node.name, path, lo, min(hi, lo + LAYERS_TRIED - 1), w, h, want)
        if box is None:
            box = self._row_slot(node.name, path, lo - 1, w, h, want)
        if box is None or (self.restored is not None and box is not self.memory.get(("box", node.name))):
            return None
        if self.stretch is not None:
            nodes = self.stretch.nodes(prev.nodes, box, self.at)
        else:
            nodes = {}
            for name, b in prev.nodes.items():   # in graph order: the added card after its predecessor
                if len(nodes) == self.at:
                    nodes[node.name] = box
                nodes[name] = b
            if node.name not in nodes:
                nodes[node.name] = box
        return nodes, box, (op, target, path, stack, label, lines)

    def _slot(self, name: str, path: str, lo: int, hi: int, w: float, h: float, want: float) -> NodeBox | None:
        """A free place for a ``w`` × ``h`` card in layers ``lo``..``hi``, nearest ``want``."""
        place = self.place
        chain, frames, paths = self._frame_chain(path)
        old = self.memory.get(("box", name))
        if (isinstance(old, NodeBox) and lo <= old.layer <= min(hi, len(place.tops) - 1) and (old.w, old.h) == (w, h)
                and abs(float(place.tops[old.layer]) - old.y) < 1e-6):
            lefts, rights = cards_row(place, old.layer)
            if fits(lefts, rights, old.x, old.x + w) and \
                    framed_right(chain, frames, paths, old.x, old.y, w, h):
                return old
        for lyr in range(lo, min(hi, len(place.tops) - 1) + 1):
            top = float(place.tops[lyr])
            if h > float(place.bottoms[lyr]) - top:
                continue
            lefts, rights = place.row(lyr)
            for centre in free_centres(lefts, rights, w / 2 + CARD_MARGIN, want):
                if abs(centre - want) > SLOT_REACH:
                    break
                if framed_right(chain, frames, paths, centre - w / 2, top, w, h):
                    return NodeBox(name=name, x=centre - w / 2, y=top, w=w, h=h, layer=lyr)
        return None

    def _row_slot(self, name: str, path: str, after: int, w: float, h: float, want: float) -> NodeBox | None:
        """A place in a new layer opened under layer ``after`` (``row_insert.Stretch``), nearest ``want``."""
        place = self.place
        yb = float(place.bottoms[after])
        if after + 1 < len(place.tops):
            top = float(place.tops[after + 1])
            lefts, rights = place.row(after + 1)   # the cards and lanes there: edges will cross the new layer there
        else:
            top, lefts, rights = yb + NEW_LAYER_GAP, [], []
        chain, frames, paths = self._frame_chain(path)
        if chain is None:
            return None
        frames = Stretch(after, yb, top - yb + h).frame_boxes(frames)
        # Under the first input first (edges across the new layer go round the card), else where
        # no edge crosses it.
        for centre in [want] + free_centres(lefts, rights, w / 2 + CARD_MARGIN, want):
            if abs(centre - want) > SLOT_REACH:
                break
            if framed_right(chain, frames, paths, centre - w / 2, top, w, h):
                x = centre - w / 2
                self.stretch = Stretch(after, yb, top - yb + h, top, h, (x - CARD_MARGIN, x + w + CARD_MARGIN))
                return NodeBox(name=name, x=x, y=top, w=w, h=h, layer=after + 1)
        return None

    def _frame_chain(self, path: str):
        """The expanded frames a card of module ``path`` belongs in, and every frame's box and path."""
        groups = self.prev.groups
        if any(g.collapsed for g in groups.values()):
            return None, None, None
        chain = [a for a in ancestors(path) if a in groups]
        frames = self.place._frames
        if frames is None:
            frames = self.place._frames = frame_edges(groups)
        return chain, frames, list(groups)

    def _closing(self, box: NodeBox) -> Stretch | None:
        """The closing of the erased card's layer when it holds nothing else (no card, no lane, no
        frame's edge inside its band): an insert's undo gives back the layout before it."""
        place, k = self.place, box.layer
        if k <= 0 or k >= len(place.tops) or int((place.layer == k).sum()) != 1:
            return None
        yb = float(place.bottoms[k - 1])
        dh = float(place.tops[k + 1] - place.tops[k]) if k + 1 < len(place.tops) else float(place.bottoms[k]) - yb
        _, frames, _ = self._frame_chain("")
        if frames is None:
            return None
        ends = np.concatenate([frames[:, 1], frames[:, 3]])
        if ((ends > yb) & (ends < yb + dh)).any():
            return None
        return Stretch(k, yb, -dh, step=-1)

    def _frames_keep(self, width_of) -> bool:
        """Whether the frames the erased card was in stay right: each keeps two cards or more, or the
        innermost one, left with one card and no frame inside, goes (``dropped``) as a fresh layout
        drops it (``groups.frame_members``) when that card does not change size (it names its
        module then, ``card_text.module_caption``: the caption it had, now relative to the frame
        around)."""
        groups, ga = self.prev.groups, self.ga
        path = ga.module_paths[self.at]
        if not path:
            return True
        if path not in groups:
            return False
        low = [a for a in ancestors(path) if a in groups and groups[a].members <= 2]
        if not low:
            return True
        if low != [path] or groups[path].members != 2 or any(p.startswith(path + ".") for p in groups):
            return False
        inside = path + "."
        others = [i for i, p in enumerate(ga.module_paths)
                  if i != self.at and (p == path or p.startswith(inside))]
        if len(others) != 1:
            return False
        c = others[0]
        cpath, op = ga.module_paths[c], ga.ops[c]
        if op in ("call_function", "call_method"):
            if cpath == path:
                return False   # it would get a caption: a line more
            parent = next((a for a in reversed(ancestors(cpath)[:-1]) if a in groups and a != path), "")
            cls = next((str(e[1]).rsplit(".", 1)[-1] for e in reversed(ga.module_stacks[c])
                        if isinstance(e, (list, tuple)) and len(e) > 1 and str(e[0]) == cpath), "")
            caption = len(frame_relative(cpath, parent)) + (3 + len(cls) if cls and cls != "Module" else 0)
            if width_of(max(int(ga.label_len[c]), caption)) != self.prev.nodes[ga.names[c]].w:
                return False
        self.dropped = path
        self.captioned.append(ga.names[c])
        self.memory[("frame", path)] = (groups[path], ga.names[c], self.prev.nodes[ga.names[c]])
        return True

    def _frame_back(self, path: str) -> bool:
        """Whether the frame of ``path`` an erase dropped comes back with its card (the erase's
        undo): its other card is where it was and nothing else came inside it (``restored``)."""
        got = self.memory.get(("frame", path))
        if got is None:
            return False
        frame, other, box = got
        if self.prev.nodes.get(other) != box or self.memory.get(("box", self.added.name)) is None:
            return False
        place = self.place
        n = place.n
        lyr, x, w = place.layer[:n], place.x[:n], place.w[:n]
        top, bottom = place.tops[lyr], place.tops[lyr] + 1.0
        meets = ((x + w / 2 > frame.x) & (x - w / 2 < frame.x + frame.w) & (top < frame.y + frame.h)
                 & (bottom > frame.y))
        if int(meets.sum()) != 1:   # its other card only
            return False
        self.restored = frame
        self.captioned.append(other)
        return True

    def _new_layers(self, old_layer: np.ndarray, box: NodeBox) -> np.ndarray:
        units = old_layer[:self.ga.n]
        if self.stretch is not None:
            units = self.stretch.layers(units)
        if self.added is not None:
            return np.insert(units, self.at, box.layer)
        return np.delete(units, self.at)

    # -- routes --------------------------------------------------------------------------------
    def _routes(self, fresh, keep, layer) -> list[EdgeRoute] | None:
        """A route for each new edge: one it had before, a remembered one, the way through an
        erased card's place, or a new one down free lanes (``reroute._route``)."""
        prev, ga, names = self.prev, self.ga, self.names
        old: dict[tuple, EdgeRoute] = {}
        for k in np.flatnonzero(~keep).tolist():
            r = prev.edges[k]
            old.setdefault((r.src, r.dst, r.key), r)
            self.memory[(r.src, r.dst, r.key)] = r.points
        place = self._placement(prev.groups, routing=True)
        shell = Layout(nodes=self.nodes)
        out = []
        for j, d, k in fresh:
            s, t = names[j], names[d]
            r = old.get((s, t, k))
            if r is not None and self.stretch is not None:
                r = self.stretch.route(r)
            if r is None:
                pts = _remembered(self.memory.get((s, t, k)), self.nodes[s], self.nodes[t])
                if pts is None and self.removed is not None:
                    pts = self._through_gap(old, s, t, k)
                if pts is None:
                    pts = _route(shell, place, s, t, j)
                r = EdgeRoute(src=s, dst=t, key=k, points=pts)
            out.append(r)
        self._routing_place = place
        return out

    def _through_gap(self, old: dict, s: str, t: str, k) -> list | None:
        """The route of ``s`` → erased → ``t`` run straight through the erased card's empty place."""
        e = self.removed
        into = next((r for (a, b, _), r in old.items() if a == s and b == e), None)
        out = old.get((e, t, k))
        if into is None or out is None:
            return None
        return list(into.points) + list(out.points)

    # -- what the next edit reads --------------------------------------------------------------
    def _placement(self, groups: dict, routing: bool = False) -> Placement:
        """The ``Placement`` of the new layout (made once, for routing, then given its frames)."""
        if not routing and self._routing_place is not None:
            p = self._routing_place
            p.groups = groups
            return p
        place, i = self.place, self.at
        sorted_rows, layer, tops, bottoms, frames = place._sorted, place.layer, place.tops, place.bottoms, place._frames
        if self.stretch is not None:
            b = self.nodes[self.added.name] if self.added is not None else None
            sorted_rows, layer = self.stretch.sorted_rows(sorted_rows), self.stretch.layers(layer)
            tops, bottoms = self.stretch.bands(tops, bottoms, b.y if b else 0.0, b.h if b else 0.0)
            frames = self.stretch.frame_boxes(frames) if frames is not None else None
        if self.added is not None:
            b = self.nodes[self.added.name]
            centre = b.x + b.w / 2
            layer = np.insert(layer, i, b.layer)
            x, w = np.insert(place.x, i, centre), np.insert(place.w, i, b.w)
            base = np.insert(np.where(place.dummy_base >= 0, place.dummy_base + 1, -1), i, -1)
            owner = np.where(place.dummy_owner >= i, place.dummy_owner + 1, place.dummy_owner)
            if sorted_rows is not None:
                sorted_rows = with_interval(sorted_rows, b.layer, centre - b.w / 2 - CARD_MARGIN,
                                             centre + b.w / 2 + CARD_MARGIN)
            lyr = b.layer
        else:
            lyr = int(place.layer[i])
            layer, x, w = np.delete(layer, i), np.delete(place.x, i), np.delete(place.w, i)
            base = np.delete(np.where(place.dummy_base >= 0, place.dummy_base - 1, -1), i)
            owner = np.where(place.dummy_owner > i, place.dummy_owner - 1,
                             np.where(place.dummy_owner == i, -1, place.dummy_owner))
            if sorted_rows is not None:
                half = float(place.w[i]) / 2 + CARD_MARGIN
                sorted_rows = without_interval(sorted_rows, lyr, float(place.x[i]) - half)
        n = place.n + (1 if self.added is not None else -1)
        rows = {k: v for k, v in place.rows.items() if k != lyr} if self.stretch is None else {}
        if self.dropped is not None or self.restored is not None:
            frames = None   # (``frame_edges`` anew, on first use)
        return Placement(n, layer, x, w, base, owner, tops, bottoms, rows, sorted_rows, groups, frames)

    def _groups(self) -> dict:
        """The previous frames, each frame around the added or erased card counting it."""
        groups = dict(self.prev.groups) if self.stretch is None else self.stretch.groups(self.prev.groups)
        if self.added is not None:
            path, step = self.added.meta.get("fxs_module_path") or "", 1
        else:
            path, step = self.ga.module_paths[self.at], -1
        for a in ancestors(path):
            g = groups.get(a)
            if g is not None:
                groups[a] = replace(g, members=g.members + step)
        groups.pop(self.dropped, None)
        if self.restored is not None:
            groups[self.restored.path] = self.restored
        return groups

    def _arrays(self, src: np.ndarray, dst: np.ndarray, keys: list, facts):
        """The flattened graph of the edited graph (``GraphArrays``), spliced from the previous one."""
        ga, i = self.ga, self.at
        if facts is None:
            cut = lambda a: np.delete(a, i) if a is not None else None  # noqa: E731
            return replace(ga, names=self.names, ops=ga.ops[:i] + ga.ops[i + 1:],
                           targets=ga.targets[:i] + ga.targets[i + 1:],
                           module_paths=ga.module_paths[:i] + ga.module_paths[i + 1:],
                           module_stacks=ga.module_stacks[:i] + ga.module_stacks[i + 1:],
                           label_len=cut(ga.label_len), weight_like=cut(ga.weight_like), rows=cut(ga.rows),
                           lines=cut(ga.lines), src=src, dst=dst, keys=keys)
        op, target, path, stack, label, lines = facts
        put = lambda a, v: np.insert(a, i, v) if a is not None else None  # noqa: E731
        return replace(ga, names=self.names, ops=ga.ops[:i] + [op] + ga.ops[i:],
                       targets=ga.targets[:i] + [target] + ga.targets[i:],
                       module_paths=ga.module_paths[:i] + [path] + ga.module_paths[i:],
                       module_stacks=ga.module_stacks[:i] + [stack] + ga.module_stacks[i:],
                       label_len=put(ga.label_len, label), weight_like=put(ga.weight_like, False),
                       rows=put(ga.rows, 0), lines=put(ga.lines, lines), src=src, dst=dst, keys=keys)

    def _lanes(self) -> tuple:
        """``Layout.lanes`` renumbered: the lanes' owners follow the units' new numbers."""
        _, keys, xs, span = self.prev.lanes
        wide = span + (self.stretch.step if self.stretch is not None else 0)
        if len(keys):
            owner = self.old_to_new[keys // span]
            ok = owner >= 0
            lyr = keys[ok] % span
            if self.stretch is not None:
                lyr = self.stretch.layers(lyr)
            keys, xs = owner[ok] * wide + lyr, xs[ok]
        return self.new_index, keys, xs, wide


def _without(items: list, drop: list[int]) -> list:
    """``items`` without the positions ``drop`` (sorted)."""
    out: list = []
    start = 0
    for p in drop:
        out += items[start:p]
        start = p + 1
    out += items[start:]
    return out


def _inserted(items: list, at: list[int], new: list) -> list:
    """``items`` with ``new[k]`` put before position ``at[k]`` (``at`` ascending; ties keep ``new``'s order)."""
    for k in range(len(new) - 1, -1, -1):
        items.insert(at[k], new[k])
    return items
