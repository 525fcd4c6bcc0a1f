"""Where the GUI thread was during each stall: a sampling companion of ``stall_watch`` for developers.

Set ``FXSTUDIO_STALL_TRACE=PATH`` as well as ``FXSTUDIO_STALL_LOG``. A daemon thread then looks at the
GUI thread's Python stack every ``SAMPLE_MS`` while the watchdog's timer has not ticked for more than
``THRESHOLD_MS``; when the stall ends, its length and the stacks seen (innermost frames, most frequent
first, with their share of the samples) are appended to PATH. A stall with no sample (a worker held
the interpreter lock the whole time) says so. Nothing is installed without the variable.
"""

from __future__ import annotations

import collections
import faulthandler
import os
import re
import tempfile
import threading
import time

ENV = "FXSTUDIO_STALL_TRACE"
SAMPLE_MS = 15
THRESHOLD_MS = 60
FRAMES = 14


class StallSampler(threading.Thread):
    """Samples the GUI thread's stack while ``watch`` (a ``StallWatch``) reports no tick."""

    def __init__(self, watch, path: str) -> None:
        super().__init__(name="fxstudio-stall-trace", daemon=True)
        self.watch = watch
        self.path = path
        self.gui_ident = threading.get_ident()
        self.stacks: collections.Counter = collections.Counter()
        self.started_at: float | None = None
        self._dump = tempfile.TemporaryFile()

    def run(self) -> None:
        """Sample while the watchdog is installed."""
        from fxstudio.qt import stall_watch

        while stall_watch.active() is self.watch:   # until the watchdog is uninstalled
            time.sleep(SAMPLE_MS / 1000)
            age = time.perf_counter() - self.watch._last
            if age * 1000 > THRESHOLD_MS:
                if self.started_at is None:
                    self.started_at = self.watch._last
                stacks = _thread_stacks(self._dump)
                gui = stacks.pop(self.gui_ident, None)
                if gui is not None:
                    # The other threads too: a GUI thread waiting for the interpreter lock shows
                    # only its event loop, and the worker holding the lock is the cause.
                    others = tuple(f"[{t}] " + " < ".join(s[:4]) for t, s in stacks.items() if t != self.ident)
                    self.stacks[gui[:FRAMES] + others] += 1
            elif self.started_at is not None:
                self._write(self.watch._last - self.started_at)
                self.started_at, self.stacks = None, collections.Counter()

    def _write(self, seconds: float) -> None:
        total = sum(self.stacks.values())
        lines = [f"stall {seconds * 1000:.0f} ms, {total} samples, actions {sorted(self.watch.actions)}"]
        if not total:
            lines.append("  (no sample: another thread held the interpreter lock)")
        for stack, count in self.stacks.most_common(3):
            lines.append(f"  {count}/{total}:")
            lines.extend(f"    {f}" for f in stack)
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        except OSError:
            pass


def _thread_stacks(dump) -> dict[int, tuple[str, ...]]:
    """Every thread's stack, innermost frame first, read by ``faulthandler`` (C code that walks
    the frames without creating objects: walking another running thread's frames from Python can
    crash 3.11) into the temporary file ``dump``."""
    dump.seek(0)
    dump.truncate()
    faulthandler.dump_traceback(dump, all_threads=True)
    dump.seek(0)
    stacks: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in dump.read().decode("utf-8", "replace").splitlines():
        head = re.match(r"(?:Current thread|Thread) (0x[0-9a-f]+)", line)
        if head:
            current = stacks.setdefault(int(head.group(1), 16), [])
            continue
        frame = re.match(r'\s+File "(.*)", line (\d+) in (.*)', line)
        if frame and current is not None:
            name = frame.group(1)
            current.append(f"{name.rpartition('/fxstudio/')[2] or name}:{frame.group(2)} {frame.group(3)}")
    return {k: tuple(v) for k, v in stacks.items()}


def install(watch) -> StallSampler | None:
    """Start the sampler beside ``watch`` when ``FXSTUDIO_STALL_TRACE`` names a file."""
    path = os.environ.get(ENV)
    if not path or watch is None:
        return None
    sampler = StallSampler(watch, path)
    sampler.start()
    return sampler
