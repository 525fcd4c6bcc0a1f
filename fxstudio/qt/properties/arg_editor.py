"""Argument rows of the Properties panel: one per positional argument, per keyword, per unused
default, and a row to add a keyword.

Every field takes text in the argument syntax (docs/edit-scripts.md) and validates it live with
``argsyntax.parse_value``; Enter, Tab or moving the focus away (or picking a node from the drop-down)
applies exactly one ``set_arg`` through the ``apply`` callback the panel gives, which returns the
refusal reason or None. Until then the field shows its text as not applied (amber); Escape puts the
current value back. Keys reach the combo box itself (the focus widget; its line edit is only a focus
proxy), so every key is handled there, never only on the inner line edit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, QStringListModel, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QComboBox, QCompleter, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QWidget

from fxstudio.qt.properties.style import KEY_WIDTH, key_label, small_button

Validator = Callable[[str], "str | None"]
"""Returns the parser's message for invalid text, None when the text parses."""
Candidates = Callable[[], "list[str]"]
"""Returns the name of every node that may legally feed the edited node, in graph order."""
CHECK_DELAY_MS = 250
"""Pause in typing after which a parsable value is checked against the document."""
Apply = Callable[[dict], "str | None"]
"""Applies one edit op dict; returns the refusal reason, or None when it applied."""
PENDING_TIP = "Not applied yet: press Enter (or Tab) to apply, Escape to put the current value back"
WINDOW_KEYS = (QKeySequence.StandardKey.Undo, QKeySequence.StandardKey.Redo)
"""Shortcuts the window owns while a field holds no unapplied text (undo/redo of edits)."""
FIELD_LETTERS = {Qt.Key_A, Qt.Key_C, Qt.Key_V, Qt.Key_X}
"""Ctrl+letter keys a field keeps (select all, copy, paste, cut); every other Ctrl+letter (Ctrl+E
export, Ctrl+I insert, Ctrl+S save, Ctrl+F find…) is the window's even while a field has focus:
QLineEdit would otherwise take some of them for emacs-style cursor moves (Ctrl+E: end of line)."""
_APPLY_ON_FOCUS_OUT = (Qt.TabFocusReason, Qt.BacktabFocusReason, Qt.MouseFocusReason,
                       Qt.ShortcutFocusReason, Qt.OtherFocusReason)
"""Focus leaving for these reasons applies pending text; a popup or another window does not."""


def _is_undo_key(event) -> bool:
    combo = event.keyCombination()
    if any(event.matches(k) for k in WINDOW_KEYS):
        return True
    return combo.key() == Qt.Key_Y and combo.keyboardModifiers() == Qt.ControlModifier  # Ctrl+Y: redo too


def window_owns(event, pending: bool) -> bool:
    """Whether a shortcut-override ``event`` in a text field belongs to the window's shortcuts:
    undo/redo unless the field holds unapplied text, and Ctrl+letters a field has no use for."""
    if _is_undo_key(event):
        return not pending
    key = event.key()
    return (bool(event.modifiers() & Qt.ControlModifier) and Qt.Key_A <= key <= Qt.Key_Z
            and key not in FIELD_LETTERS)


class WindowShortcuts(QObject):
    """Event filter for a text field: hands the window its shortcuts (``window_owns``);
    ``pending()`` says whether the field holds unapplied text."""

    def __init__(self, field: QWidget, pending: Callable[[], bool]):
        super().__init__(field)
        self._pending = pending
        field.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        """Leave window shortcuts unclaimed, so the window's actions fire."""
        if event.type() == QEvent.ShortcutOverride and window_owns(event, self._pending()):
            event.ignore()
            return True
        return False


