"""Cyclic garbage collection on the GUI thread only.

Python's cyclic collector runs on whichever thread allocates when a generation's count passes its
threshold. Widgets and scene items dropped inside a reference cycle are deleted by that collection,
and Qt aborts when a widget is deleted off the GUI thread. Loading, running and exporting work on
worker threads that allocate a great deal, so any of them could be the one. ``GuiThreadCollector``
turns the automatic collector off and runs the same generational collections from a timer on the
GUI thread instead (pyqtgraph's ``GarbageCollector`` does the same for the same reason).
"""

from __future__ import annotations

import gc
import threading
from typing import Callable

from PySide6.QtCore import QObject, QTimer


class GuiThreadCollector(QObject):
    """While installed, the cyclic collector runs only from this object's timer, on the thread
    that owns it (the GUI thread), with Python's own thresholds."""

    def __init__(self, interval_ms: int = 100, parent: QObject | None = None):
        super().__init__(parent)
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check)
        self.threshold = gc.get_threshold()
        self._was_enabled = False
        self.collections = 0
        self.holds = 0  # while above 0 (a model is loading), the timer collects nothing
        self.old_collections = 0
        self.full_due = False   # a full scan of the frozen objects is owed (``_collect_old``)

    def install(self) -> None:
        """Turn automatic collection off and start collecting from the timer."""
        self._was_enabled = gc.isenabled()
        self.threshold = gc.get_threshold()
        gc.disable()
        self.timer.start()

    def uninstall(self) -> None:
        """Stop the timer, collect once here (frozen objects too), and give collection back to Python if it had it."""
        self.timer.stop()
        gc.unfreeze()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def check(self) -> int:
        """Collect the generations whose counts passed their thresholds, youngest first, as the
        automatic collector would; returns how many objects were unreachable."""
        if self.holds:
            return 0
        count0, count1, count2 = gc.get_count()
        found = 0
        if count0 > self.threshold[0]:
            found = gc.collect(0)
            self.collections += 1
            if count1 > self.threshold[1] and not self._busy():
                found += gc.collect(1)
                if count2 > self.threshold[2]:
                    found += self._collect_old()
        return found

    def _collect_old(self) -> int:
        """The oldest generation, without scanning what survived earlier ones: those objects (a
        model's graphs, weights' wrappers, the scene: ~640k objects with a 3,000-node model open)
        are frozen (``gc.freeze``), so a collection scans only what came since. A full scan of
        them took 0.4-1 s of the GUI thread every ~50 s of activity. At the first old collection
        when ``idle`` after every ``FULL_EVERY``-th one (or a ``freeze_survivors``), and whenever a
        model was replaced (``release_memory``), everything is thawed and scanned, so cycles among
        frozen objects that died since are freed too."""
        self.old_collections += 1
        if self.old_collections % FULL_EVERY == 0:
            self.full_due = True
        if self.full_due and self.idle():
            self.full_due = False
            gc.unfreeze()
        found = gc.collect(2)
        gc.freeze()
        return found

    @staticmethod
    def _busy() -> bool:
        """A background task is running: the older generations then hold what the worker is
        building (a 200,000-node layout: millions of objects, 0.5-2 s to scan on the GUI thread).
        Only the youngest is collected meanwhile (what came in the last timer period); the task's
        survivors are frozen at its end (``freeze_survivors``)."""
        from fxstudio.qt import workers

        return workers.any_running()

    def idle(self) -> bool:
        """No background task and no window of the application active (the user works elsewhere):
        a full scan (0.4-1 s) waits for this, so it never stalls a gesture, a load, a pass, a run or
        an export (issue #25). An event filter noting the user's input would have cost every Qt
        event a Python call, each waiting for the interpreter lock behind a busy worker."""
        from PySide6.QtWidgets import QApplication

        from fxstudio.qt import workers

        return not workers.any_running() and QApplication.activeWindow() is None


FULL_EVERY = 20  # every so many collections of the oldest generation scan the frozen objects too (when idle)

_installed: GuiThreadCollector | None = None
_holds_lock = threading.Lock()


def collecting_here() -> bool:
    """True while the application's collector runs collections on the GUI thread only (then no
    other thread can trigger one, and ``workers.start_worker`` need not collect first)."""
    return _installed is not None and _installed.timer.isActive() and not gc.isenabled()


def install_gui_thread_collector(app: QObject) -> GuiThreadCollector:
    """Install one collector for the application (idempotent); it lives as long as ``app``."""
    global _installed
    if _installed is None:
        _installed = GuiThreadCollector(parent=app)
        _installed.install()
        app.aboutToQuit.connect(_installed.uninstall)
    return _installed


def hold_collections() -> Callable[[], None]:
    """No timer collections until the returned function is called (once; later calls do nothing).

    For the length of a model load: the load allocates a million objects that mostly die by
    reference counting, and a young-generation collection every half second scanned ~250k of them
    on the GUI thread (60 ms each) while the loading thread waited for the interpreter (issue #15).
    When the last hold ends, what survived the load is frozen (``gc.freeze``)."""
    collector = _installed
    if collector is None:
        return lambda: None
    with _holds_lock:
        collector.holds += 1
    token = [True]

    def release() -> None:  # from the loading thread or the GUI thread, whichever ends first
        try:
            token.pop()  # atomic: one caller gets the token
        except IndexError:
            return
        with _holds_lock:
            collector.holds -= 1
            # What the load left alive (the model, its graphs: hundreds of thousands of objects)
            # would all be scanned by the next young collection, in one GUI turn (0.1-0.4 s on a
            # 3,000-node model): freeze it now (a constant-time move). The idle full scan, and
            # the next model's release_memory, look at it again.
            if not collector.holds:
                freeze_survivors()
    return release


def freeze_survivors() -> None:
    """Freeze every tracked object now (``gc.freeze``: constant time), from any thread, so that what
    a worker left alive (a loaded model, a pass's result) is not scanned by the next young
    collection in one GUI turn; the next idle full scan looks at it again. Nothing without the
    application's collector (then Python collects as usual)."""
    collector = _installed
    if collector is not None and collector.timer.isActive():
        gc.freeze()
        collector.full_due = True


def uninstall_gui_thread_collector() -> None:
    """Remove the application's collector and give cyclic collection back to Python (the last
    ``fxstudio.edit`` window closed: the calling program may run no event loop to drive the timer)."""
    global _installed
    if _installed is not None:
        collector, _installed = _installed, None
        collector.uninstall()
        collector.deleteLater()


def release_memory() -> None:
    """Collect all generations here, on the GUI thread, then hand the freed heap back to the system.

    Called once a model was replaced by another (issue #15: RSS grew with every reopen). The old
    document's weights die in the collection; glibc keeps freed blocks in the arenas of the loading
    threads that allocated them, so without ``malloc_trim`` each reopen would add the size of the
    weights to the process. Elsewhere than glibc the trim is skipped. What the collector froze is
    thawed first (the old document's objects are among it), and the survivors frozen again."""
    collector = _installed
    if collector is not None:
        gc.unfreeze()
    gc.collect()
    if collector is not None:
        gc.freeze()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
