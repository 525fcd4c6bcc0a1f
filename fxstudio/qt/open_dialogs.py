"""The questions and reports of opening a model: run-code confirmation, pickle trust, load failures,
and the "Open with options" dialog (tracer, concrete args, leaf modules, autowrap, input shapes).

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
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QMessageBox,
    QPlainTextEdit, QPushButton, QVBoxLayout, QWidget,
)

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


def yes_or_no(parent: QWidget | None, title: str, text: str, *, warning: bool = True) -> bool:
    """Ask a Yes/No question whose default answer is No (a warning box, or with ``warning=False`` a
    question box); True for Yes."""
    ask = QMessageBox.warning if warning else QMessageBox.question
    buttons = QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No
    return ask(parent, title, text, buttons, QMessageBox.StandardButton.No) == QMessageBox.StandardButton.Yes


def confirm_run_code(parent: QWidget, path: Path) -> bool:
    """Ask before running a ``.py`` model file's code for the first time."""
    return yes_or_no(
        parent,
        "Run code from this file?",
        f"Opening {path.name} runs the Python code in it, as `python {path.name}` would "
        f"(from {path.parent}).\n\nOnly open files you trust. fxstudio remembers your answer for this file.",
        warning=False,
    )


def confirm_trust_pickle(parent: QWidget, path: Path, reason: str) -> bool:
    """Ask before a full unpickle of ``path`` (which can run any code the file contains)."""
    return yes_or_no(
        parent,
        "Trust this file?",
        f"{path.name} cannot be opened with the safe loader: it holds Python objects that only a full "
        f"unpickle rebuilds, and a full unpickle can run any code the file contains.\n\n"
        f"File: {path}\n\nOpen it with a full unpickle only if you trust where {path.name} came from.",
    )


def confirm_trust_archive(parent: QWidget, path: Path, reason: str) -> bool:
    """Ask before ``torch.export.load`` of a ``.pt2`` whose safe read was refused (``reason``): that
    load runs the code the archive holds. The default answer is No."""
    return yes_or_no(
        parent,
        "Trust this file?",
        f"{path.name} cannot be opened with the safe reader: {_refusal(reason, path)}\n\n"
        f"Opening it with torch.export.load runs the code the archive contains (pickled objects, "
        f"shape expressions, guards).\n\nFile: {path}\n\n"
        f"Open it with torch.export.load only if you trust where {path.name} came from.",
    )


def _refusal(reason: str, path: Path) -> str:
    """The core's refusal without the file name it starts with and the CLI's ``--trust`` hint."""
    text = reason.splitlines()[0] if reason else ""
    text = text.removeprefix(f"{path}: ")
    return text.split("; fxstudio does not run code", 1)[0].rstrip(".") + "."


def offer_meta_device(parent: QWidget, path: Path, reason: str) -> bool:
    """Offer to build a model too large for memory on the meta device; True for Yes (the default)."""
    buttons = QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No
    answer = QMessageBox.question(
        parent, "Build on the meta device?",
        f"{reason}\n\nYes: build it on the meta device (no weights): the graph, its shapes and edits work, "
        "running needs a checkpoint (Open with Options > Weights).\nNo: build it with its weights anyway.",
        buttons, QMessageBox.StandardButton.Yes)
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
                 details: str = "", on_options: Callable[[], object] | None = None):
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
        self.options_button = None
        if on_options is not None:
            # The one-click way out of a trace failure: the options dialog, with the suggested fix filled in.
            self.options_button = buttons.addButton("Open with options…", QDialogButtonBox.ButtonRole.ActionRole)
            self.options_button.setObjectName("openWithOptions")
            self.options_button.setDefault(True)
            self.options_button.clicked.connect(lambda: (self.reject(), on_options()))
        layout.addWidget(buttons)

    def open_ref(self, index: int = 0) -> None:
        """Follow the ``index``-th file:line link, as a click on it does."""
        file, line = self.refs[index]
        self._link(f"src:{line}:{file}")

    def _link(self, href: str) -> None:
        _, line, file = href.split(":", 2)
        self.on_link(file, int(line))


def _split_names(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,;]+", text) if part]


def _join_shapes(shapes) -> str:
    return "; ".join(",".join(str(d) for d in shape) for shape in shapes or [])


