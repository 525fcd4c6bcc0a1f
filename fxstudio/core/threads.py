"""How many threads torch may use for the work fxstudio runs (issue #25).

torch's default (one intra-op thread per core, spinning OpenMP workers) is a poor fit for what
fxstudio runs: a graph of thousands of small ops, on a machine where the window's GUI thread, the
loader and whatever else the user runs want the same cores. On a 2-core machine a 3,000-node MLP
with 2×16 inputs runs 2.5x slower at torch's default than on one thread while idle, and 30-100x
slower while other processes keep the cores busy. The policy:

- **the user's choice first**: ``--threads N`` (CLI), the Run pane's Threads box, or the
  ``FXSTUDIO_THREADS`` environment variable;
- **sized to the work**: one thread when the largest tensor of the graph is small
  (``SMALL_TENSOR_ELEMENTS``: below it ATen does not split an op anyway, and the threads only spin);
- **sized to the free cores**: the cores this process may use (affinity) less those other
  processes keep busy, sampled from ``/proc/stat`` over ``SAMPLE_SECONDS``; in the window one core
  is left to the GUI thread;
- never more than the cores, never fewer than one.

``torch_threads(n)`` applies a count for the length of a ``with`` block (process-wide: torch has no
per-thread setting) and ``subprocess_env(n)`` gives a child process the same count through
``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, which it reads before torch starts its pool.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from typing import Iterator

import torch

ENV = "FXSTUDIO_THREADS"
# ATen's grain size for elementwise ops (at::internal::GRAIN_SIZE): smaller tensors run on one
# thread whatever the setting, so more threads only add OpenMP's barriers and spinning.
SMALL_TENSOR_ELEMENTS = 32768
SAMPLE_SECONDS = 0.05
_SAMPLE_TTL = 2.0  # a measurement of the busy cores is reused this long

_lock = threading.Lock()
_cached: tuple[float, float] | None = None  # (monotonic time taken, busy cores)
_override: int | None = None


@dataclasses.dataclass(frozen=True)
class ThreadChoice:
    """A thread count and why: shown in the Run pane and in ``fxstudio compare``'s report."""

    count: int
    reason: str

    def text(self) -> str:
        """``"1 torch thread (small tensors)"``."""
        return f"{self.count} torch thread{'s' if self.count != 1 else ''} ({self.reason})"


def cores() -> int:
    """The cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def set_override(count: int | None) -> None:
    """Use ``count`` threads for everything from now on (``--threads``, the Run pane); None: the policy."""
    global _override
    if count is not None and count < 1:
        raise ValueError("a thread count is at least 1")
    _override = count


def user_override() -> int | None:
    """The count the user chose (``set_override``, else ``FXSTUDIO_THREADS``), or None."""
    if _override is not None:
        return _override
    text = os.environ.get(ENV, "").strip()
    if text.isdigit() and int(text) >= 1:
        return int(text)
    return None


def parse_count(text: str) -> int:
    """``"4"`` → 4 for ``--threads``; ValueError with a one-line reason otherwise."""
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"'{text}' is not a thread count: give a whole number, at least 1") from None
    if count < 1:
        raise ValueError(f"'{text}': the thread count is at least 1")
    return count


def busy_cores() -> float:
    """How many cores other processes keep busy now (sampled, then reused for ``_SAMPLE_TTL`` s)."""
    global _cached
    with _lock:
        now = time.monotonic()
        if _cached is not None and now - _cached[0] < _SAMPLE_TTL:
            return _cached[1]
        busy = _sample_busy()
        _cached = (time.monotonic(), busy)
        return busy


def _sample_busy() -> float:
    """Busy cores over ``SAMPLE_SECONDS`` from ``/proc/stat``, less this process's own use."""
    try:
        total0, idle0 = _cpu_times()
        own0 = _own_ticks()
        time.sleep(SAMPLE_SECONDS)
        total1, idle1 = _cpu_times()
        own1 = _own_ticks()
    except (OSError, ValueError, IndexError):
        return 0.0
    elapsed = total1 - total0
    if elapsed <= 0:
        return 0.0
    machine = os.cpu_count() or 1
    busy_fraction = (elapsed - (idle1 - idle0) - (own1 - own0)) / elapsed
    return max(0.0, busy_fraction * machine)


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]), idle


