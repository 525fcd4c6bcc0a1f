"""The Table dock: ``Graph.print_tabular`` as a sortable, filterable table that follows the selection.

Columns: #, opcode, name, target, args, kwargs, shape, dtype. Arguments use the argument syntax
(``%name`` for node references). Typing in the filter box keeps the rows where any column contains
the text; clicking a header sorts; selecting a row selects the node everywhere.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QItemSelectionModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QLineEdit, QTableView, QWidget

from fxstudio.core.argsyntax import format_value
from fxstudio.core.node_text import shape_columns, target_text
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.lazy_refresh import LazyRefresh
from fxstudio.qt.pane_layout import bar_over
from fxstudio.qt.selection import SelectionModel

COLUMNS = ("#", "opcode", "name", "target", "args", "kwargs", "shape", "dtype")


def node_row(index: int, node, user_module=None) -> tuple:
    """One table row for ``node`` at topological position ``index``."""
    shape, dtype = shape_columns(node)
    args = format_value(tuple(node.args))
    return (index, node.op, node.name, target_text(node, user_module), args, format_value(dict(node.kwargs)),
            shape, dtype)


class GraphTableModel(QAbstractTableModel):
    """Rows of the edited graph; ``ids[row]`` is the row's stable node id.

    A row's text is formatted the first time it is asked for (visible rows, or every row once a
    filter or a sort on a text column needs them): a 10k-node refresh then costs milliseconds
    instead of formatting 10k argument lists up front. The # column needs no formatting at all.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.nodes: list = []
        self.ids: list[int] = []
        self._rows: dict[int, tuple] = {}
        self.user_module = None
        self.mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

    def set_nodes(self, nodes: list, ids: list[int]) -> None:
        """Replace every row."""
        self.beginResetModel()
        self.nodes, self.ids, self._rows = nodes, ids, {}
        self.endResetModel()

    def row(self, i: int) -> tuple:
        """The formatted row ``i`` (cached until the next reset)."""
        row = self._rows.get(i)
        if row is None:
            row = self._rows[i] = node_row(i, self.nodes[i], self.user_module)
        return row

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt override)
        return 0 if parent.isValid() else len(self.nodes)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 (Qt override)
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        """Text, sort keys (the # column sorts numerically), tooltips and the monospace font for args."""
        if index.column() == 0 and role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.UserRole):
            return index.row() if role == Qt.ItemDataRole.UserRole else str(index.row())
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.UserRole, Qt.ItemDataRole.ToolTipRole,
                        Qt.ItemDataRole.FontRole):
            return None
        value = self.row(index.row())[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return str(value)
        if role == Qt.ItemDataRole.UserRole:
            return value
        if role == Qt.ItemDataRole.ToolTipRole and index.column() in (3, 4, 5):
            return str(value)
        if role == Qt.ItemDataRole.FontRole and index.column() in (4, 5):
            return self.mono
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802 (Qt override)
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None


class TableView(QWidget):
    """The filter box and the table; follows the document's events and the shared selection."""

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.selection = selection
        self.doc = None
        self._subscription = DocumentSubscription(lambda _e: self.lazy.request())
        self._syncing = False
        self.model = GraphTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterKeyColumn(-1)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.filter = QLineEdit(self)
        self.filter.setObjectName("tableFilter")
        self.filter.setPlaceholderText("Filter rows (name, op, target, args, shape…)")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._filter_changed)
        self.count = QLabel("", self)
        self.table = QTableView(self)
        self.table.setObjectName("graphTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        # Graph order (the # column) is the source order: no sort until a header is clicked, so a
        # refresh of 10k rows does not pay for ~150k Python data() calls of a proxy sort.
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.proxy.sort(-1)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, width in enumerate((44, 100, 130, 190, 260, 160, 120, 70)):
            self.table.setColumnWidth(col, width)
        self.table.selectionModel().selectionChanged.connect(self._rows_selected)
        bar_over(self, [self.filter, self.count], self.table, bar_margins=(4, 4, 4, 0))
        self.lazy = LazyRefresh(self, self.refresh, delay_ms=120)
        selection.changed.connect(lambda _ids: self.follow_selection())

    def set_document(self, doc) -> None:
        """Show ``doc`` (or nothing) and follow its events."""
        self.doc = doc
        self._subscription.follow(doc)
        self.lazy.request()
        if self.isVisible():
            self.lazy.flush()

    def refresh(self) -> None:
        """Rebuild the rows from the edited graph."""
        if self.doc is None:
            self.model.set_nodes([], [])
        else:
            nodes = list(self.doc.edited.graph.nodes)
            self.model.user_module = self.doc.loaded.user_module
            self.model.set_nodes(nodes, [self.doc.id_of(n) for n in nodes])
        self._update_count()
        self.follow_selection()

    def _filter_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text)
        self._update_count()

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count.setText(f"{shown} of {total}" if shown != total else f"{total} nodes")

    def follow_selection(self) -> None:
        """Select (and scroll to) the selected node's row."""
        if self._syncing or not self.model.ids:
            return
        current = self.selection.current()
        self._syncing = True
        try:
            sel = self.table.selectionModel()
            if current is None or current not in self.model.ids:
                sel.clearSelection()
                return
            src = self.model.index(self.model.ids.index(current), 0)
            idx = self.proxy.mapFromSource(src)
            if idx.isValid():
                sel.select(idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
                self.table.scrollTo(idx)
        finally:
            self._syncing = False

    def _rows_selected(self, *_args) -> None:
        if self._syncing:
            return
        rows = self.table.selectionModel().selectedRows()
        if rows:
            src = self.proxy.mapToSource(rows[0])
            self._syncing = True
            try:
                self.selection.set([self.model.ids[src.row()]])
            finally:
                self._syncing = False
