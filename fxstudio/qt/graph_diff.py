"""The graph-diff view: nodes added, removed and changed between the original and the edited graph.

A list follows the document; clicking a present node selects it through the ``SelectionModel``.
``diff_changed(GraphDiff)`` lets the canvas highlight the same nodes.

The diff follows an edit, undo or redo at once but incrementally (``GraphDiffer.update``
re-examines only the nodes the event names; the original's signatures are computed once per
document), and ``diff_changed`` is emitted then, so the canvas's rings stay current. The list is
redrawn ``DEBOUNCE_MS`` after the last event, and only while the view is on screen (a hidden view
redraws when it is shown). Other events (a reset) cause a full, deferred recompute: at the
debounce when ``live()`` says someone else follows ``diff_changed``, else when the list is shown.
An event naming more than ``DEFER_ABOVE`` nodes (a pass that rewrote thousands) is re-examined on
the next event-loop turn instead, not inside the edit: the edit's own work and this one are then
two shorter waits of the window, not one long one (issue #25). A pass's nodes are re-examined by
the worker that installed it, before the event (``update_ahead``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from fxstudio.core.compare import GraphDiff, GraphDiffer
from fxstudio.qt import views_ahead
from fxstudio.qt.aside import Aside, large_graph
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.divergence_colors import DIFF_COLORS as KIND_COLORS
from fxstudio.qt.selection import SelectionModel


DEBOUNCE_MS = 300
DEFER_ABOVE = 256
"""Events naming more nodes than this update the diff on the next event-loop turn."""


class GraphDiffView(QWidget):
    """A three-group tree of the nodes an edit touched; follows the document and the selection."""

    diff_changed = Signal(object)

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.selection = selection
        self.doc = None
        self.diff: GraphDiff | None = None
        self._subscription = DocumentSubscription(self._document_changed)
        self._differ: GraphDiffer | None = None
        self.aside = Aside(self, "diff")   # a large graph's full diff, in a worker (aside.py)
        self.dirty = False  # the document changed since the list was drawn
        self._full = False  # the diff itself needs a full pass
        self.live = lambda: False  # True: a listener needs each diff at once (set by the run pane)
        self._pending: set[int] = set()  # node ids of large events, examined on the next turn
        self._metric: tuple[str, dict, dict] | None = None  # a numeric overlay's column (set_metric)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._deferred)
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
        self.doc = doc
        self.aside.cancel()
        self._ahead = None
        self._differ = None
        self._pending = set()
        self._subscription.follow(doc)
        self.refresh()

    def _document_changed(self, event) -> None:
        kind = getattr(event, "kind", "edited")
        if kind == "saved":
            return
        if (kind in ("edited", "undone", "redone") and self._differ is not None and not self._full
                and not self.aside.busy):   # a worker diffing uses the differ: a full pass after it
            # Only the nodes the event names can have changed: re-examine those (cheap), so the
            # diff (and the canvas's rings) stay current; the list itself is redrawn later.
            ids = set(event.added) | set(event.removed) | set(event.changed)
            ahead, self._ahead = self._ahead, None
            if ahead is not None and ahead[0] == self.doc.serial and ids <= ahead[1] and not self._pending:
                self.diff = self._differ.current()   # re-examined by the worker that staged the edit
                self.diff_changed.emit(self.diff)
            elif self._pending or len(ids) > DEFER_ABOVE:
                if not self._pending:
                    QTimer.singleShot(0, self._update_pending)
                self._pending |= ids
            else:
                self._update(ids)
        else:
            self._full = True  # anything else: a full pass, deferred like the list
        self.dirty = True
        self._timer.start()

    def update_ahead(self, doc, ids, serial: int) -> None:
        """In the worker that staged an edit of ``doc`` (the window waits for it): re-examine the
        nodes ``ids`` now, so that the event committing it at ``serial`` finds them done."""
        if doc is self.doc and self._differ is not None and not self._full and not self._pending and not self.aside.busy:
            self._differ.update(doc.edited, ids, doc.node)
            self._ahead = (serial, frozenset(ids))

    def _update(self, ids: set[int]) -> None:
        self.diff = self._differ.update(self.doc.edited, ids, self.doc.node)
        self.diff_changed.emit(self.diff)

    def _update_pending(self) -> None:
        ids, self._pending = self._pending, set()
        if ids and self._differ is not None and not self._full and self.doc is not None:
            self._update(ids)

    def _deferred(self) -> None:
        if self._full:
            if self.live() or self.isVisible():
                self.refresh()
        elif self.dirty and self.isVisible():
            self._redraw()

    def flush(self) -> None:
        """Redraw now if an event is still pending (tests, and callers that need the list)."""
        if self._full:
            self.refresh()
            return
        self._update_pending()
        if self.dirty:
            self._redraw()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if (self.dirty or self._full) and not self._timer.isActive():
            self.flush()

    def refresh(self) -> None:
        """Recompute the diff (a full pass) and redraw the list."""
        self._full = False
        self._pending = set()
        if self.doc is None:
            self._timer.stop()
            self.dirty = False
            self.tree.clear()
            self.diff = None
            self.summary.setText("No model open.")
            self.diff_changed.emit(None)
            return
        if self.doc.read_only and not self.doc.can_undo:
            self.diff = GraphDiff(frozenset(), frozenset(), frozenset())  # view only: no edits to show
        else:
            ahead = views_ahead.take(self.doc.edited.graph, "diff", None, self.doc.serial) if self._differ is None else None
            if ahead is not None:   # diffed by the worker that made this graph
                self._differ, self.diff = ahead
            elif large_graph(self.doc.edited.graph):   # 5 s at 200,000 nodes: in a worker
                self._diff_aside()
                return
            else:
                if self._differ is None:
                    self._differ = GraphDiffer(self.doc.original)
                self.diff = self._differ.diff(self.doc.edited)
        self._redraw()
        self.diff_changed.emit(self.diff)

    def _diff_aside(self) -> None:
        """The full diff in a worker (and the original's signatures, the first time); the list
        says so meanwhile. A diff that an edit overtook is done again; the differ is kept."""
        doc, differ = self.doc, self._differ
        original, edited = doc.original, doc.edited

        def work():
            made = differ if differ is not None else GraphDiffer(original)
            return made, made.diff(edited)

        def deliver(result, current: bool) -> None:
            if result is not None:
                self._differ = result[0]   # the original does not change: good for every later diff
            if not current:
                self._full = True
                self._timer.start()
                return
            self.diff = result[1]
            self._redraw()
            self.diff_changed.emit(self.diff)

        self.summary.setText(f"Comparing {len(edited.graph.nodes):,} nodes with the original…")
        self.aside.start(doc, work, deliver)

    def _redraw(self) -> None:
        """Redraw the list from ``self.diff``."""
        self._timer.stop()
        self.dirty = False
        self.tree.clear()
        diff = self.diff
        if diff is None:
            return
        original = self._differ.osigs if self._differ is not None else {}
        for kind in ("changed", "added", "removed"):
            ids = sorted(getattr(diff, kind))
            if not ids:
                continue
            group = QTreeWidgetItem([f"{kind.capitalize()} ({len(ids)})", "", ""])
            group.setForeground(0, QBrush(KIND_COLORS[kind]))
            group.setFlags(group.flags() & ~Qt.ItemFlag.ItemIsSelectable)
            self.tree.addTopLevelItem(group)
            for node_id in ids:
                entry = original.get(node_id) if kind == "removed" else None
                node = entry[0] if entry is not None else (None if kind == "removed" else self.doc.node(node_id))
                if node is None:
                    continue
                target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
                item = QTreeWidgetItem([node.name, node.op, str(target)])
                if self._metric is not None and kind != "removed":
                    item.setText(3, self._metric[1].get(node_id, ""))
                    if node_id in self._metric[2]:
                        item.setBackground(3, QBrush(self._metric[2][node_id]))
                item.setData(0, Qt.ItemDataRole.UserRole, node_id if kind != "removed" else None)
                item.setForeground(0, QBrush(KIND_COLORS[kind]))
                group.addChild(item)
            group.setExpanded(True)
        for col in range(self.tree.columnCount()):
            self.tree.resizeColumnToContents(col)
        self.summary.setText("The edited graph computes what the original does, node for node." if diff.empty else
                             f"{len(diff.changed)} changed, {len(diff.added)} added, {len(diff.removed)} removed "
                             "(click a node to select it)")

    def set_metric(self, title: str | None, texts: dict[int, str] | None = None, colours: dict | None = None) -> None:
        """A fourth column with a numeric overlay's value per node id (``texts``), its cell in the
        overlay's colour (``colours``: QColor by node id); ``title`` None removes the column."""
        self._metric = (title, dict(texts or {}), dict(colours or {})) if title else None
        self.tree.setColumnCount(4 if title else 3)
        self.tree.setHeaderLabels(["Node", "Op", "Target"] + ([title] if title else []))
        if self.diff is not None and not self.dirty:
            self._redraw()

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
