"""Opening a model in the window: confirmations, loading in a worker with progress and cancel,
replaying recovered or scripted edits, and reporting failures.

``OpenFlow.open(spec, origin=...)`` is the one way in, whatever the origin: the command line, the
file dialog, a dropped file, the recent-files menu, an example, or a crash recovery.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QProgressDialog, QPushButton

from fxstudio.core.errors import FxStudioError, LoadError, TraceError
from fxstudio.qt import open_dialogs, views_ahead
from fxstudio.qt.gui_gc import hold_collections, release_memory
from fxstudio.qt.workers import BackgroundTask
from fxstudio.resources import EXAMPLES_DIR
from fxstudio.timing import mark

MODEL_SUFFIXES = (".py", ".pt2", ".pt", ".pth", ".fxcap")
PROGRESS_MIN_W = 380  # px: the loading dialog, wide enough for its title
RELEASE_DELAY_MS = 200  # after a reopen: the new graph's first frame, then the old weights are freed
OPEN_FILTER = ("Models (*.py *.pt2 *.pt *.pth *.fxcap);;Python model files (*.py);;Exported programs (*.pt2);;"
               "Pickled modules (*.pt *.pth);;torch.compile captures (*.fxcap);;All files (*)")


def is_example(path: Path) -> bool:
    """True for the built-in example files (their code ships with fxstudio: no confirmation)."""
    try:
        return path.resolve().parent == EXAMPLES_DIR.resolve()
    except OSError:
        return False


EXAMPLE_OPTIONS: dict[str, dict[str, Any]] = {
    # symbolic_trace cannot follow its `if x.sum() > 0`: trace the positive branch, as its docstring says.
    "data_branch.py": {"concrete_args": ["positive=True"]},
}
"""Open options of the built-in examples that need some, by file name (the Examples menu applies them)."""

NAME_OPTIONS = ("leaf_modules", "autowrap_functions")


def load_options(options: dict[str, Any] | None, *, as_data: bool = False) -> dict[str, Any]:
    """The open options that are set among ``options`` (tracer, input_shapes, trust, concrete_args
    as ``NAME=VALUE`` texts, leaf_modules, autowrap_functions): the keyword arguments of
    ``load_model``, or with ``as_data`` the same options as a journal stores them (lists of texts
    and numbers, concrete args left as texts, as Open with Options takes them).

    ``options`` may come from a journal (data): anything malformed raises ``LoadError``.
    """
    from fxstudio.cli_commands.model_args import parse_concrete_args

    options = options or {}
    out: dict[str, Any] = {}
    if options.get("tracer"):
        out["tracer"] = options["tracer"]
    if options.get("input_shapes"):
        out["input_shapes"] = [(list if as_data else tuple)(s) for s in options["input_shapes"]]
    if options.get("trust"):
        out["trust"] = True
    device = options.get("device")
    if device not in (None, "", "cpu", "meta"):
        raise LoadError(f"open option device must be meta or cpu, not {device!r}.")
    if device == "meta":
        out["device"] = "meta"
    if options.get("weights"):
        if not isinstance(options["weights"], str):
            raise LoadError("open option weights must be the path of a .safetensors checkpoint.")
        out["weights"] = options["weights"]
    if options.get("concrete_args"):
        texts = _texts(options["concrete_args"], "concrete_args")
        out["concrete_args"] = texts if as_data else parse_concrete_args(texts)
    for key in NAME_OPTIONS:
        if options.get(key):
            names = _texts(options[key], key)
            bad = next((n for n in names if not is_name_path(n)), None)
            if bad is not None:
                raise LoadError(f"{key.replace('_', ' ')}: {bad!r} is not a name like layer1.0 or my_function.")
            out[key] = names if as_data else tuple(names)
    return out


def _texts(value: Any, key: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise LoadError(f"open option {key} must be a list of texts, not {type(value).__name__}.")
    return list(value)


def is_name_path(text: str) -> bool:
    """True for ``a.b.c`` where each part is an identifier or a number (``layer1.0``)."""
    return bool(text) and all(part.isidentifier() or part.isdigit() for part in text.split("."))


def data_safe_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` read from a journal without what would import a module (docs/CONTRACTS.md "Trust boundary"): an autowrap
    function named by a dotted path counts only when its module is already imported."""
    names = options.get("autowrap_functions")
    if not isinstance(names, list):
        return options
    kept = [n for n in names if isinstance(n, str) and ("." not in n or n.rpartition(".")[0] in sys.modules)]
    return {**options, "autowrap_functions": kept}


