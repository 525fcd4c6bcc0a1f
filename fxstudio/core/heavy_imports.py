"""One thread at a time imports ``torch._dynamo`` (issue #25).

The window warms torch's fake-tensor machinery on a worker thread when a model opens (importing
``torch._dynamo``, about a second), so that the first edit or rewire does not wait for it. A pass
that imports the same package on another thread meanwhile (``prepare_fx`` does) could find it
partially initialized: CPython breaks the import-lock cycle of a circular package by handing one
thread the half-made module ("partially initialized module 'torch._dynamo' has no attribute
'utils'"). ``importing()`` holds a lock around such an import; ``wait()`` returns once none runs.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

_LOCK = threading.RLock()


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Hold the lock while the block imports a heavy package (re-entrant on one thread)."""
    with _LOCK:
        yield


def wait() -> None:
    """Return once no other thread is inside ``importing()``."""
    with _LOCK:
        pass
