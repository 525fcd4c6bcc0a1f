"""The byte and work budgets that a file or an edit may make fxstudio spend (design §10).

Data never decides how much memory or time fxstudio uses. Every tensor that fxstudio makes *from a
file's description or an edit's arguments* (rather than reading real bytes the file holds) is
counted in bytes against one budget per graph, summed over the whole graph:

- inputs made from recorded shapes (a ``.pt2`` without sample inputs, a capture without saved inputs),
  attribute tensors a capture only describes, ``--input-shape`` inputs;
- saved tensors a file holds, counted by their declared (decompressed) size before they are read;
- the outputs of nodes that edits add or change, counted on fake tensors before anything runs;
- the arrays the layout allocates.

``DataBudget`` is the running sum. A request that would pass it raises ``BudgetExceeded`` (a
``LoadError`` or an ``EditRefused`` for the caller to name), before anything is allocated.
The figures can be raised for a machine with more memory with ``FXSTUDIO_DATA_BUDGET`` (bytes, or
with a ``K``/``M``/``G`` suffix).
"""

from __future__ import annotations

import os
import re

import torch

from fxstudio.core.errors import FxStudioError

GiB = 1 << 30
MiB = 1 << 20

DATA_BYTES = 2 * GiB
"""Bytes of tensors fxstudio makes from one file's metadata (inputs, described attributes, saved
tensors read): summed over the graph."""

EDIT_BYTES = 2 * GiB
"""Bytes that edits may add to a graph's node outputs (summed over every node, counted on fake
tensors), on top of what the graph as opened already produced."""

MANIFEST_BYTES = 64 * MiB
"""A capture's ``capture.json`` (decompressed), and any other JSON member fxstudio reads whole."""

LAYOUT_BYTES = 1 * GiB
"""What the layout's arrays may take (cards, dummy nodes of long edges, crossings matrices)."""

MAX_INT_DIGITS = 300
"""Decimal digits of any integer a shape expression or guard may build (about 2^997): room for the
product of fifteen sizes of up to 2^63, far below what takes noticeable time (``expr_bounds``)."""

_SIZE = re.compile(r"\s*(\d+)\s*([KMG]?)i?B?\s*\Z", re.IGNORECASE)


def _env_bytes(name: str, default: int) -> int:
    text = os.environ.get(name)
    match = _SIZE.match(text or "")
    if not match:
        return default
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": MiB, "G": GiB}[match.group(2).upper()]


def data_budget_bytes() -> int:
    """The per-graph data budget in force (``FXSTUDIO_DATA_BUDGET`` or ``DATA_BYTES``)."""
    return _env_bytes("FXSTUDIO_DATA_BUDGET", DATA_BYTES)


def edit_budget_bytes() -> int:
    """The edit budget in force (``FXSTUDIO_EDIT_BUDGET`` or ``EDIT_BYTES``)."""
    return _env_bytes("FXSTUDIO_EDIT_BUDGET", EDIT_BYTES)


def byte_text(count: int) -> str:
    """``count`` bytes for a message: ``16.0 GiB``, ``512.0 MiB``, ``40 bytes``."""
    if count >= GiB:
        return f"{count / GiB:,.1f} GiB"
    if count >= MiB:
        return f"{count / MiB:,.1f} MiB"
    return f"{count:,} bytes"


def tensor_nbytes(shape, dtype: torch.dtype) -> int:
    """Bytes a dense tensor of ``shape`` and ``dtype`` takes (exact Python ints: no overflow)."""
    count = 1
    for size in shape:
        count *= int(size)
    return count * _itemsize(dtype)


def _itemsize(dtype: torch.dtype) -> int:
    try:
        return torch.empty((), dtype=dtype).element_size()
    except Exception:  # noqa: BLE001 - an exotic dtype: count it as the widest
        return 16


class BudgetExceeded(FxStudioError):
    """A request that would pass a byte budget; nothing was allocated (exit 2)."""


class DataBudget:
    """A running byte count against a limit, for one graph (``what`` names it in messages)."""

    def __init__(self, what: str, limit: int | None = None):
        self.what = what
        self.limit = data_budget_bytes() if limit is None else limit
        self.used = 0

    def take(self, nbytes: int, item: str) -> None:
        """Count ``nbytes`` for ``item``; ``BudgetExceeded`` (nothing counted) when over the limit."""
        if nbytes < 0 or self.used + nbytes > self.limit:
            already = f" with the {byte_text(self.used)} already made" if self.used else ""
            raise BudgetExceeded(
                f"{self.what}: {item} needs {byte_text(nbytes)}, which{already} passes fxstudio's budget of "
                f"{byte_text(self.limit)} for data a file describes (FXSTUDIO_DATA_BUDGET raises it)."
            )
        self.used += nbytes

    def take_tensor(self, shape, dtype: torch.dtype, item: str) -> None:
        """``take`` the bytes of a dense ``shape``/``dtype`` tensor."""
        self.take(tensor_nbytes(shape, dtype), item)


EDIT_WORK = 10**10
"""Work that edits may add to a graph, over the graph as opened, summed over every node and
estimated from fake-tensor shapes (``fxstudio.core.edits.work``): two operations per multiply-add
of a product, convolution or attention (FLOPs), a cubic count for matrix decompositions, and one
per element every call reads or writes. About a second or two of one CPU core per run. For a
model that itself costs more per run, edits may add as much again as the model as opened. The same
bound applies to what a built-in pass computes (``fxstudio.passes.fold_constants``)."""


def edit_work_budget() -> int:
    """The edit work budget in force (``FXSTUDIO_EDIT_WORK``, a number such as ``1e11``, or ``EDIT_WORK``)."""
    text = (os.environ.get("FXSTUDIO_EDIT_WORK") or "").strip()
    try:
        value = int(float(text)) if text else EDIT_WORK
    except (ValueError, OverflowError):
        return EDIT_WORK
    return value if value > 0 else EDIT_WORK


def work_text(count: int) -> str:
    """An operation count for a message: ``1.1e+12 operations``, ``52,000 operations``."""
    return f"{count:,} operations" if count < 10**7 else f"{float(count):.1e} operations"