def with_remedy(options: dict[str, Any], remedy: dict[str, Any]) -> dict[str, Any]:
    """``options`` that failed plus a trace remedy's: lists are joined (a concrete arg the remedy names
    again takes the remedy's value), the remedy's tracer is kept."""
    out = {**options, "tracer": remedy.get("tracer", options.get("tracer"))}
    for key in ("concrete_args", *NAME_OPTIONS):
        added = list(remedy.get(key) or [])
        if key == "concrete_args":
            named = {text.partition("=")[0].strip() for text in added}
            kept = [t for t in options.get(key) or [] if t.partition("=")[0].strip() not in named]
        else:
            kept = [t for t in options.get(key) or [] if t not in added]
        if kept or added:
            out[key] = kept + added
    return out


def load_document(spec: str, options: dict[str, Any] | None, edits: list[dict] | None, ctx=None):
    """Load ``spec`` and build its document, then apply ``edits`` one by one (``replay_into``, "skip").

    Returns ``(doc, refusals)`` where ``refusals`` lists ``(index, message)`` of edits that the
    core refused (the others are applied, each as its own undoable command). An item of ``edits``
    may be a recovered ``JournalCommand``: its edits then make one command with its History label.
    """
    from fxstudio.core.document import Document, replay_into
    from fxstudio.core.loading import load_model

    if ctx is not None:
        ctx.progress(f"Loading and tracing {Path(spec.partition('::')[0]).name}…")
    kwargs = load_options(options)
    if ctx is not None and not edits:
        kwargs["on_structure"] = lambda preview: ctx.partial(structure_document(preview), wait=STRUCTURE_WAIT_S)
    if ctx is not None and not (options or {}).get("device") and spec.partition("::")[0].endswith(".py") \
            and not is_example(Path(spec.partition("::")[0])):
        # the entry is first built on the meta device to count its parameters (the file runs once);
        # TooLargeForMemory: the window offers --device meta (_retry_with_trust)
        kwargs["check_memory"] = True
    loaded = load_model(spec, **kwargs)
    if ctx is not None:
        ctx.check()
        ctx.progress("Building the document…")
    doc = Document(loaded)
    # the core's "skip" policy: what applies is applied, every refusal is reported
    report = replay_into(doc, edits or [], "skip", before_each=None if ctx is None else (lambda _i: ctx.check()))
    return doc, [(r.number - 1, str(r.error)) for r in report.refusals]


STRUCTURE_WAIT_S = 20.0  # the longest the load waits for the window to draw a .pt2's structure
LOADING_WEIGHTS = "{name} is still loading its weights: the graph is view-only until it has opened."


