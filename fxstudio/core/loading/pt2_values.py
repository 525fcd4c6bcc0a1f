"""Serialized ``.pt2`` argument values as the torch objects torch's deserializer makes (issue #28).

Dtypes, layouts, memory formats and devices in a node's arguments are stored as codes of the
versioned schema (``torch._export.serde.schema``); the tables are copied here, as
``pt2_limits.SCALAR_TYPES`` is, so that the editable open does not import torch's deserializer
(about 1.2 s). ``tests/core/loading/test_pt2_editable.py`` checks them against torch's own.
"""

from __future__ import annotations

from typing import Any

import torch

from fxstudio.core.loading.pt2_limits import SCALAR_TYPES

LAYOUTS = {1: "sparse_coo", 2: "sparse_csr", 3: "sparse_csc", 4: "sparse_bsr", 5: "sparse_bsc", 7: "strided"}
MEMORY_FORMATS = {1: "contiguous_format", 2: "channels_last", 3: "channels_last_3d", 4: "preserve_format"}
_TABLES = {"as_scalar_type": SCALAR_TYPES, "as_layout": LAYOUTS, "as_memory_format": MEMORY_FORMATS}
_DEVICE_TYPES = {"cpu", "cuda", "meta", "mps", "xpu"}


class Unsupported(Exception):
    """A part of the program fxstudio's own readers leave to torch's full load."""


def torch_value(kind: str, value: Any) -> Any:
    """The torch object of a serialized ``as_scalar_type`` / ``as_layout`` / ``as_memory_format`` /
    ``as_device`` argument (``Unsupported`` for a code or device this table does not hold)."""
    if kind == "as_device":
        if not isinstance(value, dict) or value.get("type") not in _DEVICE_TYPES:
            raise Unsupported("a device")
        index = value.get("index")
        if index is not None and type(index) is not int:
            raise Unsupported("a device index")
        return torch.device(value["type"]) if index is None else torch.device(value["type"], index)
    name = _TABLES[kind].get(value) if type(value) is int else None
    found = getattr(torch, name, None) if name else None
    if found is None:
        raise Unsupported(f"{kind} {value!r}")
    return found
