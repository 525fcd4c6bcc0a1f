"""Compile a large generated source without holding the interpreter lock for the whole compile.

Python's ``compile()`` holds the GIL from start to end: 0.1-0.3 s for the node-by-node program of a
3,000-node graph. In a worker thread of the window that is a GUI stall (issue #25) however the work
is split. ``compile_code`` therefore compiles large sources in a child interpreter of the same
executable (``-I -S``: no site, no user paths; it only compiles, it never runs the code) and loads
the code object with ``marshal`` (milliseconds). On the main thread (the CLI), for small sources, in a
frozen bundle (its executable is not a Python), or if the child fails for any reason, it compiles
in-process as before.
"""

from __future__ import annotations

import marshal
import subprocess
import sys
import threading
from types import CodeType

ASIDE_MIN_CHARS = 200_000  # ~1,500 lines of generated code: below this an in-process compile is < 30 ms
_CHILD = ("import marshal, sys; src = sys.stdin.buffer.read().decode('utf-8'); "
          "sys.stdout.buffer.write(marshal.dumps(compile(src, sys.argv[1], 'exec')))")


def compile_code(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, done in a child interpreter when this is a worker
    thread and the source is large (see the module)."""
    aside = len(source) >= ASIDE_MIN_CHARS and threading.current_thread() is not threading.main_thread()
    if aside and not getattr(sys, "frozen", False):   # a bundle's executable is the app, not Python
        try:
            done = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD, filename], input=source.encode("utf-8"),
                                  capture_output=True, timeout=60, check=True)
            code = marshal.loads(done.stdout)
            if isinstance(code, CodeType):
                return code
        except (OSError, subprocess.SubprocessError, ValueError, EOFError, TypeError):
            pass
    return compile(source, filename, "exec")
