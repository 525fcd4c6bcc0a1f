"""The questions and reports of opening a model: run-code confirmation, pickle trust, load failures.

Confirmations use ``QMessageBox``'s static functions (one place to patch in tests). The failure
dialog turns every ``file.py:LINE`` in the core's message into a link that opens the Source tab of
the Code dock at that line.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QMessageBox, QPlainTextEdit, QVBoxLayout, QWidget

# A path ending in .py followed by :LINE (the core's TraceError) or ", line N" (Python tracebacks).
FILE_LINE = re.compile(r"""(?P<file>(?:[A-Za-z]:)?[^\s"'`(:]*\.py)(?::|", line )(?P<line>\d+)""")


def file_line_refs(message: str) -> list[tuple[str, int]]:
    """Every (file, line) named in ``message``, in order, without duplicates."""
    seen: list[tuple[str, int]] = []
    for m in FILE_LINE.finditer(message):
        ref = (m.group("file"), int(m.group("line")))
        if ref not in seen:
            seen.append(ref)
    return seen


def linkify(message: str) -> str:
    """``message`` as HTML with each file:line a ``src:`` link (the rest escaped)."""
    out, pos = [], 0
    for m in FILE_LINE.finditer(message):
        out.append(html.escape(message[pos:m.start()]))
        file, line = m.group("file"), m.group("line")
        out.append(f'<a href="src:{line}:{html.escape(file)}">{html.escape(m.group(0))}</a>')
        pos = m.end()
    out.append(html.escape(message[pos:]))
    return "".join(out).replace("\n", "<br>")


def confirm_run_code(parent: QWidget, path: Path) -> bool:
    """Ask before running a ``.py`` model file's code for the first time."""
    answer = QMessageBox.question(
        parent,
        "Run code from this file?",
        f"Opening {path.name} runs the Python code in it, as `python {path.name}` would "
        f"(from {path.parent}).\n\nOnly open files you trust. fxstudio remembers your answer for this file.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes


def confirm_trust_pickle(parent: QWidget, path: Path, reason: str) -> bool:
    """Ask before a full unpickle of ``path`` (which can run any code the file contains)."""
    answer = QMessageBox.warning(
        parent,
        "Trust this file?",
        f"{path.name} cannot be opened with the safe loader: it holds Python objects that only a full "
        f"unpickle rebuilds, and a full unpickle can run any code the file contains.\n\n"
        f"File: {path}\n\nOpen it with a full unpickle only if you trust where {path.name} came from.",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
        QMessageBox.StandardButton.No,
    )
    return answer == QMessageBox.StandardButton.Yes


def ask_input_shapes(parent: QWidget, path: Path, reason: str) -> list[tuple[int, ...]] | None:
    """The inputs dialog: the file gives no example inputs, so ask for one shape per input."""
    from PySide6.QtWidgets import QInputDialog

    while True:
        text, ok = QInputDialog.getText(
            parent, "Example inputs",
            f"{reason}\n\nShapes of the example inputs, one per forward argument, separated by ';' "
            "(e.g. 1,3,224,224; 1,10):",
        )
        if not ok or not text.strip():
            return None
        try:
            shapes = [tuple(int(d) for d in part.replace("x", ",").split(",") if d.strip())
                      for part in text.split(";") if part.strip()]
        except ValueError:
            shapes = []
        if shapes and all(shapes):
            return shapes
        reason = f"{text!r} is not a list of shapes."


def ask_unsaved(parent: QWidget, name: str, action: str) -> QMessageBox.StandardButton:
    """Save / Discard / Cancel before ``action`` ("closing", "opening another model") loses edits."""
    return QMessageBox.warning(
        parent,
        "Unsaved edits",
        f"{name} has edits that are not saved as an edit script.\n\nSave them before {action}?",
        QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Save,
    )


class LoadFailureDialog(QDialog):
    """The core's diagnostic, with each file:line clickable; ``details`` (a traceback) folded below."""

    def __init__(self, parent: QWidget, title: str, message: str, on_link: Callable[[str, int], None],
                 details: str = ""):
        super().__init__(parent)
        self.setObjectName("loadFailureDialog")
        self.setWindowTitle(title)
        self.setMinimumWidth(620)
        self.on_link = on_link
        self.refs = file_line_refs(message)
        self.label = QLabel(linkify(message), self)
        self.label.setObjectName("failureMessage")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.label.linkActivated.connect(self._link)
        layout = QVBoxLayout(self)
        heading = QLabel(f"<b>{html.escape(title)}</b>", self)
        layout.addWidget(heading)
        layout.addWidget(self.label)
        if self.refs:
            hint = QLabel("<i>Click a file:line to show it in the Source tab.</i>", self)
            layout.addWidget(hint)
        if details:
            box = QPlainTextEdit(details, self)
            box.setReadOnly(True)
            box.setMaximumHeight(180)
            layout.addWidget(box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)

    def open_ref(self, index: int = 0) -> None:
        """Follow the ``index``-th file:line link, as a click on it does."""
        file, line = self.refs[index]
        self._link(f"src:{line}:{file}")

    def _link(self, href: str) -> None:
        _, line, file = href.split(":", 2)
        self.on_link(file, int(line))
