"""Compile a large generated source without holding the interpreter lock for the whole compile.

Python's ``compile()`` holds the GIL from start to end: 0.1-0.3 s for the node-by-node program of a
3,000-node graph. In a worker thread of the window that is a GUI stall (issue #25) however the work
is split. ``compile_code`` therefore compiles large sources in a child interpreter of the same
executable (``-I -S``: no site, no user paths; it only compiles, it never runs the code) and loads
the code object with ``marshal`` (milliseconds). On the main thread (the CLI), for small sources, in a
frozen bundle (its executable is not a Python), or if the child fails for any reason, it compiles
in-process as before.

The child runs at a lower CPU priority (``lower_priority``), as the export's verification does: on a
2-core machine it competes for a core with the window's GUI thread, which must keep answering.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
import threading
from types import CodeType

ASIDE_MIN_CHARS = 200_000  # ~1,500 lines of generated code: below this an in-process compile is < 30 ms
_CHILD = ("import marshal, sys; src = sys.stdin.buffer.read().decode('utf-8'); "
          "sys.stdout.buffer.write(marshal.dumps(compile(src, sys.argv[1], 'exec')))")


CHILD_NICE = 10
"""How much lower than this process's the CPU priority of a helper process started by a worker
thread of the window is (``os.nice`` steps; 19 is the lowest): the verification of an export
imports torch for 1-3 s of CPU, which took the window's core while it repainted (issue #25)."""


def lower_priority(pid: int) -> None:
    """Lower the CPU priority of the just-started process ``pid`` by ``CHILD_NICE`` (not below 19);
    nothing where the system has no such priorities. Called right after the start, while the child
    has one thread: the threads it starts later (torch's pool) inherit it."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + CHILD_NICE))
    except (AttributeError, OSError):   # no setpriority (Windows), or the child has already exited
        pass


def compile_code(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, done in a child interpreter when this is a worker
    thread and the source is large (see the module)."""
    aside = len(source) >= ASIDE_MIN_CHARS and threading.current_thread() is not threading.main_thread()
    if aside and not getattr(sys, "frozen", False):   # a bundle's executable is the app, not Python
        try:
            child = subprocess.Popen([sys.executable, "-I", "-S", "-c", _CHILD, filename], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            lower_priority(child.pid)
            try:
                out, _ = child.communicate(source.encode("utf-8"), timeout=60)
            finally:
                if child.poll() is None:
                    child.kill()
                    child.communicate()
            if child.returncode != 0:
                raise subprocess.CalledProcessError(child.returncode, "compile child")
            code = marshal.loads(out)
            if isinstance(code, CodeType):
                return code
        except (OSError, subprocess.SubprocessError, ValueError, EOFError, TypeError):
            pass
    return compile(source, filename, "exec")