def structure_document(preview):
    """The read-only ``Document`` of a ``.pt2``'s structure (``load_model(on_structure=...)``), shown
    while the weights load; every edit is refused with ``LOADING_WEIGHTS``."""
    from fxstudio.core.document import Document

    return Document(preview, adopt_graph=True, view_only=LOADING_WEIGHTS.format(name=preview.display_name))


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
        self.last_refusals: list[tuple[int, str]] = []  # of the last finished open (recovery checks it)
        self.options_dialog = None  # the last "Open with options" dialog (tests drive it)
        self.capture_chooser = None  # the last chooser of a capture's graphs (tests drive it)
        self._before_structure = None  # (document, spec, options) shown before a .pt2's structure
        self._release_gc = lambda: None  # ends the hold on timer collections while a load runs
        self.cancel_button: QPushButton | None = None  # in the status bar while a .pt2's structure is shown
        self._shown_structure: dict = {}  # the running load's structure layout, once drawn (views_ahead)

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
        if origin == "example" and not options and is_example(path):
            options = dict(EXAMPLE_OPTIONS.get(path.name, {}))
        if origin == "recovery":
            options = data_safe_options(options)
        if self.busy:
            self.window.statusBar().showMessage("Already opening a model; wait for it or cancel it.", 5000)
            return False
        if ask_unsaved and not self.window.confirm_discard("opening another model"):
            return False
        if path.suffix.lower() == ".fxcap" and "::" not in spec and not sync:
            return self._choose_graph(spec, path, origin, options, edits)
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

    def _choose_graph(self, spec: str, path: Path, origin: str, options: dict, edits) -> bool:
        """A whole capture: list its graphs (with their break reasons); the one chosen opens as ``spec::k``."""
        from fxstudio.core.capture import read_capture
        from fxstudio.qt.capture_dialog import CaptureChooser

        try:
            capture = read_capture(path)
        except FxStudioError as exc:
            self.report_failure(path, exc)
            return False

        def chosen(index: int) -> None:
            self.open(f"{spec}::{index}", origin=origin, options=options, edits=edits, ask_unsaved=False)

        dialog = CaptureChooser(self.window, capture, chosen)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.capture_chooser = dialog
        dialog.open()
        return True

    def _start(self, spec: str, path: Path, options: dict, edits, origin: str) -> None:
        detached = [t for t in self._detached if not t.wait(0)]  # still running
        self._detached = detached

        release_gc = self._release_gc = hold_collections()
        fold_weights = bool(self.window.canvas.fold_weights)
        shown: dict = {}   # a .pt2's structure, once on screen: its layout is the editable graph's too
        self._shown_structure = shown
        from fxstudio.qt.run_pane import measure_tensors_ahead   # the window has it (its Run dock): no cost

        def work(ctx):
            # A cancelled load may still be importing user code; loads share sys.path and
            # sys.modules, so the next one starts only when that one has stopped.
            try:
                for previous in detached:
                    ctx.progress("Waiting for the cancelled load to stop…")
                    previous.wait()
                doc, refusals = load_document(spec, options, edits, ctx)
                ctx.check()
                ctx.progress("Laying out the graph…")
                canvas = views_ahead.CanvasSettings(fold_weights=fold_weights, previous=shown.get("layout"))
                views_ahead.prepare(doc, canvas, diff=True, opening=True)  # the GUI thread then only draws
                measure_tensors_ahead(doc)   # the Run pane's size check, read when it is shown
                return doc, refusals
            finally:
                release_gc()  # the hold ends with the load, also one whose window has gone

        task = BackgroundTask(work, name="open", parent=self)
        self.task = task
        progress = QProgressDialog(f"Opening {path.name}…", "Cancel", 0, 0, self.window)
        progress.setObjectName("openProgress")
        progress.setWindowTitle("Opening model")
        progress.setMinimumWidth(PROGRESS_MIN_W)   # the title bar says "Opening model — fxstudio" whole
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(400)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.canceled.connect(task.cancel)
        self.progress = progress
        task.progress.connect(progress.setLabelText)
        task.partial.connect(lambda doc: self._structure(spec, options, doc, task))
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
        self._release_gc()
        if self.cancel_button is not None:
            self.window.statusBar().removeWidget(self.cancel_button)
            self.cancel_button.deleteLater()
            self.cancel_button = None
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
        self._before_structure = None
        shown = self._preview_shown()
        if shown is not None:  # cancelled while its structure was on screen: it stays, view-only, saying why
            shown.read_only = f"Loading {path.name} was cancelled: its graph is shown view-only."
        self.window.statusBar().showMessage(f"Opening {path.name} cancelled.", 5000)
        self.failed.emit("cancelled")

    def _preview_shown(self):
        """The window's document if it is a ``.pt2``'s structure still waiting for its weights, else None."""
        shown = self.window.document
        if shown is not None and shown.read_only == LOADING_WEIGHTS.format(name=shown.loaded.display_name):
            return shown
        return None

    def _structure(self, spec: str, options: dict, doc, task) -> None:
        """A ``.pt2``'s graph arrived before its weights: show it view-only, the load goes on."""
        if task is not self.task or task.cancelled:
            task.partial_shown()
            return
        if self.progress is not None:
            self.progress.hide()  # the graph is the progress now; the status bar says what is left
            self.progress.setMinimumDuration(1 << 30)
        # what was open before comes back if the user declines the trust this archive turns out to need
        self._before_structure = (self.window.document, self.window.spec, self.window.options)
        self.window.set_document(doc, spec, options)
        self._shown_structure["layout"] = self.window.canvas.canvas_scene.layout
        self.window.statusBar().showMessage(f"Loading the weights of {doc.loaded.display_name}… (view only until then)")
        if self.cancel_button is None:  # the progress dialog's Cancel, now that the dialog is hidden
            self.cancel_button = QPushButton("Cancel Loading")
            self.cancel_button.setObjectName("cancelLoading")
            self.cancel_button.setToolTip("Stop loading the weights; the graph stays on screen, view-only")
            self.cancel_button.clicked.connect(self.cancel)
            self.window.statusBar().addPermanentWidget(self.cancel_button)
        QTimer.singleShot(0, lambda: (mark("structure_drawn"), task.partial_shown()))  # after the first frame

    def _done(self, spec: str, options: dict, result, origin: str) -> None:
        self._end_task()
        self._before_structure = None
        doc, refusals = result
        self._finish(spec, options, doc, refusals, origin)

    def _finish(self, spec: str, options: dict, doc, refusals, origin: str) -> None:
        self.last_refusals = list(refusals)
        replaced = self.window.document is not None
        self.window.set_document(doc, spec, options)
        if replaced:  # the old document's weights: freed once the new graph is on screen (issue #15)
            QTimer.singleShot(RELEASE_DELAY_MS, release_memory)
        QTimer.singleShot(0, lambda: mark("graph_drawn"))
        for index, message in refusals:
            self.window.problems.add_refusal(f"Edit {index + 1} of the {origin} script was refused: {message}")
        if refusals:
            self.window.statusBar().showMessage(f"{len(refusals)} edit(s) could not be applied; see Problems.", 8000)
        self.opened.emit(doc)

    def _retry_with_trust(self, spec, path, options, edits, exc, origin, *, sync: bool) -> bool:
        """Ask what the core needs to finish this load (trust for a pickle or an archive that holds code,
        input shapes) and retry; never in a ``sync`` load (``--screenshot``: nobody to answer)."""
        pickle_trust = path.suffix in (".pt", ".pth") and "--trust" in str(exc)
        archive_trust = path.suffix == ".pt2" and getattr(exc, "needs_trust", False)
        # --screenshot (sync) has nobody to answer a question: the refusal is its answer, one line, exit 2.
        needs_trust = (isinstance(exc, LoadError) and not options.get("trust") and not sync
                       and (pickle_trust or archive_trust))
        needs_inputs = _needs_shapes(exc) and not sync
        if getattr(exc, "needed", None) is not None and not sync:  # TooLargeForMemory
            meta = open_dialogs.offer_meta_device(self.window, path, str(exc))
            trusted = {**options, "device": "meta" if meta else "cpu"}
        elif needs_inputs:
            shapes = open_dialogs.ask_input_shapes(self.window, path, str(exc))
            if not shapes:
                return False
            trusted = {**options, "input_shapes": shapes}
        elif needs_trust and (open_dialogs.confirm_trust_archive if archive_trust
                              else open_dialogs.confirm_trust_pickle)(self.window, path, str(exc)):
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
        shown = self._preview_shown()
        preview = shown is not None
        if preview:
            # the structure stays on screen, saying why it stays view-only
            shown.read_only = f"{path.name} could not be opened (see Problems): its graph is shown view-only."
        if self._retry_with_trust(spec, path, options, edits, exc, origin, sync=False):
            return
        before, self._before_structure = self._before_structure, None
        if preview and getattr(exc, "needs_trust", False) and before is not None:
            # trust declined: nothing of the archive stays, not even the graph drawn from its JSON
            self.window.set_document(*before)
        self.report_failure(path, exc, tb_text, spec=spec, options=options)

    def report_failure(self, path: Path, exc: BaseException, tb_text: str = "", *, spec: str | None = None,
                       options: dict | None = None) -> None:
        """Show why ``path`` did not open: the core's message (file:line links) or, for a bug, the traceback.

        With ``spec`` and a failure the options can fix (a trace failure, or one whose diagnosis
        suggests options: ``exc.remedy``) the dialog offers "Open with options…", filled in with that
        fix on top of the ``options`` that failed; a syntax error or a missing file gets no such offer.
        """
        options = dict(options or {})
        if isinstance(exc, FxStudioError):
            message, details = str(exc), ""
            title = "Tracing failed" if isinstance(exc, TraceError) else f"Cannot open {path.name}"
        else:
            message = f"Opening {path.name} failed with an unexpected {type(exc).__name__}: {exc}"
            details, title = tb_text, f"Cannot open {path.name}"
        self.window.problems.add("error", "load", message)
        self.window.statusBar().showMessage(f"Could not open {path.name}.", 8000)
        self.failed.emit(message)
        remedy = getattr(exc, "remedy", None)
        fix = with_remedy(options, remedy.options()) if remedy is not None else None
        retry = None
        if spec is not None and (isinstance(exc, TraceError) or remedy is not None or _needs_shapes(exc)):
            retry = lambda: self.ask_options_and_open(spec, fix if fix is not None else options)  # noqa: E731
        dialog = open_dialogs.LoadFailureDialog(self.window, title, message, self.window.show_source, details,
                                                on_options=retry)
        self.window.last_failure_dialog = dialog
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        QTimer.singleShot(0, dialog.open)

    def ask_options_and_open(self, spec: str | None = None, options: dict | None = None):
        """File > Open with Options…: ask for the model and its loading options, then open it.

        Defaults: the model shown now and the options it was opened with. The dialog is window-modal
        and returns at once (it is ``self.options_dialog``); OK opens the model.
        """
        if spec is None and self.window.spec:
            spec = self.window.spec
            options = dict(self.window.options) if options is None else options
        dialog = open_dialogs.OpenOptionsDialog(self.window, spec or "", options or {}, self.window.prefs.last_dir())
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.options_dialog = dialog
        dialog.accepted.connect(lambda: self.open(dialog.spec(), origin="dialog", options=dialog.options()))
        dialog.open()
        return dialog


def _needs_shapes(exc: BaseException) -> bool:
    """A load that failed for want of input shapes (the options dialog has a field for them)."""
    return isinstance(exc, LoadError) and "--input-shape" in str(exc)
