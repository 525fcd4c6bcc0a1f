"""torch.fx's compile of a GraphModule's code, moved off the interpreter lock in the window (issue #25).

``GraphModule.recompile`` (a trace, a pass's result, a copy for a run) ends in torch's private
``torch.fx.graph_module._exec_with_source``, whose ``compile()`` holds the GIL for 0.1 s on a
3,000-node graph: the window's GUI thread cannot run meanwhile, whichever worker recompiles.
``compile_off_lock`` replaces that function with one that does the same (the same linecache entry,
the same ``exec`` into the same globals) but compiles large sources in a worker thread through
``compile_aside.compile_code``. The window installs it; the CLI does not (one thread: nothing waits).
"""

from __future__ import annotations

import threading
from typing import Any

from torch.fx import graph_module as _graph_module

from fxstudio.core.compile_aside import ASIDE_MIN_CHARS, compile_code


def compile_off_lock() -> bool:
    """Install the replacement (idempotent); False if this torch has no such function to replace."""
    original = getattr(_graph_module, "_exec_with_source", None)
    loader = getattr(_graph_module, "_loader", None)
    if original is None or loader is None or not hasattr(loader, "cache"):
        return False
    if getattr(original, "_fxstudio_off_lock", False):
        return True

    def _exec_with_source(src: str, globals: dict[str, Any], co_fields: dict[str, Any] | None = None) -> None:
        if len(src) < ASIDE_MIN_CHARS or threading.current_thread() is threading.main_thread():
            return original(src, globals, co_fields)
        key = loader.cache(src, globals, co_fields)
        exec(compile_code(src, key), globals)  # noqa: S102 - torch's own generated module code, as torch does
        return None

    _exec_with_source._fxstudio_off_lock = True
    _graph_module._exec_with_source = _exec_with_source
    return True
