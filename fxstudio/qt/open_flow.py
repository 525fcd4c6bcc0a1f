"""Opening a model in the window: confirmations, loading in a worker with progress and cancel,
replaying recovered or scripted edits, and reporting failures.

``OpenFlow.open(spec, origin=...)`` is the one way in, whatever the origin: the command line, the
file dialog, a dropped file, the recent-files menu, an example, or a crash recovery.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QProgressDialog

from fxstudio.core.errors import EditRefused, FxStudioError, LoadError, TraceError
from fxstudio.qt import open_dialogs
from fxstudio.qt.workers import BackgroundTask
from fxstudio.resources import EXAMPLES_DIR

MODEL_SUFFIXES = (".py", ".pt2", ".pt", ".pth")
OPEN_FILTER = "Models (*.py *.pt2 *.pt *.pth);;Python model files (*.py);;Exported programs (*.pt2);;Pickled modules (*.pt *.pth);;All files (*)"


def is_example(path: Path) -> bool:
    """True for the built-in example files (their code ships with fxstudio: no confirmation)."""
    try:
        return path.resolve().parent == EXAMPLES_DIR.resolve()
    except OSError:
        return False


def load_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of ``load_model`` among ``options`` (tracer, input_shapes, trust)."""
    options = options or {}
    out: dict[str, Any] = {}
    if options.get("tracer"):
        out["tracer"] = options["tracer"]
    if options.get("input_shapes"):
        out["input_shapes"] = [tuple(s) for s in options["input_shapes"]]
    if options.get("trust"):
        out["trust"] = True
    return out


def load_document(spec: str, options: dict[str, Any] | None, edits: list[dict] | None, ctx=None):
    """Load ``spec`` and build its document, then apply ``edits`` one by one.

    Returns ``(doc, refusals)`` where ``refusals`` lists ``(index, message)`` of edits that the
    core refused (the others are applied, each as its own undoable command).
    """
    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model

    if ctx is not None:
        ctx.progress(f"Loading and tracing {Path(spec.partition('::')[0]).name}…")
    loaded = load_model(spec, **load_options(options))
    if ctx is not None:
        ctx.check()
        ctx.progress("Building the document…")
    doc = Document(loaded)
    refusals: list[tuple[int, str]] = []
    for i, edit in enumerate(edits or []):
        if ctx is not None:
            ctx.check()
        try:
            doc.apply_edit(edit)
        except EditRefused as exc:
            refusals.append((i, str(exc)))
    return doc, refusals


