"""Where the shown layout puts each card and edge, so the scene makes only the items in view.

``SceneIndex`` holds, for one layout, the cards' boxes and the edges' route bounds as numpy arrays
(a rectangle query is a few vectorised comparisons, ~1 ms at 200k nodes) and the scene's edge keys
``(src, dst, key, occurrence)`` in layout order. ``LazyItems`` (``lazy_cards``, ``lazy_edges``,
``lazy_frames``) and ``LazyIds`` are the scene's ``cards``, ``edges``, ``frames`` and ``by_id``:
mappings over *every* card, edge and module frame of the layout whose items are made on first use
(iterating their values makes them all; the app iterates only the made ones, ``CanvasScene.live_cards``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Iterator

import numpy as np
from PySide6.QtCore import QRectF

from fxstudio.core.layout import Layout
from fxstudio.core.node_text import META_MODULE_PATH

if TYPE_CHECKING:
    from fxstudio.qt.canvas.items import NodeCard
    from fxstudio.qt.canvas.scene import CanvasScene

EDGE_SLACK = 160.0   # an edge item reaches past its route: the port bend, the arrow, its shape label


def edge_keys(routes) -> list[tuple]:
    """Scene keys (src, dst, key, occurrence) of routes listed in layout order."""
    seen: dict[tuple, int] = {}
    out = []
    for r in routes:
        base = (r.src, r.dst, r.key)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base + (n,))
    return out


class SceneIndex:
    """Cards (those of ``layout`` whose node is in ``nodes``) and edges of one layout, by place."""

    def __init__(self, layout: Layout | None = None, nodes: Mapping | None = None, framed: list[str] = (),
                 cards_of: SceneIndex | None = None):
        """``framed``: the paths of the groups drawn as module frames; ``cards_of``: an index of a
        layout with the very same boxes and frames, whose card and frame part is reused."""
        layout = layout if layout is not None else Layout()
        nodes = nodes if nodes is not None else {}
        if cards_of is not None:
            self.names, self.pos, self._cards = cards_of.names, cards_of.pos, cards_of._cards
            self.frame_paths, self.frame_pos, self._frames = cards_of.frame_paths, cards_of.frame_pos, cards_of._frames
            self.folded_paths, self.folded_pos, self._folded = cards_of.folded_paths, cards_of.folded_pos, cards_of._folded
        else:
            self.names = [n for n in layout.nodes if n in nodes]
            self.pos = {n: i for i, n in enumerate(self.names)}
            self._cards = box_arrays([layout.nodes[n] for n in self.names])
            self.frame_paths = list(framed)
            self.frame_pos = {p: i for i, p in enumerate(self.frame_paths)}
            self._frames = box_arrays([layout.groups[p] for p in self.frame_paths])
            # collapsed modules' cards: a large graph opens with thousands (``large_fold.py``)
            self.folded_paths = [p for p, g in layout.groups.items() if g.collapsed]
            self.folded_pos = {p: i for i, p in enumerate(self.folded_paths)}
            self._folded = box_arrays([layout.groups[p] for p in self.folded_paths])
        routes = layout.edges
        self._edge_tables(edge_keys(routes))
        self._edges = route_bounds(routes)
        self._into: dict[str, list[tuple]] | None = None
        self.ops: dict[str, str] | None = None   # the scene's ``ops()``, made on first use

    @classmethod
    def after_local(cls, base: SceneIndex, layout: Layout, nodes: Mapping) -> SceneIndex | None:
        """The index of ``layout``, a local relayout (``Layout.local``) of the layout ``base``
        indexes, made from ``base``: one card more or less, the boxes below a new layer moved
        (vectorised), the kept edges' bounds reused. None when ``base`` does not match it."""
        _, added, removed, _, old_pos, shift, dropped, restored, _ = layout.local
        names = base.names
        if not len(base._edges[0]) or len(names) != len(layout.nodes) + (0 if added is None else -1) + (0 if removed is None else 1):
            return None
        out = cls.__new__(cls)
        cards = base._cards
        frames = base._frames
        folded = base._folded
        edges = tuple(a[np.maximum(old_pos, 0)] for a in base._edges)
        if shift is not None:
            yb, dh = shift
            cards, frames, folded = _moved(cards, yb, dh), _moved(frames, yb, dh), _moved(folded, yb, dh)
            edges = _moved(edges, yb, dh)
        if removed is not None:
            k = base.pos.get(removed)
            if k is None:
                return None
            names = names[:k] + names[k + 1:]
            cards = tuple(np.delete(a, k) for a in cards)
        if added is not None:
            if added not in nodes:
                return None
            k = list(layout.nodes).index(added)
            names = names[:k] + [added] + names[k:]
            box = layout.nodes[added]
            cards = tuple(np.insert(a, k, v) for a, v in zip(cards, (box.x, box.y, box.x + box.w, box.y + box.h)))
        out.names, out.pos, out._cards = names, dict(zip(names, range(len(names)))), cards
        frame_paths, frame_pos = base.frame_paths, base.frame_pos
        if dropped is not None and dropped in frame_pos:   # a frame left with one card went
            k = frame_pos[dropped]
            frame_paths = frame_paths[:k] + frame_paths[k + 1:]
            frame_pos = dict(zip(frame_paths, range(len(frame_paths))))
            frames = tuple(np.delete(a, k) for a in frames)
        if restored is not None and restored not in frame_pos and restored in layout.groups:   # and came back
            g = layout.groups[restored]
            frame_paths = frame_paths + [restored]
            frame_pos = dict(frame_pos)
            frame_pos[restored] = len(frame_paths) - 1
            frames = tuple(np.append(a, v) for a, v in zip(frames, (g.x, g.y, g.x + g.w, g.y + g.h)))
        out.frame_paths, out.frame_pos, out._frames = frame_paths, frame_pos, frames
        out.folded_paths, out.folded_pos, out._folded = base.folded_paths, base.folded_pos, folded
        routes = layout.edges
        # Kept routes keep their keys (an edge is redone with every other edge into its card).
        fresh_at = np.flatnonzero(old_pos < 0).tolist()
        present = np.zeros(len(base.edge_keys), dtype=bool)
        present[old_pos[old_pos >= 0]] = True
        keys: list = []
        start = 0
        for p in np.flatnonzero(~present).tolist():   # the base's keys, less those of redone edges
            keys += base.edge_keys[start:p]
            start = p + 1
        keys += base.edge_keys[start:]
        for i, k in zip(fresh_at, edge_keys([routes[i] for i in fresh_at])):
            keys.insert(i, k)
        out._edge_tables(keys)
        # New routes, and those across a new layer (they may go round the new card), bounded anew.
        redo = old_pos < 0
        if shift is not None:
            redo |= (base._edges[1][np.maximum(old_pos, 0)] <= shift[0]) & (edges[3] > shift[0])
        at = np.flatnonzero(redo)
        if len(at):
            fresh = route_bounds([routes[i] for i in at.tolist()])
            edges = tuple(a.copy() for a in edges)
            for a, f in zip(edges, fresh):
                a[at] = f
        out._edges = edges
        out._into = None
        out.ops = None
        if base.ops is not None:
            ops = dict(base.ops)
            if removed is not None:
                ops.pop(removed, None)
            if added is not None:
                ops[added] = nodes[added].op
            out.ops = ops
        return out

    def _edge_tables(self, keys: list[tuple]) -> None:
        self.edge_keys = keys
        self.edge_pos = dict(zip(keys, range(len(keys))))
        self.label_key: dict[str, tuple] = {k[0]: k for k in reversed(keys)}   # source -> the one edge that writes its shape

    def inputs_of(self, name: str) -> list[tuple]:
        """(source, key) of each edge into ``name``'s card, in layout order (a table built on first use)."""
        if self._into is None:
            into: dict[str, list[tuple]] = {}
            for k in self.edge_keys:
                into.setdefault(k[1], []).append((k[0], k[2]))
            self._into = into
        return self._into.get(name, [])

    def cards_in(self, rect: QRectF) -> list[str]:
        """Names of the cards meeting ``rect``, in layout order."""
        return [self.names[i] for i in _meeting(self._cards, rect, 0.0)]

    def frames_in(self, rect: QRectF) -> list[str]:
        """Paths of the module frames meeting ``rect``, outer ones first."""
        return [self.frame_paths[i] for i in _meeting(self._frames, rect, 0.0)]

    def folded_in(self, rect: QRectF) -> list[str]:
        """Paths of the collapsed modules whose cards meet ``rect``."""
        return [self.folded_paths[i] for i in _meeting(self._folded, rect, 0.0)]

    def titles_meeting(self, rect: QRectF, band_h: float) -> list[QRectF]:
        """The title bands (the top ``band_h`` of each module frame) that meet ``rect``."""
        x0, y0, x1, _ = self._frames
        hits = _meeting((x0, y0, x1, y0 + band_h), rect, 0.0)
        return [QRectF(x0[i], y0[i], x1[i] - x0[i], band_h) for i in hits.tolist()]

    def edges_in(self, rect: QRectF) -> list[tuple]:
        """Keys of the edges whose drawing may meet ``rect``, in layout order."""
        return [self.edge_keys[i] for i in _meeting(self._edges, rect, EDGE_SLACK)]


