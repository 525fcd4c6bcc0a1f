"""A dialog that asks for one node from a searchable list: what replaces an erased node's uses, or
what a node's uses are redirected to."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog, QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget,
)

from fxstudio.qt.actions.dialog_style import DIALOG_QSS, error_label, ok_cancel_buttons


class NodePickerDialog(QDialog):
    """Pick a node by name: a filter field over a list of ``(name, shape)`` candidates.

    ``apply(name)`` is called on OK (or Enter, or a double click); it returns the refusal reason,
    shown in the dialog which then stays open, or None, and the dialog closes accepted.
    """

    def __init__(self, title: str, prompt: str, candidates: list[tuple[str, str]], *, preselect: str | None,
                 ok_text: str, apply, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setObjectName("fxsDialog")
        self.setStyleSheet(DIALOG_QSS)
        self.setMinimumSize(420, 420)
        self._apply = apply
        layout = QVBoxLayout(self)
        heading = QLabel(title)
        heading.setObjectName("fxsDialogTitle")
        text = QLabel(prompt)
        text.setWordWrap(True)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter nodes by name…")
        self.filter.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.setAlternatingRowColors(True)
        width = max((len(name) for name, _ in candidates), default=0) + 3
        for name, shape in candidates:
            item = QListWidgetItem(f"{name.ljust(width)}{shape}" if shape else name)
            item.setData(Qt.UserRole, name)
            self.list.addItem(item)
            if name == preselect:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.list.count():
            self.list.setCurrentRow(0)
        self.error = error_label()
        self.buttons, self.ok_button = ok_cancel_buttons(self, ok_text)
        for w in (heading, text, self.filter, self.list, self.error, self.buttons):
            layout.addWidget(w)
        self.filter.textChanged.connect(self._filter)
        self.list.itemDoubleClicked.connect(lambda _item: self.try_accept())
        self.list.currentItemChanged.connect(lambda *_: self._update_ok())
        self._update_ok()
        self.filter.setFocus()

    def selected_name(self) -> str | None:
        """Name of the highlighted node, or None."""
        item = self.list.currentItem()
        return item.data(Qt.UserRole) if item is not None and not item.isHidden() else None

    def _filter(self, text: str) -> None:
        needle = text.strip().lower()
        first = None
        for i in range(self.list.count()):
            item = self.list.item(i)
            hide = bool(needle) and needle not in item.data(Qt.UserRole).lower()
            item.setHidden(hide)
            if not hide and first is None:
                first = item
        current = self.list.currentItem()
        if current is None or current.isHidden():
            self.list.setCurrentItem(first)
        self._update_ok()

    def _update_ok(self) -> None:
        self.ok_button.setEnabled(self.selected_name() is not None)

    def try_accept(self) -> None:
        """Apply the choice; close on success, show the reason and stay open on refusal."""
        name = self.selected_name()
        if name is None:
            return
        message = self._apply(name)
        if message:
            self.error.setText(message)
            self.error.show()
            return
        self.accept()
