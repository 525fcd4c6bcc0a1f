"""Canvas overlays: cards tinted by the last run's divergence, and the graph diff outlined.

``GraphCanvas.set_divergence(scores)`` tints each card whose node has a tolerance score
(``CompareReport.divergence_by_id``): a pale body and a border in ``divergence_color(score)``
(green within tolerance, amber to red beyond it). Nodes whose value is *equal* (score 0: everything
upstream of the edits) and nodes without a score (inserted ones) stay white, so the tint starts
where the edit starts. ``GraphCanvas.set_diff(diff)`` rings added and changed cards in
``diff_color(kind)``; removed nodes have no card in the edited graph, so the legend in the view's
top-left corner counts them and its tooltip names them. The legend's check boxes (or
``show_changes(bool)`` / ``show_divergence(bool)``) hide either overlay without forgetting it.

Both are kept by node id, so they survive relayouts, collapsing, undo and redo (a card drawn
again gets its overlay back); ``set_document`` clears them. Only the cards whose overlay changes
are repainted. Zoomed out, ``OverviewOverlay`` (a child of the scene's overview item, so it shows
and hides with it) fills tinted cards in their colour and rings edited ones with a minimum
on-screen size, a few draw calls in all.

``set_metric_overlay(tints, lines, frame_lines)`` shows a numeric overlay (time, SQNR, node data…:
``fxstudio/qt/overlay_choice.py``) in place of the divergence tints, by node id like them.

``connect_run_pane(canvas, run_pane)`` wires a ``RunPane``'s ``report_ready`` and
``diff_changed`` signals to a canvas.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (
    QCheckBox, QFrame, QGraphicsItem, QLabel, QStyleOptionGraphicsItem, QWidget,
)

from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.overlay_scale import legend_grid
from fxstudio.qt.divergence_colors import CLOSE, DIVERGED_HIGH, DIVERGED_LOW, diff_color, divergence_color

DIFF_KINDS = ("changed", "added")   # the kinds that have a card in the edited graph
MAX_REMOVED_LISTED = 40             # removed nodes named in the legend's tooltip


def tint_for(score: float | None) -> QColor | None:
    """The card tint for a tolerance score: None (white) for no score and for equal values."""
    if score is None or score == 0:
        return None
    return divergence_color(score)


def _swatch(colour: QColor) -> str:
    return f"<span style='color:{colour.name()}'>&#9632;</span>"


def _cosmetic(colour: QColor, width: float = 0.0) -> QPen:
    pen = QPen(colour, width)
    pen.setCosmetic(True)
    return pen


class OverviewOverlay(QGraphicsItem):
    """The overlays in the zoomed-out overview: tinted boxes, rings around edited nodes, and the
    overview's own search/selection marks again on top (so a tint never hides them).

    It is a child of the scene's ``OverviewItem``: shown and hidden with it, drawn above it."""

    def __init__(self, overview: QGraphicsItem):
        super().__init__(overview)
        self.overview = overview
        self._bounds = QRectF()
        self._tints: dict[str, QColor] = {}
        self._rings: dict[str, QColor] = {}
        self._groups: list | None = None

    def set_overlays(self, tints: dict[str, QColor] | None, rings: dict[str, QColor] | None) -> None:
        """Tints and rings by node name (the overview's boxes are keyed by name); None keeps them."""
        bounds = self.overview.boundingRect()
        if bounds != self._bounds:
            self.prepareGeometryChange()
            self._bounds = bounds
            self._groups = None
        if tints is not None:
            self._tints, self._groups = tints, None
        if rings is not None:
            self._rings = rings
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt override)
        """The overview's rectangle (the whole layout)."""
        return self._bounds

    def _tint_groups(self, boxes) -> list:
        """[(colour, rects)], one group per colour rounded to 3 bits less per channel: a few drawRects."""
        if self._groups is None:
            groups: dict[tuple, tuple[QColor, list[QRectF]]] = {}
            for name, colour in self._tints.items():
                box = boxes.get(name)
                if box is not None:
                    key = (colour.red() >> 3, colour.green() >> 3, colour.blue() >> 3)
                    groups.setdefault(key, (colour, []))[1].append(QRectF(*box))
            self._groups = list(groups.values())
        return self._groups

    def paint(self, painter: QPainter, option, widget=None) -> None:
        """Paint the item (Qt override)."""
        if not (self._tints or self._rings):
            return
        boxes = self.overview.boxes
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        for fill, rects in self._tint_groups(boxes):
            painter.setPen(_cosmetic(fill))   # keeps a sub-pixel card a pixel wide, as the overview does
            painter.setBrush(fill)
            painter.drawRects(rects)
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        painter.setBrush(Qt.BrushStyle.NoBrush)
        r = 5.0 / max(lod, 1e-9)   # rings at least ~10 px across: edits stay findable in a 10k graph
        for name, colour in self._rings.items():
            box = boxes.get(name)
            if box is not None:
                x, y, w, h = box
                cx, cy, hw, hh = x + w / 2, y + h / 2, max(w / 2, r), max(h / 2, r)
                painter.setPen(_cosmetic(colour, 2.0))
                painter.drawRect(QRectF(cx - hw, cy - hh, 2 * hw, 2 * hh))
        m = 3.0 / max(lod, 1e-9)   # the overview's marks, as it draws them
        for name, colour in self.overview.highlights.items():
            box = boxes.get(name)
            if box is not None and (name in self._tints or name in self._rings):
                x, y, w, h = box
                cx, cy, hw, hh = x + w / 2, y + h / 2, max(w / 2, m), max(h / 2, m)
                painter.setPen(_cosmetic(st.color(colour)))
                painter.setBrush(st.color(colour))
                painter.drawRect(QRectF(cx - hw, cy - hh, 2 * hw, 2 * hh))
                painter.setBrush(Qt.BrushStyle.NoBrush)


