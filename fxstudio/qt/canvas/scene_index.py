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
        else:
            self.names = [n for n in layout.nodes if n in nodes]
            self.pos = {n: i for i, n in enumerate(self.names)}
            self._cards = box_arrays([layout.nodes[n] for n in self.names])
            self.frame_paths = list(framed)
            self.frame_pos = {p: i for i, p in enumerate(self.frame_paths)}
            self._frames = box_arrays([layout.groups[p] for p in self.frame_paths])
        routes = layout.edges
        self.edge_keys = edge_keys(routes)
        self.edge_pos = {k: i for i, k in enumerate(self.edge_keys)}
        self.label_key: dict[str, tuple] = {}   # source -> the one edge that writes its shape
        for k in self.edge_keys:
            self.label_key.setdefault(k[0], k)
        self._edges = route_bounds(routes)
        self._into: dict[str, list[tuple]] | None = None
        self.ops: dict[str, str] | None = None   # the scene's ``ops()``, made on first use

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

    def titles_meeting(self, rect: QRectF, band_h: float) -> list[QRectF]:
        """The title bands (the top ``band_h`` of each module frame) that meet ``rect``."""
        x0, y0, x1, _ = self._frames
        hits = _meeting((x0, y0, x1, y0 + band_h), rect, 0.0)
        return [QRectF(x0[i], y0[i], x1[i] - x0[i], band_h) for i in hits.tolist()]

    def edges_in(self, rect: QRectF) -> list[tuple]:
        """Keys of the edges whose drawing may meet ``rect``, in layout order."""
        return [self.edge_keys[i] for i in _meeting(self._edges, rect, EDGE_SLACK)]


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
