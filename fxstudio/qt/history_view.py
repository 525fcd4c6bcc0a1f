"""The History dock: the undo stack's labels, oldest first; clicking an entry moves the document there."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.lazy_refresh import LazyRefresh
from fxstudio.qt.selection import SelectionModel


class HistoryView(QWidget):
    """Row 0 is the model as opened; row i is the state after the i-th command.

    Rows after the current state (undone commands, still redoable) are shown greyed and italic.
    Clicking row i calls ``doc.go_to(i)``: one undo/redo walk, never a graph edit of its own.
    """

    def __init__(self, selection: SelectionModel | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = None
        self._subscription = DocumentSubscription(lambda _event: self.lazy.request())
        self._updating = False
        self.list = QListWidget(self)
        self.list.setObjectName("historyList")
        self.list.setAlternatingRowColors(False)
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        self.lazy = LazyRefresh(self, self.refresh)

    def set_document(self, doc) -> None:
        """Show ``doc``'s history (or nothing) and follow its events."""
        self.doc = doc
        self._subscription.follow(doc)
        self.lazy.request()
        self.lazy.flush()

    def refresh(self) -> None:
        """Rebuild the rows from ``doc.history`` and mark ``doc.history_index``."""
        self._updating = True
        try:
            self.list.clear()
            if self.doc is None:
                return
            name = self.doc.loaded.display_name
            labels = [f"Opened {name}", *self.doc.history]
            current = self.doc.history_index
            grey = QBrush(QColor("#8a8f98"))
            for i, label in enumerate(labels):
                item = QListWidgetItem(f"{i:>3}  {label}" if i else label)
                item.setData(Qt.ItemDataRole.UserRole, i)
                item.setToolTip(label if i <= current else f"{label} (undone: click to redo up to here)")
                if i > current:
                    item.setForeground(grey)
                    font = QFont(item.font())
                    font.setItalic(True)
                    item.setFont(font)
                self.list.addItem(item)
            self.list.setCurrentRow(current)
            self.list.scrollToItem(self.list.item(current))
        finally:
            self._updating = False

    def _clicked(self, item: QListWidgetItem) -> None:
        if self._updating or self.doc is None:
            return
        index = int(item.data(Qt.ItemDataRole.UserRole))
        if index != self.doc.history_index:
            self.doc.go_to(index)
