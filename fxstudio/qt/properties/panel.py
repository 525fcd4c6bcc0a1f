"""The Properties dock: everything about the selected node, editable in place.

The panel draws the node the ``SelectionModel`` points at and redraws on every ``DocumentEvent``.
Each gesture (Enter in a field, a node picked from a drop-down, a remove button) becomes exactly one
``doc.apply_edit`` op dict; a refusal marks the field with the reason and is emitted as
``edit_refused(str)`` for the Problems dock. The panel never touches the graph itself.
"""

from __future__ import annotations

from typing import Any

import torch.fx
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QApplication, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QScrollArea, QToolButton, QVBoxLayout, QWidget,
)

from fxstudio.core.argsyntax import format_value, parse_value
from fxstudio.core.errors import FxStudioError
from fxstudio.core.node_text import REJECTED_SHAPE, UNKNOWN_SHAPE, rejection_text, target_text, unknown_text
from fxstudio.core.target_catalog import targets_for
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.properties.arg_editor import AddKeywordRow, ArgumentRows, WindowShortcuts
from fxstudio.qt.properties.node_info import (
    analysis_sections, feeder_names, module_repr, validate_target,
)
from fxstudio.qt.properties.signature import parameter_view
from fxstudio.qt.properties.style import NodeLink, PANEL_QSS, key_label, op_badge, section_label
from fxstudio.qt.properties.target_editor import TargetEditor
from fxstudio.qt.selection import SelectionModel

_NAME = ("header", "name")
_TARGET = ("header", "target")

LINK_LIMIT = 40
"""Users or inputs shown as links before the rest are summarised ("… and 812 more")."""