class OpenOptionsDialog(QDialog):
    """Ask for a model file and how to load it: the window's form of ``--tracer``, ``--concrete-arg``,
    ``--leaf-module``, ``--autowrap``, ``--input-shape``, ``--device meta`` and ``--weights``.

    OK checks every field with the CLI's own parsers; a bad one keeps the dialog open and says why
    in ``error`` (and focuses that field).
    """

    def __init__(self, parent: QWidget, spec: str = "", options: dict | None = None, folder: str = ""):
        from fxstudio.cli_commands.model_args import parse_concrete_args, parse_shape

        super().__init__(parent)
        self._parse_concrete_args, self._parse_shape = parse_concrete_args, parse_shape
        options = dict(options or {})
        self._trust = bool(options.get("trust"))
        self._folder = folder
        self.setObjectName("openOptionsDialog")
        self.setWindowTitle("Open with options")
        self.setMinimumWidth(560)
        self.model = QLineEdit(spec, self)
        self.model.setObjectName("optionsModel")
        self.model.setPlaceholderText("model file: FILE.py[::Name], FILE.pt2, FILE.pt")
        browse = QPushButton("Browse…", self)
        browse.setObjectName("optionsBrowse")
        browse.setAutoDefault(False)
        browse.clicked.connect(self._browse)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(browse)
        self.tracer = QComboBox(self)
        self.tracer.setObjectName("optionsTracer")
        self.tracer.addItem("fx: torch.fx.symbolic_trace", "fx")
        self.tracer.addItem("export: torch.export (ATen level)", "export")
        self.tracer.setCurrentIndex(1 if options.get("tracer") == "export" else 0)
        self.concrete = QPlainTextEdit("\n".join(options.get("concrete_args") or []), self)
        self.concrete.setObjectName("optionsConcreteArgs")
        self.concrete.setTabChangesFocus(True)
        self.concrete.setPlaceholderText("one NAME=VALUE per line, e.g. positive=True")
        self.concrete.setFixedHeight(self.fontMetrics().lineSpacing() * 4 + 12)
        self.leaves = QLineEdit(", ".join(options.get("leaf_modules") or []), self)
        self.leaves.setObjectName("optionsLeafModules")
        self.leaves.setPlaceholderText("submodule paths or class names, e.g. layer1.0, Attention")
        self.autowrap = QLineEdit(", ".join(options.get("autowrap_functions") or []), self)
        self.autowrap.setObjectName("optionsAutowrap")
        self.autowrap.setPlaceholderText("functions kept as one call, e.g. my_helper")
        self.shapes = QLineEdit(_join_shapes(options.get("input_shapes")), self)
        self.shapes.setObjectName("optionsInputShapes")
        self.shapes.setPlaceholderText("when the file gives no example inputs, e.g. 1,3,224,224; 1,10")
        self.meta = QCheckBox("Build on the meta device (no weights)", self)
        self.meta.setObjectName("optionsMetaDevice")
        self.meta.setToolTip("For models larger than memory (.py files): the graph and its shapes without "
                             "allocating any weight, as --device meta")
        self.meta.setChecked(options.get("device") == "meta")
        self.weights = QLineEdit(options.get("weights") or "", self)
        self.weights.setObjectName("optionsWeights")
        self.weights.setPlaceholderText("optional: a .safetensors checkpoint (or folder of shards) to map in")
        self.weights.setEnabled(self.meta.isChecked())
        self.meta.toggled.connect(self.weights.setEnabled)
        self.error = QLabel("", self)
        self.error.setObjectName("optionsError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828")
        self.error.hide()
        intro = QLabel("How to load the model: the same choices as the command line's --tracer, "
                       "--concrete-arg, --leaf-module, --autowrap, --input-shape, --device meta and --weights.", self)
        intro.setWordWrap(True)
        model_label = QLabel("&Model", self)
        model_label.setBuddy(self.model)  # a row holding a layout gets no buddy of its own
        form = QFormLayout()
        form.addRow(model_label, model_row)
        form.addRow("&Tracer", self.tracer)
        form.addRow("&Concrete args", self.concrete)
        form.addRow("&Leaf modules", self.leaves)
        form.addRow("&Autowrap", self.autowrap)
        form.addRow("&Input shapes", self.shapes)
        form.addRow("", self.meta)
        form.addRow("&Weights", self.weights)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel, self)
        self.open_button = buttons.button(QDialogButtonBox.StandardButton.Open)
        self.open_button.setObjectName("optionsOpen")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self._options: dict = {}

    def _browse(self) -> None:
        from fxstudio.qt.open_flow import OPEN_FILTER

        start = self.model.text().partition("::")[0] or self._folder
        name, _ = QFileDialog.getOpenFileName(self, "Open model", start, OPEN_FILTER)
        if name:
            self.model.setText(name)

    def spec(self) -> str:
        """The model to open, as typed."""
        return self.model.text().strip()

    def options(self) -> dict:
        """The open options of the accepted dialog (the keys ``OpenFlow.open`` takes)."""
        return dict(self._options)

    def accept(self) -> None:
        """Check the fields; keep the dialog open on the first bad one, saying why."""
        problem = self._collect()
        if problem is not None:
            message, field = problem
            self.error.setText(message)
            self.error.show()
            field.setFocus(Qt.FocusReason.OtherFocusReason)
            return
        super().accept()

    def _collect(self) -> tuple[str, QWidget] | None:
        import argparse

        from fxstudio.core.errors import FxStudioError
        from fxstudio.qt.open_flow import is_name_path

        if not self.spec():
            return "Give the model file to open.", self.model
        options: dict = {"tracer": self.tracer.currentData()}
        if self._trust:
            options["trust"] = True
        concrete = [line.strip() for line in self.concrete.toPlainText().splitlines() if line.strip()]
        try:
            self._parse_concrete_args(concrete)
        except FxStudioError as exc:
            return exc.message, self.concrete
        for key, field in (("leaf_modules", self.leaves), ("autowrap_functions", self.autowrap)):
            names = _split_names(field.text())
            bad = next((n for n in names if not is_name_path(n)), None)
            if bad is not None:
                return f"{bad!r} is not a name like layer1.0 or my_function.", field
            if names:
                options[key] = names
        try:
            shapes = [self._parse_shape(part) for part in self.shapes.text().split(";") if part.strip()]
        except argparse.ArgumentTypeError as exc:
            return f"Input shapes: {exc}", self.shapes
        if any(not s for s in shapes):
            return "Input shapes: give sizes like 1,3,224,224, separated by ';'.", self.shapes
        if concrete:
            options["concrete_args"] = concrete
        if shapes:
            options["input_shapes"] = shapes
        if self.meta.isChecked():
            options["device"] = "meta"
            if self.weights.text().strip():
                options["weights"] = self.weights.text().strip()
        self._options = options
        return None
