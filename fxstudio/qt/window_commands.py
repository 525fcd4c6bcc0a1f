"""What the window's menu commands do: open, save and replay scripts, export, undo/redo, delete,
find, fit, about. A mixin of ``MainWindow``; each gesture is one core call."""

from __future__ import annotations

from functools import partial
from html import escape
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox

from fxstudio.core.errors import FxStudioError
from fxstudio.qt.open_flow import OPEN_FILTER
from fxstudio.qt.workers import BackgroundTask, task_progress_dialog

SCRIPT_FILTER = "fxstudio edit scripts (*.json);;All files (*)"
EXPORT_FILTERS = ("Python file (*.py)", "PyTorch ExportedProgram (*.pt2)")
"""File ▸ Export's file types: a standalone .py plus weights, or torch.export's .pt2."""
EXPORT_AFTER_DIALOG_MS = 150
"""The export chosen in the file dialog starts this long after the dialog closed: first the window
repaints what the dialog covered (the Run pane's plots), then the worker takes the interpreter. Started
together, that repaint took 50-150 ms instead of 15-35 ms (issue #25)."""


class WindowCommands:
    """Menu commands of ``MainWindow`` (mixed in; uses its document, views and preferences)."""

    # ------------------------------------------------------------------ open

    def open_dialog(self) -> bool:
        """File ▸ Open: choose a model file and open it."""
        path, _ = QFileDialog.getOpenFileName(self, "Open model", self.prefs.last_dir(), OPEN_FILTER)
        if not path:
            return False
        self.prefs.set_last_dir(Path(path).parent)
        return self.open_path(path, origin="dialog")

    def populate_recent(self) -> None:
        """Fill File ▸ Open Recent from the settings."""
        menu = self.menus["recent"]
        menu.clear()
        recent = self.prefs.recent_files()
        for i, spec in enumerate(recent, start=1):
            act = menu.addAction(f"&{i % 10}  {Path(spec.partition('::')[0]).name}" + (f"::{spec.partition('::')[2]}" if "::" in spec else ""))
            act.setToolTip(spec)
            act.setData(spec)
            act.triggered.connect(partial(lambda s, _c=False: self.open_path(s, origin="recent"), spec))
        if not recent:
            menu.addAction("No recent files").setEnabled(False)
        menu.addSeparator()
        menu.addAction(self.actions["clear_recent"])

    def clear_recent(self) -> None:
        """Forget the recent files."""
        self.prefs.clear_recent()

    # ------------------------------------------------------------------ scripts

    def save_script(self) -> bool:
        """Ctrl+S: save the edit script (asks where the first time); True when saved."""
        if self.document is None:
            return False
        if self.script_path is None:
            return self.save_script_as()
        return self._write_script(self.script_path)

    def save_script_as(self) -> bool:
        """Save the edit script to a file chosen in a dialog."""
        if self.document is None:
            return False
        default = self._default_output(".edits.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save edit script", str(default), SCRIPT_FILTER)
        if not path:
            return False
        return self._write_script(Path(path))

    def _write_script(self, path: Path) -> bool:
        from fxstudio.core.edits import save_script

        try:
            save_script(path, self.document.edit_script())
        except (FxStudioError, OSError) as exc:
            QMessageBox.critical(self, "Cannot save the edit script", str(exc))
            return False
        self.script_path = Path(path)
        self.prefs.set_last_dir(Path(path).parent)
        self.document.mark_saved()
        self.clear_journal()
        self.update_chrome()
        self.statusBar().showMessage(f"Saved {len(self.document.edit_script()['edits'])} edits to {path}", 6000)
        return True

    def replay_dialog(self) -> bool:
        """File ▸ Apply Edit Script: apply a saved script's edits, each as an undoable command."""
        if self.document is None:
            return False
        path, _ = QFileDialog.getOpenFileName(self, "Apply edit script", self.prefs.last_dir(), SCRIPT_FILTER)
        if not path:
            return False
        return self.replay_script(path)

    def replay_script(self, path) -> bool:
        """Apply every edit of the script at ``path`` as if typed; stops at the first refusal."""
        from fxstudio.core.edits import load_script

        try:
            script = load_script(path)
        except FxStudioError as exc:
            QMessageBox.critical(self, "Cannot read the edit script", str(exc))
            return False
        return self.apply_edits(script["edits"], source=Path(path).name)

    def apply_edits(self, edits: list[dict], source: str = "script") -> bool:
        """Apply ``edits`` one by one, each as an undoable command (the core's "keep" replay policy):
        a refusal stops there, keeps the edits before it and is reported."""
        from fxstudio.core.document import replay_into

        report = replay_into(self.document, edits, "keep")
        if report.refusals:
            refusal = report.refusals[0]
            edit = edits[refusal.number - 1]
            self.report_refusal(f"Edit {refusal.number} of {source} was refused: {refusal.error}",
                                node=edit.get("node") if isinstance(edit, dict) else None)
            return False
        self.show_status(f"Applied {len(edits)} edits from {source}", 6000, whole_document=True)
        return True

    # ------------------------------------------------------------------ export

    def export_dialog(self) -> bool:
        """Ctrl+E: export the edited module as a verified standalone .py, or through torch.export as
        a verified .pt2 (the file type chosen in the dialog), in a worker."""
        if self.document is None:
            return False
        chosen = getattr(self, "_export_filter", EXPORT_FILTERS[0])
        default = self._default_output("_edited.pt2" if chosen == EXPORT_FILTERS[1] else "_edited.py")
        path, chosen = QFileDialog.getSaveFileName(self, "Export", str(default), ";;".join(EXPORT_FILTERS), chosen)
        if not path:
            return False
        if not path.lower().endswith((".py", ".pt2")):
            path += ".pt2" if chosen == EXPORT_FILTERS[1] else ".py"
        self._export_filter = EXPORT_FILTERS[1] if path.lower().endswith(".pt2") else EXPORT_FILTERS[0]
        self.prefs.set_last_dir(Path(path).parent)
        doc = self.document
        QTimer.singleShot(EXPORT_AFTER_DIALOG_MS, self,
                          lambda: self.document is doc and self.export_to(Path(path)))
        return True

    def export_to(self, path: Path, verify: bool = True) -> BackgroundTask:
        """Export to ``path`` in a worker thread with a progress dialog; returns the task. A ``.pt2``
        goes through torch.export (``export_pt2``), anything else is written as Python. The status
        bar says "Exporting …" until it ends, then how it ended (done, failed, cancelled)."""
        from fxstudio.core.export import export_pt2, export_python

        doc = self.document
        doc.module()  # recompile on the GUI thread: the worker must not race the views for it
        script = self.script_path if self.script_path is not None and not doc.dirty else None
        export = export_pt2 if path.suffix.lower() == ".pt2" else export_python

        def work(ctx):
            return export(doc, path, script_path=script, verify=verify, cancel=lambda: ctx.cancelled,
                          progress=lambda message, fraction: ctx.progress(message, fraction))

        task = BackgroundTask(work, name="export", parent=self)
        doing = "Exporting and verifying" if verify else "Exporting (without verification)"
        progress = task_progress_dialog(task, self, f"{doing} {path.name}…", "exportProgress")

        def finish():
            progress.reset()
            progress.deleteLater()
            self._tasks.remove(task)

        def done(result):
            finish()
            self.last_export = result
            self.statusBar().showMessage(f"Exported and verified {path}" if verify else
                                         f"Exported {path} (not verified)", 8000)
            self.problems.add("info", "export", f"Exported {path.name}: {_export_summary(result)}")

        def failed(exc, tb):
            from fxstudio.core.export import GraphRunFailed

            finish()
            message = str(exc) if isinstance(exc, FxStudioError) else f"Export failed unexpectedly: {type(exc).__name__}: {exc}"
            self.problems.add("error", "export", message)
            self.last_export = exc
            first = message.splitlines()[0] if message else ""
            self.statusBar().showMessage(f"Export of {path.name} failed: "
                                         + (first if len(first) <= 140 else first[:139] + "…"), 15000)
            if isinstance(exc, GraphRunFailed):
                self._explain_graph_failure(path, exc, offer_unverified=verify and exc.skippable)
            else:
                QMessageBox.critical(self, "Export failed", message)

        task.succeeded.connect(done)
        task.failed.connect(failed)
        task.cancelled_signal.connect(lambda: (finish(), self.statusBar().showMessage("Export cancelled", 5000)))
        self._tasks.append(task)
        self.statusBar().showMessage(f"{doing} {path.name}…")
        return task.start()

    def _explain_graph_failure(self, path: Path, exc, offer_unverified: bool) -> None:
        """The graph raises on its example inputs (``exc``, a ``GraphRunFailed``), so the export
        could not be verified: say which node raised and torch's message, and offer what the
        message suggests (``offer_unverified``: export without verification), showing the node,
        or nothing."""
        graph = "The edited graph" if exc.edited else "The model itself"
        node = self.document.find(exc.node) if exc.node and self.document is not None else None
        where = f" at node <b>{escape(exc.node)}</b>" if exc.node else ""
        outcome = "cannot be verified" if offer_unverified else "was not written"
        box = QMessageBox(QMessageBox.Icon.Critical, "Export failed",
                          f"{graph} fails on its example inputs{where}, so {escape(path.name)} {outcome}.",
                          parent=self)
        box.setObjectName("exportFailed")
        box.setTextFormat(Qt.TextFormat.RichText)
        calls = f" ({exc.target})" if exc.target else ""
        box.setInformativeText(
            f"<p><b>{escape(exc.node or 'The graph')}</b>{escape(calls)} raised<br><tt>{escape(exc.reason)}</tt></p>"
            "<p>Nothing was written. Fix the node" + (" (or undo the edit)" if exc.edited else "")
            + (", or export without verification: the file is written without being run, and it fails the "
               "same way when it is run.</p>" if offer_unverified else
               ": torch.export runs the graph on these inputs too.</p>"))
        unverified = (box.addButton("Export without verification", QMessageBox.ButtonRole.AcceptRole)
                      if offer_unverified else None)
        show = box.addButton("Show Node", QMessageBox.ButtonRole.ActionRole) if node is not None else None
        cancel = QMessageBox.StandardButton.Cancel if offer_unverified else QMessageBox.StandardButton.Close
        box.setDefaultButton(box.addButton(cancel))
        box.exec()
        clicked = box.clickedButton()
        box.deleteLater()
        if clicked is not None and clicked is unverified:
            self.export_to(path, verify=False)
        elif clicked is not None and clicked is show and self.document is not None:
            self.selection.set([self.document.id_of(node)])
            self.canvas.setFocus()

    def _default_output(self, suffix: str) -> Path:
        folder = Path(self.prefs.last_dir() or Path.cwd())
        stem = "model"
        if self.document is not None and self.document.loaded.path is not None:
            stem = Path(self.document.loaded.path).stem
        return folder / f"{stem}{suffix}"

    # ------------------------------------------------------------------ edit

    def undo(self) -> None:
        """Ctrl+Z."""
        if self.document is not None and self.document.can_undo:
            self.document.undo()

    def redo(self) -> None:
        """Ctrl+Shift+Z / Ctrl+Y."""
        if self.document is not None and self.document.can_redo:
            self.document.redo()

    def focus_find(self) -> None:
        """Ctrl+F: the canvas's find bar (matches names, ops and targets as you type)."""
        if self.document is not None:
            self.canvas.open_search()

    def find_next(self) -> None:
        """F3: the next match of the find bar."""
        if self.document is not None:
            self.canvas.next_match()

    def fit(self) -> None:
        """F: fit the graph in the canvas."""
        self.canvas.fit()

    def about(self) -> None:
        """Help ▸ About."""
        import PySide6
        import torch

        from fxstudio import __version__

        QMessageBox.about(
            self,
            "About fxstudio",
            f"<h3>fxstudio {__version__}</h3>"
            "<p>A desktop editor for torch.fx graphs: open a model, edit its graph with undo, compare "
            "the edited module with the original, and export it as a standalone, verified Python file.</p>"
            f"<p>torch {torch.__version__} · PySide6 {PySide6.__version__}</p>",
        )


def _export_summary(result) -> str:
    parts = []
    verdict = getattr(result, "verdict", "")
    if verdict:
        parts.append(str(verdict))
    weights = getattr(result, "weights_path", None)
    if weights is not None:
        parts.append(f"weights in {Path(weights).name}")
    parts.extend(f"loading it needs `import {name}` first" for name in getattr(result, "imports", []))
    return "; ".join(parts) or "verified"