class ValueField(QComboBox):
    """An argument value: editable text with live validation and a drop-down of feeder nodes.

    ``submitted(text)`` fires once when Enter is pressed on changed, valid text (or on a default,
    changed or not), when the focus leaves with changed text (``apply_on_focus_out``) or when a node
    is picked from the drop-down; ``refused(message)`` fires when that text is invalid. Changed text
    not applied yet is shown as ``fxsState == "pending"`` (amber) with a tooltip saying so.
    Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y undo the text being typed while there is unapplied text, and
    are left to the window's undo/redo otherwise. The drop-down is filled when opened, so showing a
    node on a 10k-node graph stays cheap.
    """

    submitted = Signal(str)
    refused = Signal(str)
    validity_changed = Signal(str)

    def __init__(self, text: str, *, validate: Validator, candidates: Candidates | None = None,
                 default: bool = False, check: Validator | None = None,
                 apply_on_focus_out: Callable[[], bool] | bool = True, parent: QWidget | None = None):
        super().__init__(parent)
        self.setEditable(True)
        self.setCompleter(None)
        self.setInsertPolicy(QComboBox.NoInsert)
        self.setMaxVisibleItems(18)
        self.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(8)
        self._validate = validate
        self._check = check
        self._check_timer: QTimer | None = None
        self._candidates = candidates
        self._original = text
        self._populated = False
        self._default = default
        self._done = False
        self._apply_on_focus_out = apply_on_focus_out
        self.message: str | None = None
        self.setEditText(text)
        self.lineEdit().setCursorPosition(0)
        self.lineEdit().textEdited.connect(self._on_edited)
        # No returnPressed hook: Return reaches keyPressEvent whether it was sent to the combo (the
        # focus widget under a real window system) or to its line edit (which ignores it to us).
        self.activated.connect(self._on_activated)
        self._set_state("default" if default else "")
        if candidates is None:
            self._hint = "Type a value in argument syntax and press Enter"
        else:
            self._hint = "Type a value (%name for a node) and press Enter, or pick a node from the list"
        self.setToolTip(self._hint)

    @property
    def original(self) -> str:
        """The text the field started with (the current value of the argument)."""
        return self._original

    @property
    def pending(self) -> bool:
        """Whether the field holds text that differs from the current value (not applied yet)."""
        return self.currentText().strip() != self._original.strip()

    def applied(self, text: str) -> None:
        """``text`` is now the argument's value: nothing is pending any more."""
        self._original = text
        self.mark(None)

    def revert(self) -> None:
        """Put the current value back (Escape)."""
        self.setEditText(self._original)
        self.lineEdit().setCursorPosition(0)
        self.mark(None)

    def showPopup(self) -> None:  # noqa: N802 - Qt override
        """Fill the list of legal feeder nodes on first opening, then show it."""
        if self._candidates is not None and not self._populated:
            self.populate()
        super().showPopup()

    def forget_candidates(self) -> None:
        """The graph changed: list the legal feeders anew when the drop-down next opens."""
        self._populated = False

    def populate(self) -> None:
        """Fill the drop-down with the nodes that may legally feed the edited node."""
        if self._candidates is None:
            return
        text = self.currentText()
        self.blockSignals(True)
        # One string-list model instead of 10k addItem calls: opening stays fast on big graphs.
        self.setModel(QStringListModel([f"%{name}" for name in self._candidates()], self))
        self.setCurrentIndex(-1)
        self.setEditText(text)
        self.blockSignals(False)
        self._populated = True

    def mark(self, message: str | None) -> None:
        """Show ``message`` as this field's error (red border, tooltip), or clear it with None."""
        self.message = message
        if message:
            self._set_state("invalid")
            self.setToolTip(message)
        elif self.pending:
            self._set_state("pending")
            self.setToolTip(PENDING_TIP)
        else:
            self._set_state("default" if self._default else "")
            self.setToolTip(self._hint)
        self.validity_changed.emit(message or "")

    def _set_state(self, state: str) -> None:
        if self.property("fxsState") == state:
            return  # re-polishing on every keystroke would be wasted work
        for w in (self, self.lineEdit()):
            w.setProperty("fxsState", state)
            w.style().unpolish(w)
            w.style().polish(w)

    def _on_edited(self, text: str) -> None:
        self._done = False
        message = self._validate(text)
        self.mark(message)
        if self._check is not None and message is None:
            self._schedule_check()

    def _schedule_check(self) -> None:
        """Ask the document whether the edit would apply once typing pauses (a cycle, a keyword the
        target does not take): the parser only knows the syntax."""
        if self._check_timer is None:
            self._check_timer = QTimer(self)
            self._check_timer.setSingleShot(True)
            self._check_timer.setInterval(CHECK_DELAY_MS)
            self._check_timer.timeout.connect(self._run_check)
        self._check_timer.start()

    def _run_check(self) -> None:
        text = self.currentText()
        if self._check is None or self.message or text.strip() == self._original.strip():
            return
        message = self._check(text)
        if message:
            self.mark(message)

    def _on_activated(self, index: int) -> None:
        if index >= 0:
            self._submit(self.itemText(index))

    def _submit(self, text: str) -> None:
        if self._done:  # the edit's redraw can move the focus: no second submission meanwhile
            return
        message = self._validate(text)
        if message:
            self.mark(message)
            self.refused.emit(message)
            return
        if text.strip() == self._original.strip() and not self._default:
            return
        self._done = True
        self.submitted.emit(text)
        self._done = False

    def event(self, event) -> bool:  # noqa: N802 - Qt override
        """Window shortcuts go to the window (``window_owns``): undo/redo unless there is typed text
        to undo (QComboBox hands every shortcut-override to its line edit, which would keep Ctrl+Z
        for its own text, Ctrl+E for end of line…)."""
        if event.type() == QEvent.ShortcutOverride and window_owns(event, self.pending):
            event.ignore()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Enter applies, Escape puts the current value back; the rest edits the text."""
        popup = self.view().isVisible()
        if event.key() in (Qt.Key_Return, Qt.Key_Enter) and not popup:
            event.accept()  # QComboBox would hand it to the line edit and back: handled once, here
            self._submit(self.currentText())
            return
        if event.key() == Qt.Key_Escape and not popup and self.pending:
            event.accept()
            self.revert()
            return
        super().keyPressEvent(event)

    def focusOutEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Leaving the field (Tab, a click elsewhere) applies changed text, as Enter would."""
        super().focusOutEvent(event)
        wanted = self._apply_on_focus_out() if callable(self._apply_on_focus_out) else self._apply_on_focus_out
        if (wanted and event.reason() in _APPLY_ON_FOCUS_OUT and self.pending and not self._done
                and self.isVisible() and not self.view().isVisible()):
            self._submit(self.currentText())


