"""Zoom, fit and keyboard stepping of the canvas (``CanvasNavigation``, a mixin of ``GraphCanvas``):
the scale and scroll of the view and moving the selection along edges, apart from the event
handlers that call them."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt

from fxstudio.qt import views_ahead
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.realize import realize_view

MIN_SCALE, MAX_SCALE = 0.003, 4.0
ZOOM_STEP = 1.25
MIN_READABLE_ZOOM = 0.6   # "fit" never goes below this: card names stay legible (titles ~9 px)
MAX_FIT_ZOOM = 1.0        # nor above 100 %: a narrow graph is not blown up
FIRST_SCREEN_ZOOM = 0.85  # a graph taller than the view opens at most this close (titles ~13 px,
                          # as large as Netron's): its first screen holds more of the computation


class CanvasNavigation:
    """Zoom, fit, centring and selection stepping for a ``QGraphicsView`` showing a ``CanvasScene``
    (``self.canvas_scene``), with ``self.selection``, ``self.document``, ``self.flush()`` and a
    ``zoom_changed`` signal. ``fresh_view``: True while the view is the opening one (``show_start``)
    and nothing moved it since."""

    fresh_view = False

    def zoom(self) -> float:
        """The current scale (1.0 = one scene unit per pixel)."""
        return self.transform().m11()

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        """Zoom by ``factor`` keeping the scene point under ``anchor`` (viewport pixels) in place."""
        self.fresh_view = False
        if anchor is None:
            anchor = QPointF(self.viewport().rect().center())
        new_scale = min(max(self.zoom() * factor, MIN_SCALE), MAX_SCALE)
        factor = new_scale / self.zoom()
        if abs(factor - 1.0) < 1e-9:
            return
        before = self.mapToScene(anchor.toPoint())
        self.scale(factor, factor)
        self._update_scroll_area()
        centre = QPointF(self.viewport().rect().center())
        self.centerOn(before + (centre - anchor) / new_scale)
        self._sync_lod()
        self.zoom_changed.emit(new_scale)

    def _update_scroll_area(self) -> None:
        """Let the graph be scrolled anywhere on screen: the scrollable area is the layout plus
        one viewport of margin on every side (at the current zoom)."""
        x0, y0, x1, y1 = self.canvas_scene.bounds
        z = self.zoom()
        mx, my = self.viewport().width() / z * 0.9, self.viewport().height() / z * 0.9
        self.setSceneRect(QRectF(x0 - mx, y0 - my, (x1 - x0) + 2 * mx, (y1 - y0) + 2 * my))

    def _sync_lod(self) -> None:
        """Use the recorded overview when cards would be plain boxes anyway (fast at 100k nodes)."""
        self.canvas_scene.set_overview(self.zoom() < st.LOD_PLAIN)
        realize_view(self)   # the cards and edges in view (made as they come in sight)

    def fit_readable(self) -> None:
        """Fit the graph's width (its widest layer with every frame around it) in the view, at a
        zoom between ``MIN_READABLE_ZOOM`` (names legible) and 100 %, and scroll to the top of the
        graph, where its inputs are. A graph readable whole at that zoom is shown whole, centred."""
        self.flush()
        self.fresh_view = False
        layout = self.canvas_scene.layout
        if layout is None or not (layout.nodes or layout.groups):
            return
        x0, y0, x1, y1 = self.canvas_scene.bounds   # cards and frames: at least the widest layer
        left, right = x0, x1
        vp = self.viewport().rect()
        m = 30.0   # scene margin around the graph
        z = min(max(vp.width() / (right - left + 2 * m), MIN_READABLE_ZOOM), MAX_FIT_ZOOM)
        self._set_zoom(z)
        if (y1 - y0 + 2 * m) * z <= vp.height() and (right - left + 2 * m) * z <= vp.width():
            self.centerOn(QRectF(x0, y0, x1 - x0, y1 - y0).center())
        else:
            if (right - left + 2 * m) * z <= vp.width() + 1:
                cx = (left + right) / 2
            else:   # wider than the view even at the smallest legible zoom: the inputs, centred
                first = min(b.layer for b in layout.nodes.values()) if layout.nodes else 0
                top = [b for b in layout.nodes.values() if b.layer == first] or list(layout.groups.values())
                cx = (min(b.x for b in top) + max(b.x + b.w for b in top)) / 2
            self.centerOn(QPointF(cx, y0 - m + vp.height() / 2 / z))
        self._sync_lod()
        self.zoom_changed.emit(self.zoom())

    def open_at_inputs(self) -> None:
        """The opening view, as Netron opens: a graph that fits at 100 % is shown whole, centred,
        at 100 % (a small graph is never blown up, nor shrunk to fit); a bigger one opens at its
        inputs and first operations: the top of the graph, at the zoom that fits the width of what the first
        screen holds (never below ``MIN_READABLE_ZOOM``, never above 100 %), centred on the inputs
        but never leaving an empty band beside that part of the graph. The inputs are the one that
        feeds most of the computation and what it feeds (``layout.feeding_input``): GPT-2's export
        opens on ``input_ids → embedding → …``, not on ``use_cache`` and position plumbing."""
        self.flush()
        layout = self.canvas_scene.layout
        if layout is None or not (layout.nodes or layout.groups):
            return
        x0, y0, x1, y1 = self.canvas_scene.bounds
        vp = self.viewport().rect()
        m = 30.0
        z = min(max(min(vp.width() / (x1 - x0 + 2 * m), vp.height() / (y1 - y0 + 2 * m)), 0.0), MAX_FIT_ZOOM)
        if z >= MAX_FIT_ZOOM:
            self._set_zoom(z)
            self.centerOn(QRectF(x0, y0, x1 - x0, y1 - y0).center())
        else:
            boxes = list(layout.nodes.values()) + [g for g in layout.groups.values() if g.collapsed]
            first = min(b.layer for b in boxes)
            inputs = [b for b in boxes if b.layer == first]
            fed = self._fed_boxes(layout)
            if fed:
                inputs, boxes = fed[:1], fed
            cx = (min(b.x for b in inputs) + max(b.x + b.w for b in inputs)) / 2
            z = FIRST_SCREEN_ZOOM
            for _ in range(3):   # the width of what the first screen shows depends on the zoom
                bottom = y0 - m + vp.height() / z
                top = _cluster([b for b in boxes if b.y < bottom] or boxes, cx, vp.width() / z / 3)
                left, right = min(b.x for b in top), max(b.x + b.w for b in top)
                z = min(max(vp.width() / (right - left + 2 * m), MIN_READABLE_ZOOM), FIRST_SCREEN_ZOOM)
            self._set_zoom(z)
            half = vp.width() / 2 / z
            if right - left + 2 * m <= 2 * half:
                cx = (left + right) / 2
            else:   # keep the view over the graph: no empty band left or right of it
                cx = min(max(cx, left - m + half), right + m - half)
            self.centerOn(QPointF(cx, y0 - m + vp.height() / 2 / z))
        self._sync_lod()
        self.zoom_changed.emit(self.zoom())

    def viewport_pos_of(self, name: str, where: str = "center") -> QPoint:
        """Viewport pixel of a card's centre (``where="center"``) or of its first input port (``"port:K"``)."""
        card = self.canvas_scene.cards[name]
        if where.startswith("port:"):
            key = where[5:]
            idx = next(i for i, p in enumerate(card.info.ports) if str(p.key) == key)
            return self.mapFromScene(card.port_pos(idx))
        return self.mapFromScene(card.sceneBoundingRect().center())

    def _edge_scroll(self, p: QPoint, margin: int = 24) -> None:
        """While rewiring, moving near the border scrolls the view toward a source off screen."""
        vp = self.viewport().rect()
        dx = min(p.x() - margin, 0) + max(p.x() - (vp.width() - margin), 0)
        dy = min(p.y() - margin, 0) + max(p.y() - (vp.height() - margin), 0)
        if dx:
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() + dx)
        if dy:
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() + dy)

    def _fed_boxes(self, layout) -> list:
        """The cards of the input that feeds most of the graph (first) and of what it feeds; empty
        when no input feeds anything."""
        from fxstudio.core.layout import feeding_input

        cached = getattr(self, "_fed", None)
        if cached is not None and cached[0] == layout.serial:   # a resize of the opening view asks again
            return cached[1]
        found = None
        if self.document is not None:
            graph = self.document.edited.graph
            ahead = views_ahead.take(graph, "feeding_input", None, self.document.serial)
            found = ahead[0] if ahead is not None else feeding_input(graph)
        boxes = []
        if found is not None and found[0] in layout.nodes:
            name, fed = found
            boxes = [layout.nodes[name]] + [b for n, b in layout.nodes.items() if n in fed and n != name]
        self._fed = (layout.serial, boxes)
        return boxes

    def set_fold_weights(self, on: bool) -> None:
        """Draw weights used by one op as rows of its card (True) or as cards of their own, keeping
        the centre of the view on the same node where it can."""
        if on == self.fold_weights:
            return
        self.flush()
        self.fold_weights = on
        if self.document is None or self.canvas_scene.layout is None:
            return
        centre = self.mapToScene(self.viewport().rect().center())
        scene = self.canvas_scene
        near = min(scene.live_cards.values(), default=None,   # the card nearest the centre stays put
                   key=lambda c: (c.x() + c.size()[0] / 2 - centre.x()) ** 2 + (c.y() - centre.y()) ** 2)
        before = QPointF(near.x(), near.y()) if near is not None else None
        name = near.info.name if near is not None else None
        self._relayout(previous=None)
        card = scene.cards.get(name) if name is not None else None
        if card is not None and before is not None:
            self.centerOn(centre + QPointF(card.x(), card.y()) - before)

    def _set_zoom(self, z: float) -> None:
        z = min(max(z, MIN_SCALE), MAX_SCALE)
        self.setTransform(self.transform().fromScale(z, z))
        self._update_scroll_area()

    def reset_zoom(self) -> None:
        """Zoom to 100 % around the centre of the view."""
        self.zoom_by(1.0 / self.zoom())

    def fit(self) -> None:
        """Fit the whole graph in the view (never magnifying past 1.5×): Fit All, Shift+F."""
        self.flush()
        self.fresh_view = False
        layout = self.canvas_scene.layout
        if layout is None or not (layout.nodes or layout.groups):
            return
        x0, y0, x1, y1 = self.canvas_scene.bounds
        rect = QRectF(x0, y0, x1 - x0, y1 - y0).adjusted(-30, -30, 30, 30)
        self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        if self.zoom() > 1.5:
            self.zoom_by(1.5 / self.zoom())
        self._update_scroll_area()
        self.centerOn(rect.center())
        self._sync_lod()
        self.zoom_changed.emit(self.zoom())

    def center_on_node(self, node_id: int) -> bool:
        """Scroll so the node's card is visible (centred if it was off screen); False if not shown."""
        self.flush()
        item = self.canvas_scene.by_id.get(node_id) or self.canvas_scene.row_card(node_id)   # or its row's card
        if item is None and self.document is not None:   # inside a collapsed module: go to its card
            node = self.document.node(node_id)
            path = self.document.module_path_of(node) if node is not None else ""
            while path and item is None:
                item = self.canvas_scene.group_cards.get(path)
                path = path.rpartition(".")[0]
        if item is None:
            return False
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        if not visible.contains(item.sceneBoundingRect()):
            self.fresh_view = False
            self.centerOn(item.sceneBoundingRect().center())
        return True

    def step_selection(self, direction: str) -> bool:
        """Move the selection along the graph from the current node: ``"up"`` to its first shown
        input, ``"down"`` to its first shown user, ``"left"``/``"right"`` to the nearest card of
        the same layer; the new card is scrolled into view. False when there is nowhere to go."""
        self.flush()
        scene, layout = self.canvas_scene, self.canvas_scene.layout
        current = self.selection.current()
        card = scene.by_id.get(current) if current is not None else None
        if card is None or layout is None or self.document is None:
            return False
        name = card.info.name
        target = None
        if direction == "up":
            target = next((p.src for p in card.info.ports if p.src in scene.cards), None)
        elif direction == "down":
            node = self.document.find(name)
            users = [u.name for u in node.users if u.name in scene.cards] if node is not None else []
            if users:   # the main path first: the user nearest below, then the leftmost
                box = layout.nodes[name]
                target = min(users, key=lambda u: (layout.nodes[u].layer, abs(layout.nodes[u].x - box.x)))
        else:
            box = layout.nodes.get(name)
            if box is not None:
                sign = -1 if direction == "left" else 1
                row = [(sign * (b.x - box.x), n) for n, b in layout.nodes.items()
                       if b.layer == box.layer and sign * (b.x - box.x) > 0 and n in scene.cards]
                target = min(row)[1] if row else None
        if target is None:
            return False
        self.selection.set([scene.cards[target].info.node_id])
        return True


def _cluster(boxes: list, x: float, gap: float) -> list:
    """The boxes of the horizontal cluster around ``x``: those not cut off from it by an empty
    stretch wider than ``gap`` (a graph's main column, without the plumbing laid out far aside)."""
    spans = sorted(boxes, key=lambda b: b.x)
    groups: list[list] = []
    right = None
    for b in spans:
        if right is None or b.x - right > gap:
            groups.append([])
            right = b.x + b.w
        groups[-1].append(b)
        right = max(right, b.x + b.w)
    for group in groups:
        if min(b.x for b in group) - gap / 2 <= x <= max(b.x + b.w for b in group) + gap / 2:
            return group
    return min(groups, key=lambda g: min(abs(b.x + b.w / 2 - x) for b in g))
