"""Long work off the GUI thread: a task runs a plain function in a worker thread and reports back
through queued Qt signals, so every slot runs on the GUI thread.

Cancelling cannot stop a thread that is inside torch or user code; it detaches the task instead:
the window returns at once, and whatever the function later returns is dropped. Worker threads are
daemons, so a detached task never keeps the application from exiting.
"""

from __future__ import annotations

import gc
import threading
import time
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal

from fxstudio.qt import stall_watch
from fxstudio.qt.gui_gc import collecting_here, freeze_survivors


_importing: list[threading.Thread] = []


def start_importer(thread: threading.Thread) -> None:
    """Start ``thread``, which imports a large package (``torch._dynamo``) ahead of need; every
    ``BackgroundTask`` started meanwhile waits for it first. Two threads importing the same package
    at once can see it partially initialized (CPython breaks the import-lock cycle of a circular
    package by handing one thread the half-made module): a pass run during the warm-up failed with
    "partially initialized module 'torch._dynamo'"."""
    _importing[:] = [t for t in _importing if t.is_alive()]
    _importing.append(thread)
    thread.start()


def wait_for_importers() -> None:
    """Block until the threads of ``start_importer`` have finished (called on worker threads)."""
    for thread in list(_importing):
        if thread is not threading.current_thread():
            thread.join()


def start_worker(thread: threading.Thread) -> None:
    """Start ``thread`` after collecting cyclic garbage here, on the GUI thread.

    The cyclic collector runs on whichever thread happens to allocate when it triggers. Widgets
    that were closed and dropped inside a reference cycle are deleted by that collection, and Qt
    aborts when a widget is deleted off the GUI thread: a worker that starts tracing (many
    allocations) must not be the one to find them. Not needed (and skipped: a full collection
    takes ~180 ms with a 10k-node document open) while the application's ``GuiThreadCollector``
    has automatic collection off."""
    if not collecting_here():
        gc.collect()
    thread.start()


class TaskCancelled(Exception):
    """Raised inside a task's function by :meth:`TaskContext.check` once the user cancelled."""


class TaskContext:
    """Handed to the task's function: report progress, and check for cancellation between steps."""

    def __init__(self, task: "BackgroundTask"):
        self._task = task

    @property
    def cancelled(self) -> bool:
        """True once the user cancelled."""
        return self._task.cancelled

    def check(self) -> None:
        """Raise :class:`TaskCancelled` if the user cancelled (call it between steps)."""
        if self._task.cancelled:
            raise TaskCancelled()

    def partial(self, result: Any, wait: float = 0.0) -> None:
        """Hand an early result to the GUI thread (``BackgroundTask.partial``), the final one still to come.

        ``wait``: then block up to that many seconds until the GUI thread says it has shown the result
        (``BackgroundTask.partial_shown``) or the task is cancelled. The worker and the GUI share
        Python's lock: working on while the window draws the result makes both slower (issue #15)."""
        if self._task.cancelled:
            return
        self._task.partial_taken.clear()
        self._task.partial.emit(result)
        end = time.monotonic() + wait
        while not self._task.cancelled and time.monotonic() < end:
            if self._task.partial_taken.wait(min(0.05, max(0.0, end - time.monotonic()))):
                return

    def progress(self, text: str, fraction: float | None = None) -> None:
        """Show ``text`` as the current step, and ``fraction`` (0..1) done if known (thread-safe)."""
        if not self._task.cancelled:
            self._task.progress.emit(text)
            if fraction is not None:
                self._task.fraction.emit(max(0, min(100, int(round(fraction * 100)))))


PROGRESS_EVERY_S = 0.05
"""Progress of one kind reaches the GUI thread at most this often (``throttled_progress``)..."""
PROGRESS_STEP = 0.1
"""...unless the bar moved by this much (of its whole length) since the last update that did."""


def throttled_progress(emit: Callable[[float, str], None], every_s: float = PROGRESS_EVERY_S,
                       step: float = PROGRESS_STEP) -> Callable[[float, str], None]:
    """``emit(fraction, text)`` called for a worker's progress: a text of the same kind as the last one
    sent (the same text but its last word: ``comparing node add_7``) only ``every_s`` after it, or
    when the fraction moved by ``step``. A new kind, the start (``fraction`` 0) and the end (1) always
    pass, after the last held-back text of the kind before (the bar reaches the end of each phase).
    A Run reports every hundredth node, a hundred updates in 25 ms on a 3,000-node model; each
    repaints the progress bar at once (``QProgressBar.setValue``, 6 ms), and that flood kept the
    event loop's timers from running for 0.2 s (issue #25)."""
    last: dict = {"at": 0.0, "kind": None, "fraction": 0.0, "held": None}

    def progress(fraction: float, text: str) -> None:
        kind, now = text.rpartition(" ")[0], time.monotonic()
        if (fraction <= 0 or fraction >= 1 or kind != last["kind"] or now - last["at"] >= every_s
                or fraction - last["fraction"] >= step):
            held = last["held"]
            if held is not None and kind != last["kind"]:
                emit(*held)
            last.update(at=now, kind=kind, fraction=fraction, held=None)
            emit(fraction, text)
        else:
            last["held"] = (fraction, text)
    return progress


