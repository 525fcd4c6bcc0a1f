"""File ▸ Diff With… and File ▸ Diff Against Original: open a diff window on the current document.

Each takes on the GUI thread what it needs from the document as it is now (a snapshot of the
edited graph, ``run_controls.EditedSnapshot``), then a worker loads the other file (Diff With…)
and matches the graphs (``core.diff.diff_graphs``); the window is built when the worker is done.
The document's original and edited graphs are matched by stable id (lineage); another file by
structure. ``opened(window)`` once a window is shown, ``failed(message)`` when none could be.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMessageBox

from fxstudio.core.errors import FxStudioError
from fxstudio.core.module_state import share_graph_module
from fxstudio.qt.diff.panes import prepare_panes
from fxstudio.qt.diff.window import DiffWindow
from fxstudio.qt.run_controls import EditedSnapshot
from fxstudio.qt.workers import BackgroundTask, window_action

FILTER = "Models (*.py *.pt2 *.pt *.pth);;All files (*)"


class DiffActions(QObject):
    """The two diff actions of a main window ``window`` (``with_file``, ``against_original``)."""

    opened = Signal(object)
    failed = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.task: BackgroundTask | None = None
        self.windows: list = []   # open diff windows (each deletes itself when closed)
        self.with_file = self._action("Diff &With…", "action_diffwith", self.ask_file,
                                      "Compare the current graph with another model file, side by side")
        self.against_original = self._action("Diff Against &Original", "action_diffagainstoriginal",
                                             self.diff_against_original,
                                             "Compare the original graph with the edited one, side by side")

    def _action(self, text: str, name: str, slot, tip: str) -> QAction:
        action = window_action(self.window, text, name, tip, slot)
        self.window.addAction(action)
        return action

    def ask_file(self) -> BackgroundTask | None:
        """Ask for a model file, then diff the current graph against it."""
        w = self.window
        if w.document is None:
            return None
        path, _ = QFileDialog.getOpenFileName(w, "Diff With", str(w.prefs.last_dir() or Path.cwd()), FILTER)
        return self.diff_with_file(Path(path)) if path else None

    def diff_with_file(self, path: Path) -> BackgroundTask | None:
        """Load ``path`` off the GUI thread (with the current document's tracer for a ``.py``) and
        open a diff of the current edited graph (A) against it (B)."""
        from fxstudio.core.diff import DiffGraph
        from fxstudio.core.loading import load_model

        doc = self.window.document
        if doc is None or self.task is not None:
            return None
        snapshot = EditedSnapshot(doc)
        mine = f"{doc.loaded.display_name} ({doc.loaded.tracer})"
        tracer = doc.loaded.tracer if Path(path).suffix == ".py" else None

        def work(ctx):
            ctx.progress(f"Opening {Path(path).name}…")
            other = load_model(path, tracer=tracer)
            ctx.check()
            return [DiffGraph("A", snapshot.module(), mine), DiffGraph("B", other.graph_module, f"{Path(path).name} ({other.tracer})")]

        return self._start(work, f"Diffing with {Path(path).name}…", edited=0)

    def diff_against_original(self) -> BackgroundTask | None:
        """Open a diff of the current document's original graph against its edited graph."""
        from fxstudio.core.diff import DiffGraph

        doc = self.window.document
        if doc is None or self.task is not None:
            return None
        snapshot, original = EditedSnapshot(doc), doc.original
        name = doc.loaded.display_name

        def work(ctx):
            # the live document's original is never changed: a copy of its graph (ids kept) for the pane
            original_copy = share_graph_module(original)
            return [DiffGraph("Original", original_copy, name, lineage="document"),
                    DiffGraph("Edited", snapshot.module(), f"{name}, edited", lineage="document")]

        return self._start(work, "Diffing against the original…", edited=1)

    def _start(self, graphs_of, message: str, edited: int) -> BackgroundTask:
        """Diff the graphs ``graphs_of(ctx)`` gives in a worker, then open the window; pane
        ``edited`` shows the document's edited graph (it gets the main window's numeric overlay)."""
        from fxstudio.core.diff import diff_graphs

        w = self.window
        def work(ctx):
            diff = diff_graphs(graphs_of(ctx))
            ctx.check()
            ctx.progress("Preparing the panes…")
            return diff, prepare_panes(diff)

        task = BackgroundTask(work, name="diff", parent=self)

        def done(result) -> None:
            self.task = None
            window = DiffWindow(*result)
            choice = getattr(w, "overlay_choice", None)
            metrics = choice.shown_metrics() if choice is not None else None
            if metrics is not None:
                window.show_metric(edited, metrics, choice.key)
            self.windows.append(window)
            window.destroyed.connect(lambda _obj=None, win=window: self.windows.remove(win) if win in self.windows else None)
            window.show()
            w.statusBar().showMessage(window.summary.text(), 8000)
            self.opened.emit(window)

        def failed(exc, _tb) -> None:
            self.task = None
            text = str(exc) if isinstance(exc, FxStudioError) else f"{type(exc).__name__}: {exc}"
            w.statusBar().showMessage(f"No diff: {text.splitlines()[0] if text else ''}", 15000)
            QMessageBox.warning(w, "Diff", text)
            self.failed.emit(text)

        task.succeeded.connect(done)
        task.failed.connect(failed)
        task.cancelled_signal.connect(lambda: setattr(self, "task", None))
        self.task = task
        w.statusBar().showMessage(message)
        return task.start()
