"""The dialogs of Edit ▸ Run Pass… and Edit ▸ Replace Pattern…: pick a pass file (recent ones are
offered), then a pass of it (or a built-in) or a pattern/replacement pair of its functions.

Nothing in the chosen file runs to fill the lists: passes come from ``pass_names`` (the file's
top-level definitions, read with ``ast``), pattern functions from the file's top-level ``def``s.
OK hands the choice (and, for Run Pass, the optional keyword arguments of the pass) to a callback
that returns the refusal reason or None; on a refusal the dialog shows it and stays open. Dialogs
are shown with ``open()`` (window-modal, non-blocking).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QListWidget,
    QListWidgetItem, QPushButton, QVBoxLayout, QWidget,
)

from fxstudio.core.errors import FxStudioError
from fxstudio.core.passes import BUILTIN_PASSES, BUILTIN_PREFIX, parse_pass_kwargs, pass_names, split_pass_arguments
from fxstudio.qt.actions.dialog_style import DIALOG_QSS

PASS_FILTER = "Python pass files (*.py);;All files (*)"
ROLE = Qt.ItemDataRole.UserRole


def builtin_names() -> list[str]:
    """The full names of the built-in passes (``fxstudio.passes.fuse_conv_bn`` …)."""
    return [n if n.startswith(BUILTIN_PREFIX) else BUILTIN_PREFIX + n for n in BUILTIN_PASSES]


def top_level_functions(path: str | Path) -> list[tuple[str, int]]:
    """(name, line) of every public top-level ``def`` of a Python file, read with ``ast`` (nothing
    runs); ``FxStudioError`` for an unreadable file or bad syntax."""
    try:
        source = Path(path).read_bytes()
        tree = ast.parse(source, filename=str(path))
    except OSError as exc:
        raise FxStudioError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    except (SyntaxError, ValueError) as exc:
        raise FxStudioError(f"{Path(path).name} is not valid Python: {exc}.") from None
    return [(s.name, s.lineno) for s in tree.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.name.startswith("_")]


class _PassFileDialog(QDialog):
    """Shared parts: the file row (an editable list of recent files and Browse…), a message line and
    the OK/Cancel buttons."""

    def __init__(self, title: str, recent: list[str], start_dir: str, ok_text: str, parent: QWidget | None):
        super().__init__(parent)
        self.setObjectName("fxsDialog")
        self.setStyleSheet(DIALOG_QSS)
        self.setWindowTitle(title)
        self.setMinimumSize(560, 440)
        self._start_dir = start_dir
        self.layout_ = QVBoxLayout(self)
        heading = QLabel(title.rstrip("…"))
        heading.setObjectName("fxsDialogTitle")
        self.layout_.addWidget(heading)
        row = QHBoxLayout()
        self.file = QComboBox(self)
        self.file.setObjectName("passFile")
        self.file.setEditable(True)
        self.file.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.file.addItems(recent)
        self.file.setCurrentIndex(-1)
        self.file.lineEdit().setObjectName("passFileEdit")
        self.file.lineEdit().setPlaceholderText("A .py file of passes (recent files in the list)")
        self.file.installEventFilter(self)   # Enter there reads the file; it does not run
        self.file.lineEdit().installEventFilter(self)
        self.file.activated.connect(lambda _i: self.load_file(self.file.currentText()))
        browse = QPushButton("Browse…", self)
        browse.setObjectName("passBrowse")
        browse.setAutoDefault(False)
        browse.clicked.connect(self.browse)
        row.addWidget(self.file, 1)
        row.addWidget(browse)
        self.layout_.addLayout(row)
        self.body = QVBoxLayout()
        self.layout_.addLayout(self.body, 1)
        self.error = QLabel("", self)
        self.error.setObjectName("passMessage")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setVisible(False)
        self.layout_.addWidget(self.error)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText(ok_text)
        ok.setObjectName("passOk")
        self.buttons.accepted.connect(self.try_accept)
        self.buttons.rejected.connect(self.reject)
        self.layout_.addWidget(self.buttons)
        self.path: Path | None = None

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt override)
        """Enter in the file field reads the file and moves on to the lists (not the OK button)."""
        if (obj in (self.file, self.file.lineEdit()) and event.type() == QEvent.Type.KeyPress
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)):
            if self.load_file(self.file.currentText()):
                self.focus_choice()
            return True
        return super().eventFilter(obj, event)

    def focus_choice(self) -> None:
        """Give the focus to the first list of choices."""

    def browse(self) -> None:
        """Choose the pass file in a file dialog."""
        path, _ = QFileDialog.getOpenFileName(self, "Choose a pass file", self._start_dir, PASS_FILTER)
        if path:
            self.load_file(path)
            self.focus_choice()

    def load_file(self, path: str) -> bool:
        """Read ``path``'s definitions into the lists (nothing runs); False (and a message) if it cannot."""
        path = path.strip()
        if not path:
            self.path = None
            self._fill(None)
            return False
        p = Path(path).expanduser()
        if self.file.currentText() != str(p):
            self.file.setEditText(str(p))
        try:
            if not p.is_file():
                raise FxStudioError(f"There is no file {p}.")
            self._fill(p)
        except FxStudioError as exc:
            self.path = None
            self._fill(None)
            self.show_message(str(exc))
            return False
        self.path = p.resolve()
        self.show_message(None)
        return True

    def _fill(self, path: Path | None) -> None:
        raise NotImplementedError

    def show_message(self, message: str | None) -> None:
        """Show a refusal or a reading problem under the lists (None hides it)."""
        self.error.setText(message or "")
        self.error.setVisible(bool(message))

    def try_accept(self) -> None:
        """Apply; close on success, show the reason and stay open on refusal."""
        raise NotImplementedError


