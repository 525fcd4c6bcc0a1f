"""``collections_off``: no cyclic garbage collection inside a block that allocates millions of objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collections_off() -> Iterator[None]:
    """No cyclic garbage collection inside (restored after, as it was): copying a large model, reading a
    large manifest or building a large graph allocates millions of objects, and the full collections
    they trigger each rescan the whole heap (a third of a 200k-node capture's open; double a copy's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
