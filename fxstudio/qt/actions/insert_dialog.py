"""The Insert dialog: what to call, with which arguments, before or after the selected node.

Arguments come prefilled with the selected node (after) or its first input (before), and the
target list starts with the common choices, so "insert relu after this" is Insert after… then a
double click on ``torch.relu``. OK applies exactly one ``insert`` op; a refusal is shown in the
dialog, which stays open.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QFormLayout, QLabel, QLineEdit, QListWidget,
    QVBoxLayout, QWidget,
)

from fxstudio.core.argsyntax import parse_value
from fxstudio.core.errors import FxStudioError
from fxstudio.core.target_catalog import OP_KINDS, filter_targets, targets_for
from fxstudio.core.targets import parse_target
from fxstudio.qt.actions.dialog_style import DIALOG_QSS, error_label, ok_cancel_buttons
from fxstudio.qt.properties.signature import signature_text

LIST_LIMIT = 400
"""Matches listed at once; typing narrows the rest down."""


class InsertDialog(QDialog):
    """Insert a node before or after ``anchor`` of ``doc``.

    ``apply(edit, reroute)`` receives the ``insert`` op dict and returns the refusal reason or None. With
    "after", the anchor's users can be routed through the new node (checked by default), which is
    what "insert relu after conv1" means to most users.
    """

    def __init__(self, doc, anchor: str, where: str, apply, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("fxsDialog")
        self.setStyleSheet(DIALOG_QSS)
        self.setWindowTitle(f"Insert {where} {anchor}")
        self.setMinimumSize(520, 560)
        self._doc = doc
        self._anchor = anchor
        self._apply = apply
        node = doc.find(anchor)
        layout = QVBoxLayout(self)
        heading = QLabel(f"Insert a node {where} {anchor}")
        heading.setObjectName("fxsDialogTitle")
        layout.addWidget(heading)
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignRight)
        self.where = QComboBox()
        self.where.addItems(["after", "before"])
        self.where.setCurrentText(where)
        self.kind = QComboBox()
        self.kind.addItems(list(OP_KINDS))
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search targets: relu, gelu, add, Dropout…")
        self.search.setClearButtonEnabled(True)
        self.targets = QListWidget()
        self.targets.setMinimumHeight(200)
        self.target = QLineEdit()
        self.target.setPlaceholderText("target in target syntax, e.g. torch.relu")
        self.args = QLineEdit(self._default_args(node, where))
        self.kwargs = QLineEdit("{}")
        self.name = QLineEdit()
        self.name.setPlaceholderText("optional; chosen from the target when empty")
        self.reroute = QCheckBox()
        self.reroute.setChecked(True)
        self._reroute_text(where)
        form.addRow(self._key("position"), self.where)
        form.addRow(self._key("op kind"), self.kind)
        form.addRow(self._key("find"), self.search)
        form.addRow(self._key(""), self.targets)
        form.addRow(self._key("target"), self.target)
        self.signature = QLabel()
        self.signature.setObjectName("fxsDialogHint")
        self.signature.setWordWrap(True)
        form.addRow(self._key(""), self.signature)
        form.addRow(self._key("args"), self.args)
        form.addRow(self._key("kwargs"), self.kwargs)
        form.addRow(self._key("name"), self.name)
        form.addRow(self._key(""), self.reroute)
        layout.addLayout(form)
        self.error = error_label()
        layout.addWidget(self.error)
        self.buttons, self.ok_button = ok_cancel_buttons(self, "Insert")
        layout.addWidget(self.buttons)
        self.kind.currentTextChanged.connect(self._fill_targets)
        self.where.currentTextChanged.connect(self._where_changed)
        self.search.textChanged.connect(self._filter)
        self.search.returnPressed.connect(self._search_enter)
        self.targets.currentTextChanged.connect(self._pick)
        self.targets.itemDoubleClicked.connect(lambda item: (self._pick(item.text()), self.try_accept()))
        for field in (self.args, self.kwargs):
            field.textEdited.connect(lambda _t: self._validate_fields())
        self._all: list[str] = []
        self._fill_targets(self.kind.currentText())
        self.search.setFocus()

    @staticmethod
    def _key(text: str) -> QLabel:
        label = QLabel(text)
        label.setObjectName("fxsDialogKey")
        return label

    @staticmethod
    def _default_args(node, where: str) -> str:
        if node is None:
            return "()"
        if where == "before":
            inputs = node.all_input_nodes
            return f"(%{inputs[0].name},)" if inputs else "()"
        return f"(%{node.name},)"

    def _reroute_text(self, where: str) -> None:
        node = self._doc.find(self._anchor)
        if where == "after":
            self.reroute.setText(f"Route {self._anchor}'s users through the new node")
            self.reroute.setEnabled(node is not None and bool(node.users))
        else:
            inputs = node.all_input_nodes if node is not None else []
            self.reroute.setText(f"Feed {self._anchor} from the new node instead of {inputs[0].name}"
                                 if inputs else f"{self._anchor} has no input to replace")
            self.reroute.setEnabled(bool(inputs))

    def _where_changed(self, where: str) -> None:
        self.args.setText(self._default_args(self._doc.find(self._anchor), where))
        self._reroute_text(where)
        self._validate_fields()

    def _fill_targets(self, kind: str) -> None:
        self._all = targets_for(kind, self._doc.edited, self._doc.loaded.user_module)
        if kind == "get_attr":
            self.args.setText("()")
        elif self.args.text() == "()":
            self._where_changed(self.where.currentText())
        self._filter(self.search.text())

    def _filter(self, text: str) -> None:
        self.targets.clear()
        self.targets.addItems(filter_targets(self._all, text, LIST_LIMIT))
        if self.targets.count():
            self.targets.setCurrentRow(0)

    def _search_enter(self) -> None:
        # Enter then reaches the dialog, whose default button (Insert) applies the edit.
        if self.targets.currentItem() is not None:
            self._pick(self.targets.currentItem().text())

    def _pick(self, text: str) -> None:
        if text:
            self.target.setText(text)
            self.signature.setText(self._signature_of(text))

    def _signature_of(self, text: str) -> str:
        kind = self.kind.currentText()
        try:
            target = parse_target(kind, text, self._doc.edited, self._doc.loaded.user_module) \
                if kind == "call_function" else text
        except FxStudioError:
            return ""
        sig = signature_text(kind, target)
        return f"{text.rsplit('.', 1)[-1]}{sig}" if sig else ""

    def _validate_fields(self) -> str | None:
        """Mark the args/kwargs fields that do not parse; return the first message."""
        first = None
        for field, kind in ((self.args, tuple), (self.kwargs, dict)):
            message = None
            try:
                value = parse_value(field.text(), self._doc.find)
                if not isinstance(value, (tuple, list) if kind is tuple else dict):
                    message = f"{'args' if kind is tuple else 'kwargs'} must be a " \
                              f"{'tuple such as (%x,)' if kind is tuple else 'dict such as {}'}."
            except FxStudioError as exc:
                message = str(exc)
            field.setProperty("fxsState", "invalid" if message else "")
            field.setToolTip(message or "")
            field.style().unpolish(field)
            field.style().polish(field)
            first = first or message
        self._show(first)
        return first

    def _show(self, message: str | None) -> None:
        self.error.setText(message or "")
        self.error.setVisible(bool(message))

    def edit(self) -> dict:
        """The ``insert`` op dict the dialog's fields describe."""
        edit = {
            "op": "insert", self.where.currentText(): self._anchor, "kind": self.kind.currentText(),
            "target": self.target.text().strip(), "args": self.args.text().strip() or "()",
            "kwargs": self.kwargs.text().strip() or "{}",
        }
        if self.name.text().strip():
            edit["name"] = self.name.text().strip()
        return edit

    def reroute_users(self) -> bool:
        """Whether to wire the new node in: after, the anchor's users take it; before, the anchor
        takes it in place of its first input."""
        return self.reroute.isEnabled() and self.reroute.isChecked()

    def try_accept(self) -> None:
        """Insert; close on success, show the reason and stay open on refusal."""
        if not self.target.text().strip():
            self._show("Pick a target from the list or type one.")
            return
        if self._validate_fields():
            return
        message = self._apply(self.edit(), self.reroute_users())
        if message:
            self._show(message)
            return
        self.accept()
