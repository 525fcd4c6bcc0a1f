"""The Rename dialog: a new name for a node, checked as the user types."""

from __future__ import annotations

import keyword

from PySide6.QtWidgets import QDialog, QLabel, QLineEdit, QVBoxLayout, QWidget

from fxstudio.qt.actions.dialog_style import DIALOG_QSS, error_label, ok_cancel_buttons


class RenameDialog(QDialog):
    """Ask for a node's new name; ``apply(name)`` returns the refusal reason or None (then closes)."""

    def __init__(self, old: str, taken, apply, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Rename {old}")
        self.setObjectName("fxsDialog")
        self.setStyleSheet(DIALOG_QSS)
        self.setMinimumWidth(360)
        self._old = old
        self._taken = taken
        self._apply = apply
        layout = QVBoxLayout(self)
        heading = QLabel(f"Rename {old}")
        heading.setObjectName("fxsDialogTitle")
        self.field = QLineEdit(old)
        self.field.selectAll()
        hint = QLabel("A Python identifier, unique in the graph. The generated code uses it.")
        hint.setObjectName("fxsDialogHint")
        self.error = error_label()
        self.buttons, self.ok_button = ok_cancel_buttons(self, "Rename")
        for w in (heading, self.field, hint, self.error, self.buttons):
            layout.addWidget(w)
        self.field.textEdited.connect(self._check)

    def problem(self, name: str) -> str | None:
        """Why ``name`` cannot be used, judged before asking the document, or None."""
        if not name.isidentifier() or keyword.iskeyword(name):
            return f"'{name}' is not a Python identifier." if name else "Type a name."
        if name != self._old and self._taken(name):
            return f"A node named '{name}' already exists."
        return None

    def _check(self, text: str) -> None:
        message = self.problem(text.strip())
        self._show(message)
        self.ok_button.setEnabled(message is None)

    def _show(self, message: str | None) -> None:
        self.error.setText(message or "")
        self.error.setVisible(bool(message))
        self.field.setProperty("fxsState", "invalid" if message else "")
        self.field.style().unpolish(self.field)
        self.field.style().polish(self.field)

    def try_accept(self) -> None:
        """Rename; close on success, show the reason and stay open on refusal."""
        name = self.field.text().strip()
        if name == self._old:
            self.reject()
            return
        message = self.problem(name) or self._apply(name)
        if message:
            self._show(message)
            return
        self.accept()
