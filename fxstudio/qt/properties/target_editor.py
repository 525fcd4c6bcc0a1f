"""The editable target field: completion over the targets of the node's op kind, live validation,
and Enter applying one ``set_target``."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import QCompleter, QLineEdit, QWidget



class TargetEditor(QLineEdit):
    """A line edit for a node's target in target syntax (docs/edit-scripts.md "Target syntax").

    The completion list (torch, torch.nn.functional, operator, the model file's functions, Tensor
    methods, submodules, depending on the op) is built when the field first gets focus, so
    selecting a node does not pay for it. ``submitted(text)`` fires on Enter with changed, valid
    text; ``validate`` returns the parser's message or None.
    """

    submitted = Signal(str)
    refused = Signal(str)

    def __init__(self, op: str, text: str, *, catalog: Callable[[], list[str]],
                 validate: Callable[[str], "str | None"], parent: QWidget | None = None):
        super().__init__(text, parent)
        self.op = op
        self._original = text
        self._catalog = catalog
        self._validate = validate
        self.message: str | None = None
        self.setCursorPosition(0)
        self.setToolTip("Type a target and press Enter; completion lists what this op can call")
        self.textEdited.connect(self._on_edited)
        self.returnPressed.connect(self._on_return)

    def ensure_completer(self) -> QCompleter:
        """Build the completer over this op's targets (once) and return it."""
        completer = self.completer()
        if completer is None:
            model = QStringListModel(self._catalog(), self)
            completer = QCompleter(model, self)
            completer.setCaseSensitivity(Qt.CaseInsensitive)
            completer.setFilterMode(Qt.MatchContains)
            completer.setMaxVisibleItems(16)
            self.setCompleter(completer)
        return completer

    def focusInEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Prepare completion when the user enters the field."""
        self.ensure_completer()
        super().focusInEvent(event)

    def mark(self, message: str | None) -> None:
        """Show ``message`` as the field's error, or clear it."""
        self.message = message
        self.setProperty("fxsState", "invalid" if message else "")
        self.setToolTip(message or "Type a target and press Enter; completion lists what this op can call")
        self.style().unpolish(self)
        self.style().polish(self)

    def _on_edited(self, text: str) -> None:
        self.mark(self._validate(text) if text.strip() else "type a target")

    def _on_return(self) -> None:
        text = self.text().strip()
        if text == self._original:
            return
        message = self._validate(text) if text else "type a target"
        self.mark(message)
        if message:
            self.refused.emit(message)
        else:
            self.submitted.emit(text)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Escape puts the current target back; typing opens completion."""
        if event.key() == Qt.Key_Escape and self.text() != self._original:
            self.setText(self._original)
            self.mark(None)
            return
        self.ensure_completer()
        super().keyPressEvent(event)
