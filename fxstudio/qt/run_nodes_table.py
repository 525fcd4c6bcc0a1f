"""The Run pane's per-node table: one row per node of a ``CompareReport``, drawn from the report
itself (a ``QAbstractTableModel``), so showing 3,000 or 10,000 rows costs nothing until they scroll
into view (a ``QTableWidget`` built 15,000 items on the GUI thread: 0.2 s for 3,000 nodes).

``NodesTable`` keeps the small part of ``QTableWidget``'s interface the pane and its tests use:
``item(row, column)`` (a ``Cell`` with ``text()``, ``data(role)``, ``row()``, ``column()``),
``selectedItems()``, ``visualItemRect``, ``scrollToItem``, ``rowCount``, ``setRowCount(0)`` and
the ``itemClicked(Cell)`` signal.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QRect, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from fxstudio.qt.run_plots import COLORS

HEADERS = ["#", "Node", "Status", "Max abs", "Err / tol"]
STATUS_TEXT = {"equal": "equal", "close": "within tol.", "diverged": "DIVERGED", "no_counterpart": "inserted",
               "error": "ERROR"}
INSERTED = QColor(120, 80, 200)
INDEX_DIGITS = "99999"
"""The widest index the ``#`` column is sized for at least."""
WIDTH_CANDIDATES = 24
"""Per column, the width is measured on this many of its longest texts (by characters), not all rows."""


def number_text(x: float | None, fmt: str = ".3g") -> str:
    """A figure as the tables show it: ``—`` for none, ``inf``, else ``fmt``."""
    if x is None:
        return "—"
    return "inf" if math.isinf(x) else format(x, fmt)


