"""File ▸ Save Report…: the open document as one self-contained HTML report (``fxstudio.core.report``).

On the GUI thread the action takes what the report needs from the document as it is now (the
edited graph copied as the Run pane copies it, the edit script, the history's labels); a worker
builds the edited module, compares it with the original on the example inputs, lays the graph out
and writes the file atomically. A progress dialog offers Cancel; the status bar says how it ended.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMessageBox

from fxstudio.core.errors import FxStudioError
from fxstudio.qt.run_controls import EditedSnapshot
from fxstudio.qt.workers import BackgroundTask, task_progress_dialog, window_action

FILTER = "HTML report (*.html)"


class ReportAction(QObject):
    """The Save Report action of a main window ``window``; ``saved(path)`` once a report is written,
    ``failed(message)`` when it could not be."""

    saved = Signal(object)
    failed = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.task: BackgroundTask | None = None
        self.action = window_action(
            window, "Save &Report…", "action_savereport",
            "Save one self-contained HTML report: graph, edits, compare table, first divergence, code diff", self.ask)
        window.addAction(self.action)

    def ask(self) -> bool:
        """Ask where to save the report, then save it in a worker; False when nothing was started."""
        w = self.window
        if w.document is None or self.task is not None:
            return False
        stem = Path(w.document.loaded.path).stem if w.document.loaded.path is not None else "model"
        default = Path(w.prefs.last_dir() or Path.cwd()) / f"{stem}_report.html"
        path, _ = QFileDialog.getSaveFileName(w, "Save Report", str(default), FILTER)
        if not path:
            return False
        if not path.lower().endswith((".html", ".htm")):
            path += ".html"
        w.prefs.set_last_dir(Path(path).parent)
        self.save_to(Path(path))
        return True

    def save_to(self, path: Path) -> BackgroundTask | None:
        """Build and write the report of the current document to ``path`` off the GUI thread."""
        from fxstudio.core.report import ReportInputs, compare_for_report, save_report

        w = self.window
        doc = w.document
        if doc is None or self.task is not None:
            return None
        doc.module()  # recompile on the GUI thread: the worker must not race the views for it
        snapshot = EditedSnapshot(doc)
        loaded, original = doc.loaded, doc.original
        script = doc.edit_script()
        labels = list(doc.history[:doc.history_index])
        inputs = tuple(loaded.example_inputs or ())
        title = loaded.display_name

        def work(ctx):
            ctx.progress("Comparing the edited graph with the original…", 0.05)
            edited = snapshot.module()
            report, why = compare_for_report(
                loaded.module, original, edited, inputs, cancel=lambda: ctx.cancelled,
                progress=lambda fraction, text: ctx.progress(f"Comparing: {text}", 0.05 + 0.75 * fraction))
            ctx.check()
            ctx.progress("Drawing the graph and writing the report…", 0.85)
            return save_report(path, ReportInputs(title=title, original=original, edited=edited,
                                                  edits=list(script["edits"]), labels=labels, compare=report,
                                                  compare_error=why))

        task = BackgroundTask(work, name="report", parent=self)
        progress = task_progress_dialog(task, w, f"Saving the report {path.name}…", "reportProgress")

        def finish() -> None:
            progress.reset()
            progress.deleteLater()
            self.task = None

        def done(written) -> None:
            finish()
            w.statusBar().showMessage(f"Saved the report {written}", 8000)
            self.saved.emit(Path(written))

        def failed(exc, _tb) -> None:
            finish()
            message = str(exc) if isinstance(exc, FxStudioError) else f"{type(exc).__name__}: {exc}"
            w.statusBar().showMessage(f"The report was not saved: {message.splitlines()[0] if message else ''}", 15000)
            QMessageBox.critical(w, "Save Report failed", message)
            self.failed.emit(message)

        task.succeeded.connect(done)
        task.failed.connect(failed)
        task.cancelled_signal.connect(lambda: (finish(), w.statusBar().showMessage("Report cancelled", 5000)))
        self.task = task
        w.statusBar().showMessage(f"Saving the report {path.name}…")
        return task.start()
