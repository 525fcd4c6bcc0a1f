"""Timestamps of the window's start and of each open, for ``bench/bench_open.py`` (issue #15).

With ``FXSTUDIO_TIMING=PATH`` set, each ``mark(name)`` appends a line ``name SECONDS`` (wall clock,
``time.time()``) to PATH; without it ``mark`` does nothing. Marks: ``window_shown`` (the main
window's first event-loop turn), ``progress_shown`` (the open of the model named on the command
line has started and says so), ``structure_drawn`` (a ``.pt2``'s graph is on screen, view-only),
``graph_drawn`` (the editable document is on screen).
"""

from __future__ import annotations

import os
import time

ENV = "FXSTUDIO_TIMING"


def mark(name: str) -> None:
    """Append ``name`` and the time now to the file named by ``FXSTUDIO_TIMING``, if set."""
    path = os.environ.get(ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{name} {time.time():.6f}\n")
    except OSError:
        pass
