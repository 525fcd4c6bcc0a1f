"""The diff window: two or more graphs side by side, read-only, with synced navigation.

``DiffWindow(diff)`` shows a ``core.diff.GraphsDiff``: one pane per graph (``panes.DiffPane``),
cards ringed changed / added / removed with one legend for all, and a list of the differences.
Selecting a node in a pane (or a row of the list) selects and centres its matches in the other
panes; zooming or panning one pane moves the others to the same zoom and the same relative place.
"""

from __future__ import annotations

import html

import torch.fx
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QLabel, QMainWindow, QSplitter, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from fxstudio.core.diff import GraphsDiff
from fxstudio.qt.diff.panes import DiffPane, pane_title, prepare_panes
from fxstudio.qt.divergence_colors import diff_color

KINDS = ("changed", "added", "removed")
KIND_TEXT = {"changed": "changed", "added": "only in this graph", "removed": "missing from another graph"}


def legend_html(counts: dict[str, int]) -> str:
    """The legend: a swatch, a meaning and a count per kind."""
    parts = []
    for kind in KINDS:
        colour = diff_color(kind).name()
        parts.append(f"<span style='color:{colour}; font-size:14pt'>&#9632;</span> {html.escape(KIND_TEXT[kind])} "
                     f"({counts.get(kind, 0)})")
    return "&nbsp;&nbsp;&nbsp;".join(parts)