class OverlayLegend(QFrame):
    """The small legend in the canvas's top-left corner: what the tints and rings mean, how many
    nodes were changed/added/removed (removed ones named in the tooltip), and a check box each to
    hide the overlay. Hidden while there is nothing to explain."""

    changes_toggled = Signal(bool)
    divergence_toggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        grid = legend_grid(self, "canvasOverlayLegend", "QLabel, QCheckBox")
        # The counts are since the original (all edits), as the Run dock's Changes tab lists them;
        # a pass's status message counts what that one pass did and says so.
        self.changes_box = QCheckBox("Since original", self)
        self.changes_box.setChecked(True)
        self.changes_box.setToolTip("Ring the nodes the edits so far added or changed, compared with the original graph")
        self.changes_label = QLabel("", self)
        self.divergence_box = QCheckBox("Divergence", self)
        self.divergence_box.setChecked(True)
        self.divergence_box.setToolTip("Tint the nodes by how far the last run's values left the original's")
        self.divergence_label = QLabel("", self)
        grid.addWidget(self.changes_box, 0, 0)
        grid.addWidget(self.changes_label, 0, 1)
        grid.addWidget(self.divergence_box, 1, 0)
        grid.addWidget(self.divergence_label, 1, 1)
        self.changes_box.toggled.connect(self.changes_toggled)
        self.divergence_box.toggled.connect(self.divergence_toggled)
        self.hide()

    def show_state(self, counts: dict[str, int] | None, removed_names: list[str],
                   scores: dict[int, float] | None) -> None:
        """``counts``: nodes per diff kind (None: no diff); ``scores``: the divergence shown (or None)."""
        has_changes = counts is not None and any(counts.values())
        for w in (self.changes_box, self.changes_label):
            w.setVisible(has_changes)
        if has_changes:
            parts = [f"{_swatch(diff_color(k))} {counts[k]} {k}" for k in ("changed", "added", "removed") if counts[k]]
            self.changes_label.setText("&nbsp;&nbsp;".join(parts))
            tip = ""
            if removed_names:
                listed = ", ".join(removed_names[:MAX_REMOVED_LISTED])
                more = len(removed_names) - MAX_REMOVED_LISTED
                tip = ("Removed (no card in the edited graph): " + html.escape(listed)
                       + (f" and {more} more" if more > 0 else ""))
            self.changes_label.setToolTip(tip)
        has_scores = bool(scores)
        for w in (self.divergence_box, self.divergence_label):
            w.setVisible(has_scores)
        if has_scores:
            beyond = sum(1 for s in scores.values() if not s <= 1)
            within = sum(1 for s in scores.values() if 0 < s <= 1)
            parts = [f"{_swatch(CLOSE)} {within} within tol."] if within else []
            if beyond or not within:
                parts.append(f"{_swatch(DIVERGED_LOW)}{_swatch(DIVERGED_HIGH)} {beyond} beyond")
            self.divergence_label.setText("&nbsp;&nbsp;".join(parts))
            self.divergence_label.setToolTip("Error / tolerance of the last run: white equal, green within "
                                             "tolerance, amber to red from 1x to 10\u2074x the tolerance or "
                                             "another shape")
        self.setVisible(has_changes or has_scores)
        self.adjustSize()

    def set_checked(self, changes: bool, divergence: bool) -> None:
        """Reflect ``show_changes``/``show_divergence`` called from code, without echoing."""
        for box, on in ((self.changes_box, changes), (self.divergence_box, divergence)):
            box.blockSignals(True)
            box.setChecked(on)
            box.blockSignals(False)