class NodesModel(QAbstractTableModel):
    """The rows of a report's ``nodes``; texts and colours are made when a row is drawn."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list = []
        self.first_index: int | None = None
        self._brushes = {key: QBrush(color) for key, color in (
            ("diverged", COLORS["diverged"]), ("error", COLORS["first"]), ("close", COLORS["close"]),
            ("no_counterpart", INSERTED), ("first", COLORS["first"]))}

    def set_report(self, report) -> None:
        """Show ``report``'s rows (None: none)."""
        self.beginResetModel()
        self.rows = list(report.nodes) if report is not None else []
        fd = report.first_divergence if report is not None else None
        self.first_index = fd.index if fd is not None else None
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        """Rows: the report's nodes (none under a valid parent: a flat table)."""
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt override
        """The five columns of ``HEADERS``."""
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802 - Qt override
        """Column titles."""
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return HEADERS[section]
        return None

    def text(self, row: int, column: int) -> str:
        """What the cell at (row, column) reads."""
        n = self.rows[row]
        if column == 0:
            return str(n.index)
        if column == 1:
            return n.name
        if column == 2:
            return "unchanged" if n.shared else STATUS_TEXT.get(n.status, n.status)
        return number_text(n.max_abs if column == 3 else n.score)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole) -> Any:
        """Text, alignment, the status colour and (column 1, ``UserRole``) the node's stable id."""
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(row, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (0, 3, 4):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and column == 2:
            n = self.rows[row]
            return self._brushes.get("first" if n.index == self.first_index else n.status)
        if role == Qt.ItemDataRole.UserRole and column == 1:
            return self.rows[row].node_id
        return None

    def flags(self, index) -> Qt.ItemFlag:
        """Selectable, never editable."""
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


class Cell:
    """One cell of a ``NodesTable``, as ``QTableWidget.item`` would give it."""

    def __init__(self, table: "NodesTable", row: int, column: int):
        self._table, self._row, self._column = table, row, column

    def row(self) -> int:
        """Its row."""
        return self._row

    def column(self) -> int:
        """Its column."""
        return self._column

    def index(self) -> QModelIndex:
        """Its model index."""
        return self._table.model().index(self._row, self._column)

    def text(self) -> str:
        """What it reads."""
        return self._table.nodes.text(self._row, self._column)

    def data(self, role: int) -> Any:
        """``NodesModel.data`` for ``role`` (``UserRole`` of column 1: the node's stable id)."""
        return self._table.nodes.data(self.index(), role)


def style_table(table: QAbstractItemView, columns: QHeaderView.ResizeMode) -> None:
    """The Run pane's look for a read-only table: no row numbers, one row selected at a time,
    alternating rows one text line high, the last column stretched, the others sized by ``columns``."""
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.horizontalHeader().setSectionResizeMode(columns)
    table.horizontalHeader().setStretchLastSection(True)
    table.setAlternatingRowColors(True)


class NodesTable(QTableView):
    """The per-node table (see the module docstring); ``itemClicked(Cell)`` on a click."""

    itemClicked = Signal(object)  # noqa: N815 - QTableWidget's name

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.nodes = NodesModel(self)
        self.setModel(self.nodes)
        style_table(self, QHeaderView.ResizeMode.Interactive)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.setWordWrap(False)
        self._candidates: list[list[str]] | None = None  # per column, its longest texts
        self.clicked.connect(lambda index: self.itemClicked.emit(Cell(self, index.row(), index.column())))

    def set_report(self, report) -> None:
        """Show ``report``'s nodes and size the columns to their widest texts."""
        self.nodes.set_report(report)
        self._candidates = None
        self.fit_columns()

    def rowCount(self) -> int:  # noqa: N802 - QTableWidget's name
        """The number of rows."""
        return self.nodes.rowCount()

    def columnCount(self) -> int:  # noqa: N802 - QTableWidget's name
        """The number of columns."""
        return self.nodes.columnCount()

    def setRowCount(self, count: int) -> None:  # noqa: N802 - QTableWidget's name
        """Only ``0`` (clear) is meaningful: the rows are the report's."""
        if count == 0:
            self.nodes.set_report(None)
            self._candidates = None

    def item(self, row: int, column: int) -> Cell | None:
        """The cell at (row, column), or None outside the table."""
        if 0 <= row < self.rowCount() and 0 <= column < self.columnCount():
            return Cell(self, row, column)
        return None

    def selectedItems(self) -> list[Cell]:  # noqa: N802 - QTableWidget's name
        """The selected cells, row by row."""
        indexes = sorted(self.selectionModel().selectedIndexes(), key=lambda i: (i.row(), i.column()))
        return [Cell(self, i.row(), i.column()) for i in indexes]

    def visualItemRect(self, cell: Cell) -> QRect:  # noqa: N802 - QTableWidget's name
        """The cell's rectangle in the viewport."""
        return self.visualRect(cell.index())

    def scrollToItem(self, cell: Cell, hint=QAbstractItemView.ScrollHint.EnsureVisible) -> None:  # noqa: N802
        """Scroll the cell into view."""
        self.scrollTo(cell.index(), hint)

    def column_texts(self, column: int) -> list[str]:
        """The texts ``column``'s width depends on: the ``WIDTH_CANDIDATES`` longest node names, the
        largest index (and ``INDEX_DIGITS``), every status, and the widest a figure can read (``-8.88e-88``)."""
        if self._candidates is None:
            rows = self.nodes.rows
            names = sorted({n.name for n in rows}, key=len, reverse=True)[:WIDTH_CANDIDATES]
            statuses = ["unchanged", *STATUS_TEXT.values()] if rows else []
            figures = ["-8.88e-88", "—", "inf"] if rows else []
            # "#" fits five digits, whatever the largest index: its width does not jump between models.
            index = [str(max((n.index for n in rows), default=0)), INDEX_DIGITS] if rows else []
            self._candidates = [index, names, statuses, figures, figures]
        return self._candidates[column]

    def _widths(self, margin: int) -> list[int]:
        metrics, header = self.fontMetrics(), self.horizontalHeader()
        return [max(max((metrics.horizontalAdvance(t) for t in self.column_texts(c)), default=0) + 2 * margin,
                    header.sectionSizeHint(c)) for c in range(self.columnCount())]

    def content_width(self, margin: int = 12) -> int:
        """The width every column needs whole (``margin`` each side of a text), with the frame and a
        vertical scroll bar."""
        return sum(self._widths(margin)) + 2 * self.frameWidth() + self.verticalScrollBar().sizeHint().width() + 8

    def fit_columns(self, margin: int = 12) -> None:
        """Give each column the width of its widest text (measured on its longest ones)."""
        for c, width in enumerate(self._widths(margin)):
            self.setColumnWidth(c, width)
