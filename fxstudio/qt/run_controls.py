"""Parts of the Run pane's Run: the Threads box, and the snapshot of the edited graph a run compares.

**Threads** (issue #25): "auto" leaves the count to ``fxstudio.core.threads.choose`` (one thread
when every tensor is small, else the free cores; ``--threads N`` or ``FXSTUDIO_THREADS`` set for the
window win), or a count from 1 to the cores this process may use. The report's note says what the
run got and why ("ran on 1 torch thread (small tensors)"); the pane shows it in its summary.

**The snapshot**: the user may edit while a run goes on, so Run compares the graph as it was when
pressed. Only what that needs is taken on the GUI thread: a copy of the graph and of the edited
module's own tables of children, parameters and buffers (the edits change only those tables; the
submodules below them are shared and never changed in place: ``edits.bulk.DropSubmodule``). The
module is built, linted and compiled on the run's worker thread (``EditedSnapshot.module``): on a
3,000-node graph that took 0.25 s of the GUI thread on every Run. A snapshot stays valid until the
document changes, so Run again without an edit reuses it, and with it the comparison's schedule
and generated program, which are kept with the edited graph.
"""

from __future__ import annotations

import copy
import threading

import torch
import torch.fx
from PySide6.QtWidgets import QComboBox, QWidget

from fxstudio.core import fx_compat
from fxstudio.core.threads import cores

AUTO = "auto"
THREADS_TIP = ("Torch threads for the run. auto: one when every tensor is small (more would only spin), "
               "else the cores other programs leave free, one kept for the window; --threads N or "
               "FXSTUDIO_THREADS set it for the whole window. The summary says what the run used.")


class ThreadsBox(QComboBox):
    """"auto", 1, 2, … up to the cores this process may use; ``threads()`` is None for auto."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("runThreads")
        self.addItem(AUTO, None)
        for n in range(1, cores() + 1):
            self.addItem(str(n), n)
        self.setToolTip(THREADS_TIP)

    def threads(self) -> int | None:
        """The chosen count, or None for the policy (auto)."""
        return self.currentData()

    def set_threads(self, count: int | None) -> None:
        """Choose ``count`` (None: auto); a count above the cores chooses the largest."""
        if count is None:
            self.setCurrentIndex(0)
        else:
            self.setCurrentIndex(min(max(1, count), self.count() - 1))


def thread_note(report) -> str | None:
    """The report's note on the threads it ran on ("ran on 2 torch threads (every core is free)")."""
    return next((n for n in getattr(report, "notes", []) if n.startswith("ran on ") and "torch thread" in n), None)


class EditedSnapshot:
    """The edited module of a document as it is now, built later on another thread (see the module
    docstring). Take it on the GUI thread; call ``module()`` on the worker."""

    def __init__(self, doc):
        live = doc.edited
        self.doc = doc
        self.nodes = len(live.graph.nodes)
        self.graph = copy.deepcopy(live.graph)
        root = object.__new__(torch.nn.Module)
        root.__dict__.update(vars(live))
        for table in fx_compat.MODULE_TABLES:  # the edits replace entries of these: copy them, not below
            root.__dict__[table] = dict(vars(live)[table])
        self._root: torch.nn.Module | None = root
        self._module: torch.fx.GraphModule | None = None
        self._lock = threading.Lock()

    def module(self) -> torch.fx.GraphModule:
        """The edited module, built and compiled on first use (``FxStudioError``-free: a graph that
        does not lint or compile raises what fx raises)."""
        with self._lock:
            if self._module is None:
                self.graph.lint()
                self._module = torch.fx.GraphModule(self._root, self.graph)
                self._root = None  # the tables copied are in the module now
            return self._module