class CanvasOverlays:
    """Divergence tints and diff rings on the canvas (mixed into ``GraphCanvas``).

    Expects ``canvas_scene``, ``document``, ``repeats`` and ``viewport()`` on the class it is mixed into; that
    class calls ``_init_overlays()`` once (and provides ``_redraw_minimap()``), ``clear_overlays()`` when the document changes,
    ``_apply_overlays()`` after every relayout and ``_place_legend()`` when resized."""

    def _init_overlays(self) -> None:
        self._scores: dict[int, float] = {}
        self._tints: dict[int, QColor] = {}
        self._diff = None
        self._diff_kinds: dict[int, str] = {}
        self._divergence_on = True
        self._changes_on = True
        self._minimap_tints: dict[str, QColor] = {}   # what the minimap thumbnail was painted with
        # A numeric overlay (qt/overlay_choice.py, canvas/overlay_scale.py) shown instead of the divergence: colours, tooltip
        # lines by node id and tooltip lines by module path; None: the divergence is shown.
        self._metric_tints: dict[int, QColor] | None = None
        self._metric_lines: dict[int, str] = {}
        self._frame_lines: dict[str, str] = {}
        self.overview_overlay = OverviewOverlay(self.canvas_scene.overview)
        self.legend = OverlayLegend(self)
        self.legend.changes_toggled.connect(self.show_changes)
        self.legend.divergence_toggled.connect(self.show_divergence)

    # -- public ---------------------------------------------------------------------------------
    def set_divergence(self, scores: dict[int, float] | None) -> None:
        """Tint cards by tolerance score (``report.divergence_by_id``); None or {} clears."""
        old = self._scores
        self._scores = dict(scores) if scores else {}
        self._tints = {i: c for i, s in self._scores.items() if (c := tint_for(s)) is not None}
        self.repeats.follow(self)   # a block that diverges now is not folded (repeat_fold.py)
        self._apply_overlays(old.keys() | self._scores.keys(), rings=False)
        self._update_legend()

    def set_metric_overlay(self, tints: dict[int, QColor] | None, lines: dict[int, str] | None = None,
                           frame_lines: dict[str, str] | None = None) -> None:
        """Colour the cards (and the minimap) by a numeric overlay instead of the divergence:
        ``tints`` by node id, ``lines`` a tooltip line per node, ``frame_lines`` one per module frame
        (its total). None goes back to the divergence. Cards drawn later get it too."""
        old = set(self._metric_tints or {}) | set(self._metric_lines) | set(self._scores)
        self._metric_tints = dict(tints) if tints is not None else None
        self._metric_lines = dict(lines or {}) if tints is not None else {}
        self._frame_lines = dict(frame_lines or {}) if tints is not None else {}
        self._apply_overlays(old | set(self._metric_tints or {}) | set(self._metric_lines), rings=False)
        self._apply_frame_lines()
        self._update_legend()

    def metric_overlay(self) -> dict[int, QColor] | None:
        """The numeric overlay's colours by node id (a copy), or None while the divergence is shown."""
        return None if self._metric_tints is None else dict(self._metric_tints)

    def set_divergence_report(self, report) -> None:
        """``set_divergence(report.divergence_by_id)``; None clears (a slot for ``report_ready``)."""
        self.set_divergence(getattr(report, "divergence_by_id", None) if report is not None else None)

    def set_diff(self, diff) -> None:
        """Ring the added and changed nodes of a ``GraphDiff`` (matched by id); None clears.
        Removed nodes are counted and named by the legend."""
        old = self._diff_kinds
        self._diff = diff
        kinds: dict[int, str] = {}
        if diff is not None:
            for kind in DIFF_KINDS:
                kinds.update(dict.fromkeys(getattr(diff, kind), kind))
        self._diff_kinds = kinds
        self._apply_overlays(old.keys() | kinds.keys(), tints=False)
        self._update_legend()

    def show_changes(self, on: bool) -> None:
        """Show or hide the diff rings (the diff itself is kept)."""
        on = bool(on)
        if on != self._changes_on:
            self._changes_on = on
            self._apply_overlays(self._diff_kinds.keys(), tints=False)
        self.legend.set_checked(self._changes_on, self._divergence_on)

    def show_divergence(self, on: bool) -> None:
        """Show or hide the divergence tints (the scores are kept)."""
        on = bool(on)
        if on != self._divergence_on:
            self._divergence_on = on
            self._apply_overlays(self._scores.keys(), rings=False)
        self.legend.set_checked(self._changes_on, self._divergence_on)

    def changes_shown(self) -> bool:
        """True while the diff rings are shown."""
        return self._changes_on

    def divergence_shown(self) -> bool:
        """True while the divergence tints are shown."""
        return self._divergence_on

    def divergence(self) -> dict[int, float]:
        """The scores being shown (a copy)."""
        return dict(self._scores)

    def diff(self):
        """The ``GraphDiff`` being shown, or None."""
        return self._diff

    def clear_overlays(self) -> None:
        """Forget the divergence and the diff (the document changed)."""
        self._scores, self._tints, self._diff, self._diff_kinds = {}, {}, None, {}
        self._metric_tints, self._metric_lines, self._frame_lines = None, {}, {}
        for card in list(self.canvas_scene.live_cards.values()):   # cards made later start plain
            card.metric_line = ""
            card.set_overlay(None, None, "", None)
        self._sync_overview()
        self._update_legend()

    # -- internals ------------------------------------------------------------------------------
    def _apply_overlays(self, ids=None, *, tints: bool = True, rings: bool = True) -> None:
        """Bring the cards of ``ids`` (None: every card, after a relayout) up to date; only
        cards whose overlay changes repaint. ``tints``/``rings``: which the overview must redo."""
        scene = self.canvas_scene
        # Only made cards: one made later gets its overlay then (``realize.decorate_card``).
        cards = (scene.live_cards.values() if ids is None
                 else [c for i in ids if (c := scene.live_cards.get(scene.by_id.name_of(i))) is not None])
        self._overlay_cards(cards)
        if ids is None:
            self._apply_frame_lines()
        self._sync_overview(tints, rings)

    def _overlay_cards(self, cards) -> None:
        """Give ``cards`` the tint, ring and metric line their nodes have now."""
        colours = self._shown_tints()
        kinds = self._diff_kinds if self._changes_on else {}
        scores = self._scores if self._divergence_on and self._metric_tints is None else {}
        lines = self._metric_lines
        for card in cards:
            nid = card.info.node_id
            kind = kinds.get(nid, "")
            line = lines.get(nid, "")
            if line != getattr(card, "metric_line", ""):
                card.metric_line = line
                card.setToolTip(card.default_tooltip())
            if (not kind and card.diff_color is None and card.score is None and nid not in scores
                    and card.tint is None and nid not in colours):
                continue
            card.set_overlay(colours.get(nid), scores.get(nid), kind, diff_color(kind) if kind else None)

    def _shown_tints(self) -> dict[int, QColor]:
        """The card colours shown: the numeric overlay's, else the divergence's (when on)."""
        if self._metric_tints is not None:
            return self._metric_tints
        return self._tints if self._divergence_on else {}

    def _apply_frame_lines(self) -> None:
        """Module frames' tooltips: their path and class, then the numeric overlay's total."""
        for path, frame in list(self.canvas_scene.live_frames.items()):   # frames made later: ``frame_line``
            self.frame_line(path, frame)

    def frame_line(self, path: str, frame) -> None:
        """One module frame's tooltip (the scene's ``frame_made`` hook too)."""
        group = getattr(frame, "group", None)
        label = getattr(group, "label", path)
        line = self._frame_lines.get(path)
        frame.setToolTip(f"{label}\n{line}" if line else label)

    def _sync_overview(self, tints: bool = True, rings: bool = True) -> None:
        name_of = self.canvas_scene.by_id.name_of
        named_tints = named_rings = None
        if tints:
            named_tints = {n: c for i, c in self._shown_tints().items() if (n := name_of(i)) is not None}
        if rings:
            named_rings = ({n: diff_color(k) for i, k in self._diff_kinds.items() if (n := name_of(i)) is not None}
                           if self._changes_on else {})
        self.overview_overlay.set_overlays(named_tints, named_rings)
        if named_tints is not None and named_tints != self._minimap_tints:
            self._minimap_tints = named_tints
            if self.canvas_scene.layout is not None:
                self._redraw_minimap()

    def _update_legend(self) -> None:
        diff = self._diff
        counts = removed = None
        if diff is not None:
            counts = {"changed": len(diff.changed), "added": len(diff.added), "removed": len(diff.removed)}
            removed = []
            doc = getattr(self, "document", None)
            if diff.removed and doc is not None:
                names = doc.original_names_by_id()
                removed = sorted(names.get(i, str(i)) for i in diff.removed)
        shown = self._scores if self._metric_tints is None else None   # a numeric overlay has its own legend
        self.legend.show_state(counts, removed or [], shown or None)
        self._place_legend()

    def _place_legend(self) -> None:
        vp = self.viewport().geometry()
        self.legend.move(vp.left() + 10, vp.top() + 10)
        self.legend.raise_()


def _show_node(canvas, node_id: int) -> None:
    canvas.repeats.reveal(canvas, node_id)
    canvas.center_on_node(node_id)


def connect_run_pane(canvas, run_pane) -> None:
    """Colour ``canvas`` from ``run_pane``: each report's ``divergence_by_id`` tints the cards,
    each ``GraphDiff`` rings the added/changed nodes. Also shows what the pane already holds when
    both follow the same document."""
    run_pane.report_ready.connect(canvas.set_divergence_report)
    run_pane.diff_changed.connect(canvas.set_diff)
    # A click on a node's point or row shows its card even when it is selected already (the
    # selection does not change then, so the canvas would not scroll on its own).
    run_pane.node_activated.connect(lambda node_id: _show_node(canvas, node_id))
    if run_pane.doc is not None and run_pane.doc is canvas.document:
        if run_pane.report is not None:
            canvas.set_divergence_report(run_pane.report)
        diff = getattr(run_pane.diff_view, "diff", None)
        if diff is not None:
            canvas.set_diff(diff)
