"""``GraphCanvas``: the node canvas of the editor window (a QGraphicsView over a ``CanvasScene``).

Gestures: click a card to select it (Ctrl+click adds), drag on empty space to pan, the arrow keys
to move the selection along edges (or pan when nothing is selected), the wheel or +/- to zoom
around the cursor, F to fit readably (Shift+F: all), Ctrl+F to search (Enter/F3 cycle), F2 or
Enter to edit the selected node's first argument (``edit_requested``), click a frame's toggle to
collapse or expand a module, and drag from an input port onto another card to rewire. The canvas
never edits the graph: a rewire is one ``document.apply_edit`` call and a refusal is emitted as
``edit_refused(reason)``. ``CANVAS_KEYS`` lists the keys for Help ▸ Keyboard Shortcuts.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QFrame, QGraphicsView, QToolTip, QWidget

from fxstudio.core.errors import EditRefused
from fxstudio.qt.canvas.card_rows import mark_selected_rows
from fxstudio.qt.canvas.hint import CanvasHint, place_hint
from fxstudio.qt.canvas import large_fold
from fxstudio.qt.canvas.items import GroupCard
from fxstudio.qt.canvas.large_fold import EditLayouts, FoldToggles
from fxstudio.qt.canvas.minimap import Minimap
from fxstudio.qt.canvas.navigation import MIN_READABLE_ZOOM, ZOOM_STEP, CanvasNavigation  # noqa: F401 (re-exported)
from fxstudio.qt.canvas.overlays import CanvasOverlays
from fxstudio.qt.canvas.realize import decorate_card, realize_view
from fxstudio.qt.canvas.repeat_fold import RepeatFolding
from fxstudio.qt.canvas.rewire import RewireDrag
from fxstudio.qt.canvas.scene import CanvasScene
from fxstudio.qt.canvas.search import CanvasSearch, SearchBar
from fxstudio.qt.canvas.selection_band import SelectionBand
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt import views_ahead
from fxstudio.qt.selection import SelectionModel

PORT_HINT = "Drag onto another card to feed this input from it"
# The keys the canvas handles itself (the window's actions list their own shortcuts).
CANVAS_KEYS: tuple[tuple[str, str], ...] = (
    ("Up", "Select an input of the selected node (pans when nothing is selected)"),
    ("Down", "Select a user of the selected node"),
    ("Left / Right", "Select the neighbour in the same layer"),
    ("F2 / Enter", "Edit the selected node's first argument in Properties"),
    ("+ / -", "Zoom in / out around the cursor"),
    ("F / Shift+F", "Fit readably (widest layer, inputs in view) / fit the whole graph"),
    ("F3 / Shift+F3", "Next / previous search match"),
    ("Escape", "Cancel a rewire drag, close the find bar, else clear the selection"),
    ("Drag an input port", "Rewire: feed that input from the card it is dropped on"),
    ("Shift+drag / Ctrl+drag on empty space", "Select the cards inside the band / add them to the selection"),
)
MINIMAP_DELAY_MS = 150   # minimap repaint after an incremental redraw (see _layout_changed)
MINIMAP_DEFER_CARDS = 20_000   # a bigger graph opens with its canvas first, the minimap a moment later


class GraphCanvas(CanvasNavigation, CanvasSearch, CanvasOverlays, QGraphicsView):
    """The canvas of one document's edited graph, following ``selection`` and the document's events.

    Overlays (``overlays.py``): ``set_divergence(scores)`` tints cards by a run's divergence,
    ``set_diff(diff)`` rings added/changed nodes, ``show_changes(bool)``/``show_divergence(bool)``."""

    PORT_HINT = PORT_HINT
    edit_refused = Signal(str)
    zoom_changed = Signal(float)
    edit_requested = Signal(int)      # F2/Enter on a selected card: the node id to edit
    status_hint = Signal(str)         # a hint for the status bar ("" clears it)
    minimap_toggled = Signal(bool)    # the minimap was expanded (True) or collapsed by its toggle

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        # The view does not own its scene: keep the reference here, and parent it for Qt too.
        self.canvas_scene = CanvasScene()
        super().__init__(self.canvas_scene, parent)
        self.canvas_scene.setParent(self)
        self.canvas_scene.card_made = lambda card: decorate_card(self, card)   # cards made as they come in view
        self.canvas_scene.frame_made = self.frame_line
        self.selected_ids: set[int] = set()
        self.selection = selection
        self.document = None
        self.collapsed: set[str] = set()
        self.repeats = RepeatFolding()   # View ▸ Fold Repeated Blocks (repeat_fold.py)
        self.fold_toggles = FoldToggles(self)   # module groups opened and folded (large_fold.py)
        self.edit_layouts = EditLayouts(self)   # a large folded graph's relayout after an edit (large_fold.py)
        self.fold_weights = True   # weights used by one op are rows of its card (View ▸ Fold Weights into Cards)
        self._subscription = DocumentSubscription(self._on_event)
        self._pending: list = []      # document events not drawn yet
        self._drag: RewireDrag | None = None
        self._drag_press: QPoint | None = None   # where a rewire drag started (a click selects)
        self._port_hover = False
        self._pan_from: QPoint | None = None
        self._band: SelectionBand | None = None   # a Shift/Ctrl+drag on empty space (selection_band.py)
        self._panned = False
        self._matches: list[str] = []
        self._row_selected: list = []   # cards marking a selected folded weight's row
        self._match_index = -1
        self._pattern = ""

        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlags(QGraphicsView.OptimizationFlag.DontSavePainterState
                                  | QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing)
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheBackground)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setDragMode(QGraphicsView.DragMode.NoDrag)
        self.setFrameShape(QFrame.Shape.NoFrame)
        # Navigation is by drag, keys, wheel and the minimap; scroll bars would only take room.
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)

        self.minimap = Minimap(self)
        self.minimap.navigate.connect(self.centerOn)
        self.minimap.expanded_changed.connect(self._minimap_expanded)
        self.minimap.resized.connect(self._place_overlays)
        # After an incremental redraw the thumbnail (one rectangle per card: ~0.1 s at 10k nodes)
        # is repainted a little later, so the first paint after an edit does not wait for it.
        self._minimap_timer = QTimer(self)
        self._minimap_timer.setSingleShot(True)
        self._minimap_timer.setInterval(MINIMAP_DELAY_MS)
        self._minimap_timer.timeout.connect(self._redraw_minimap)
        self.search_bar = SearchBar(self)
        self.search_bar.pattern_changed.connect(self.search)
        self.search_bar.next_requested.connect(self.next_match)
        self.search_bar.select_all_requested.connect(self.select_all_matches)
        self.search_bar.previous_requested.connect(self.previous_match)
        self.search_bar.closed.connect(lambda: (self.search(""), self.setFocus()))
        self._init_overlays()
        self.hint = CanvasHint(self)
        self.hint.dismissed.connect(self._place_overlays)   # its band goes with it
        self._hint_enabled = False
        self.canvas_scene.layout_changed.connect(self._layout_changed)
        self.horizontalScrollBar().valueChanged.connect(self._view_moved)
        self.verticalScrollBar().valueChanged.connect(self._view_moved)
        selection.changed.connect(self._selection_changed)

    # -- document -----------------------------------------------------------------------------
    def set_document(self, doc) -> None:
        """Show ``doc``'s edited graph (or nothing for None) and follow its events."""
        self._subscription.follow(doc)
        self._cancel_drag()
        self._pending = []
        if doc is None or self.document is None or _model(doc) != _model(self.document):
            self.reset_search()   # another model: the last one's query means nothing here
        self.document = doc
        self.fold_toggles.cancel()
        self.edit_layouts.cancel()
        self.collapsed = large_fold.opening_collapsed(self, doc) if doc is not None else set()
        self.repeats.reset()
        self.clear_overlays()   # a run's divergence and a diff belong to the document they came from
        if doc is None:
            self.canvas_scene.clear_graph()
            self._sync_hint()
            return
        self._relayout(previous=None)
        self.show_start()
        self._sync_hint()

    def set_first_run_hint(self, enabled: bool) -> None:
        """Show the first-run hint (how to select, rewire, navigate) while a graph is open."""
        self._hint_enabled = enabled
        self._sync_hint()

    def _sync_hint(self) -> None:
        self.hint.setVisible(self._hint_enabled and self.document is not None)
        self._place_overlays()

    def event(self, event) -> bool:  # noqa: N802 (Qt override)
        """F2 on a selected card belongs to the canvas (docs/notes/canvas.md), not to a window shortcut."""
        if (event.type() == QEvent.Type.ShortcutOverride and event.key() == Qt.Key.Key_F2
                and not event.modifiers() and self.selection.current() is not None):
            event.accept()
            return True
        return super().event(event)

    def show_start(self) -> None:
        """The opening view: the whole graph when it fits at 100 %, else its inputs and first
        operations at a readable zoom (``open_at_inputs``), as Netron opens; Shift+F fits all.
        Until the user moves the view, a resize (the window shown, its docks sized) opens it again."""
        self.open_at_inputs()
        self.fresh_view = True

    def _relayout(self, previous, refresh: set[str] | None = None, changed: list | None = None,
                  nodes: dict | None = None) -> None:
        from fxstudio.core.layout import compute_layout

        gm = self.document.edited
        layout = views_ahead.take(gm.graph, "layout", views_ahead.canvas_settings(self).key, self.document.serial)
        if layout is None and self.edit_layouts.wanted(previous):   # a large folded graph: in a worker
            self.edit_layouts.start(previous, refresh, changed, nodes)
            return
        if layout is None:   # not laid out ahead by the worker that made this graph
            layout = compute_layout(gm.graph, collapsed=frozenset(self.collapsed), previous=previous, changed=changed,
                                    fold_weights=self.fold_weights, merged=self.repeats.merged)
        self.repeats.label(layout)
        scene = self.canvas_scene
        scene.show_graph(gm, layout, self.document.id_of, refresh, nodes)
        if scene.last_update.get("geometry") is False:
            # Only some edges and re-texted cards were redone: the other cards keep their overlays
            # and selection marks.
            touched = [scene.live_cards[n] for n in scene.touched_cards if n in scene.live_cards]
            self._apply_overlays([c.info.node_id for c in touched])
            self._apply_selection(scroll=False, cards=touched)
        else:
            self._apply_overlays()   # new and renamed cards get their tint and ring back
            self._apply_selection(scroll=False)
        if self._pattern:
            self._rematch()
        self._sync_lod()

    def _on_event(self, event) -> None:
        """Queue a redraw for an edit, undo, redo or reset event.

        Events arriving together (a history jump undoes many commands) are drawn once, on the next
        turn of the event loop; ``flush()`` draws at once."""
        if event.kind == "saved" or not shiboken6.isValid(self):   # closed canvas, live document
            return
        self._cancel_drag()
        self._pending.append(event)
        if len(self._pending) == 1:
            QTimer.singleShot(0, self.flush)

    def redraw_pending(self) -> bool:
        """True while document events wait to be drawn."""
        return bool(self._pending)

    def flush(self) -> None:
        """Draw the queued document events now: incremental layout, cards updated in place.

        A failure here must not break the document's other subscribers: the canvas falls back to a
        full relayout, and if that fails too it reports the problem instead of raising."""
        if not shiboken6.isValid(self):
            return
        events, self._pending = self._pending, []
        if not events or self.document is None:
            return
        try:
            if self.repeats.refresh(self, events):   # blocks that differ now: fold anew, lay out anew
                self.repeats.redraw(self)
            else:
                self._redraw(events)
        except Exception:  # noqa: BLE001 (the graph is fine; only the drawing of it failed)
            try:
                self._relayout(previous=None)
            except Exception as exc:  # noqa: BLE001
                self.edit_refused.emit(f"The canvas could not draw the edited graph: {exc}")

    def _redraw(self, events: list) -> None:
        if any(e.kind == "reset" for e in events):
            self._relayout(previous=None)
            return
        added = set().union(*(e.added for e in events))
        removed = set().union(*(e.removed for e in events))
        changed = set().union(*(e.changed for e in events))
        if not added and not removed:
            nodes = [self.document.node(i) for i in changed]
            if all(n is not None for n in nodes) and self.canvas_scene.update_in_place(nodes, self.document.id_of):
                # Same wiring (a constant, a keyword or a target changed): no relayout needed.
                if self._pattern:
                    self._rematch()
                return
        by_name: dict = {}
        touched = []
        # The former inputs of a removed or rewired node may have lost their last user (their card
        # turns "unused"): their cards are refreshed too.
        for nid in removed | changed:
            for port in self.canvas_scene.former_ports(nid):
                src = self.document.find(port.src)
                if src is not None:
                    by_name[src.name] = src
        for nid in added | changed:
            node = self.document.node(nid)
            if node is not None:   # its card, and its users' ports (they name it)
                touched.append(node)
                by_name[node.name] = node
                by_name.update((u.name, u) for u in node.users)
                by_name.update((i.name, i) for i in node.all_input_nodes)
        # The nodes the edit touched: a rewire may just reroute their input edges, an insert or an
        # erase be laid out locally (``layout/local_relayout.py``).
        self._relayout(previous=self.canvas_scene.layout, refresh=set(by_name),
                       changed=touched, nodes=by_name)

    # -- view ---------------------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Pick the level of detail for the current zoom, then paint."""
        self._sync_lod()
        super().paintEvent(event)

    # -- collapse -----------------------------------------------------------------------------
    def toggle_group(self, path: str) -> None:
        """Collapse or expand the module group ``path``, keeping its corner where it was on screen
        (a large graph's in a worker: ``large_fold.py``)."""
        self.fold_toggles.toggle(path)

    # -- selection ----------------------------------------------------------------------------
    def _selection_changed(self, ids: list) -> None:
        self.flush()
        self.repeats.reveal(self, self.selection.current())   # a node folded away: unfold its span
        self._apply_selection(scroll=True)

    def _apply_selection(self, scroll: bool, cards=None) -> None:
        ids = self.selected_ids = set(self.selection.ids())
        scene = self.canvas_scene
        for card in scene.live_cards.values() if cards is None else cards:
            sel = card.info.node_id in ids
            if card.selected != sel:
                card.selected = sel
                card.update()
        self._row_selected = mark_selected_rows(scene, ids, self._row_selected)   # folded weights' rows
        self._update_highlights()
        current = self.selection.current()
        if scroll and current is not None:
            self.center_on_node(current)

    # -- mouse --------------------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Toggle, rewire (press on a port or an edge end), select, or start panning."""
        if event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        self.setFocus(Qt.FocusReason.MouseFocusReason)
        self.flush()   # never act on cards of a graph that has changed since
        pos = self.mapToScene(event.position().toPoint())
        scene = self.canvas_scene
        path = scene.toggle_at(pos)
        if path is not None:
            self.toggle_group(path)
            return event.accept()
        tol = 4.0 / self.zoom()
        card = scene.card_at(pos, tol)
        port = card.port_at(pos) if card is not None and not scene.in_overview() else None
        target = card
        if port is None and not scene.in_overview():
            edge = scene.edge_end_at(pos)   # the end of an input edge grabs that edge's port
            if edge is not None and edge.route.dst in scene.cards:
                target = scene.cards[edge.route.dst]
                port = next((i for i, p in enumerate(target.info.ports)
                             if p.src == edge.route.src and p.key == edge.route.key), None)
        if port is not None and self.document is not None:
            self._drag = RewireDrag(scene, self.document, target, port)
            self._drag_press = event.position().toPoint()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            return event.accept()
        if card is not None:
            ids = self.selection.ids()
            row = card.row_at(pos) if not scene.in_overview() else None
            nid = row.node_id if row is not None else card.info.node_id   # a row selects its weight
            if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.selection.set([i for i in ids if i != nid] if nid in ids else ids + [nid])
            else:
                self.selection.set([nid])
            return event.accept()
        mods = event.modifiers()
        if mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier):   # rubber band
            self._band = SelectionBand(self, event.position().toPoint(), bool(mods & Qt.KeyboardModifier.ControlModifier))
            return event.accept()
        self._pan_from = event.position().toPoint()
        self._panned = False
        self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
        event.accept()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Drive the rewire feedback or pan the view."""
        if self._drag is not None:
            self._edge_scroll(event.position().toPoint())
            self._drag.move(self.mapToScene(event.position().toPoint()))
            hover = self._drag.hover
            if hover is not None and hover.drag_state in ("cycle", "mismatch"):   # say why at once, not after a rest
                QToolTip.showText(event.globalPosition().toPoint(), hover.toolTip(), self.viewport())
            else:
                QToolTip.hideText()
            return event.accept()
        if self._band is not None:
            self._band.move(event.position().toPoint())
            return event.accept()
        if self._pan_from is None and not event.buttons():
            self._hover_port(event.position().toPoint())
        if self._pan_from is not None:
            p = event.position().toPoint()
            d = p - self._pan_from
            self._pan_from = p
            if d.manhattanLength() > 0:
                self._panned = True
                self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - d.x())
                self.verticalScrollBar().setValue(self.verticalScrollBar().value() - d.y())
            return event.accept()
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Finish a rewire (one ``set_arg``, or a refusal, or a cancel) or a pan."""
        if self._drag is not None and event.button() == Qt.MouseButton.LeftButton:
            drag, self._drag = self._drag, None
            self.viewport().unsetCursor()
            self._port_hover = False
            pos = event.position().toPoint()
            edit, reason = drag.release(self.mapToScene(pos))
            if self._drag_press is not None and (pos - self._drag_press).manhattanLength() <= 3:
                # A click on a port (no drag): select its card, as a click anywhere on it does.
                self.selection.set([drag.card.info.node_id])
                self.status_hint.emit(PORT_HINT)
            elif edit is not None:
                try:
                    self.document.apply_edit(edit)
                except EditRefused as exc:
                    self.edit_refused.emit(str(exc))
            elif reason:
                self.edit_refused.emit(reason)
            return event.accept()
        if self._band is not None and event.button() == Qt.MouseButton.LeftButton:
            band, self._band = self._band, None
            self.selection.set(band.finish(event.position().toPoint(), self.selection.ids()))
            return event.accept()
        if self._pan_from is not None and event.button() == Qt.MouseButton.LeftButton:
            self._pan_from = None
            self.viewport().unsetCursor()
            return event.accept()   # a click on empty canvas only gives it the focus (Esc clears the selection)
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Double-clicking a collapsed module expands it."""
        item = self.canvas_scene.item_at(self.mapToScene(event.position().toPoint()), (GroupCard,))
        if item is not None:
            self.toggle_group(item.group.path)
            return event.accept()
        self.mousePressEvent(event)

    def _cancel_drag(self) -> None:
        if self._drag is not None:
            self._drag.finish()
            self._drag = None
            self.viewport().unsetCursor()

    def port_under(self, viewport_pos: QPoint):
        """(card, port index) of the input port under ``viewport_pos``, or None (also when zoomed
        out to the overview, where ports are not drawn)."""
        scene = self.canvas_scene
        if scene.in_overview() or self.document is None:
            return None
        pos = self.mapToScene(viewport_pos)
        card = scene.card_at(pos)
        port = card.port_at(pos) if card is not None else None
        return (card, port) if port is not None else None

    def _hover_port(self, viewport_pos: QPoint) -> None:
        """Over an input port: an open hand and the rewiring hint in the status bar."""
        over = self.port_under(viewport_pos) is not None
        if over != self._port_hover:
            self._port_hover = over
            if over:
                self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            else:
                self.viewport().unsetCursor()
            self.status_hint.emit(PORT_HINT if over else "")

    def viewportEvent(self, event) -> bool:  # noqa: N802 (Qt override)
        """A port's tooltip is the rewiring hint (not its card's); a press or the wheel ends the opening view."""
        if event.type() in (QEvent.Type.MouseButtonPress, QEvent.Type.Wheel):
            self.fresh_view = False
        if event.type() == QEvent.Type.ToolTip and self._drag is None:
            hit = self.port_under(event.pos())
            if hit is not None:
                card, index = hit
                port = card.info.ports[index]
                QToolTip.showText(event.globalPos(), f"Input {port.label} of {card.info.name}, fed by "
                                  f"{port.src}.\n{PORT_HINT}.", self.viewport())
                return True
        return super().viewportEvent(event)

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Zoom around the cursor."""
        dy = event.angleDelta().y()
        if dy:
            self.zoom_by(1.0015 ** dy, event.position())
        event.accept()

    # -- keyboard -----------------------------------------------------------------------------
    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """F fit, +/- zoom, arrows move the selection (or pan), F2/Enter edit, Ctrl+F find,
        F3/Shift+F3 cycle matches, Esc cancel (or clear the selection)."""
        key, mods = event.key(), event.modifiers()
        self.fresh_view = False
        ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        cursor = self.viewport().mapFromGlobal(self.cursor().pos())
        anchor = QPointF(cursor) if self.viewport().rect().contains(cursor) else None
        step = 60
        if key == Qt.Key.Key_F and not ctrl and shift:
            self.fit()
        elif key == Qt.Key.Key_F and not ctrl:
            self.fit_readable()
        elif key == Qt.Key.Key_F and ctrl:
            self.open_search()
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(ZOOM_STEP, anchor)
        elif key in (Qt.Key.Key_Minus, Qt.Key.Key_Underscore):
            self.zoom_by(1 / ZOOM_STEP, anchor)
        elif key == Qt.Key.Key_F3:
            self.next_match(-1 if shift else 1)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self._matches:
            self.next_match(-1 if shift else 1)
        elif key in (Qt.Key.Key_F2, Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.selection.current() is not None:
            self.edit_requested.emit(self.selection.current())
        elif (key in (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up, Qt.Key.Key_Down) and not ctrl
              and self.selection.current() is not None):
            self.step_selection({Qt.Key.Key_Left: "left", Qt.Key.Key_Right: "right",
                                 Qt.Key.Key_Up: "up", Qt.Key.Key_Down: "down"}[key])
        elif key == Qt.Key.Key_Left:
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - step)
        elif key == Qt.Key.Key_Right:
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() + step)
        elif key == Qt.Key.Key_Up:
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - step)
        elif key == Qt.Key.Key_Down:
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() + step)
        elif key == Qt.Key.Key_Escape:
            if self._drag is None and self.search_bar.isHidden():
                self.selection.clear()
            self._cancel_drag()
            self.search_bar.close_bar()
        else:
            return super().keyPressEvent(event)
        event.accept()

    # -- overlays -----------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Keep the minimap bottom-right and the find bar top-right."""
        super().resizeEvent(event)
        if self.fresh_view and self.document is not None:
            self.open_at_inputs()   # opened before the window had its size (``fxstudio.edit``)
        self._update_scroll_area()
        self._place_overlays()
        self._view_moved()

    def _place_overlays(self) -> None:
        vp = self.viewport().geometry()
        self.minimap.set_room(vp.height() - 60)   # a tall graph's box stays below the find bar
        self.minimap.move(vp.right() - self.minimap.width() - 10, vp.bottom() - self.minimap.height() - 10)
        self.search_bar.adjustSize()
        self.search_bar.move(vp.right() - self.search_bar.width() - 10, vp.top() + 10)
        self._place_legend()
        place_hint(self)

    def _layout_changed(self) -> None:
        update = self.canvas_scene.last_update
        if update.get("geometry") is False:
            pass   # no card or frame moved: the thumbnail (boxes only) is still right
        elif self.canvas_scene.layout is not None and (
                update.get("incremental")
                or len(self.canvas_scene.cards) + len(self.canvas_scene.group_cards) > MINIMAP_DEFER_CARDS):
            self._minimap_timer.start()
        else:
            self._minimap_timer.stop()
            self._redraw_minimap()
        self._update_scroll_area()
        self._view_moved()

    def _redraw_minimap(self) -> None:
        """Repaint the minimap's thumbnail from the scene's current layout."""
        self._minimap_timer.stop()
        x0, y0, x1, y1 = self.canvas_scene.bounds
        ops = self.canvas_scene.ops()
        graph = QRectF(x0, y0, x1 - x0, y1 - y0)
        self.minimap.set_layout(self.canvas_scene.layout, graph.adjusted(-40, -40, 40, 40), ops, self._minimap_tints, graph)

    def set_minimap_shown(self, shown: bool) -> None:
        """Expand the minimap (True) or collapse it to its toggle (View ▸ Minimap)."""
        self.minimap.set_expanded(shown)
        self._place_overlays()

    def minimap_shown(self) -> bool:
        """Whether the minimap is expanded (it still hides while the whole graph is in view)."""
        return self.minimap.expanded

    def _minimap_expanded(self, shown: bool) -> None:
        self._place_overlays()
        self.minimap_toggled.emit(shown)

    def _view_moved(self, *_):
        realize_view(self)
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        self.minimap.set_view_rect(visible)
        layout = self.canvas_scene.layout
        # The minimap only helps when part of the graph is off screen.
        x0, y0, x1, y1 = self.canvas_scene.bounds
        whole = visible.contains(QRectF(x0, y0, x1 - x0, y1 - y0))
        self.minimap.setVisible(layout is not None and bool(layout.nodes or layout.groups) and not whole)


def _model(doc) -> tuple:
    """What tells two documents' models apart (a ``.pt2``'s view-only structure and its loaded graph alike)."""
    return (doc.loaded.path, doc.loaded.display_name)