class RunPassDialog(_PassFileDialog):
    """Edit ▸ Run Pass…: the built-in passes and the passes of a chosen file, and optional keyword
    arguments for the pass (``NAME=VALUE, …`` in the argument syntax: the edit's ``kwargs``).

    ``run(file, name, kwargs)`` gets the resolved file (None for a built-in), the pass name and the
    arguments (``{name: value text}``, empty for none) and returns the refusal reason or None."""

    def __init__(self, run: Callable[[Path | None, str, dict[str, str]], str | None], recent: list[str],
                 start_dir: str = "", parent: QWidget | None = None):
        super().__init__("Run Pass…", recent, start_dir, "Run", parent)
        self.setWindowTitle("Run Pass")
        self._run = run
        self.passes = QListWidget(self)
        self.passes.setObjectName("passList")
        self.passes.itemDoubleClicked.connect(lambda _item: self.try_accept())
        self.body.addWidget(self.passes, 1)
        form = QFormLayout()
        self.arguments = QLineEdit(self)
        self.arguments.setObjectName("passArguments")
        self.arguments.setPlaceholderText("optional: NAME=VALUE, … (e.g. factor=2.0, dtype=torch.float16)")
        self.arguments.setToolTip("Keyword arguments of the pass, in the argument syntax (literals, tuples, "
                                  "torch dtypes; never evaluated). A parameter named example_inputs gets "
                                  "the model's example inputs by itself.")
        self.arguments.returnPressed.connect(self.try_accept)
        form.addRow("Arguments", self.arguments)
        self.body.addLayout(form)
        self._fill(None)
        if recent:
            self.load_file(recent[0])   # the pass file used last
        self.passes.setFocus()

    def focus_choice(self) -> None:
        """The pass list."""
        self.passes.setFocus()

    def _fill(self, path: Path | None) -> None:
        self.passes.clear()
        if path is not None:
            found = pass_names(path)   # EditRefused (an FxStudioError) for bad syntax
            for info in found:
                item = QListWidgetItem(f"{info.name}    ({info.kind}, {path.name} {info.where})")
                item.setData(ROLE, ("file", info.name))
                self.passes.addItem(item)
            if not found:
                self.show_message(f"{path.name} defines no pass (a function of one argument, a Transformer or "
                                  f"PassBase subclass, or a module-level instance).")
        for name in builtin_names():
            item = QListWidgetItem(f"{name}    (built-in)")
            item.setData(ROLE, ("builtin", name))
            self.passes.addItem(item)
        if self.passes.count():
            self.passes.setCurrentRow(0)

    def names(self) -> list[str]:
        """The listed pass names, file passes first, then the built-ins."""
        return [self.passes.item(i).data(ROLE)[1] for i in range(self.passes.count())]

    def select(self, name: str) -> bool:
        """Make ``name`` (a file pass or a built-in's full name) the current entry."""
        for i in range(self.passes.count()):
            if self.passes.item(i).data(ROLE)[1] == name:
                self.passes.setCurrentRow(i)
                return True
        return False

    def choice(self) -> tuple[Path | None, str] | None:
        """(file or None for a built-in, pass name) of the current entry, or None."""
        item = self.passes.currentItem()
        if item is None:
            return None
        kind, name = item.data(ROLE)
        return (self.path if kind == "file" else None), name

    def kwargs(self) -> dict[str, str]:
        """The arguments field as ``{name: value text}`` (checked: ``EditRefused`` when it does not read)."""
        kwargs = split_pass_arguments(self.arguments.text())
        parse_pass_kwargs(kwargs)
        return kwargs

    def try_accept(self) -> None:
        """Run the chosen pass with the arguments (the caller asks about trust); close on success."""
        choice = self.choice()
        if choice is None:
            self.show_message("Pick a pass from the list.")
            return
        try:
            kwargs = self.kwargs()
        except FxStudioError as exc:
            self.show_message(str(exc))
            self.arguments.setFocus()
            return
        message = self._run(*choice, kwargs)
        if message:
            self.show_message(message)
            return
        self.accept()


