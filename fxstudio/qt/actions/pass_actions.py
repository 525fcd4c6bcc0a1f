"""Passes and bulk edits in the window (issue #14): Edit ▸ Run Pass…, Edit ▸ Replace Pattern…, and
the actions on a multi-selection: Insert after each…, Swap target of all…, Erase all.

Each gesture is ONE document command: ``run_pass`` / ``replace_pattern`` are one edit; the bulk
actions are one ``apply_edits`` compound (one undo step, all or nothing). A pass file runs user code:
the window asks once per file (a ``QMessageBox`` naming it, default No) and the document's
``PassTrust`` then lets exactly the files this window was told to trust run.

A pass runs in a worker thread on a working copy (``Document.prepare_edit``) while a modal progress
dialog waits with Cancel; cancelling drops the copy and changes nothing. The same worker installs the
result (``Document.stage_edit``: costs, shapes, budgets) and computes what the views will draw of it
(``views_ahead``); the GUI thread only makes it one undoable edit (``Document.commit_staged``), so
the window never stops answering for a pass on a large graph (issue #25).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, QSettings, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QDialog, QInputDialog, QProgressDialog, QWidget

from fxstudio.core.errors import FxStudioError
from fxstudio.core.passes import PassTrust, file_sha256
from fxstudio.qt import stall_watch, views_ahead
from fxstudio.qt.actions.insert_dialog import InsertDialog
from fxstudio.qt.actions.structure_actions import DocWatch, free_name
from fxstudio.qt.open_dialogs import yes_or_no
from fxstudio.qt.pass_dialog import ReplacePatternDialog, RunPassDialog
from fxstudio.qt.selection import SelectionModel
from fxstudio.qt.workers import BackgroundTask

MAX_RECENT_PASS_FILES = 10
_RECENT_KEY = "recent/pass_files"
_FIXED = ("placeholder", "output")


def recent_pass_files(settings: QSettings) -> list[str]:
    """The pass files chosen lately (most recent first), only those that still exist."""
    value = settings.value(_RECENT_KEY) or []
    files = [value] if isinstance(value, str) else [str(v) for v in value]   # an INI file gives one back as a str
    return [f for f in files if Path(f).is_file()]


def add_recent_pass_file(settings: QSettings, path: str | Path) -> None:
    """Put ``path`` at the top of the recent pass files."""
    key = str(Path(path).resolve())
    files = [f for f in recent_pass_files(settings) if f != key]
    settings.setValue(_RECENT_KEY, [key, *files][:MAX_RECENT_PASS_FILES])


def confirm_trust_pass(parent: QWidget | None, path: Path) -> bool:
    """Ask before running the code of the pass file ``path`` (default answer: No)."""
    return yes_or_no(
        parent,
        "Trust this pass file?",
        f"Running a pass from {path.name} runs the Python code in that file, with your permissions.\n\n"
        f"File: {path}\n\nRun it only if you trust where {path.name} came from. fxstudio asks once per file "
        f"in this window.",
    )


class PassActions(QObject):
    """Run Pass…, Replace Pattern… and the multi-selection actions of one window.

    ``doc_provider()`` returns the open ``Document`` or None; ``settings`` keeps the recent pass
    files; ``start_dir()`` is where file dialogs start. ``edit_refused(str)`` carries a refusal for
    the Problems dock, ``status(str)`` a one-line summary for the status bar. The open dialog is kept
    in ``self.dialog`` so tests can drive it."""

    edit_refused = Signal(str)
    status = Signal(str)

    def __init__(self, doc_provider: Callable[[], object], selection: SelectionModel, settings: QSettings,
                 parent_widget: QWidget | None = None, start_dir: Callable[[], str] = lambda: ""):
        super().__init__(parent_widget)
        self._doc_provider = doc_provider
        self.selection = selection
        self.settings = settings
        self.parent_widget = parent_widget
        self.running: BackgroundTask | None = None   # the pass running in a worker, if any
        self._start_dir = start_dir
        self.trusted: set[str] = set()   # pass files this window was told to run (resolved paths)
        self.dialog: QDialog | None = None
        self._watch = DocWatch(self.update_enabled)

        def make(text: str, tip: str, slot, name: str) -> QAction:
            action = QAction(text, parent_widget or self)
            action.setObjectName(name)
            action.setStatusTip(tip)
            action.setToolTip(tip)
            action.triggered.connect(lambda _checked=False: slot())
            return action

        self.run_pass = make("Run &Pass…", "Run a torch.fx pass (yours or a built-in) on the model as one edit",
                             self.open_run_pass, "action_runpass")
        self.replace_pattern = make("Replace Pa&ttern…", "Replace every match of a pattern function by a replacement",
                                    self.open_replace_pattern, "action_replacepattern")
        self.insert_after_each = make("Insert after each…", "Insert the same node after each selected node (one edit)",
                                      self.open_insert_after_each, "action_insertaftereach")
        self.swap_all = make("Swap target of all…", "Give every selected node the same new target (one edit)",
                             self.open_swap_all, "action_swaptargetofall")
        self.erase_all = make("Erase all", "Erase every selected node (one edit)", self.erase_selected,
                              "action_eraseall")
        selection.changed.connect(lambda _ids: self.update_enabled())
        self.update_enabled()

    def pass_actions(self) -> list[QAction]:
        """Run Pass…, Replace Pattern…"""
        return [self.run_pass, self.replace_pattern]

    def selection_actions(self) -> list[QAction]:
        """The actions on several selected nodes."""
        return [self.insert_after_each, self.swap_all, self.erase_all]

    def update_enabled(self) -> None:
        """Passes need a document; the bulk actions need two or more selected nodes."""
        doc = self._doc_provider()
        self._watch(doc)
        for action in self.pass_actions():
            action.setEnabled(doc is not None)
        nodes = self.selected_nodes()
        several = doc is not None and len(nodes) >= 2
        self.insert_after_each.setEnabled(several and all(n.op != "output" for n in nodes))
        self.swap_all.setEnabled(several and all(n.op not in _FIXED for n in nodes))
        self.erase_all.setEnabled(several and all(n.op not in _FIXED for n in nodes))

    def selected_nodes(self) -> list:
        """The selected nodes that exist in the document, in graph order."""
        doc = self._doc_provider()
        if doc is None:
            return []
        ids = set(self.selection.ids())
        if not ids:   # nothing selected: no walk over the graph (every open and edit asks)
            return []
        return [n for n in doc.edited.graph.nodes if doc.id_of(n) in ids]

    # ------------------------------------------------------------------ applying

    def _apply(self, edits: list[dict], label: str | None = None):
        """Apply ``edits`` as one command: ``(EditResult, None)`` or ``(None, reason)``. A single pass
        edit first runs in a worker (cancellable); anything else applies at once under a busy cursor.
        The whole of it is the ``stall_watch`` action "pass" (or "bulk edit")."""
        is_pass = len(edits) == 1 and label is None and edits[0].get("op") in ("run_pass", "replace_pattern")
        action = "pass" if is_pass else "bulk edit"
        stall_watch.begin(action)
        try:
            return self._apply_now(edits, label)
        finally:
            stall_watch.end(action)

    def _apply_now(self, edits: list[dict], label: str | None):
        doc = self._doc_provider()
        if doc is None:
            return None, "no model is open"
        prepared = None
        if len(edits) == 1 and label is None and edits[0].get("op") in ("run_pass", "replace_pattern"):
            prepared, message = self._run_ahead(doc, edits[0])
            if prepared is None:
                self.edit_refused.emit(message)
                return None, message
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            if prepared is not None:
                result = doc.commit_staged(prepared)
            else:
                result = doc.apply_edit(edits[0]) if len(edits) == 1 and label is None else doc.apply_edits(edits, label)
        except FxStudioError as exc:
            message = str(exc)
            self.edit_refused.emit(message)
            return None, message
        finally:
            QApplication.restoreOverrideCursor()
        self.update_enabled()
        return result, None

    def _run_ahead(self, doc, edit: dict):
        """Run the edit's pass in a worker behind a modal progress dialog (Cancel drops it), and
        install its result there too, with what the views will draw of it (``views_ahead``): the
        GUI thread only commits it. ``(StagedEdit, None)`` or ``(None, reason)``."""
        doc.module()  # recompile here, on the GUI thread: the worker only reads the graph
        what = edit.get("name") or edit.get("pattern")
        canvas = getattr(self.parent_widget, "canvas", None)
        if canvas is not None:
            canvas.flush()  # the layout the new one keeps positions from
        settings = views_ahead.canvas_settings(canvas) if canvas is not None else None
        followers = getattr(self.parent_widget, "ahead_followers", lambda: [])()
        box: dict = {}
        lock = threading.Lock()

        def work(ctx):
            prepared = doc.prepare_edit(edit)
            with lock:   # past this point Cancel is too late: the window waits for the install instead
                ctx.check()
                box["staging"] = True
            ctx.progress(f"Installing the result of {what}…")
            try:
                box["staged"] = doc.stage_edit(edit, prepared)
            except BaseException as exc:
                box["error"] = exc
                raise
            views_ahead.prepare(doc, settings, staged=box["staged"], followers=followers)
            return box["staged"]

        task = BackgroundTask(work, name="pass", parent=self)
        progress = QProgressDialog(f"Running the pass {what}…", "Cancel", 0, 0, self.parent_widget)
        progress.setObjectName("passProgress")
        progress.setWindowTitle("Run Pass")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(300)
        loop = QEventLoop()
        outcome: dict = {}
        task.succeeded.connect(lambda prepared: (outcome.update(prepared=prepared), loop.quit()))
        task.failed.connect(lambda exc, tb: (outcome.update(error=exc, tb=tb), loop.quit()))
        task.cancelled_signal.connect(loop.quit)
        progress.canceled.connect(task.cancel)
        self.running = task
        task.start()
        loop.exec()   # the window stays drawn; the modal progress dialog keeps edits out meanwhile
        self.running = None
        with lock:
            too_late = task.cancelled and box.get("staging")
        if too_late:   # Cancel came while the result was being installed (a fraction of a second)
            task.wait()
            if "staged" in box:
                outcome["prepared"] = box["staged"]
            elif "error" in box:
                outcome["error"] = box["error"]
        progress.reset()
        progress.deleteLater()
        if "prepared" in outcome:
            return outcome["prepared"], None
        exc = outcome.get("error")
        if exc is None:
            return None, f"The pass {what} was cancelled; nothing was changed."
        if isinstance(exc, FxStudioError):
            return None, str(exc)
        return None, f"The pass {what} failed unexpectedly ({type(exc).__name__}: {exc}); nothing was changed."

    def _show(self, dialog: QDialog) -> QDialog:
        self.dialog = dialog
        dialog.finished.connect(lambda _result, d=dialog: self._closed(d))
        dialog.open()
        return dialog

    def _closed(self, dialog: QDialog) -> None:
        if self.dialog is dialog:
            self.dialog = None
        dialog.deleteLater()

    def trust_files(self, paths: list[str]) -> None:
        """Trust ``paths`` in this window without asking (``fxstudio MODEL --replay S.json --trust-passes``)."""
        self.trusted.update(str(Path(p).resolve()) for p in paths)
        doc = self._doc_provider()
        if doc is not None:
            trusted = self.trusted
            doc.set_pass_trust(PassTrust(trusted=lambda p: str(Path(p).resolve()) in trusted))

    def _trust_file(self, path: Path) -> bool:
        """Put ``path`` first in the recent pass files, ask once per file and window whether to trust
        it, and set the document's pass trust to this window's trusted files."""
        add_recent_pass_file(self.settings, path)
        key = str(Path(path).resolve())
        if key not in self.trusted:
            if not confirm_trust_pass(self.parent_widget, Path(key)):
                return False
            self.trusted.add(key)
        doc = self._doc_provider()
        trusted = self.trusted
        doc.set_pass_trust(PassTrust(trusted=lambda p: str(Path(p).resolve()) in trusted))
        return True

    # ------------------------------------------------------------------ passes

    def _open_pass_dialog(self, dialog_class, on_accept: Callable):
        """``dialog_class`` (a pass dialog calling ``on_accept``) shown over the open document, or None."""
        if self._doc_provider() is None:
            return None
        return self._show(dialog_class(on_accept, recent_pass_files(self.settings), self._start_dir(),
                                       self.parent_widget))

    def open_run_pass(self) -> RunPassDialog | None:
        """Edit ▸ Run Pass…"""
        return self._open_pass_dialog(RunPassDialog, self.run)

    def run(self, file: Path | None, name: str, kwargs: dict[str, str] | None = None) -> str | None:
        """Run the pass ``name`` of ``file`` (None: a built-in) as one edit, with keyword arguments
        (``{name: value text}``, the edit's ``kwargs``); the refusal reason or None."""
        if file is None:
            edit = {"op": "run_pass", "name": name}
        else:
            file = Path(file).resolve()
            if not self._trust_file(file):
                return f"{file.name} was not trusted; the pass did not run."
            try:
                sha = file_sha256(file)
            except FxStudioError as exc:
                return str(exc)
            edit = {"op": "run_pass", "file": str(file), "name": name, "sha256": sha}
        if kwargs:
            edit["kwargs"] = dict(kwargs)
        result, message = self._apply([edit])
        if result is not None:
            self.status.emit(this_pass(result.label))
        return message

    def open_replace_pattern(self) -> ReplacePatternDialog | None:
        """Edit ▸ Replace Pattern…"""
        return self._open_pass_dialog(ReplacePatternDialog, self.replace)

    def replace(self, file: Path, pattern: str, replacement: str) -> str | None:
        """Replace every match of ``pattern`` by ``replacement`` (functions of ``file``) as one edit."""
        file = Path(file).resolve()
        if not self._trust_file(file):
            return f"{file.name} was not trusted; nothing was replaced."
        edit = {"op": "replace_pattern", "file": str(file), "pattern": pattern, "replacement": replacement}
        result, message = self._apply([edit])
        if result is not None:
            found = re.search(r"\((\d+) match", result.label)
            count = found.group(1) if found else "?"
            self.status.emit(f"Replaced {count} match{'' if count == '1' else 'es'} of {pattern} by {replacement}")
        return message

    # ------------------------------------------------------------------ bulk edits on a multi-selection

    def open_insert_after_each(self) -> InsertDialog | None:
        """Insert after each…: the Insert dialog for the first selected node; OK inserts after all."""
        nodes = [n for n in self.selected_nodes() if n.op != "output"]
        doc = self._doc_provider()
        if doc is None or not nodes:
            return None
        dialog = InsertDialog(doc, nodes[0].name, "after", lambda edit, reroute: self.insert_after(
            [n.name for n in nodes], edit, reroute), self.parent_widget)
        dialog.setWindowTitle(f"Insert after each of {len(nodes)} nodes")
        dialog.where.setEnabled(False)   # "after each"; a before-each has no multi-node meaning here
        return self._show(dialog)

    def insert_after(self, anchors: list[str], edit: dict, reroute: bool) -> str | None:
        """One ``insert`` per anchor (the dialog's edit with ``%first`` in its arguments standing for
        each anchor), applied as one compound command; the new nodes are selected."""
        doc = self._doc_provider()
        first = edit.get("after", anchors[0])
        ref = re.compile(rf"%{re.escape(first)}\b")
        edits, taken = [], set()
        for anchor in anchors:
            one = {k: v for k, v in edit.items() if k not in ("after", "before", "name")}
            one["after"] = anchor
            for key in ("args", "kwargs"):
                if isinstance(one.get(key), str):
                    one[key] = ref.sub(f"%{anchor}", one[key])
            name = free_name(doc, edit.get("name") or edit["target"])
            base, i = name, 1
            while name in taken:
                name, i = f"{base}_{i}", i + 1
            taken.add(name)
            one["name"] = name
            node = doc.find(anchor)
            if reroute and node is not None and node.users:
                one["reroute"] = True
            edits.append(one)
        label = f"Insert {edit['target']} after each of {len(anchors)} nodes"
        result, message = self._apply(edits, label)
        if result is not None:
            self.selection.set(sorted(result.added))
            self.status.emit(label)
        return message

    def open_swap_all(self) -> QInputDialog | None:
        """Swap target of all…: ask the new target, then one ``set_target`` per selected node."""
        from fxstudio.core.node_text import target_text

        nodes = [n for n in self.selected_nodes() if n.op not in _FIXED]
        doc = self._doc_provider()
        if doc is None or not nodes:
            return None
        dialog = QInputDialog(self.parent_widget)
        dialog.setObjectName("swapTargetDialog")
        dialog.setWindowTitle(f"Swap target of {len(nodes)} nodes")
        dialog.setLabelText(f"New target for {', '.join(n.name for n in nodes[:6])}"
                            f"{' …' if len(nodes) > 6 else ''}:")
        dialog.setTextValue(target_text(nodes[0], doc.loaded.user_module))   # as typed, never a card's "· Class"
        names = [n.name for n in nodes]
        dialog.textValueSelected.connect(lambda text: self.swap_targets(names, text))
        return self._show(dialog)

    def swap_targets(self, names: list[str], target: str) -> str | None:
        """One ``set_target`` per node, as one compound command (the ``match`` form would also swap
        the nodes calling the same target that are not selected)."""
        target = target.strip()
        if not target:
            return "No target given."
        edits = [{"op": "set_target", "node": n, "target": target} for n in names]
        label = f"Swap target of {len(names)} nodes → {target}"
        result, message = self._apply(edits, label)
        if result is not None:
            self.status.emit(label)
        return message

    def erase_selected(self) -> str | None:
        """Erase all: one ``erase`` per selected node, users first, as one compound command. A node
        whose users are not all erased too hands them its first input that stays (what the single
        Erase proposes)."""
        nodes = [n for n in self.selected_nodes() if n.op not in _FIXED]
        if not nodes:
            return None
        gone = {n.name for n in nodes}
        edits = []
        for node in reversed(nodes):
            edit = {"op": "erase", "node": node.name}
            if any(u.name not in gone for u in node.users):
                keep = next((i for i in node.all_input_nodes if i.name not in gone), None)
                if keep is not None:
                    edit["replace_uses_with"] = keep.name
            edits.append(edit)
        label = f"Erase {len(nodes)} nodes"
        result, message = self._apply(edits, label)
        if result is not None:
            self.selection.clear()
            self.status.emit(label)
        return message


def this_pass(label: str) -> str:
    """A pass's history label for the status bar, its counts marked as this pass's own:
    ``Run pass p (this pass: 0 added, 2 removed, 4 changed)``. The canvas legend counts the changes
    since the original, which differ after earlier edits."""
    return re.sub(r"\((\d+ added, \d+ removed, \d+ changed)", r"(this pass: \1", label, count=1)
