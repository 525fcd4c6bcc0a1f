"""The sizes a ``.pt2`` archive declares, checked before torch or fxstudio acts on them (issue #23).

An archive describes more than it holds: tensor shapes (which torch turns into strides, and
fxstudio into inputs when the archive stores none), symbol ranges (torch counts up to the largest
unbacked symbol's index), weights of zero stored bytes (torch makes zeros of the declared shape),
views that repeat a few stored bytes over a huge shape, and pickled payloads that are zip archives
of their own. Each ``*_problem`` function says what is wrong with one such part (None when it is
fine); ``excess_bytes`` is what a tensor takes beyond the bytes the file stores for it, which the
reader counts against the graph's ``budgets.DataBudget``.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import torch

from fxstudio.core.budgets import tensor_nbytes

MAX_JSON_INT = 1 << 64
"""The largest number (in magnitude) an archive's program may hold: nothing in it is larger than a 64-bit integer."""

MAX_DIM = (1 << 63) - 1
"""The largest size, stride, element count or byte count a recorded tensor may have (torch's int64)."""

MAX_UNBACKED_INDEX = 100_000
"""The largest index of an unbacked symbol (``u12``) in ``range_constraints``: torch counts up to it."""

MAX_EXPANSION = 16
"""Unpacked size / stored size above which an archive, or a pickled payload inside it, is a zip bomb."""

MIN_UNPACKED = 1 << 24
"""Any archive may unpack to this many bytes, whatever its size."""

# schema.ScalarType codes of the serialized format (versioned with it), by torch dtype name: read
# here without importing torch._export.serde, which takes seconds and is the full open's business.
SCALAR_TYPES = {1: "uint8", 2: "int8", 28: "uint16", 3: "int16", 4: "int32", 5: "int64", 6: "float16", 7: "float32",
                8: "float64", 9: "complex32", 10: "complex64", 11: "complex128", 12: "bool", 13: "bfloat16",
                29: "float8_e4m3fn", 30: "float8_e5m2", 31: "float8_e4m3fnuz", 32: "float8_e5m2fnuz",
                33: "float8_e8m0fnu", 34: "uint32", 35: "uint64"}

LEGACY_FORMAT = "is in torch's legacy (not zip) format"
"""``payload_problem``'s answer for a payload ``torch.load`` would read in the legacy format."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNBACKED = ("zuf", "u")  # torch's prefixes of unbacked float and int symbols, in the order it tries them


def dtype_of(code: Any) -> torch.dtype:
    """The torch dtype of a serialized ``ScalarType`` code (float32 when unknown: counting only)."""
    return getattr(torch, SCALAR_TYPES.get(code, "float32"), torch.float32) if isinstance(code, int) else torch.float32


def number_problem(value: Any) -> str | None:
    """Why ``value`` (a JSON number of the program) is too large, or None."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_JSON_INT:
        return f"holds a number of {len(str(abs(value))):,} digits, larger than any size or index"
    return None


def _dims(entries: Any, what: str, *, low: int) -> list[int]:
    """The ints of a serialized ``sizes``/``strides`` list (a symbolic one counts as its hint, or 1);
    ``ValueError`` with the reason when one is outside ``[low, MAX_DIM]``."""
    if not isinstance(entries, list):
        raise ValueError(f"its {what} are not a list")
    out = []
    for entry in entries:
        value = entry.get("as_int") if isinstance(entry, dict) else None
        if value is None and isinstance(entry, dict) and isinstance(entry.get("as_expr"), dict):
            hint = entry["as_expr"].get("hint")
            value = hint.get("as_int", 1) if isinstance(hint, dict) else 1
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"its {what} hold {value!r}, not an integer")
        if not low <= value <= MAX_DIM:
            raise ValueError(f"its {what} hold {_short(value)}, outside {low}..2**63-1")
        out.append(value)
    return out


def tensor_meta_problem(meta: Any) -> str | None:
    """Why a serialized tensor description (``sizes``, ``strides``, ``storage_offset``, ``dtype``)
    could not be a tensor: a size or stride outside int64, or more elements, bytes or storage than
    int64 counts (torch's stride and storage computations would overflow). None when it could."""
    if not isinstance(meta, dict):
        return None
    try:
        sizes = _dims(meta.get("sizes", []), "sizes", low=0)
        strides = _dims(meta.get("strides", []), "strides", low=-MAX_DIM)
        offset = _dims([meta["storage_offset"]], "storage offset", low=0)[0] if "storage_offset" in meta else 0
    except ValueError as exc:
        return str(exc)
    shape = "×".join(_short(s) for s in sizes) or "a scalar"
    count = 1
    for size in sizes:  # what torch's contiguous strides multiply, zero sizes included
        count *= max(size, 1)
    if count > MAX_DIM:
        return f"its shape {shape} has more elements than torch can count (its strides would overflow)"
    if count * dtype_of(meta.get("dtype")).itemsize > MAX_DIM:
        return f"its shape {shape} takes more bytes than torch can count"
    if strides and all(sizes):
        extent = offset + sum((s - 1) * abs(st) for s, st in zip(sizes, strides))
        if extent > MAX_DIM:
            return f"its strides reach past element 2**63 (shape {shape})"
    return None