class OpenFlow(QObject):
    """Runs one open at a time for ``window`` (a ``MainWindow``)."""

    opened = Signal(object)  # the Document
    failed = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.task: BackgroundTask | None = None
        self.progress: QProgressDialog | None = None
        self._detached: list[BackgroundTask] = []  # cancelled loads whose threads may still run

    @property
    def busy(self) -> bool:
        """True while a load is running."""
        return self.task is not None

    def open(self, spec: str | Path, *, origin: str = "dialog", options: dict | None = None,
             edits: list[dict] | None = None, sync: bool = False, ask_unsaved: bool = True) -> bool:
        """Open ``spec``; returns False when the user declined or a load is already running.

        ``origin`` is ``argument``, ``dialog``, ``drop``, ``recent``, ``example`` or ``recovery``.
        A ``.py`` file asks before running its code the first time, except for the built-in examples
        and a file named on the command line (typing its name is the consent). ``sync`` loads on the
        GUI thread (``--screenshot``).
        """
        spec = str(spec)
        path = Path(spec.partition("::")[0]).expanduser()
        options = dict(options or {})
        if self.busy:
            self.window.statusBar().showMessage("Already opening a model; wait for it or cancel it.", 5000)
            return False
        if ask_unsaved and not self.window.confirm_discard("opening another model"):
            return False
        if path.suffix == ".py" and path.exists() and not is_example(path):
            prefs = self.window.prefs
            if origin == "argument":
                prefs.trust_py(path)  # naming the file on the command line is the consent
            elif not prefs.is_trusted_py(path):
                if not open_dialogs.confirm_run_code(self.window, path):
                    self.window.statusBar().showMessage(f"Did not open {path.name}.", 5000)
                    return False
                prefs.trust_py(path)
        if sync:
            try:
                doc, refusals = load_document(spec, options, edits)
            except Exception as exc:
                if self._retry_with_trust(spec, path, options, edits, exc, origin, sync=True):
                    return True
                raise
            self._finish(spec, options, doc, refusals, origin)
            return True
        self._start(spec, path, options, edits, origin)
        return True

    def _start(self, spec: str, path: Path, options: dict, edits, origin: str) -> None:
        detached = [t for t in self._detached if not t.wait(0)]  # still running
        self._detached = detached

        def work(ctx):
            # A cancelled load may still be importing user code; loads share sys.path and
            # sys.modules, so the next one starts only when that one has stopped.
            for previous in detached:
                ctx.progress("Waiting for the cancelled load to stop…")
                previous.wait()
            return load_document(spec, options, edits, ctx)

        task = BackgroundTask(work, name="open", parent=self)
        self.task = task
        progress = QProgressDialog(f"Opening {path.name}…", "Cancel", 0, 0, self.window)
        progress.setObjectName("openProgress")
        progress.setWindowTitle("Opening model")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(400)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.canceled.connect(task.cancel)
        self.progress = progress
        task.progress.connect(progress.setLabelText)
        task.succeeded.connect(lambda result: self._done(spec, options, result, origin))
        task.failed.connect(lambda exc, tb: self._failed(spec, path, options, edits, origin, exc, tb))
        task.cancelled_signal.connect(lambda: self._cancelled(path))
        self.window.statusBar().showMessage(f"Opening {path.name}…")
        task.start()

    def cancel(self) -> None:
        """Cancel the running load (the Cancel button does this)."""
        if self.task is not None:
            self.task.cancel()

    def _end_task(self) -> None:
        if self.progress is not None:
            self.progress.reset()
            self.progress.hide()
            self.progress.deleteLater()
            self.progress = None
            self.window.activateWindow()  # keyboard shortcuts go back to the window
        self.task = None

    def _cancelled(self, path: Path) -> None:
        if self.task is not None:
            self._detached.append(self.task)
        self._end_task()
        self.window.statusBar().showMessage(f"Opening {path.name} cancelled.", 5000)
        self.failed.emit("cancelled")

    def _done(self, spec: str, options: dict, result, origin: str) -> None:
        self._end_task()
        doc, refusals = result
        self._finish(spec, options, doc, refusals, origin)

    def _finish(self, spec: str, options: dict, doc, refusals, origin: str) -> None:
        self.window.set_document(doc, spec, options)
        for index, message in refusals:
            self.window.problems.add_refusal(f"Edit {index + 1} of the {origin} script was refused: {message}")
        if refusals:
            self.window.statusBar().showMessage(f"{len(refusals)} edit(s) could not be applied; see Problems.", 8000)
        self.opened.emit(doc)

    def _retry_with_trust(self, spec, path, options, edits, exc, origin, *, sync: bool) -> bool:
        """Ask what the core needs to finish this load (trust for a pickle, input shapes) and retry."""
        needs_trust = (
            isinstance(exc, LoadError) and not options.get("trust")
            and path.suffix in (".pt", ".pth") and "--trust" in str(exc)
        )
        needs_inputs = isinstance(exc, LoadError) and "--input-shape" in str(exc) and not sync
        if needs_inputs:
            shapes = open_dialogs.ask_input_shapes(self.window, path, str(exc))
            if not shapes:
                return False
            trusted = {**options, "input_shapes": shapes}
        elif needs_trust and open_dialogs.confirm_trust_pickle(self.window, path, str(exc)):
            trusted = {**options, "trust": True}
        else:
            return False
        if sync:
            doc, refusals = load_document(spec, trusted, edits)
            self._finish(spec, trusted, doc, refusals, origin)
        else:
            self._start(spec, path, trusted, edits, origin)
        return True

    def _failed(self, spec, path, options, edits, origin, exc, tb_text: str) -> None:
        self._end_task()
        if self._retry_with_trust(spec, path, options, edits, exc, origin, sync=False):
            return
        self.report_failure(path, exc, tb_text)

    def report_failure(self, path: Path, exc: BaseException, tb_text: str = "") -> None:
        """Show why ``path`` did not open: the core's message (file:line links) or, for a bug, the traceback."""
        if isinstance(exc, FxStudioError):
            message, details = str(exc), ""
            title = "Tracing failed" if isinstance(exc, TraceError) else f"Cannot open {path.name}"
        else:
            message = f"Opening {path.name} failed with an unexpected {type(exc).__name__}: {exc}"
            details, title = tb_text, f"Cannot open {path.name}"
        self.window.problems.add("error", "load", message)
        self.window.statusBar().showMessage(f"Could not open {path.name}.", 8000)
        self.failed.emit(message)
        dialog = open_dialogs.LoadFailureDialog(self.window, title, message, self.window.show_source, details)
        self.window.last_failure_dialog = dialog
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        QTimer.singleShot(0, dialog.open)