def path_counts(paths) -> dict[str, int]:
    """How many of the cards whose innermost module paths are ``paths`` each module path (and its
    ancestors) holds: the paths counted 1 are ``card_text.single_card_paths``."""
    count: dict[str, int] = {}
    get = count.get
    for path in paths:
        while path:
            count[path] = get(path, 0) + 1
            path = path.rpartition(".")[0]
    return count


def local_table(table: dict, layout: Layout, nodes: Mapping) -> dict | None:
    """The scene's node table after a local relayout (``Layout.local``): the erased node out, the
    inserted one (from ``nodes``, the refreshed nodes by name) in; None when it is not there."""
    added, removed = layout.local[1], layout.local[2]
    out = dict(table)
    if removed is not None:
        out.pop(removed, None)
    if added is not None:
        node = nodes.get(added)
        if node is None:
            return None
        out[added] = node
    return out


def local_single(counts: dict | None, single: set, layout: Layout, before: dict,
                 after: dict) -> tuple[dict, set] | None:
    """(cards per module path, paths holding one card) after a local relayout, from those before it
    (``before``/``after``: the node tables); None when there are no counts to start from."""
    if counts is None:
        return None
    added, removed = layout.local[1], layout.local[2]
    counts, single = dict(counts), set(single)
    for name, table, step in ((removed, before, -1), (added, after, 1)):
        node = table.get(name) if name is not None else None
        if node is None:
            if name is not None:
                return None
            continue
        path = node.meta.get(META_MODULE_PATH) or ""
        while path:
            c = counts[path] = counts.get(path, 0) + step
            if c == 1:
                single.add(path)
            else:
                single.discard(path)
            if c <= 0:
                del counts[path]
            path = path.rpartition(".")[0]
    return counts, single


