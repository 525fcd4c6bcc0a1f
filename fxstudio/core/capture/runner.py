"""``fxstudio capture SCRIPT.py``: run the user's script with ``torch.compile`` recording to a capture.

The script runs in this process as ``python SCRIPT.py ARGS`` would run it (``runpy``, as
``__main__``, its folder first on ``sys.path``), with ``torch.compile`` replaced for its duration
by a wrapper that passes the capture backend: ``torch.compile(model)`` records and compiles with
inductor (eager where inductor cannot compile), ``torch.compile(model, backend="eager")`` records
and compiles with the script's own backend. ``mode=``/``options=`` are inductor's and are dropped
when the capture backend stands in (a note says so). ``torch._dynamo.optimize`` is not wrapped.
"""

from __future__ import annotations

import functools
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from fxstudio.core.capture.record import CaptureBackend
from fxstudio.core.errors import LoadError, RunError


def _compile_wrapper(original, capture: CaptureBackend):
    @functools.wraps(original)
    def compile_with_capture(model: Any = None, *args: Any, backend: Any = "inductor", **kwargs: Any):
        """``torch.compile`` with the capture backend standing in for (and wrapping) ``backend``."""
        dropped = [k for k in ("mode", "options") if kwargs.pop(k, None) is not None]
        if dropped:
            note = f"torch.compile's {' and '.join(dropped)} were dropped under capture (they configure inductor only)"
            if note not in capture.notes:
                capture.notes.append(note)
        return original(model, *args, backend=capture.wrapping(backend), **kwargs)

    return compile_with_capture


def run_script_captured(script: str | Path, argv: list[str], out: str | Path, *, backend: str = "inductor",
                        save_inputs: bool = False) -> CaptureBackend:
    """Run ``script`` with ``argv`` under capture, writing ``out``; the capture backend, closed.

    ``LoadError`` when the script is missing; ``RunError`` (exit 1) naming the script's line when it
    raises (the capture of the graphs compiled until then is kept).
    """
    path = Path(script).expanduser()
    if not path.is_file():
        raise LoadError(f"{path}: no such script.")
    path = path.resolve()
    capture = CaptureBackend(out, backend, save_inputs)
    original = torch.compile
    saved_argv, saved_path0 = list(sys.argv), list(sys.path)
    torch.compile = _compile_wrapper(original, capture)
    sys.argv = [str(path), *argv]
    sys.path.insert(0, str(path.parent))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise RunError(f"{path.name} exited with status {exc.code}; the capture holds "
                           f"{len(capture.graphs)} graph(s) compiled before that.") from None
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's script may raise anything
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path]
        at = f" at {path.name}:{frames[-1].lineno}" if frames else ""
        raise RunError(f"{path.name} raised {type(exc).__name__}{at}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                       f" (the capture holds {len(capture.graphs)} graph(s) compiled before that).") from None
    finally:
        torch.compile = original
        sys.argv = saved_argv
        sys.path[:] = saved_path0
        capture.close()
        capture.flush()
    return capture