class DiffWindow(QMainWindow):
    """Read-only panes of the graphs of ``diff``, the legend above, the list of differences below."""

    def __init__(self, diff: GraphsDiff, panes: list | None = None, parent: QWidget | None = None):
        """``panes``: ``prepare_panes(diff)`` built beforehand (in a worker); else built here."""
        super().__init__(parent)
        self.setObjectName("diffWindow")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.diff = diff
        labels = " | ".join(f"{g.label}: {g.source or '<graph>'}" for g in diff.graphs)
        self.setWindowTitle(f"Diff — {labels}")
        self._syncing = False
        central = QWidget(self)
        layout = QVBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 4)
        self.summary = QLabel(self._summary_text(), central)
        self.summary.setObjectName("diffSummary")
        self.legend = QLabel(central)
        self.legend.setObjectName("diffLegend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.summary)
        layout.addWidget(self.legend)
        vertical = QSplitter(Qt.Orientation.Vertical, central)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, vertical)
        self.panes: list[DiffPane] = []
        counts = dict.fromkeys(KINDS, 0)
        models = panes if panes is not None else prepare_panes(diff)
        for i, g in enumerate(diff.graphs):
            pane = DiffPane(pane_title(g), models[i], self.splitter)
            kinds = {}
            for node, kind in diff.status_of(i).items():
                node_id = pane.id_of(node)
                if node_id is not None:
                    kinds[node_id] = kind
            pane.canvas.show_kinds(kinds)
            pane.selection.changed.connect(lambda *_ids, i=i: self._selected(i))
            pane.canvas.zoom_changed.connect(lambda _z, i=i: self._moved(i))
            pane.canvas.horizontalScrollBar().valueChanged.connect(lambda _v, i=i: self._moved(i))
            pane.canvas.verticalScrollBar().valueChanged.connect(lambda _v, i=i: self._moved(i))
            self.panes.append(pane)
        self.list = self._difference_list(vertical, counts)
        self._counts = counts
        self.legend.setText(legend_html(counts))
        vertical.addWidget(self.splitter)
        vertical.addWidget(self.list)
        vertical.setStretchFactor(0, 4)
        vertical.setStretchFactor(1, 1)
        vertical.setSizes([700, 200])
        layout.addWidget(vertical, 1)
        self.setCentralWidget(central)
        self.resize(min(1600, 560 * len(self.panes)), 900)

    # -- what it shows ------------------------------------------------------------------------
    def show_metric(self, index: int, metrics, key: str) -> None:
        """Colour pane ``index`` (the graph the main window measured) by the main window's numeric
        overlay: ``metrics``'s ``key`` (``core.overlays.NodeMetrics``), matched by node name; the
        legend says which overlay it is and on which pane."""
        from fxstudio.qt.canvas.overlay_scale import metric_marks

        pane = self.panes[index]
        title = metrics.info(key).title
        tints, texts = metric_marks(metrics, key, pane.document)
        pane.canvas.set_metric_overlay(tints, {node_id: f"{title}: {t}" for node_id, t in texts.items()})
        self.legend.setText(legend_html(self._counts) + "&nbsp;&nbsp;&nbsp;&nbsp;overlay on "
                            f"{html.escape(self.diff.graphs[index].label)}: {html.escape(title)} "
                            f"({len(tints):,} nodes tinted, as in the main window)")

    def _summary_text(self) -> str:
        base = self.diff.graphs[0].label
        parts = []
        for c in self.diff.comparisons:
            n = c.counts()
            hidden = sum(1 for r in c.rows if r.status in ("added", "removed") and r.hidden)
            parts.append(f"{self.diff.graphs[c.other].label} vs {base}: {n['added']} added, {n['removed']} removed, "
                         f"{n['changed']} changed, {n['same']} same"
                         + (f" ({hidden} of them export weight reads, not listed)" if hidden else ""))
        return "; ".join(parts) if self.diff.differ else "The graphs are the same: " + "; ".join(parts)

    def _difference_list(self, parent: QWidget, counts: dict[str, int]) -> QTreeWidget:
        """The rows of every comparison that differ (export plumbing left out), counted in ``counts``."""
        tree = QTreeWidget(parent)
        tree.setObjectName("diffList")
        tree.setHeaderLabels(["Node", "Status", "Difference"])
        tree.setUniformRowHeights(True)
        for c in self.diff.comparisons:
            top = QTreeWidgetItem([f"{self.diff.graphs[c.other].label} vs {self.diff.graphs[0].label}", "", ""])
            tree.addTopLevelItem(top)
            for row in c.rows:
                if row.status == "same" or (row.hidden and row.status != "changed"):
                    continue
                counts[row.status] += 1
                text = "; ".join(ch.text() for ch in row.changes)
                item = QTreeWidgetItem([row.name(), row.status, text])
                item.setForeground(1, diff_color(row.status))
                item.setToolTip(2, text)
                index, node = (c.other, row.other) if row.other is not None else (0, row.base)
                item.setData(0, Qt.ItemDataRole.UserRole, (index, node))
                top.addChild(item)
            top.setExpanded(True)
        tree.setColumnWidth(0, 260)
        tree.setColumnWidth(1, 80)
        tree.itemClicked.connect(self._row_clicked)
        return tree

    # -- synced selection -----------------------------------------------------------------------
    def select(self, index: int, node: torch.fx.Node) -> None:
        """Select ``node`` of graph ``index`` and its matches in the other panes, each centred."""
        pane = self.panes[index]
        node_id = pane.id_of(node)
        if node_id is not None:
            pane.selection.set([node_id])   # _selected does the rest
            pane.canvas.center_on_node(node_id)

    def _row_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        data = item.data(0, Qt.ItemDataRole.UserRole)
        if data:
            self.select(*data)

    def _selected(self, index: int) -> None:
        if self._syncing:
            return
        pane = self.panes[index]
        current = pane.selection.current()
        node = pane.node_of(current) if current is not None else None
        partners = self.diff.partners(index, node) if node is not None else {}
        self._syncing = True
        try:
            for j, other in enumerate(self.panes):
                if j == index:
                    continue
                partner = partners.get(j)
                partner_id = other.id_of(partner) if partner is not None else None
                if partner_id is None:
                    other.selection.clear()
                else:
                    other.selection.set([partner_id])
        finally:
            self._syncing = False
        self._moved(index)   # each match where the selected card is in its pane

    # -- synced pan and zoom --------------------------------------------------------------------
    def _moved(self, index: int) -> None:
        """Give the other panes this pane's zoom and the same relative place in their graphs."""
        if self._syncing:
            return
        source = self.panes[index].canvas
        rect = source.sceneRect()
        if rect.width() <= 0 or rect.height() <= 0:
            return
        centre = source.mapToScene(source.viewport().rect().center())
        fx, fy = (centre.x() - rect.left()) / rect.width(), (centre.y() - rect.top()) / rect.height()
        zoom = source.zoom()
        partners = self._selected_partners(index)
        self._syncing = True
        try:
            for j, pane in enumerate(self.panes):
                if j == index:
                    continue
                canvas = pane.canvas
                if abs(canvas.zoom() - zoom) > 1e-6:
                    canvas.zoom_by(zoom / canvas.zoom())
                r = canvas.sceneRect()
                canvas.centerOn(r.left() + fx * r.width(), r.top() + fy * r.height())
                if j in partners:
                    _align(source, partners[index].name, canvas, partners[j].name)
        finally:
            self._syncing = False

    def _selected_partners(self, index: int) -> dict[int, torch.fx.Node]:
        """The matches (pane nodes, by pane) of the node selected in pane ``index``, or {}."""
        pane = self.panes[index]
        current = pane.selection.current()
        node = pane.node_of(current) if current is not None else None
        if node is None:
            return {}
        found = {}
        for j, partner in self.diff.partners(index, node).items():
            copy = self.panes[j].copies.get(partner)
            if copy is not None:
                found[j] = copy
        return found

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """Open every pane at the same zoom and place as the first."""
        super().showEvent(event)
        QTimer.singleShot(0, lambda: self._moved(0) if self.panes else None)


def _align(source, name: str, canvas, partner: str) -> None:
    """Scroll ``canvas`` so that card ``partner`` sits where card ``name`` sits in ``source``'s view
    (the selected node and its match side by side); nothing when either card is not drawn."""
    try:
        want, have = source.viewport_pos_of(name), canvas.viewport_pos_of(partner)
    except (KeyError, StopIteration):   # inside a collapsed module: the proportional place stays
        return
    centre = canvas.mapToScene(canvas.viewport().rect().center())
    zoom = canvas.zoom() or 1.0
    canvas.centerOn(centre.x() + (have.x() - want.x()) / zoom, centre.y() + (have.y() - want.y()) / zoom)