def local_bounds(shown: tuple[float, float, float, float], layout: Layout) -> tuple[float, float, float, float]:
    """The scene bounds after a local relayout of the layout whose bounds were ``shown``: below a new
    layer longer, around an inserted card (an erased one leaves its place)."""
    x0, y0, x1, y1 = shown
    _, added, _, _, _, shift, _, _, _ = layout.local
    if shift is not None and y1 > shift[0]:
        y1 += shift[1]
    box = layout.nodes.get(added) if added is not None else None
    if box is not None:
        x0, y0, x1, y1 = min(x0, box.x), min(y0, box.y), max(x1, box.x + box.w), max(y1, box.y + box.h)
    return x0, y0, x1, y1


def box_arrays(boxes) -> tuple[np.ndarray, ...]:
    """(x0, y0, x1, y1) arrays of boxes with ``x``, ``y``, ``w``, ``h``."""
    n = len(boxes)
    x0 = np.fromiter((b.x for b in boxes), float, n)
    y0 = np.fromiter((b.y for b in boxes), float, n)
    x1 = x0 + np.fromiter((b.w for b in boxes), float, n)
    y1 = y0 + np.fromiter((b.h for b in boxes), float, n)
    return x0, y0, x1, y1


def route_bounds(routes) -> tuple[np.ndarray, ...]:
    """(x0, y0, x1, y1) of each route's points (an empty route: an empty box at the origin)."""
    counts = np.fromiter((len(r.points) for r in routes), np.int64, len(routes))
    total = int(counts.sum())
    if total == 0:
        z = np.zeros(len(routes))
        return z, z, z - 1, z - 1
    xs = np.fromiter((p[0] for r in routes for p in r.points), float, total)
    ys = np.fromiter((p[1] for r in routes for p in r.points), float, total)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    has = counts > 0
    safe = np.minimum(starts, total - 1)   # reduceat wants valid offsets; empty routes are masked below
    x0, x1 = np.minimum.reduceat(xs, safe), np.maximum.reduceat(xs, safe)
    y0, y1 = np.minimum.reduceat(ys, safe), np.maximum.reduceat(ys, safe)
    x1 = np.where(has, x1, x0 - 1)   # an empty box meets nothing
    return x0, y0, x1, y1