def _own_ticks() -> int:
    with open("/proc/self/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def choose(largest_elements: int | None = None, *, leave_for_gui: bool = False,
           busy: float | None = None) -> ThreadChoice:
    """The thread count for work whose largest tensor has ``largest_elements`` (None: unknown);
    ``busy``: the busy cores if known, else sampled (``busy_cores``)."""
    chosen = user_override()
    if chosen is not None:
        return ThreadChoice(chosen, "as set")
    if largest_elements is not None and largest_elements < SMALL_TENSOR_ELEMENTS:
        return ThreadChoice(1, "small tensors")
    available = cores()
    free = available - int(round(busy_cores() if busy is None else busy))
    if leave_for_gui and available > 1:
        free -= 1
    count = max(1, min(available, free))
    if count == available:
        return ThreadChoice(count, "every core is free")
    return ThreadChoice(count, f"{available - count} of {available} cores busy" if count > 1
                        else "the other cores are busy")


def largest_tensor_elements(gm: torch.fx.GraphModule, inputs: tuple = ()) -> int | None:
    """The element count of the largest tensor a run of ``gm`` holds: its nodes' recorded shapes,
    its weights and ``inputs``; None when no node's shape is known."""
    from fxstudio.core.node_text import META_SHAPE

    largest: int | None = None
    for node in gm.graph.nodes:
        shape = node.meta.get(META_SHAPE)
        for one in (shape if isinstance(shape, list) else [shape]):
            if isinstance(one, tuple):
                largest = max(largest or 0, _numel(one))
    if largest is None:
        return None
    for t in list(gm.parameters()) + list(gm.buffers()) + [t for t in inputs if isinstance(t, torch.Tensor)]:
        largest = max(largest, t.numel())
    return largest


def choose_for(gm: torch.fx.GraphModule, inputs: tuple = (), *, leave_for_gui: bool = False) -> ThreadChoice:
    """``choose`` for a run of ``gm`` on ``inputs`` (its largest tensor by ``largest_tensor_elements``)."""
    return choose(largest_tensor_elements(gm, inputs), leave_for_gui=leave_for_gui)


def _numel(shape) -> int:
    count = 1
    for d in shape:
        try:
            count *= int(d)
        except (TypeError, ValueError):  # a symbolic size: count it as large
            return SMALL_TENSOR_ELEMENTS
    return count


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(count)``, then restore the previous count."""
    before = torch.get_num_threads()
    if count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def subprocess_env(count: int, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with the OpenMP/MKL thread counts set to ``count``."""
    out = dict(os.environ if env is None else env)
    out["OMP_NUM_THREADS"] = out["MKL_NUM_THREADS"] = str(count)
    return out


def start_process(*, leave_for_gui: bool = False) -> ThreadChoice:
    """Set the process-wide counts at start-up: one inter-op thread (fxstudio runs no parallel
    ``torch.jit.fork`` work, and each extra pool thread spins), intra-op by ``choose`` with the
    load average for the busy cores."""
    with contextlib.suppress(RuntimeError):  # only allowed before any inter-op work has started
        torch.set_num_interop_threads(1)
    # the 1-minute load average, not a 50 ms sample: start-up waits for nothing (the work that
    # follows chooses again, from a sample)
    try:
        busy = min(float(cores()), os.getloadavg()[0])
    except OSError:
        busy = 0.0
    choice = choose(None, leave_for_gui=leave_for_gui, busy=busy)
    torch.set_num_threads(choice.count)
    return choice
