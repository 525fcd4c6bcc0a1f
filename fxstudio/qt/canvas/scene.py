"""The canvas scene: items built from a layout of the document's edited graph, kept in sync by events.

The scene never edits the graph. A ``DocumentEvent`` triggers an incremental layout (``previous=``
the current one, so untouched cards stay where they were) and a diff of the items: cards, edges and
frames are moved, updated, added or removed, never rebuilt wholesale.
"""

from __future__ import annotations

from typing import Callable

import torch.fx
from PySide6.QtCore import QObject, QPointF, QRectF, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

from fxstudio.core.card_text import card_target_line, constants_text, module_caption, single_card_paths
from fxstudio.core.layout import Layout, ancestors, routes_into
from fxstudio.core.node_text import META_MODULE_PATH, card_target_text, edge_label, rejection_text, shape_text
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.card_rows import WeightRow, weight_rows
from fxstudio.qt.canvas.edge_item import EdgeItem
from fxstudio.qt.canvas.frame_titles import TitleGrid
from fxstudio.qt.canvas.items import CardInfo, GroupCard, GroupFrame, NodeCard, PortSpec
from fxstudio.qt.canvas.overview import OverviewItem, bounds


def input_ports(node: torch.fx.Node) -> list[PortSpec]:
    """One port per node-valued input: positional args by index, keywords by name, list elements by path."""
    ports: list[PortSpec] = []

    def walk(key, value, path):
        if isinstance(value, torch.fx.Node):
            ports.append(PortSpec(key, value.name, path))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(key, v, path + (i,))
        elif isinstance(value, dict):
            for v in value.values():
                if isinstance(v, torch.fx.Node):   # dict entries are not addressable by a path; show them
                    ports.append(PortSpec(key, v.name, ()))

    for i, a in enumerate(node.args):
        walk(i, a, ())
    for k, v in node.kwargs.items():
        walk(k, v, ())
    return ports


def card_info(node: torch.fx.Node, node_id: int, gm: torch.nn.Module | None = None,
              rows: tuple[WeightRow, ...] = (), caption: str = "") -> CardInfo:
    """Everything a card shows about ``node``; ``rows``: the weights folded into it (``card_rows``);
    ``caption``: its module when no frame shows it (``card_text.module_caption``)."""
    return CardInfo(node.name, node_id, node.op, card_target_text(node, gm), shape_text(node), input_ports(node),
                    constants_text(node), not node.users and node.op != "output", rows, rejection_text(node),
                    card_target_line(node, gm), caption)


def folded_hosts(layout: Layout | None) -> dict[str, tuple[str, ...]]:
    """Host name → the weights folded into its card, as the layout left them out (``fold_weights``)."""
    inputs = layout.inputs if layout is not None else None
    hosts = inputs[1].hosts if inputs is not None else None
    return hosts or {}