def range_problem(constraints: Any) -> str | None:
    """Why ``range_constraints`` cannot be read safely: a key that is not a symbol name, an unbacked
    symbol's index that torch would count up to, a bound that is not a number. None when fine."""
    if constraints is None:
        return None
    if not isinstance(constraints, dict):
        return "its range_constraints are not a JSON object"
    for name, bounds in constraints.items():
        if not isinstance(name, str) or not _IDENT.match(name):
            return f"its range_constraints name the symbol {name[:40]!r}, which is not a symbol name"
        index = _unbacked_index(name)
        if index is not None and index > MAX_UNBACKED_INDEX:
            return (f"its range_constraints name the unbacked symbol {name[:40]}, whose index passes "
                    f"{MAX_UNBACKED_INDEX:,} (torch counts up to it)")
        if not isinstance(bounds, dict):
            return f"the range of {name} is not a JSON object"
        for key in ("min_val", "max_val"):
            value = bounds.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                return f"the range of {name} has {key} {value!r}, not an integer"
    return None


def _unbacked_index(name: str) -> int | None:
    """The index torch reads from an unbacked symbol's name (``int`` of what follows its prefix, as
    torch parses it: ``u1_000`` is 1000), or None."""
    prefix = next((p for p in _UNBACKED if name.startswith(p)), None)
    if prefix is None:
        return None
    try:
        return int(name[len(prefix):])
    except ValueError:
        return None


def unpacked_problem(declared: int, stored: int) -> str | None:
    """Why a zip archive of ``stored`` bytes whose records declare ``declared`` bytes is a zip bomb."""
    if declared > max(MAX_EXPANSION * stored, MIN_UNPACKED):
        return f"unpacks to {declared:,} bytes from {stored:,}; refusing what looks like a zip bomb"
    return None


def payload_problem(data: bytes) -> tuple[str | None, int]:
    """(why the pickled payload ``data`` may not be handed to ``torch.load``, or None; the bytes its
    records unpack to beyond ``len(data)``). It must be a ``torch.save`` zip archive (the legacy
    format allocates each storage at the size its pickle declares) that is not a zip bomb."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            declared = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return LEGACY_FORMAT, 0
    problem = unpacked_problem(declared, len(data))
    return problem, max(0, declared - len(data))


def payload_excess(meta: Any, stored: int) -> int:
    """Bytes a weight or constant of the serialized ``meta`` takes beyond the ``stored`` bytes of its
    record (torch makes zeros of the declared shape for an empty record; a view can repeat bytes)."""
    try:
        sizes = _dims(meta.get("sizes", []), "sizes", low=0)
    except (ValueError, AttributeError):
        return 0  # refused by tensor_meta_problem, or damaged: torch reports it
    return max(0, tensor_nbytes(sizes, dtype_of(meta.get("dtype"))) - stored)


def excess_bytes(value: Any) -> int:
    """Bytes the tensors in ``value`` (a tensor, or containers of them) take as dense tensors beyond
    their storages: what a view that repeats its stored bytes (stride 0) becomes once computed on."""
    total, seen = 0, 0
    stack = [value]
    while stack and seen < 1_000_000:
        item = stack.pop()
        seen += 1
        if isinstance(item, torch.Tensor):
            try:
                stored = item.untyped_storage().nbytes()
            except (RuntimeError, NotImplementedError):
                stored = 0
            total += max(0, tensor_nbytes(item.shape, item.dtype) - stored)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return total


def shape_text(shape) -> str:
    """``2×3`` (``a scalar`` for no dims), sizes past a few digits as powers of two."""
    return "×".join(_short(int(s)) for s in shape) or "a scalar"


def _short(value: int) -> str:
    if abs(value) >= 1 << 40 and value & (value - 1) == 0:
        return f"2**{value.bit_length() - 1}"
    text = str(value)
    return text if len(text) <= 24 else f"a number of {len(text)} digits"

