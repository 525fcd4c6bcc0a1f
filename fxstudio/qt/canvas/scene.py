"""The canvas scene: items built from a layout of the document's edited graph, kept in sync by events.

The scene never edits the graph. A ``DocumentEvent`` triggers an incremental layout (``previous=``
the current one, so untouched cards stay where they were) and a diff of the items made so far:
cards and edges are made only where the view looks (``realize``, ``scene_index.py``), and moved,
updated or removed, never rebuilt wholesale.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Callable

import torch.fx
from PySide6.QtCore import QObject, QPointF, QRectF, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from fxstudio.core.card_text import card_lines, module_caption
from fxstudio.core.gc_pause import collections_off
from fxstudio.core.layout import Layout, ancestors
from fxstudio.core.node_text import META_MODULE_PATH, card_target_text, edge_label
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.card_facts import card_info, folded_hosts, input_ports
from fxstudio.qt.canvas.card_rows import port_offsets, weight_rows
from fxstudio.qt.canvas.edge_item import EdgeItem
from fxstudio.qt.canvas.items import CardInfo, GroupCard, GroupFrame, NodeCard, PortSpec
from fxstudio.qt.canvas.overview import OverviewItem, bounds
from fxstudio.qt.canvas.scene_index import (LazyIds, SceneIndex, lazy_cards, lazy_edges, lazy_frames, lazy_group_cards, local_bounds,
                                            local_single, local_table, path_counts)


class CanvasScene(QGraphicsScene):
    """The items of one graph's layout; ``show_graph`` shows a new layout, updating the items made.

    Items are made only where they are looked at: ``realize(rect)`` makes the cards and edges that
    meet a rectangle (the view asks for what it shows plus a margin), and ``cards[name]``,
    ``by_id[node_id]`` and ``edges[key]`` make the one asked for (``scene_index.py``). Whatever
    decorates a card (selection, overlays, search marks, rewire feedback) is applied to each new
    one by ``card_made`` (the view sets it). ``live_cards`` / ``live_edges``: the items made.

    Two levels: the detailed items (cards, edges, frames, each painting itself) and the overview
    (one item drawing everything in a few calls) for views zoomed out below ``style.LOD_PLAIN``;
    the view calls ``set_overview`` when its zoom crosses that line. Detailed items stay top-level
    so the BSP index hands the view only those in sight."""

    layout_changed = Signal()
    LIVE_CAP = 6000   # more made items than this: those far from the view are dropped (``realize``)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.setBackgroundBrush(QColor(st.CANVAS_BACKGROUND))
        self.layout: Layout | None = None
        self.graph_module: torch.fx.GraphModule | None = None
        self.index = SceneIndex()
        self.node_table: dict[str, torch.fx.Node] = {}   # the shown graph's nodes by name
        self.id_of: Callable[[torch.fx.Node], int] | None = None
        self.live_cards: dict[str, NodeCard] = {}
        self.live_edges: dict[tuple, EdgeItem] = {}
        self.cards = lazy_cards(self)
        self.edges = lazy_edges(self)
        self.by_id = LazyIds(self)
        self.card_made: Callable[[NodeCard], None] | None = None
        self.live_frames: dict[str, GroupFrame] = {}
        self.frames = lazy_frames(self)
        self.frame_made: Callable[[str, GroupFrame], None] | None = None
        self.live_folded: dict[str, GroupCard] = {}
        self.group_cards = lazy_group_cards(self)   # collapsed modules' cards, made where looked at
        self.bounds = (0.0, 0.0, 0.0, 0.0)   # of the current layout
        self._covered = QRectF()   # the rectangle whose items are all made (``realize``)
        self._overview_on = False
        # What the last ``show_graph`` did: items created, moved/resized or re-texted, removed
        # (per kind), and whether it was an incremental update. Tests and the bench read it.
        self.last_update: dict = {}
        self._touched_cards: set[str] = set()   # cards added/moved/re-texted/removed by the last update
        self._hosts: dict[str, tuple[str, ...]] = {}   # folded weights by host card (``folded_hosts``)
        self._single: set[str] = set()   # module paths holding one card (as ``card_text.single_card_paths``)
        self._counts: dict[str, int] | None = None   # cards per module path (``path_counts``)
        self._row_hosts: dict[int, str] | None = {}   # folded weight id -> its host's name (None: stale)
        self.overview = OverviewItem()
        self.overview.setVisible(False)
        self.addItem(self.overview)

    @property
    def touched_cards(self) -> set[str]:
        """Names of the made cards the last update added, moved, re-texted or removed."""
        return self._touched_cards

    def set_overview(self, on: bool) -> None:
        """Show the recorded overview instead of the detailed items (or the reverse)."""
        if self._overview_on != on:
            self._overview_on = on
            self.overview.setVisible(on)
            for d in (self.live_cards, self.live_edges, self.live_frames, self.live_folded):
                for item in d.values():
                    item.setVisible(not on)

    def in_overview(self) -> bool:
        """True while the overview replaces the detailed items."""
        return self._overview_on

    def _add(self, item: QGraphicsItem) -> None:
        if self._overview_on:
            item.setVisible(False)
        self.addItem(item)

    def ops(self) -> dict[str, str]:
        """Each card's op kind by node name (what the minimap and the overview colour by; kept
        until the next ``show_graph``)."""
        index = self.index
        if index.ops is None:
            nodes = self.node_table
            index.ops = {name: nodes[name].op for name in index.names}
        return index.ops

    # -- making items where they are looked at ---------------------------------------------------
    def make_card(self, name: str) -> NodeCard:
        """Make the card of node ``name`` (which has none yet) at its layout box."""
        box = self.layout.nodes[name]
        card = NodeCard(self.info_of(self.node_table[name], self.id_of), box)
        self._add(card)
        self.live_cards[name] = card
        if self.card_made is not None:
            self.card_made(card)
        return card

    def make_frame(self, path: str) -> GroupFrame:
        """Make the module frame of group ``path`` (which has none yet)."""
        item = GroupFrame(self.layout.groups[path])
        self._add(item)
        self.live_frames[path] = item
        if self.frame_made is not None:
            self.frame_made(path, item)
        return item

    def make_group_card(self, path: str) -> GroupCard:
        """Make the card of the collapsed module ``path`` (which has none yet)."""
        item = GroupCard(self.layout.groups[path])
        self._add(item)
        self.live_folded[path] = item
        self.last_update["groups_added"] = self.last_update.get("groups_added", 0) + 1
        return item

    def make_edge(self, key: tuple) -> EdgeItem:
        """Make the edge item of ``key`` (which has none yet) along its route."""
        route = self.layout.edges[self.index.edge_pos[key]]
        src = self.node_table.get(route.src)
        label = edge_label(src) if src is not None and self.index.label_key.get(route.src) == key else ""
        item = EdgeItem(route, self._port_route(route, key[3]), label)
        item.source_points = route.points
        self._add(item)
        self.live_edges[key] = item
        return item

    def covers(self, rect: QRectF) -> bool:
        """True when every item meeting ``rect`` is made."""
        return self._covered.contains(rect)

    def realize(self, rect: QRectF, keep: QRectF | None = None, budget_s: float | None = None) -> bool:
        """Make the cards and edges meeting ``rect`` that are not made yet; False when ``budget_s``
        ran out first (call again). With more than ``LIVE_CAP`` items made, those outside ``keep``
        (default ``rect``) and not selected are dropped again."""
        if self.layout is None:
            return True
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        index = self.index
        for keys, live, make in ((index.frames_in(rect), self.live_frames, self.make_frame),
                                 (index.folded_in(rect), self.live_folded, self.make_group_card),
                                 (index.cards_in(rect), self.live_cards, self.make_card),
                                 (index.edges_in(rect), self.live_edges, self.make_edge)):
            for i, key in enumerate(keys):
                if key not in live:
                    make(key)
                    if deadline is not None and i % 16 == 0 and time.perf_counter() > deadline:
                        return False
        self._covered = QRectF(rect)
        if len(self.live_cards) + len(self.live_edges) > self.LIVE_CAP:
            self._drop_outside(keep if keep is not None else rect)
        return True

    def _drop_outside(self, keep: QRectF) -> None:
        """Remove the made items that do not meet ``keep`` (selected and rewire-marked cards stay)."""
        near = set(self.index.cards_in(keep))
        for name in [n for n, c in self.live_cards.items() if n not in near and not (c.selected or c.drag_state)]:
            self.removeItem(self.live_cards.pop(name))
        near_e = set(self.index.edges_in(keep))
        for key in [k for k in self.live_edges if k not in near_e]:
            self.removeItem(self.live_edges.pop(key))
        near_f = set(self.index.frames_in(keep))
        for path in [p for p in self.live_frames if p not in near_f]:
            self.removeItem(self.live_frames.pop(path))
        near_g = set(self.index.folded_in(keep))
        for path in [p for p in self.live_folded if p not in near_g]:
            self.removeItem(self.live_folded.pop(path))

    # -- building -----------------------------------------------------------------------------
    def show_graph(self, gm: torch.fx.GraphModule, layout: Layout, id_of: Callable[[torch.fx.Node], int],
                   refresh: set[str] | None = None, nodes: dict[str, torch.fx.Node] | None = None) -> None:
        """Show ``layout`` of ``gm``'s graph: made cards are matched by node name and updated in place.

        ``refresh``: names of the nodes whose content may have changed (None: all of them); other
        made cards only move. A layout that only rerouted some edges of the one shown
        (``Layout.delta``) keeps every card's place (``last_update["geometry"]`` is False).
        ``nodes`` (the refreshed nodes by name) is accepted as before; the scene reads ``gm``."""
        with collections_off():   # the index allocates a few objects per node: no full collections meanwhile
            self._show_graph(gm, layout, id_of, refresh, nodes or {})
        self.layout_changed.emit()

    def _show_graph(self, gm, layout: Layout, id_of, refresh: set[str] | None, nodes: dict) -> None:
        base = self.layout
        rerouted = (refresh is not None and layout.delta is not None and base is not None
                    and layout.delta[0] == base.serial)
        # One card inserted or erased (``Layout.local``): the index and tables follow from the shown ones.
        local = (refresh is not None and layout.local is not None and base is not None
                 and layout.local[0] == base.serial)
        self.graph_module = gm
        self.layout = layout
        self.id_of = id_of
        self.last_update = dict.fromkeys(
            ("cards_added", "cards_moved", "cards_retexted", "cards_removed", "groups_added", "groups_moved",
             "groups_removed", "edges_added", "edges_rerouted", "edges_removed"), 0)
        self.last_update["incremental"] = refresh is not None
        if rerouted:
            self.last_update["geometry"] = False   # no card or frame moved: the minimap stays as it is
        refresh = self._rows_refresh(layout, refresh)
        old_table = self.node_table
        table = local and local_table(old_table, layout, nodes)
        table = self.node_table = table or {n.name: n for n in gm.graph.nodes}
        counted = local and local_single(self._counts, self._single, layout, old_table, table)
        if counted:
            self._counts, single = counted
        else:
            single = self._single
            if refresh is None or base is None or base.nodes.keys() != layout.nodes.keys():   # cards came or went
                self._counts = path_counts(table[n].meta.get(META_MODULE_PATH) or "" for n in layout.nodes if n in table)
                single = {p for p, c in self._counts.items() if c == 1}
        # A module with a frame has no caption: those keep theirs whatever their count.
        came = {p for p in self._single ^ single if p not in layout.groups} if local else self._single ^ single
        if local and came <= set(layout.local[6:8]):   # a frame went or came back: its other card's caption
            refresh = set(refresh) | layout.local[8]
        else:
            refresh = _captions_refresh(base, layout, table, refresh, came)
        self._single = single
        index = local and SceneIndex.after_local(self.index, layout, table)
        self.index = index or SceneIndex(layout, table, [] if rerouted else _framed(gm, layout),
                                         cards_of=self.index if rerouted else None)
        if index:
            self.by_id.after_local(layout, old_table, table)
        else:
            self.by_id.reset()
        self._covered = QRectF()
        self._sync_cards(table, layout, id_of, refresh)
        if not rerouted:
            self._sync_groups(layout)
        self._sync_edges(table, layout, refresh)
        if not rerouted:
            x0, y0, x1, y1 = self.bounds = local_bounds(self.bounds, layout) if index else bounds(layout)
            m = 200.0
            self.setSceneRect(QRectF(x0 - m, y0 - m, (x1 - x0) + 2 * m, (y1 - y0) + 2 * m))
        self.overview.set_layout(layout, self.ops(), self.bounds)

    def _rows_refresh(self, layout: Layout, refresh: set[str] | None) -> set[str] | None:
        """``refresh`` plus the hosts whose folded weights changed since the shown layout."""
        old, new = self._hosts, folded_hosts(layout)
        self._hosts = new
        self._row_hosts = None
        if refresh is None or old is new or old == new:
            return refresh
        return set(refresh) | {h for h in old.keys() | new.keys() if old.get(h) != new.get(h)}

    def info_of(self, node: torch.fx.Node, id_of) -> CardInfo:
        """What ``node``'s card shows now, its folded weights' rows included."""
        folded = self._hosts.get(node.name, ())
        rows = weight_rows(node, folded, id_of) if folded else ()
        caption = module_caption(node, self.layout.groups, self._single) if self.layout is not None else ""
        return card_info(node, id_of(node), self.graph_module, rows, caption)

    def row_host(self, node_id: int) -> str | None:
        """The name of the card showing the folded weight ``node_id`` as a row, or None."""
        if self._row_hosts is None:
            table, id_of = self.node_table, self.id_of
            self._row_hosts = {id_of(table[w]): host for host, ws in self._hosts.items()
                               if host in self.index.pos for w in ws if w in table}
        return self._row_hosts.get(node_id)

    def row_card(self, node_id: int) -> NodeCard | None:
        """The card showing the folded weight ``node_id`` as a row, or None."""
        host = self.row_host(node_id)
        return self.cards[host] if host is not None else None

    def clear_graph(self) -> None:
        """Remove every item (no document open)."""
        for d in (self.live_cards, self.live_edges, self.live_frames, self.live_folded):
            for item in d.values():
                self.removeItem(item)
            d.clear()
        self._hosts, self._row_hosts, self._single, self._counts = {}, {}, set(), None
        self.overview.set_layout(Layout(), {})
        self.layout = None
        self.graph_module = None
        self.node_table = {}
        self.index = SceneIndex()
        self.by_id.reset()
        self._covered = QRectF()
        self.setSceneRect(QRectF(0, 0, 1, 1))
        self.layout_changed.emit()

    def search_entries(self) -> list:
        """What a search matches, in layout order: each card's info (a made card's) or its name, op
        and target, followed by its folded weights' rows as ``(host name, row)``."""
        live, table, gm = self.live_cards, self.node_table, self.graph_module
        out: list = []
        for name in self.index.names:
            card = live.get(name)
            if card is not None:
                out.append(card.info)
                out.extend((name, r) for r in card.info.rows)
            else:
                node = table[name]
                out.append(SimpleNamespace(name=name, op=node.op, target=card_target_text(node, gm)))
                folded = self._hosts.get(name)
                if folded:
                    out.extend((name, r) for r in weight_rows(node, folded, self.id_of))
        return out

    def former_ports(self, node_id: int) -> list[PortSpec]:
        """The inputs the shown card of ``node_id`` has (made or not): what fed it before an edit."""
        name = self.by_id.name_of(node_id)
        card = self.live_cards.get(name) if name is not None else None
        if card is not None:
            return card.info.ports
        return [PortSpec(key, src) for src, key in self.index.inputs_of(name)] if name is not None else []

    def ids_in(self, rect: QRectF) -> list[int]:
        """Ids of the nodes whose cards meet ``rect``, in layout order."""
        table, id_of = self.node_table, self.id_of
        return [id_of(table[n]) for n in self.index.cards_in(rect)]

    def _sync_cards(self, nodes, layout: Layout, id_of, refresh) -> None:
        # Only made cards are updated (the rest are made from the new layout when looked at). Each
        # card remembers the box it was last placed at (``box_key``): an unchanged card costs a
        # tuple comparison and no call into Qt.
        live = self.live_cards
        stats = self.last_update
        touched = self._touched_cards = set()
        boxes = layout.nodes
        for name, card in list(live.items()):
            box = boxes.get(name)
            if box is None or name not in nodes:
                self.removeItem(live.pop(name))
                stats["cards_removed"] += 1
                touched.add(name)
                continue
            if refresh is None or name in refresh:
                info = self.info_of(nodes[name], id_of)
                if card.info != info:
                    card.set_info(info)
                    stats["cards_retexted"] += 1
                    touched.add(name)
            key = (box.x, box.y, box.w, box.h)
            if card.box_key != key:
                if (box.x, box.y) != (card.x(), card.y()) or (box.w, box.h) != card.size():
                    card.set_box(box)
                    stats["cards_moved"] += 1
                    touched.add(name)
                card.box_key = key

    def _sync_groups(self, layout: Layout) -> None:
        # Collapsed modules' cards and module frames are made where looked at (``realize``); those
        # made follow their group or go.
        stats = self.last_update
        for live, listed in ((self.live_folded, self.index.folded_pos), (self.live_frames, self.index.frame_pos)):
            for path, item in list(live.items()):
                g = layout.groups.get(path)
                if path not in listed or g is None:
                    self.removeItem(live.pop(path))
                    stats["groups_removed"] += 1
                elif item.group is not g and item.group != g:
                    item.set_group(g)
                    stats["groups_moved"] += 1

    def frame_titles_near(self, rect: QRectF) -> list[QRectF]:
        """The title bands of the module frames that meet ``rect``: where an edge's shape label
        should not go (from the layout: frames made or not)."""
        return self.index.titles_meeting(rect, st.FRAME_LABEL_H)

    def _sync_edges(self, nodes, layout: Layout, refresh) -> None:
        # Made edges are updated in place: an unchanged one costs a lookup and a route comparison.
        live = self.live_edges
        index = self.index
        stats = self.last_update
        touched = self._touched_cards
        routes = layout.edges
        for k, item in list(live.items()):
            i = index.edge_pos.get(k)
            if i is None:
                self.removeItem(live.pop(k))
                stats["edges_removed"] += 1
                continue
            route = routes[i]
            labelled = index.label_key.get(route.src) == k
            if (refresh is not None and route.src not in refresh and route.dst not in touched
                    and (route.dst in self.live_cards or route.dst not in refresh)
                    and item.source_points == route.points and labelled == bool(item.label)):
                # Same route into the same (unmoved, unchanged) card, same source: nothing to redo.
                item.route = route
                continue
            src = nodes.get(route.src)
            label = edge_label(src) if src is not None and labelled else ""
            if item.label != label:
                self.removeItem(live.pop(k))
                stats["edges_removed"] += 1
                self.make_edge(k)
                stats["edges_added"] += 1
                continue
            item.route = route
            points = self._port_route(route, k[3])
            if tuple(points) != item.points:
                item.set_points(points)
                stats["edges_rerouted"] += 1
            item.source_points = route.points

    def _port_route(self, route, occurrence: int) -> list[tuple[float, float]]:
        """The route with its end moved onto the matching input port of the card it feeds."""
        pts = list(route.points)
        card = self.live_cards.get(route.dst)
        node = self.node_table.get(route.dst) if card is None else None
        box = self.layout.nodes.get(route.dst) if node is not None else None
        if (card is None and box is None) or len(pts) < 2:
            return pts
        info = card.info if card is not None else self.info_of(node, self.id_of)
        matches = [i for i, p in enumerate(info.ports) if p.src == route.src and p.key == route.key]
        if not matches:
            return pts
        i = matches[min(occurrence, len(matches) - 1)]
        # A card not made (the edge's far end) is not made for this: its port from its layout box.
        port = card.port_pos(i) if card is not None else QPointF(box.x, box.y) + port_offsets(
            info.ports, info.rows, box.w, box.h)[i]
        end = pts[-1]
        if abs(end[0] - port.x()) > 0.5:
            prev = pts[-2]
            # Keep the last segment vertical: add a bend a little above the card when needed.
            if abs(prev[0] - end[0]) < 0.5 and len(pts) > 2:
                pts[-2] = (port.x(), prev[1])
            elif abs(prev[0] - port.x()) > 0.5:
                y_bend = max(prev[1], port.y() - 14.0)
                if y_bend < port.y() - 1:
                    pts.insert(-1, (port.x(), y_bend))
        pts[-1] = (port.x(), port.y())
        return pts

    def update_in_place(self, nodes: list[torch.fx.Node], id_of) -> bool:
        """Refresh the cards of ``nodes`` without a relayout, if their wiring is what the cards show.

        Returns False (and changes nothing) when a node has no made card, was renamed, or its inputs
        differ from its ports: then the caller relays out."""
        infos = []
        for node in nodes:
            card = self.live_cards.get(node.name)
            if card is None:   # not made: compared with what the layout drew it from
                if node.name not in self.index.pos or not self._drawn_alike(node):
                    return False
                continue
            if card.info.node_id != id_of(node):
                return False
            info = self.info_of(node, id_of)
            if info.ports != card.info.ports or info.rows != card.info.rows or _lines(info) != _lines(card.info):
                return False   # other ports, rows or a line more or less (a taller card): relay out
            infos.append((card, info))
        for card, info in infos:
            if info != card.info:
                card.set_info(info)
        # The shape an edge carries may have changed with its source (only labelled edges show it).
        labels = {n.name: edge_label(n) for n in nodes}
        for (src, _, _, _), edge in list(self.live_edges.items()):
            if src in labels and edge.label and edge.label != labels[src]:
                edge.set_label(labels[src])
        return True

    def _drawn_alike(self, node: torch.fx.Node) -> bool:
        """Whether a card made for ``node`` now would fit the layout's box and edges: the same
        inputs (the edges into it), folded weights and number of lines (``card_text.card_lines``,
        as the layout counted them)."""
        name, layout = node.name, self.layout
        inputs, lanes = layout.inputs, layout.lanes
        if inputs is None or lanes is None or inputs[0]:
            return False
        arrays, i = inputs[1], lanes[0].get(name)
        lines = getattr(arrays, "lines", None)
        if i is None or lines is None or i >= len(arrays.names) or arrays.names[i] != name:
            return False
        if card_lines(node) != lines[i]:
            return False
        folded = self._hosts.get(name, ())
        rows = weight_rows(node, folded, self.id_of) if folded else ()
        if tuple(r.name for r in rows) != tuple(folded):
            return False
        on_rows = set(folded)
        ports = sorted((p.src, str(p.key)) for p in input_ports(node) if p.src not in on_rows)
        return ports == sorted((src, str(key)) for src, key in self.index.inputs_of(name))

    # -- queries used by the view ---------------------------------------------------------------
    def card_at(self, pos: QPointF, tolerance: float = 0.0) -> NodeCard | None:
        """The node card under ``pos`` (scene coordinates), ports included; ``tolerance`` widens
        the hit area (used when zoomed out, where a card is smaller than a pixel)."""
        if self.in_overview():
            best, best_d = None, None
            px, py = pos.x(), pos.y()
            boxes = self.layout.nodes if self.layout is not None else {}
            near = QRectF(px - tolerance, py - tolerance, 2 * tolerance, 2 * tolerance)
            for name in self.index.cards_in(near):   # the index, not a walk over every box
                b = boxes[name]
                x, y, w, h = b.x, b.y, b.w, b.h
                dx = max(x - px, 0.0, px - x - w)
                dy = max(y - py, 0.0, py - y - h)
                d = dx * dx + dy * dy
                if d <= tolerance * tolerance and (best_d is None or d < best_d):
                    best, best_d = name, d
            return self.cards.get(best) if best is not None else None
        for item in self.items(QRectF(pos.x() - 6, pos.y() - 6, 12, 12)):
            if isinstance(item, NodeCard):
                r = item.sceneBoundingRect()
                if r.adjusted(4, 14, -4, -4).contains(pos) or item.port_at(pos) is not None:
                    return item
        return None

    def item_at(self, pos: QPointF, kinds: tuple[type, ...]) -> QGraphicsItem | None:
        """The topmost item of one of ``kinds`` whose shape contains ``pos``."""
        for item in self.items(pos):
            if isinstance(item, kinds):
                return item
        return None

    def toggle_at(self, pos: QPointF) -> str | None:
        """Path of the group whose collapse/expand toggle is under ``pos``."""
        for item in self.items(pos):
            if isinstance(item, (GroupFrame, GroupCard)) and item.toggle_rect().adjusted(-2, -2, 2, 2).contains(pos):
                return item.group.path
        return None

    def edge_end_at(self, pos: QPointF, radius: float = 14.0) -> EdgeItem | None:
        """An edge whose end (at an input port) is within ``radius`` of ``pos``."""
        for item in self.items(QRectF(pos.x() - radius, pos.y() - radius, 2 * radius, 2 * radius)):
            if isinstance(item, EdgeItem):
                d = item.end_point() - pos
                if d.x() * d.x() + d.y() * d.y() <= radius * radius:
                    return item
        return None