class CanvasScene(QGraphicsScene):
    """The items of one graph's layout; ``show_graph`` builds or updates them from a new layout.

    Two levels: the detailed items (cards, edges, frames, each painting itself) and the overview
    (one item drawing everything in a few calls) for views zoomed out below ``style.LOD_PLAIN``;
    the view calls ``set_overview`` when its zoom crosses that line. Detailed items stay top-level
    so the BSP index hands the view only those in sight."""

    layout_changed = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.setBackgroundBrush(QColor(st.CANVAS_BACKGROUND))
        self.layout: Layout | None = None
        self.graph_module: torch.fx.GraphModule | None = None
        self.cards: dict[str, NodeCard] = {}
        self.edges: dict[tuple, EdgeItem] = {}
        self.frames: dict[str, GroupFrame] = {}
        self._titles: TitleGrid | None = None  # frame_titles_near's grid, built on first use
        self.group_cards: dict[str, GroupCard] = {}
        self.by_id: dict[int, NodeCard] = {}
        self.bounds = (0.0, 0.0, 0.0, 0.0)   # of the current layout
        self._overview_on = False
        # What the last ``show_graph`` did: items created, moved/resized or re-texted, removed
        # (per kind), and whether it was an incremental update. Tests and the bench read it.
        self.last_update: dict = {}
        self._touched_cards: set[str] = set()   # cards added/moved/re-texted/removed by the last update
        self._ops: dict[str, str] = {}
        self._label_of: dict[str, tuple] = {}   # source name -> key of the edge item showing its shape
        self._hosts: dict[str, tuple[str, ...]] = {}   # folded weights by host card (``folded_hosts``)
        self._single: set[str] = set()   # module paths holding one card (``card_text.single_card_paths``)
        self._row_cards: dict[int, NodeCard] | None = {}   # folded weight id -> its host's card (None: stale)
        self.overview = OverviewItem()
        self.overview.setVisible(False)
        self.addItem(self.overview)

    @property
    def touched_cards(self) -> set[str]:
        """Names of the cards the last update added, moved, re-texted or removed."""
        return self._touched_cards

    def set_overview(self, on: bool) -> None:
        """Show the recorded overview instead of the detailed items (or the reverse)."""
        if self._overview_on != on:
            self._overview_on = on
            self.overview.setVisible(on)
            for d in (self.cards, self.edges, self.frames, self.group_cards):
                for item in d.values():
                    item.setVisible(not on)

    def in_overview(self) -> bool:
        """True while the overview replaces the detailed items."""
        return self._overview_on

    def _add(self, item: QGraphicsItem) -> None:
        if self._overview_on:
            item.setVisible(False)
        self.addItem(item)

    # -- building -----------------------------------------------------------------------------
    def show_graph(self, gm: torch.fx.GraphModule, layout: Layout, id_of: Callable[[torch.fx.Node], int],
                   refresh: set[str] | None = None, nodes: dict[str, torch.fx.Node] | None = None) -> None:
        """Show ``layout`` of ``gm``'s graph: cards are matched by node name and updated in place.

        ``refresh``: names of the nodes whose content may have changed (None: all of them); other
        existing cards only move. ``nodes``: those nodes by name; with them, a layout that only
        rerouted some edges of the one shown (``Layout.delta``) redraws just those edges and cards."""
        base = self.layout
        if (refresh is not None and layout.delta is not None and base is not None
                and layout.delta[0] == base.serial and nodes is not None):
            if self._apply_delta(gm, layout, id_of, refresh, nodes):
                return
        self.graph_module = gm
        self.layout = layout
        self.last_update = dict.fromkeys(
            ("cards_added", "cards_moved", "cards_retexted", "cards_removed", "groups_added", "groups_moved",
             "groups_removed", "edges_added", "edges_rerouted", "edges_removed"), 0)
        self.last_update["incremental"] = refresh is not None
        refresh = self._rows_refresh(layout, refresh)
        nodes = {n.name: n for n in gm.graph.nodes}
        single = self._single
        if refresh is None or base is None or base.nodes.keys() != layout.nodes.keys():   # cards came or went
            single = single_card_paths(nodes[n].meta.get(META_MODULE_PATH) or "" for n in layout.nodes if n in nodes)
        refresh = _captions_refresh(base, layout, nodes, refresh, self._single ^ single)
        self._single = single
        self._sync_cards(nodes, layout, id_of, refresh)
        self._sync_groups(layout)
        self._sync_edges(nodes, layout, refresh)
        x0, y0, x1, y1 = self.bounds = bounds(layout)
        self._ops = {name: c.info.op for name, c in self.cards.items()}
        self.overview.set_layout(layout, self._ops, self.bounds)
        m = 200.0
        self.setSceneRect(QRectF(x0 - m, y0 - m, (x1 - x0) + 2 * m, (y1 - y0) + 2 * m))
        self.layout_changed.emit()

    def _rows_refresh(self, layout: Layout, refresh: set[str] | None) -> set[str] | None:
        """``refresh`` plus the hosts whose folded weights changed since the shown layout."""
        old, new = self._hosts, folded_hosts(layout)
        self._hosts = new
        self._row_cards = None
        if refresh is None or old is new or old == new:
            return refresh
        return set(refresh) | {h for h in old.keys() | new.keys() if old.get(h) != new.get(h)}

    def info_of(self, node: torch.fx.Node, id_of) -> CardInfo:
        """What ``node``'s card shows now, its folded weights' rows included."""
        folded = self._hosts.get(node.name, ())
        rows = weight_rows(node, folded, id_of) if folded else ()
        caption = module_caption(node, self.layout.groups, self._single) if self.layout is not None else ""
        return card_info(node, id_of(node), self.graph_module, rows, caption)

    def row_card(self, node_id: int) -> NodeCard | None:
        """The card showing the folded weight ``node_id`` as a row, or None."""
        if self._row_cards is None:
            self._row_cards = {r.node_id: card for host in self._hosts
                               if (card := self.cards.get(host)) is not None for r in card.info.rows}
        return self._row_cards.get(node_id)

    def _apply_delta(self, gm, layout: Layout, id_of, refresh: set[str], nodes: dict[str, torch.fx.Node]) -> bool:
        """Show a layout that differs from the shown one only in the input routes of ``layout.delta``'s
        nodes (``layout_reroute``): every card and frame stays; those routes, the cards in
        ``refresh`` and the shape labels of the edges' sources are redone. False (nothing done)
        when a node it needs is not in ``nodes``."""
        base, index = self.layout, layout.lanes[0] if layout.lanes is not None else None
        dsts = layout.delta[1]
        if index is None or base.lanes is None or not dsts <= nodes.keys() or not dsts <= self.cards.keys():
            return False
        old_routes = [r for d in dsts for r in _slice(base.edges, routes_into(base, index[d]))]
        routes = [r for d in sorted(dsts, key=index.get) for r in _slice(layout.edges, routes_into(layout, index[d]))]
        sources = {r.src for r in old_routes} | {r.src for r in routes}
        if not sources <= nodes.keys():
            return False
        self.graph_module = gm
        self.layout = layout
        refresh = self._rows_refresh(layout, refresh)
        stats = self.last_update = dict.fromkeys(
            ("cards_added", "cards_moved", "cards_retexted", "cards_removed", "groups_added", "groups_moved",
             "groups_removed", "edges_added", "edges_rerouted", "edges_removed"), 0)
        stats["incremental"] = True
        stats["geometry"] = False   # no card or frame moved: the minimap stays as it is
        touched = self._touched_cards = set()
        for name in refresh:
            card, node = self.cards.get(name), nodes.get(name)
            if card is None or node is None:
                continue
            info = self.info_of(node, id_of)
            if card.info != info:
                card.set_info(info)
                stats["cards_retexted"] += 1
                touched.add(name)
        edges = self.edges
        for k in _keys(old_routes):
            item = edges.pop(k, None)
            if item is not None:
                self.removeItem(item)
                stats["edges_removed"] += 1
        # One shape label per source, on its first route in layout order (as ``_sync_edges`` puts it):
        # that route feeds the source's first user in graph order.
        first: dict[str, tuple | None] = {}
        for name in sources:
            users = [index[u.name] for u in nodes[name].users if u.name in index]
            block = _slice(layout.edges, routes_into(layout, min(users))) if users else []
            first[name] = next(((r.src, r.dst, r.key, 0) for r in block if r.src == name), None)
        labels = {name: edge_label(nodes[name]) for name in sources}
        for route, k in zip(routes, _keys(routes)):
            item = EdgeItem(route, self._port_route(route, k[3]), labels[route.src] if first[route.src] == k else "")
            box = layout.nodes[route.dst]
            item.source_points = route.points
            item.anchor = (box.x, box.y, box.w, box.h, id(self.cards[route.dst].info))
            self._add(item)
            edges[k] = item
            stats["edges_added"] += 1
        for name in sources:
            old, new = self._label_of.get(name), first[name]
            if old != new and old in edges and edges[old].label:
                edges[old].set_label("")
            label = labels[name] if new is not None else ""
            if new in edges and edges[new].label != label:
                edges[new].set_label(label)
            if label:
                self._label_of[name] = new
            else:
                self._label_of.pop(name, None)
        # The zoomed-out overview draws every route: it follows the new ones (prepared when next painted).
        for name in touched:
            self._ops[name] = self.cards[name].info.op
        self.overview.set_layout(layout, self._ops, self.bounds)
        self.layout_changed.emit()
        return True

    def clear_graph(self) -> None:
        """Remove every item (no document open)."""
        for d in (self.cards, self.edges, self.frames, self.group_cards):
            for item in d.values():
                self.removeItem(item)
            d.clear()
        self.by_id.clear()
        self._label_of = {}
        self._hosts, self._row_cards, self._single = {}, {}, set()
        self.overview.set_layout(Layout(), {})
        self.layout = None
        self.graph_module = None
        self.setSceneRect(QRectF(0, 0, 1, 1))
        self.layout_changed.emit()

    def _sync_cards(self, nodes, layout: Layout, id_of, refresh) -> None:
        # Each card remembers the box it was last placed at (``box_key``), so an unchanged card
        # costs a tuple comparison and no call into Qt.
        old = self.cards
        keep = {}
        stats = self.last_update
        touched = self._touched_cards = set()
        ids_changed = False
        for name, box in layout.nodes.items():
            if name not in nodes:
                continue
            card = old.get(name)
            key = (box.x, box.y, box.w, box.h)
            if card is None:
                node = nodes[name]
                card = NodeCard(self.info_of(node, id_of), box)
                card.box_key = key
                self._add(card)
                stats["cards_added"] += 1
                touched.add(name)
                ids_changed = True
            else:
                if refresh is None or name in refresh:
                    node = nodes[name]
                    info = self.info_of(node, id_of)
                    if card.info != info:
                        ids_changed |= info.node_id != card.info.node_id
                        card.set_info(info)
                        stats["cards_retexted"] += 1
                        touched.add(name)
                if card.box_key != key:
                    if (box.x, box.y) != (card.x(), card.y()) or (box.w, box.h) != card.size():
                        card.set_box(box)
                        stats["cards_moved"] += 1
                        touched.add(name)
                    card.box_key = key
            keep[name] = card
        if len(keep) != len(old) or stats["cards_added"]:
            for name in old.keys() - keep.keys():
                self.removeItem(old[name])
                stats["cards_removed"] += 1
                touched.add(name)
                ids_changed = True
        self.cards = keep
        if ids_changed or len(self.by_id) != len(keep):
            self.by_id = {c.info.node_id: c for c in keep.values()}

    def _sync_groups(self, layout: Layout) -> None:
        frames, gcards = {}, {}
        stats = self.last_update
        # A frame around the calls of one leaf submodule only repeats what its cards say.
        called = {str(n.target) for n in self.graph_module.graph.nodes if n.op == "call_module"}
        parents = {p.rsplit(".", 1)[0] for p in layout.groups if "." in p}
        leaves = called - parents
        for path, g in layout.groups.items():
            if g.collapsed:
                item = self.group_cards.pop(path, None)
                if item is None:
                    item = GroupCard(g)
                    self._add(item)
                    stats["groups_added"] += 1
                elif item.group is not g and item.group != g:
                    item.set_group(g)
                    stats["groups_moved"] += 1
                gcards[path] = item
            elif path not in leaves:
                item = self.frames.pop(path, None)
                if item is None:
                    item = GroupFrame(g)
                    self._add(item)
                    stats["groups_added"] += 1
                elif item.group is not g and item.group != g:
                    item.set_group(g)
                    stats["groups_moved"] += 1
                frames[path] = item
        for item in list(self.frames.values()) + list(self.group_cards.values()):
            self.removeItem(item)
            stats["groups_removed"] += 1
        self.frames, self.group_cards = frames, gcards
        self._titles = None

    def frame_titles_near(self, rect: QRectF) -> list[QRectF]:
        """The title bands of the module frames that meet ``rect``: where an edge's shape label
        should not go (a grid built on first use after the frames changed)."""
        if self._titles is None:
            self._titles = TitleGrid(QRectF(f.group.x, f.group.y, f.group.w, st.FRAME_LABEL_H)
                                     for f in self.frames.values())
        return self._titles.meeting(rect)

    def _sync_edges(self, nodes, layout: Layout, refresh) -> None:
        # Updated in place: an unchanged edge costs a key, a lookup and a route comparison.
        edges = self.edges
        seen: dict[tuple, int] = {}
        labelled: set[str] = set()
        label_of = self._label_of = {}
        cards = self.cards
        boxes = layout.nodes
        stats = self.last_update
        touched = self._touched_cards
        found = 0
        for route in layout.edges:
            base = (route.src, route.dst, route.key)
            n = seen.get(base, 0)
            seen[base] = n + 1
            k = base + (n,)
            item = edges.get(k)
            if item is not None:
                found += 1
                if (refresh is not None and route.src not in refresh and route.dst not in touched
                        and item.source_points == route.points):
                    # Same route into the same (unmoved, unchanged) card, same source: nothing to redo.
                    item.route = route
                    if item.label:
                        labelled.add(route.src)
                        label_of[route.src] = k
                    continue
            card = cards.get(route.dst)
            # The card sits at its layout box (``_sync_cards``).
            if card is not None:
                box = boxes[route.dst]
                anchor = (box.x, box.y, box.w, box.h, id(card.info))
            else:
                anchor = None
            points = self._port_route(route, n)
            src = nodes.get(route.src)
            # One shape label per source: its other out-edges carry the same tensor.
            label = edge_label(src) if src is not None and route.src not in labelled else ""
            if label:
                labelled.add(route.src)
                label_of[route.src] = k
            if item is None or item.label != label:
                if item is not None:
                    self.removeItem(item)
                    stats["edges_removed"] += 1
                item = EdgeItem(route, points, label)
                self._add(item)
                stats["edges_added"] += 1
            else:
                item.route = route
                if tuple(points) != item.points:
                    item.set_points(points)
                    stats["edges_rerouted"] += 1
            item.source_points, item.anchor = route.points, anchor
            edges[k] = item
        if found < len(edges) - stats["edges_added"] + stats["edges_removed"]:
            # Some previous edges have no route any more.
            for k in [k for k in edges if seen.get(k[:3], 0) <= k[3]]:
                self.removeItem(edges.pop(k))
                stats["edges_removed"] += 1

    def _port_route(self, route, occurrence: int) -> list[tuple[float, float]]:
        """The route with its end moved onto the matching input port of the card it feeds."""
        pts = list(route.points)
        card = self.cards.get(route.dst)
        if card is None or len(pts) < 2:
            return pts
        matches = [i for i, p in enumerate(card.info.ports) if p.src == route.src and p.key == route.key]
        if not matches:
            return pts
        port = card.port_pos(matches[min(occurrence, len(matches) - 1)])
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

        Returns False (and changes nothing) when a node has no card, was renamed, or its inputs
        differ from its ports: then the caller relays out."""
        infos = []
        for node in nodes:
            card = self.cards.get(node.name)
            if card is None or card.info.node_id != id_of(node):
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
        for (src, _, _, _), edge in self.edges.items():
            if src in labels and edge.label and edge.label != labels[src]:
                edge.set_label(labels[src])
        return True

    # -- queries used by the view ---------------------------------------------------------------
    def card_at(self, pos: QPointF, tolerance: float = 0.0) -> NodeCard | None:
        """The node card under ``pos`` (scene coordinates), ports included; ``tolerance`` widens
        the hit area (used when zoomed out, where a card is smaller than a pixel)."""
        if self.in_overview():
            best, best_d = None, None
            px, py = pos.x(), pos.y()
            for name, (x, y, w, h) in self.overview.boxes.items():
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


def _slice(edges: list, bounds: tuple[int, int]) -> list:
    return edges[bounds[0]:bounds[1]]


def _keys(routes) -> list[tuple]:
    """Scene keys (src, dst, key, occurrence) of routes listed in layout order."""
    seen: dict[tuple, int] = {}
    out = []
    for r in routes:
        base = (r.src, r.dst, r.key)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base + (n,))
    return out