_running: set["BackgroundTask"] = set()


def any_running() -> bool:
    """Whether any background task (a load, a pass, a run, an export) is running."""
    return bool(_running)


def running(name: str) -> bool:
    """Whether a task called ``name`` (``"open"``: a model load) is running and not cancelled."""
    return any(t.name == name and not t.cancelled for t in list(_running))  # a copy: workers discard


class BackgroundTask(QObject):
    """Runs ``fn(ctx)`` in a worker thread; emits ``succeeded(result)`` or ``failed(exc, tb_text)``.

    Exactly one of the two is emitted, on the GUI thread, unless the task was cancelled first
    (then ``cancelled_signal`` was emitted when :meth:`cancel` was called, and nothing follows).
    From start to delivery (the slots included) or cancel, the task is the ``stall_watch`` action
    ``name`` ("open", "export", "pass").
    """

    succeeded = Signal(object)
    partial = Signal(object)  # an early result (``TaskContext.partial``), before succeeded or failed
    failed = Signal(object, str)
    progress = Signal(str)
    fraction = Signal(int)  # percent done, when the work knows it
    cancelled_signal = Signal()
    _finished = Signal(object, object, str)

    def __init__(self, fn: Callable[[TaskContext], Any], name: str = "task", parent: QObject | None = None):
        super().__init__(parent)
        self.fn = fn
        self.name = name
        self.cancelled = False
        self.done = False
        self.started_at = 0.0
        self.elapsed = 0.0
        self._thread: threading.Thread | None = None
        self.partial_taken = threading.Event()  # set by partial_shown (TaskContext.partial waits on it)
        self._finished.connect(self._deliver)

    def partial_shown(self) -> None:
        """The GUI thread has shown (or dropped) the last partial result: the worker may go on."""
        self.partial_taken.set()

    def start(self) -> "BackgroundTask":
        """Start the worker thread; returns self."""
        self.started_at = time.perf_counter()
        stall_watch.begin(self.name)
        ctx = TaskContext(self)
        _running.add(self)
        self._thread = threading.Thread(target=self._work, args=(ctx,), name=f"fxstudio-{self.name}", daemon=True)
        start_worker(self._thread)
        return self

    def _work(self, ctx: TaskContext) -> None:
        try:
            wait_for_importers()
            # Here, not at start-up: it imports torch.fx, which the window must not wait for. Every
            # model is opened by a task, so it is in place before any other worker recompiles.
            from fxstudio.core.fx_compat_compile import compile_off_lock

            compile_off_lock()   # workers' GraphModule recompiles no longer hold the lock for 0.1 s
            result = self.fn(ctx)
        except TaskCancelled:
            return
        except BaseException as exc:  # delivered to the GUI thread, which decides how to show it
            self._finished.emit(None, exc, traceback.format_exc())
            return
        finally:
            _running.discard(self)  # also when the result is never delivered (its window closed)
            # What the work left alive (a pass's result graph, a run's report) would be scanned
            # by the next young collection in one GUI turn (0.15 s on a 3,000-node model).
            freeze_survivors()
        self._finished.emit(result, None, "")

    def _deliver(self, result, exc, tb_text: str) -> None:
        self.done = True
        _running.discard(self)
        self.elapsed = time.perf_counter() - self.started_at
        if self.cancelled:
            return
        try:
            if exc is not None:
                self.failed.emit(exc, tb_text)
            else:
                self.succeeded.emit(result)
        finally:
            stall_watch.end(self.name)

    def cancel(self) -> None:
        """Detach: no result will be delivered. Emits ``cancelled_signal`` once."""
        if not self.cancelled and not self.done:
            self.cancelled = True
            _running.discard(self)
            self.cancelled_signal.emit()
            stall_watch.end(self.name)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the worker thread ends (tests, shutdown); True if it ended."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()


def task_progress_dialog(task: "BackgroundTask", parent, text: str, name: str):
    """A window-modal progress dialog (0-100, shown after 400 ms) that follows ``task``'s progress
    text and fraction and cancels it: the export, report and similar long actions of the window."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QProgressDialog

    progress = QProgressDialog(text, "Cancel", 0, 100, parent)
    progress.setObjectName(name)
    progress.setWindowModality(Qt.WindowModality.WindowModal)
    progress.setMinimumDuration(400)
    progress.canceled.connect(task.cancel)
    task.progress.connect(progress.setLabelText)
    task.fraction.connect(progress.setValue)
    return progress


def window_action(window, text: str, name: str, tip: str, slot: Callable[[], Any]):
    """A ``QAction`` of ``window`` named ``name`` (tests find it by name) with ``tip`` as its status
    tip and tooltip, calling ``slot()`` when triggered."""
    from PySide6.QtGui import QAction

    action = QAction(text, window)
    action.setObjectName(name)
    action.setStatusTip(tip)
    action.setToolTip(tip)
    action.triggered.connect(lambda _checked=False: slot())
    return action
