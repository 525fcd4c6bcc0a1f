"""One-pass difference of two float arrays, compiled with numba when it is installed.

``fused_max_abs_and_score(x, y, r, a)`` reads two arrays of one float dtype once and finds, with
exactly the per-element IEEE operations of ``run_metrics``' numpy pass (``|y - x|``, then
``|y - x| / (|x| * r + a)`` in the arrays' dtype, no fused multiply-add, no fast-math), the largest
difference, the largest score and whether every element is equal (``x == y``, so NaN is unequal
and ``-0 == +0``, as ``torch.equal``). The numpy pass takes eight elementwise passes for the same.

numba is optional: ``AVAILABLE`` is False when it cannot be imported or the kernel does not
compile, and callers use the numpy pass then. The kernel compiles at the first call (and is cached
on disk under ``NUMBA_CACHE_DIR``, set here to a per-user cache directory when not set).
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

AVAILABLE = importlib.util.find_spec("numba") is not None
"""True while the kernel may be used: numba is installed and nothing has failed yet. ``run_metrics``
reads it on every call, so setting it to False (tests) switches comparisons to the numpy pass."""

_kernel: Any = None

LOAD_MIN_ELEMENTS = 1 << 16
"""Below this many elements a pair is compared by numpy's pass while the kernel is not loaded yet:
loading it (importing numba, reading its disk cache) takes ~0.5 s, more than a whole comparison
of a graph of small tensors costs with numpy (``worth``)."""


def worth(n: int) -> bool:
    """Whether to use the kernel for a pair of ``n`` elements: it is available, and loaded already
    or the pair is large enough to be worth loading it for (``LOAD_MIN_ELEMENTS``)."""
    return AVAILABLE and (_kernel is not None or n >= LOAD_MIN_ELEMENTS)


def _cache_dir() -> str:
    """A writable directory for numba's compiled-kernel cache (the user's cache, else a temp dir)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    for path in (Path(base) / "fxstudio" / "numba",
                 Path(tempfile.gettempdir()) / f"fxstudio-numba-{os.getuid() if hasattr(os, 'getuid') else 0}"):
        try:
            path.mkdir(parents=True, exist_ok=True)
            if os.access(path, os.W_OK):
                return str(path)
        except OSError:
            continue
    return str(Path(tempfile.mkdtemp(prefix="fxstudio-numba-")))


def _import_kernel() -> Any:
    if "NUMBA_CACHE_DIR" not in os.environ:
        # numba's default cache sits next to the source file, which may not be writable (site-packages);
        # numba reads this when it is first imported
        os.environ["NUMBA_CACHE_DIR"] = _cache_dir()
    from fxstudio.core.compare import _fused_kernel  # imports numba
    return _fused_kernel.fused


def fused_max_abs_and_score(x_address: int, y_address: int, n: int, r: Any,
                            a: Any) -> tuple[float, float, bool, bool] | None:
    """``(max_abs, score, saw_nan, identical)`` of ``n`` float32 or float64 values stored one after
    the other at each of two addresses (alive for the call); ``r`` and ``a`` are rtol and atol as
    numpy scalars of that dtype (>= 0), which picks the dtype.

    ``max_abs`` is ``max |y - x|`` (NaN when ``saw_nan``: a NaN among the differences); ``score`` is
    ``max |y - x| / (|x| * r + a)``, NaN when one quotient is NaN (0/0, inf/inf); ``identical`` is
    True when every pair has the same bit pattern and no difference is NaN, so ``x == y``
    everywhere. It is False for some equal values, which the caller's full comparison then
    settles: a ``-0``/``+0`` pair (``max_abs`` 0), two equal infinities (``saw_nan``). None when the kernel
    is not available (numba missing or failing to compile): use the numpy pass.
    """
    global _kernel
    kernel = _kernel
    if kernel is None:
        if not AVAILABLE:
            return None
        try:
            kernel = _kernel = _import_kernel()
        except Exception:  # noqa: BLE001 - no numba, an llvmlite mismatch: numpy's pass
            disable()
            return None
    try:
        return kernel(x_address, y_address, n, r, a, *_constants(r))
    except Exception:  # noqa: BLE001 - a signature that does not compile: numpy's pass from now on
        disable()
        return None


_CONSTANTS: dict[type, tuple] = {}


def _constants(r: Any) -> tuple:
    """The kernel's ``lower``, ``big`` and ``tiny`` for the float type of ``r``."""
    kind = type(r)
    found = _CONSTANTS.get(kind)
    if found is None:
        bits = np.finfo(kind).nmant + 1  # 24 or 53
        found = _CONSTANTS[kind] = (kind(1 - 2.0 ** -(bits - 4)), kind(np.finfo(kind).max),
                                    2.0 ** -100 if bits == 24 else 2.0 ** -1000)
    return found


_warm_lock = threading.Lock()


def warm_up() -> bool:
    """Import numba and load the kernel for float32 and float64 now (from the disk cache when it
    has them: ~0.5 s, else a compile), so that the first comparison does not wait for it. Safe on
    a worker thread and to call more than once; False when the kernel is not available."""
    with _warm_lock:
        for dtype in (np.float32, np.float64):
            x = np.zeros(1, dtype)
            if fused_max_abs_and_score(x.ctypes.data, x.ctypes.data, 1, dtype(0), dtype(1)) is None:
                return False
    return True


def disable() -> None:
    """Use the numpy pass from now on (also what a failure to import or compile does)."""
    global _kernel, AVAILABLE
    _kernel = None
    AVAILABLE = False
