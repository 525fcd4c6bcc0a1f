"""The graph-diff view: nodes added, removed and changed between the original and the edited graph.

A list follows the document (it is recomputed after every edit, undo and redo); clicking a present
node selects it through the ``SelectionModel``. ``diff_changed(GraphDiff)`` lets the canvas
highlight the same nodes.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from fxstudio.core.graph_diff import GraphDiff, graph_diff
from fxstudio.qt.divergence_colors import DIFF_COLORS as KIND_COLORS
from fxstudio.qt.selection import SelectionModel


class GraphDiffView(QWidget):
    """A three-group tree of the nodes an edit touched; follows the document and the selection."""

    diff_changed = Signal(object)

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.selection = selection
        self.doc = None
        self.diff: GraphDiff | None = None
        self._unsubscribe = None
        self.summary = QLabel("No model open.")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Node", "Op", "Target"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.itemClicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree)
        selection.changed.connect(self._follow_selection)

    def set_document(self, doc) -> None:
        """Show the diff of ``doc`` (None: nothing) and follow its edits."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.doc = doc
        if doc is not None:
            self._unsubscribe = doc.subscribe(lambda event: self.refresh())
        self.refresh()

    def refresh(self) -> None:
        """Recompute the diff and redraw the list."""
        self.tree.clear()
        if self.doc is None:
            self.diff = None
            self.summary.setText("No model open.")
            self.diff_changed.emit(None)
            return
        diff = graph_diff(self.doc.original, self.doc.edited)
        self.diff = diff
        original = {n.meta.get("fxs_id"): n for n in self.doc.original.graph.nodes}
        for kind in ("changed", "added", "removed"):
            ids = sorted(getattr(diff, kind))
            if not ids:
                continue
            group = QTreeWidgetItem([f"{kind.capitalize()} ({len(ids)})", "", ""])
            group.setForeground(0, QBrush(KIND_COLORS[kind]))
            group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            self.tree.addTopLevelItem(group)
            for node_id in ids:
                node = original.get(node_id) if kind == "removed" else self.doc.node(node_id)
                if node is None:
                    continue
                target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
                item = QTreeWidgetItem([node.name, node.op, str(target)])
                item.setData(0, Qt.ItemDataRole.UserRole, node_id if kind != "removed" else None)
                item.setForeground(0, QBrush(KIND_COLORS[kind]))
                group.addChild(item)
            group.setExpanded(True)
        for col in range(3):
            self.tree.resizeColumnToContents(col)
        self.summary.setText("The edited graph computes what the original does, node for node." if diff.empty else
                             f"{len(diff.changed)} changed, {len(diff.added)} added, {len(diff.removed)} removed "
                             "(click a node to select it)")
        self.diff_changed.emit(diff)

    def _clicked(self, item: QTreeWidgetItem, column: int) -> None:
        node_id = item.data(0, Qt.ItemDataRole.UserRole)
        if node_id is not None:
            self.selection.set([int(node_id)])

    def _follow_selection(self, ids: list) -> None:
        current = ids[-1] if ids else None
        self.tree.blockSignals(True)
        self.tree.clearSelection()
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            for j in range(group.childCount()):
                child = group.child(j)
                if current is not None and child.data(0, Qt.ItemDataRole.UserRole) == current:
                    child.setSelected(True)
                    self.tree.scrollToItem(child)
        self.tree.blockSignals(False)
