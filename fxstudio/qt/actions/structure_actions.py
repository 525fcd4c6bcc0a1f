"""The structure actions of the editor: insert, erase, replace uses, duplicate, dead-code
elimination and rename, each a QAction the window puts in its menus and toolbars.

Each action ends in one ``doc.apply_edit`` op dict (docs/edit-scripts.md "Ops"), after a dialog where the action
needs a choice. Dialogs are opened with ``open()`` (window-modal, non-blocking) and kept in
``self.dialog`` while open, so tests and scripts can drive their widgets.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QWidget

from fxstudio.core.errors import FxStudioError
from fxstudio.qt.actions.insert_dialog import InsertDialog
from fxstudio.qt.actions.node_picker_dialog import NodePickerDialog
from fxstudio.qt.actions.rename_dialog import RenameDialog
from fxstudio.qt.properties.node_info import feeder_candidates
from fxstudio.qt.selection import SelectionModel

_FIXED = ("placeholder", "output")


def free_name(doc, target_text: str) -> str:
    """A node name not yet in ``doc`` derived from a target (``torch.nn.Dropout(p=0.1)`` → ``dropout``)."""
    base = target_text.split("(")[0].rsplit(".", 1)[-1]
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
    base = re.sub(r"\W", "_", base).strip("_") or "node"
    if not base.isidentifier() or keyword.iskeyword(base):
        base = f"{base}_node" if base.isidentifier() else "node"
    name, i = base, 1
    while doc.find(name) is not None:
        name, i = f"{base}_{i}", i + 1
    return name


class DocWatch:
    """One subscription to the document last handed to it: calling it with another document (or None)
    drops the old subscription and, for a document, calls ``on_change()`` on each of its events."""

    def __init__(self, on_change: Callable[[], None]):
        self._on_change = on_change
        self._watched = None
        self._unwatch: Callable[[], None] | None = None

    def __call__(self, doc) -> None:
        if doc is self._watched:
            return
        if self._unwatch is not None:
            self._unwatch()
        self._watched = doc
        self._unwatch = doc.subscribe(lambda _event: self._on_change()) if doc is not None else None


class StructureActions(QObject):
    """Insert before…/after…, Erase, Replace all uses with…, Duplicate, Dead-code elimination, Rename.

    ``doc_provider()`` returns the open ``Document`` or None; the actions act on the selection's
    current node. ``edit_refused(str)`` carries a refusal for the Problems dock; ``status(str)``
    a one-line summary of what an action did ("Removed 3 unused nodes").
    """

    edit_refused = Signal(str)
    status = Signal(str)

    def __init__(self, doc_provider: Callable[[], object], selection: SelectionModel,
                 parent_widget: QWidget | None = None):
        super().__init__(parent_widget)
        self._doc_provider = doc_provider
        self.selection = selection
        self.parent_widget = parent_widget
        self.dialog: QDialog | None = None
        self._watch = DocWatch(self.update_enabled)

        def make(text: str, tip: str, slot, shortcut=None) -> QAction:
            action = QAction(text, parent_widget or self)
            action.setStatusTip(tip)
            action.setToolTip(tip)
            if shortcut is not None:
                action.setShortcut(QKeySequence(shortcut))
            action.triggered.connect(lambda _checked=False: slot())
            return action

        self.insert_before = make("Insert before…", "Insert a new node before the selected one",
                                  lambda: self._insert("before"), "Ctrl+Shift+I")
        self.insert_after = make("Insert after…", "Insert a new node after the selected one",
                                 lambda: self._insert("after"), "Ctrl+I")
        self.erase = make("Erase", "Erase the selected node (asks what replaces it when it has users)",
                          self._erase, QKeySequence.Delete)
        self.replace_uses = make("Replace all uses with…", "Make every user of the selected node use another one",
                                 self._replace_uses)
        self.duplicate = make("Duplicate", "Copy the selected node right after it", self._duplicate, "Ctrl+D")
        self.eliminate_dead_code = make("Dead-code elimination", "Remove nodes whose results are never used",
                                        self._dce)
        # Shift+F2: plain F2 is the canvas's "edit the first argument" (docs/notes/canvas.md, gestures).
        self.rename = make("Rename…", "Give the selected node a new name", self._rename, "Shift+F2")
        selection.changed.connect(lambda _ids: self.update_enabled())
        self.update_enabled()

    def actions(self) -> list[QAction]:
        """Every action, in menu order."""
        return [self.insert_before, self.insert_after, self.erase, self.replace_uses, self.duplicate,
                self.rename, self.eliminate_dead_code]

    def update_enabled(self) -> None:
        """Enable what makes sense for the current document and selection (also run after every
        event of the document the provider returns, once it has been seen)."""
        doc = self._doc_provider()
        self._watch(doc)
        node = self._node()
        editable = node is not None and node.op not in _FIXED
        self.insert_before.setEnabled(node is not None and node.op != "placeholder")
        self.insert_after.setEnabled(node is not None and node.op != "output")
        self.erase.setEnabled(editable)
        self.replace_uses.setEnabled(node is not None and node.op != "output" and bool(node.users))
        self.duplicate.setEnabled(editable)
        self.rename.setEnabled(node is not None and node.op != "output")
        self.eliminate_dead_code.setEnabled(doc is not None)

    # ------------------------------------------------------------------ helpers

    def _node(self):
        doc = self._doc_provider()
        node_id = self.selection.current()
        if doc is None or node_id is None:
            return None
        return doc.node(node_id)

    def apply(self, edit: dict, *more: dict, label: str | None = None) -> str | None:
        """Apply one op dict (or several as one undoable command); on success select the node it
        added, if any; return the refusal reason or None."""
        return self._apply(edit, *more, label=label)[1]

    def _apply(self, edit: dict, *more: dict, label: str | None = None):
        """``apply``, returning ``(EditResult, None)`` on success and ``(None, reason)`` on refusal."""
        doc = self._doc_provider()
        if doc is None:
            return None, "no model is open"
        try:
            if more:
                result = doc.apply_edits([edit, *more], label=label)
            else:
                result = doc.apply_edit(edit)
        except FxStudioError as exc:
            message = str(exc)
            self.edit_refused.emit(message)
            return None, message
        if result.added:
            self.selection.set([max(result.added)])
        self.update_enabled()
        return result, None

    def _show(self, dialog: QDialog) -> None:
        self.dialog = dialog
        dialog.finished.connect(lambda _result, d=dialog: self._closed(d))
        dialog.open()

    def _closed(self, dialog: QDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
        dialog.deleteLater()

    # ------------------------------------------------------------------ the actions

    def _insert(self, where: str) -> None:
        node = self._node()
        if node is None:
            return
        doc = self._doc_provider()

        def apply(edit: dict, reroute: bool) -> str | None:
            if not reroute:
                return self.apply(edit)
            return self._insert_rerouted(doc, edit)

        self._show(InsertDialog(doc, node.name, where, apply, self.parent_widget))

    def _insert_rerouted(self, doc, edit: dict) -> str | None:
        """Insert and wire the new node in, as one command: after the anchor, its users take the
        new node; before it, the anchor takes the new node in place of its first input."""
        where = "after" if "after" in edit else "before"
        anchor = doc.find(edit[where])
        if anchor is None:
            return self.apply(edit)
        edit = dict(edit)
        edit.setdefault("name", free_name(doc, edit["target"]))
        new = edit["name"]
        if where == "after":
            # recorded as one insert with "reroute": a replayed script wires the node in the same way
            return self.apply({**edit, "reroute": True} if anchor.users else edit)
        inputs = anchor.all_input_nodes
        if not inputs:
            return self.apply(edit)
        old = inputs[0]
        rewires = [{"op": "set_arg", "node": anchor.name, "key": i, "value": f"%{new}"}
                   for i, a in enumerate(anchor.args) if a is old]
        rewires += [{"op": "set_arg", "node": anchor.name, "key": k, "value": f"%{new}"}
                    for k, a in anchor.kwargs.items() if a is old]
        if not rewires:
            return self.apply(edit)
        label = f"Insert {new} before {anchor.name} (in place of its input {old.name})"
        return self.apply(edit, *rewires, label=label)

    def _erase(self) -> None:
        node = self._node()
        if node is None:
            return
        if not node.users:
            if self.apply({"op": "erase", "node": node.name}) is None:
                self.selection.clear()
            return
        doc = self._doc_provider()
        users = ", ".join(u.name for u in list(node.users)[:6]) + (" …" if len(node.users) > 6 else "")
        inputs = node.all_input_nodes
        prompt = (f"{node.name} is used by {len(node.users)} node(s): {users}.\n"
                  f"Pick the node they should use instead; {node.name} is then erased.")
        self._show(NodePickerDialog(
            f"Erase {node.name}", prompt, feeder_candidates(doc, node),
            preselect=inputs[0].name if inputs else None, ok_text="Erase",
            apply=lambda name, n=node.name: self._erase_with(n, name),
            parent=self.parent_widget))

    def _erase_with(self, name: str, replacement: str) -> str | None:
        """Erase ``name`` pointing its users at ``replacement``, which is then selected."""
        message = self.apply({"op": "erase", "node": name, "replace_uses_with": replacement})
        doc = self._doc_provider()
        if message is None and doc is not None and doc.find(replacement) is not None:
            self.selection.set([doc.id_of(doc.find(replacement))])
        return message

    def _replace_uses(self) -> None:
        node = self._node()
        if node is None:
            return
        doc = self._doc_provider()
        inputs = node.all_input_nodes
        prompt = f"Every use of {node.name} ({len(node.users)} user(s)) will use the node you pick instead."
        self._show(NodePickerDialog(
            f"Replace all uses of {node.name}", prompt, feeder_candidates(doc, node),
            preselect=inputs[0].name if inputs else None, ok_text="Replace",
            apply=lambda name, n=node.name: self.apply({"op": "replace_uses", "node": n, "with": name}),
            parent=self.parent_widget))

    def _duplicate(self) -> None:
        node = self._node()
        if node is not None:
            self.apply({"op": "duplicate", "node": node.name})

    def _dce(self) -> None:
        doc = self._doc_provider()
        if doc is None:
            return
        result, _message = self._apply({"op": "eliminate_dead_code"})
        if result is not None:
            removed = result.removed
            self.status.emit(f"Dead-code elimination removed {len(removed)} node(s)" if removed
                             else "Dead-code elimination: nothing to remove")

    def _rename(self) -> None:
        node = self._node()
        if node is None:
            return
        doc = self._doc_provider()
        self._show(RenameDialog(
            node.name, lambda name: doc.find(name) is not None,
            lambda name, n=node.name: self.apply({"op": "rename", "node": n, "name": name}),
            self.parent_widget))