def _moved(arrays: tuple[np.ndarray, ...], yb: float, dh: float) -> tuple[np.ndarray, ...]:
    """(x0, y0, x1, y1) boxes with every top and bottom below ``yb`` moved down by ``dh``."""
    x0, y0, x1, y1 = arrays
    return x0, np.where(y0 > yb, y0 + dh, y0), x1, np.where(y1 > yb, y1 + dh, y1)


def _meeting(arrays: tuple[np.ndarray, ...], rect: QRectF, slack: float) -> np.ndarray:
    x0, y0, x1, y1 = arrays
    if not len(x0):
        return np.zeros(0, dtype=np.int64)
    mask = ((x1 + slack >= rect.left()) & (x0 - slack <= rect.right())
            & (y1 + slack >= rect.top()) & (y0 - slack <= rect.bottom()))
    return np.flatnonzero(mask)


class LazyItems(Mapping):
    """Key → item for every key the scene's current index lists; an item is made on first use.

    ``live``: the scene's dict of the items made; ``keys``: the index's attribute listing the keys
    in order, ``pos`` the one mapping them to positions; ``make(key)`` makes a missing item."""

    def __init__(self, scene: CanvasScene, live: str, keys: str, pos: str, make: str):
        self._scene, self._live, self._keys, self._pos, self._make = scene, live, keys, pos, make

    def __getitem__(self, key):
        scene = self._scene
        item = getattr(scene, self._live).get(key)
        if item is None:
            if key not in getattr(scene.index, self._pos):
                raise KeyError(key)
            item = getattr(scene, self._make)(key)
        return item

    def __contains__(self, key) -> bool:
        return key in getattr(self._scene.index, self._pos)

    def __iter__(self) -> Iterator:
        return iter(getattr(self._scene.index, self._keys))

    def __len__(self) -> int:
        return len(getattr(self._scene.index, self._keys))


def lazy_cards(scene: CanvasScene) -> LazyItems:
    """Node name → its ``NodeCard``."""
    return LazyItems(scene, "live_cards", "names", "pos", "make_card")


def lazy_frames(scene: CanvasScene) -> LazyItems:
    """Group path → its module frame (``GroupFrame``)."""
    return LazyItems(scene, "live_frames", "frame_paths", "frame_pos", "make_frame")


def lazy_group_cards(scene: CanvasScene) -> LazyItems:
    """Collapsed module path → its card (``GroupCard``)."""
    return LazyItems(scene, "live_folded", "folded_paths", "folded_pos", "make_group_card")


def lazy_edges(scene: CanvasScene) -> LazyItems:
    """Scene key (src, dst, key, occurrence) → its ``EdgeItem``."""
    return LazyItems(scene, "live_edges", "edge_keys", "edge_pos", "make_edge")


class LazyIds(Mapping):
    """Node id → its card (``LazyCards`` by id); the id → name table is built on first use."""

    def __init__(self, scene: CanvasScene):
        self._scene = scene
        self._names: dict[int, str] | None = None

    def reset(self) -> None:
        """Forget the id → name table (the shown layout or its node ids changed)."""
        self._names = None

    def after_local(self, layout: Layout, before: dict, after: dict) -> None:
        """Follow a local relayout (``Layout.local``): the erased node's id out, the inserted one's in
        (``before``/``after``: the node tables); the table is kept, not built anew."""
        names, id_of = self._names, self._scene.id_of
        if names is None or id_of is None:
            return
        names = dict(names)
        added, removed = layout.local[1], layout.local[2]
        try:
            if removed is not None and removed in before:
                names.pop(id_of(before[removed]), None)
            if added is not None:
                names[id_of(after[added])] = added
        except (KeyError, ValueError):   # an id table that does not know the node: built anew when asked
            names = None
        self._names = names

    def name_of(self, node_id: int) -> str | None:
        """The name of the node ``node_id`` if it has a card in the shown layout."""
        if self._names is None:
            scene = self._scene
            nodes, id_of = scene.node_table, scene.id_of
            self._names = {id_of(nodes[n]): n for n in scene.index.names} if id_of is not None else {}
        return self._names.get(node_id)

    def __getitem__(self, node_id: int) -> NodeCard:
        name = self.name_of(node_id)
        if name is None:
            raise KeyError(node_id)
        return self._scene.cards[name]

    def __contains__(self, node_id) -> bool:
        return self.name_of(node_id) is not None

    def __iter__(self) -> Iterator[int]:
        self.name_of(-1)
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._scene.index.names)
