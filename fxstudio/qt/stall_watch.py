"""A GUI stall watchdog: how long the window's event loop stopped answering during each action
(issue #25: a user's click should be answered within 100 ms, also while a run or a load goes on).

Set ``FXSTUDIO_STALL_LOG=PATH`` before starting the window. A ``QTimer`` on the GUI thread then
ticks every ``INTERVAL_MS`` (10 ms); each tick measures the time since the previous one, and the
part beyond the interval is a *stall*: the GUI thread was busy (building views, waiting for
Python's interpreter lock held by a worker, a garbage collection, an import) and could not have
answered input. The window marks its *actions* with ``begin(name)`` / ``end(name)``:

- ``open``: a model load, from its start to the document shown (``workers.BackgroundTask`` "open");
- ``pass``: Edit ▸ Run Pass… / Replace Pattern…, from OK to the edit applied (``PassActions``;
  the multi-selection edits are ``bulk edit``);
- ``run``: the Run pane's Run, from the click to the report shown (or the error, or the cancel);
- ``export``: File ▸ Export with its verification (``workers.BackgroundTask`` "export").

While an action is open the longest stall is kept; ``SETTLE_MS`` after its ``end`` (the deferred
redraws it caused belong to it) one line ``ACTION longest_ms`` (e.g. ``run 42.7``) is appended to
PATH. Actions may overlap (a Run while a pass runs: each keeps its own longest stall) and nest under
one name (the outer ``end`` closes it). The test harness's own work (``--test-geometry`` writing
its snapshots) runs inside ``excluded()`` and does not count as a stall of the app.

Without the variable nothing is installed: ``begin``, ``end`` and ``excluded`` return at once.
``tests/e2e/test_stalls.py`` drives the real window through open, a pass, Run and an export and
reads the log; ``bench/bench_window.py`` reports the longest stall during Run.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from PySide6.QtCore import QObject, Qt, QTimer

ENV = "FXSTUDIO_STALL_LOG"
INTERVAL_MS = 10
SETTLE_MS = 300
"""An action's line is written this long after its ``end``: the redraws it queued still count."""


class _Action:
    """One open action: its nesting depth, longest stall so far, and when it ended (if it has)."""

    __slots__ = ("depth", "longest", "ended", "since")

    def __init__(self, since: float) -> None:
        self.depth = 1
        self.longest = 0.0
        self.ended: float | None = None
        self.since = since  # a stall counts from here on: what the GUI thread did before is not this action's


class StallWatch(QObject):
    """The timer and the open actions; writes ``ACTION longest_ms`` lines to ``path``."""

    def __init__(self, path: str, interval_ms: int = INTERVAL_MS, parent: QObject | None = None):
        super().__init__(parent)
        self.path = path
        self.interval = interval_ms / 1000
        self.actions: dict[str, _Action] = {}
        self.written: list[tuple[str, float]] = []  # what was written, for tests in the same process
        self._last = time.perf_counter()
        self._excluded = 0.0  # seconds of excluded work since the last tick
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.tick)
        self._timer.start()

    def _gap(self, now: float, action: _Action) -> float:
        """The stall of ``action`` up to ``now``: the time since the last tick (or since the action
        began, if later) less the interval and the excluded work."""
        return max(0.0, now - max(self._last, action.since) - self.interval - self._excluded)

    def tick(self) -> None:
        """Record the gap since the last tick in every open action; write the settled ones."""
        now = time.perf_counter()
        for name, action in list(self.actions.items()):
            action.longest = max(action.longest, self._gap(now, action))
            if action.ended is not None and now - action.ended >= SETTLE_MS / 1000:
                self._write(name)
        self._last, self._excluded = now, 0.0

    def begin(self, name: str) -> None:
        """Start (or nest into) the action ``name``; one that was settling starts afresh."""
        action = self.actions.get(name)
        if action is not None and action.ended is not None:
            self._write(name)
            action = None
        if action is None:
            self.actions[name] = _Action(time.perf_counter())
        else:
            action.depth += 1

    def end(self, name: str) -> None:
        """End one level of ``name``; the outermost end starts its ``SETTLE_MS``. The stall in
        progress (the GUI thread is busy ending it) counts."""
        action = self.actions.get(name)
        if action is None or action.ended is not None:
            return
        action.longest = max(action.longest, self._gap(time.perf_counter(), action))
        action.depth -= 1
        if action.depth <= 0:
            action.ended = time.perf_counter()

    @contextlib.contextmanager
    def excluded(self) -> Iterator[None]:
        """Work in the block is not counted as a stall (the test harness's own)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self._excluded += time.perf_counter() - start

    def flush(self) -> None:
        """Write every open action now (the application quits)."""
        for name in list(self.actions):
            self._write(name)

    def _write(self, name: str) -> None:
        action = self.actions.pop(name)
        ms = round(action.longest * 1000, 1)
        self.written.append((name, ms))
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(f"{name} {ms:.1f}\n")
        except OSError:
            pass


_watch: StallWatch | None = None


def install(app: QObject, path: str | None = None) -> StallWatch | None:
    """Start the watchdog on ``app``'s (the GUI) thread when ``path`` or ``FXSTUDIO_STALL_LOG`` names
    a log file; None (and nothing installed) otherwise. Idempotent."""
    global _watch
    path = path or os.environ.get(ENV)
    if not path:
        return None
    if _watch is None:
        _watch = StallWatch(path, parent=app)
        if hasattr(app, "aboutToQuit"):
            app.aboutToQuit.connect(_watch.flush)
    return _watch


def uninstall() -> None:
    """Stop the watchdog (tests), writing what is open."""
    global _watch
    if _watch is not None:
        watch, _watch = _watch, None
        watch.flush()
        watch._timer.stop()
        watch.deleteLater()


def active() -> StallWatch | None:
    """The installed watchdog, or None."""
    return _watch


def begin(name: str) -> None:
    """Mark the start of the action ``name`` (no-op without the watchdog)."""
    if _watch is not None:
        _watch.begin(name)


def end(name: str) -> None:
    """Mark the end of the action ``name`` (no-op without the watchdog)."""
    if _watch is not None:
        _watch.end(name)


def excluded() -> contextlib.AbstractContextManager:
    """A block whose time is not a stall (no-op without the watchdog)."""
    return _watch.excluded() if _watch is not None else contextlib.nullcontext()