def _framed(gm: torch.fx.GraphModule, layout: Layout) -> list[str]:
    """The groups drawn as module frames: expanded ones, but not a leaf submodule's (a frame around
    its calls would only repeat what its cards say)."""
    called = {str(n.target) for n in gm.graph.nodes if n.op == "call_module"}
    parents = {p.rsplit(".", 1)[0] for p in layout.groups if "." in p}
    leaves = called - parents
    return [p for p, g in layout.groups.items() if not g.collapsed and p not in leaves]


def _lines(info: CardInfo) -> tuple[bool, bool, bool]:
    """Which of a card's optional lines it shows (caption, target, constants): what its height follows."""
    return bool(info.caption), bool(info.line), bool(info.consts)


def _captions_refresh(base: Layout | None, layout: Layout, nodes: dict, refresh: set[str] | None,
                      changed: set[str]) -> set[str] | None:
    """``refresh`` plus the cards whose module caption may change: those in a module whose frame
    came or went since ``base``, or that came to hold one card or more (``changed``: those paths),
    as a module's second card makes its frame (``module_caption``)."""
    if refresh is None or base is None:
        return refresh
    changed = changed | (base.groups.keys() ^ layout.groups.keys())
    if not changed:
        return refresh
    extra = set()
    for name, node in nodes.items():
        path = node.meta.get(META_MODULE_PATH) or ""
        if path and any(a in changed for a in ancestors(path)):
            extra.add(name)
    return set(refresh) | extra