class ArgumentRows(QWidget):
    """A grid of argument rows; each row is a label, a ``ValueField`` and an optional remove button.

    Rows are added with ``add_row``; an error label under each row shows the field's message.
    """

    def __init__(self, apply: Apply, validate: Validator, candidates: Candidates | None,
                 on_refused: Callable[[str], None] | None = None,
                 check_edit: Callable[[dict], "str | None"] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._apply = apply
        self._check_edit = check_edit
        self._on_refused = on_refused
        self._validate = validate
        self._candidates = candidates
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 2, 0, 2)
        self.grid.setHorizontalSpacing(6)
        self.grid.setVerticalSpacing(3)
        self.grid.setColumnStretch(1, 1)
        self.fields: dict[int | str, ValueField] = {}
        self.remove_buttons: dict[str, Any] = {}
        self._row = 0

    def add_row(self, label: str, key: int | str, text: str, *, node: str, default: bool = False,
                removable: bool = False, tooltip: str = "") -> ValueField:
        """Add a row editing ``node``'s argument ``key``; Enter applies one ``set_arg``."""
        check = None
        if self._check_edit is not None:
            check = lambda value, k=key: self._check_edit(  # noqa: E731
                {"op": "set_arg", "node": node, "key": k, "value": value})
        field = ValueField(text, validate=self._validate, candidates=self._candidates, default=default,
                           check=check)
        error = QLabel()
        error.setObjectName("fxsError")
        error.setWordWrap(True)
        error.hide()
        field.validity_changed.connect(lambda msg, e=error: (e.setText(msg), e.setVisible(bool(msg))))
        if self._on_refused is not None:
            field.refused.connect(self._on_refused)
        field.submitted.connect(
            lambda value, k=key, f=field: self._submit(f, {"op": "set_arg", "node": node, "key": k, "value": value})
        )
        self.grid.addWidget(key_label(label, default=default, tooltip=tooltip), self._row, 0)
        self.grid.addWidget(field, self._row, 1)
        if removable:
            button = small_button("✕", f"Remove keyword {key}")
            button.clicked.connect(lambda _=False, k=key, f=field: self._submit(
                f, {"op": "del_kwarg", "node": node, "key": k}))
            self.grid.addWidget(button, self._row, 2)
            self.remove_buttons[str(key)] = button
        self.grid.addWidget(error, self._row + 1, 1, 1, 2)
        self.fields[key] = field
        self._row += 2
        return field

    def _submit(self, field: ValueField, edit: dict) -> None:
        message = self._apply(edit)
        if message:
            field.mark(message)
        elif "value" in edit:
            field.applied(edit["value"])


class AddKeywordRow(QWidget):
    """``name = value`` fields and a + button that add a keyword argument with one ``set_arg``."""

    def __init__(self, node: str, keywords: list[str], apply: Apply, validate: Validator,
                 candidates: Candidates | None, on_refused: Callable[[str], None] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._on_refused = on_refused
        self._node = node
        self._apply = apply
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        self.name = QLineEdit()
        WindowShortcuts(self.name, lambda: bool(self.name.text()))
        self.name.setPlaceholderText("keyword")
        self.name.setFixedWidth(KEY_WIDTH)
        if keywords:
            completer = QCompleter(keywords, self.name)
            completer.setCaseSensitivity(Qt.CaseInsensitive)
            self.name.setCompleter(completer)
            self.name.setToolTip("Keywords this target accepts: " + ", ".join(keywords))
        # Moving on from the value adds the keyword only once it has a name: Shift+Tab back to fix
        # the name must not add anything.
        self.value = ValueField("", validate=validate, candidates=candidates,
                                apply_on_focus_out=lambda: self.name.text().strip().isidentifier())
        self.value.lineEdit().setPlaceholderText("value")
        self.add_button = small_button("+", "Add this keyword argument")
        layout.addWidget(self.name)
        layout.addWidget(QLabel("="))
        layout.addWidget(self.value, 1)
        layout.addWidget(self.add_button)
        self.error = QLabel()
        self.error.setObjectName("fxsError")
        self.error.setWordWrap(True)
        self.error.hide()
        self.value.validity_changed.connect(lambda msg: (self.error.setText(msg), self.error.setVisible(bool(msg))))
        self.value.submitted.connect(self._add)
        if on_refused is not None:
            self.value.refused.connect(on_refused)
        self.name.returnPressed.connect(lambda: self.value.setFocus())
        self.add_button.clicked.connect(lambda: self._add(self.value.currentText()))

    def _add(self, value: str) -> None:
        key = self.name.text().strip()
        if not key.isidentifier():
            message = f"'{key}' is not a keyword name" if key else "type the keyword's name first"
            self.value.mark(message)
            if self._on_refused is not None:
                self._on_refused(message)
            return
        message = self._apply({"op": "set_arg", "node": self._node, "key": key, "value": value})
        if message:
            self.value.mark(message)
        else:
            self.name.clear()
            self.value.applied("")