class PropertiesPanel(QWidget):
    """Op, name, target, arguments (with defaults), inputs, users, shape, module and source of a node.

    Built as ``PropertiesPanel(selection)``; the window calls ``set_document(doc)``. Signals:
    ``edit_refused(str)`` with a refused edit's reason, ``navigate(int)`` with the id of a node
    whose link the user clicked (the panel also selects it).

    The widgets of the node on display, for tests and the window: ``name_field``,
    ``target_field``, ``fields`` (``ValueField`` by key: ``0, 1, …`` positional, ``"max"`` keyword,
    ``("default", "alpha")`` an unused default), ``remove_buttons`` (by keyword), ``add_keyword``
    (its ``name``/``value``/``add_button``), ``links`` (``"users:add"``, ``"inputs:x"``).
    """

    edit_refused = Signal(str)
    navigate = Signal(int)

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("fxsProperties")
        self.setStyleSheet(PANEL_QSS)
        self.setAttribute(Qt.WA_StyledBackground, True)
        self.selection = selection
        self.doc = None
        self._subscription = DocumentSubscription(self._on_event)
        self.node_id: int | None = None
        self.fields: dict[Any, Any] = {}
        self.links: dict[str, NodeLink] = {}
        self.remove_buttons: dict[str, Any] = {}
        self.name_field: QLineEdit | None = None
        self.target_field: TargetEditor | None = None
        self.add_keyword: AddKeywordRow | None = None
        self._focus_key: Any = None
        self._node_actions: list = []
        self.action_buttons: list[QToolButton] = []
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.NoFrame)
        outer.addWidget(self.scroll)
        self._stale = False
        selection.changed.connect(lambda _ids: self.request_refresh())
        self.refresh()

    # ------------------------------------------------------------------ document and selection

    def set_document(self, doc) -> None:
        """Show nodes of ``doc`` (or nothing with None); follows its events from now on."""
        self.doc = doc
        self._subscription.follow(doc)
        self.refresh()

    def set_actions(self, actions: list) -> None:
        """Show these QActions (e.g. ``StructureActions.actions()``) as buttons under the node's
        name; they keep their own enabled state and shortcuts."""
        self._node_actions = list(actions)
        self.refresh()

    def current_node(self) -> torch.fx.Node | None:
        """The node on display, or None."""
        if self.doc is None or self.node_id is None:
            return None
        return self.doc.node(self.node_id)

    def _on_event(self, event) -> None:
        # An edit elsewhere in the graph leaves this node's fields, inputs and users as they are
        # (a rewire reports its old and new input as changed too): no rebuild.
        ids = event.changed | event.added | event.removed
        if (event.kind in ("edited", "undone", "redone") and self.node_id is not None
                and self.node_id not in ids and self.current_node() is not None):
            for field in self.fields.values():
                forget = getattr(field, "forget_candidates", None)
                if forget is not None:   # which nodes may feed this one can change with any rewire
                    forget()
            return
        self.request_refresh()

    def request_refresh(self) -> None:
        """Redraw now when visible; when hidden (a tab behind another dock), when next shown."""
        if self.isVisible():
            self.refresh()
        else:
            self._stale = True

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Catch up with edits and selections made while hidden."""
        if self._stale:
            self.refresh()
        super().showEvent(event)

    def refresh(self) -> None:
        """Redraw from the current selection and document."""
        self._stale = False
        focused = QApplication.focusWidget()
        if (self._focus_key is None and focused is not None and self.isAncestorOf(focused)
                and self.selection.current() == self.node_id):
            self._focus_key = self._key_of_focus()  # an undo from a field keeps the focus in it
        self.node_id = self.selection.current()
        node = self.current_node()
        self.fields = {}
        self.links = {}
        self.remove_buttons = {}
        self.action_buttons = []
        self.name_field = self.target_field = self.add_keyword = None
        content = QWidget()
        content.setObjectName("fxsProperties")
        content.setAttribute(Qt.WA_StyledBackground, True)
        layout = QVBoxLayout(content)
        layout.setContentsMargins(12, 10, 12, 12)
        layout.setSpacing(4)
        if node is None:
            text = "Open a model to see its nodes." if self.doc is None else \
                "Select a node to see and edit its properties." if self.node_id is None else \
                "The selected node is no longer in the graph."
            empty = QLabel(text)
            empty.setObjectName("fxsEmpty")
            empty.setAlignment(Qt.AlignCenter)
            empty.setWordWrap(True)
            layout.addWidget(empty)
        else:
            self._build(layout, node)
        layout.addStretch(1)
        old = self.scroll.takeWidget()
        self.scroll.setWidget(content)
        if old is not None:
            old.deleteLater()
        self._restore_focus()

    # ------------------------------------------------------------------ sections

    def _build(self, layout: QVBoxLayout, node: torch.fx.Node) -> None:
        doc = self.doc
        self._build_header(layout, node)
        if self._node_actions:
            layout.addLayout(self._action_row())
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignRight)
        form.setHorizontalSpacing(8)
        form.setVerticalSpacing(4)
        if node.op in ("call_function", "call_method", "call_module", "get_attr"):
            self.target_field = TargetEditor(
                node.op, target_text(node, doc.loaded.user_module),
                catalog=lambda op=node.op: targets_for(op, doc.edited, doc.loaded.user_module),
                validate=lambda text, op=node.op: validate_target(doc, op, text),
            )
            self.target_field.submitted.connect(
                lambda text, name=node.name: self._apply_from(
                    self.target_field, {"op": "set_target", "node": name, "target": text}, _TARGET))
            self.target_field.refused.connect(self.edit_refused.emit)
            original_target = self.target_field.text()
            WindowShortcuts(self.target_field, lambda f=self.target_field, t=original_target: f.text() != t)
            form.addRow(key_label("target"), self.target_field)
        shape = doc.shape_text_of(node)
        if shape:
            label = QLabel(shape)
            label.setObjectName("fxsShape")
            label.setProperty("fxsState", "rejected" if shape == REJECTED_SHAPE else "unknown" if shape == UNKNOWN_SHAPE else "")
            label.setToolTip(rejection_text(node) or unknown_text(node))
            label.setTextInteractionFlags(Qt.TextSelectableByMouse)
            form.addRow(key_label("output"), label)
        module_path = doc.module_path_of(node)
        if module_path:
            stack = doc.module_stack_of(node)
            cls = f"  ({stack[-1][1]})" if stack else ""
            form.addRow(key_label("in module"), QLabel(f"{module_path}{cls}"))
        layout.addLayout(form)
        rejected = rejection_text(node)
        if rejected:  # torch's own check after the edit: what a run would raise here
            note = QLabel(f"✖ {rejected}\nA run would fail here: change an argument, or undo (Ctrl+Z).")
            note.setObjectName("fxsRejected")
            note.setWordWrap(True)
            note.setTextInteractionFlags(Qt.TextSelectableByMouse)
            layout.addWidget(note)
        if node.op not in ("placeholder", "get_attr"):
            self._build_arguments(layout, node)
        self._build_links(layout, "Inputs", node.all_input_nodes)
        self._build_links(layout, "Users", list(node.users))
        text = module_repr(doc, node)
        if text:
            layout.addWidget(section_label("Module" if node.op == "call_module" else "Attribute"))
            label = QLabel(text)
            label.setObjectName("fxsRepr")
            label.setTextInteractionFlags(Qt.TextSelectableByMouse)
            label.setWordWrap(True)
            layout.addWidget(label)
        analyses = analysis_sections(node)   # what analysis passes computed (run_pass)
        if analyses:
            layout.addWidget(section_label("Analysis"))
        for label, text in analyses:
            name = QLabel(label)
            name.setObjectName("fxsNote")
            layout.addWidget(name)
            info = QLabel(text)
            info.setObjectName("fxsAnalysis")
            info.setTextInteractionFlags(Qt.TextSelectableByMouse)
            info.setWordWrap(True)
            layout.addWidget(info)
        source = doc.source_of(node)
        if source:
            layout.addWidget(section_label("Source"))
            file = str(source.get("file", "?"))
            where = QLabel(f"{file.replace(chr(92), '/').rsplit('/', 1)[-1]}, line {source.get('line', '?')}")
            where.setObjectName("fxsNote")
            where.setToolTip(file)
            where.setTextInteractionFlags(Qt.TextSelectableByMouse)
            code = QLabel(str(source.get("code", "")).strip())
            code.setObjectName("fxsMono")
            code.setWordWrap(True)
            code.setTextInteractionFlags(Qt.TextSelectableByMouse)
            layout.addWidget(where)
            layout.addWidget(code)

    def _build_header(self, layout: QVBoxLayout, node: torch.fx.Node) -> None:
        row = QHBoxLayout()
        row.setSpacing(8)
        row.addWidget(op_badge(node.op))
        self.name_field = QLineEdit(node.name)
        self.name_field.setObjectName("fxsNameField")
        self.name_field.setToolTip("Type a new name and press Enter to rename the node")
        WindowShortcuts(self.name_field, lambda f=self.name_field, n=node.name: f.text() != n)
        if node.op == "output":
            self.name_field.setReadOnly(True)
        self.name_field.returnPressed.connect(lambda: self._rename(node.name))
        row.addWidget(self.name_field, 1)
        layout.addLayout(row)
        self.name_error = QLabel()
        self.name_error.setObjectName("fxsError")
        self.name_error.hide()
        layout.addWidget(self.name_error)

    def _action_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        row.setSpacing(4)
        self.action_buttons = []
        for action in self._node_actions:
            button = QToolButton()
            button.setObjectName("fxsAction")
            button.setDefaultAction(action)
            button.setToolButtonStyle(Qt.ToolButtonTextOnly)
            row.addWidget(button)
            self.action_buttons.append(button)
        row.addStretch(1)
        return row

    def _build_arguments(self, layout: QVBoxLayout, node: torch.fx.Node) -> None:
        doc = self.doc
        view = parameter_view(node, doc.edited)

        def validate(text: str) -> str | None:
            if not text.strip():
                return "type a value (for example 1.0, None, (2, 3) or %name)"
            try:
                parse_value(text, doc.find)
            except FxStudioError as exc:
                return str(exc)
            return None

        def candidates() -> list[str]:
            return feeder_names(doc, node)

        layout.addWidget(section_label("Arguments"))
        rows = ArgumentRows(self._apply, validate, candidates, self.edit_refused.emit, doc.check_edit)
        for i, value in enumerate(node.args):
            name = view.positional_names[i] if i < len(view.positional_names) else None
            if node.op == "output":
                label = "returns"
            elif node.op == "call_method" and i == 0:
                label = name or "self"
            else:
                label = name or f"arg {i}"
            field = rows.add_row(label, i, format_value(value), node=node.name, tooltip=f"args[{i}]")
            self.fields[i] = field
        for key, value in node.kwargs.items():
            field = rows.add_row(key, key, format_value(value), node=node.name, removable=True,
                                 tooltip=f"keyword {key}")
            self.fields[key] = field
        self.remove_buttons = rows.remove_buttons
        if not node.args and not node.kwargs:
            none = QLabel("no arguments")
            none.setObjectName("fxsNote")
            layout.addWidget(none)
        layout.addWidget(rows)
        if node.op != "output":
            self.add_keyword = AddKeywordRow(node.name, view.keywords, self._apply, validate, candidates,
                                             self.edit_refused.emit)
            layout.addWidget(self.add_keyword)
        if view.defaults:
            layout.addWidget(section_label("Defaults"))
            defaults = ArgumentRows(self._apply, validate, candidates, self.edit_refused.emit, doc.check_edit)
            for key, value in view.defaults:
                try:
                    text = format_value(value)
                except Exception:  # noqa: BLE001 - a default the syntax cannot write is shown as-is
                    text = repr(value)
                field = defaults.add_row(key, key, text, node=node.name, default=True,
                                         tooltip="Default in use; edit and press Enter to make it explicit")
                self.fields[("default", key)] = field
            layout.addWidget(defaults)
        if view.note:
            note = QLabel(view.note)
            note.setObjectName("fxsNote")
            note.setWordWrap(True)
            layout.addWidget(note)

    def _build_links(self, layout: QVBoxLayout, title: str, nodes: list[torch.fx.Node]) -> None:
        layout.addWidget(section_label(f"{title} ({len(nodes)})"))
        if not nodes:
            none = QLabel("none")
            none.setObjectName("fxsNote")
            layout.addWidget(none)
            return
        for other in nodes[:LINK_LIMIT]:
            link = NodeLink(self.doc.id_of(other), other.name, self.doc.shape_text_of(other))
            link.clicked.connect(self._go_to)
            self.links[f"{title.lower()}:{other.name}"] = link
            layout.addWidget(link)
        if len(nodes) > LINK_LIMIT:
            more = QLabel(f"… and {len(nodes) - LINK_LIMIT} more")
            more.setObjectName("fxsNote")
            layout.addWidget(more)

    # ------------------------------------------------------------------ gestures

    def _go_to(self, node_id: int) -> None:
        self.selection.set([node_id])
        self.navigate.emit(node_id)

    def _rename(self, old: str) -> None:
        new = self.name_field.text().strip()
        if new == old:
            return
        message = self._apply({"op": "rename", "node": old, "name": new}, focus=_NAME)
        if message and self.name_field is not None:
            self.name_error.setText(message)
            self.name_error.show()
            self.name_field.setProperty("fxsState", "invalid")
            self.name_field.style().polish(self.name_field)

    def _apply_from(self, field, edit: dict, focus: Any) -> None:
        message = self._apply(edit, focus=focus)
        if message and field is not None:
            field.mark(message)

    def _apply(self, edit: dict, focus: Any = None) -> str | None:
        """Apply one edit op dict; return the refusal reason (also emitted), or None."""
        if self.doc is None:
            return "no document is open"
        if focus is None:
            focus = self._key_of_focus()
        self._focus_key = focus
        try:
            self.doc.apply_edit(edit)
        except FxStudioError as exc:
            self._focus_key = None
            message = str(exc)
            self.edit_refused.emit(message)
            return message
        return None

    def _key_of_focus(self) -> Any:
        focused = self.focusWidget()
        for key, field in self.fields.items():
            if focused is field or (hasattr(field, "lineEdit") and focused is field.lineEdit()):
                return key
        return None

    def _restore_focus(self) -> None:
        key, self._focus_key = self._focus_key, None
        if key is None:
            return
        widget = {_NAME: self.name_field, _TARGET: self.target_field}.get(key) or self.fields.get(key)
        if widget is None and isinstance(key, tuple) and key[0] == "default":
            widget = self.fields.get(key[1])  # a default made explicit is now a keyword row
        if widget is not None:
            widget.setFocus()