class ReplacePatternDialog(_PassFileDialog):
    """Edit ▸ Replace Pattern…: a file's pattern and replacement functions.

    ``apply(file, pattern, replacement)`` returns the refusal reason or None."""

    def __init__(self, apply: Callable[[Path, str, str], str | None], recent: list[str], start_dir: str = "",
                 parent: QWidget | None = None):
        super().__init__("Replace Pattern…", recent, start_dir, "Replace", parent)
        self.setWindowTitle("Replace Pattern")
        self._apply = apply
        form = QFormLayout()
        self.pattern = QComboBox(self)
        self.pattern.setObjectName("patternFunction")
        self.replacement = QComboBox(self)
        self.replacement.setObjectName("replacementFunction")
        form.addRow("Pattern (what to find)", self.pattern)
        form.addRow("Replacement", self.replacement)
        self.body.addLayout(form)
        self.body.addStretch(1)
        if recent:
            self.load_file(recent[0])

    def focus_choice(self) -> None:
        """The pattern list."""
        self.pattern.setFocus()

    def _fill(self, path: Path | None) -> None:
        names = [name for name, _line in top_level_functions(path)] if path is not None else []
        for box, guess in ((self.pattern, "pattern"), (self.replacement, "replacement")):
            box.clear()
            box.addItems(names)
            if guess in names:
                box.setCurrentText(guess)
        if path is not None and len(names) >= 2 and self.pattern.currentText() == self.replacement.currentText():
            self.replacement.setCurrentIndex(1)
        if path is not None and len(names) < 2:
            self.show_message(f"{path.name} needs two top-level functions: a pattern and its replacement.")

    def try_accept(self) -> None:
        """Replace every match; close on success."""
        pattern, replacement = self.pattern.currentText(), self.replacement.currentText()
        if self.path is None or not pattern or not replacement:
            self.show_message("Choose a file and its pattern and replacement functions.")
            return
        message = self._apply(self.path, pattern, replacement)
        if message:
            self.show_message(message)
            return
        self.accept()
