"""What an analysis pass computed, as text: the node metadata a pass wrote without changing the
graph (``ShapeProp``'s ``tensor_meta``, custom keys) and an Interpreter's per-node dicts (a
profiler's run times), summarised per node as short JSON-able text.

A ``run_pass`` edit of an analysis keeps them under ``node.meta[ANALYSIS_KEY][pass label]``
(``{key: text}``), which the Properties panel shows; the values the pass wrote stay in ``node.meta``
too, except fxstudio's own shape keys (the shape refresh owns those).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch.fx.passes.shape_prop import TensorMetadata

ANALYSIS_KEY = "fxs_analysis"
"""``node.meta`` key of the analyses run on a node: ``{pass label: {key: summary text}}``."""

OWN_KEYS = frozenset({"tensor_meta"})
"""Keys a pass may write whose values fxstudio's shape refresh owns: summarised, not kept raw."""

MAX_TEXT = 200
_ABSENT = object()


def is_fxstudio_key(key: Any) -> bool:
    """Whether ``key`` is one of fxstudio's own ``node.meta`` keys (``fxs_*``), never an analysis."""
    return isinstance(key, str) and key.startswith("fxs_")


def written_keys(before: dict, after: dict) -> list[str]:
    """The keys of ``after`` (a node's metadata after a pass) the pass wrote: new ones, and ones
    holding another object than ``before`` had (the pass's copy of the metadata is shallow, so a
    value it did not touch is the very same object); fxstudio's own keys are left out."""
    found = []
    for key, value in after.items():
        if is_fxstudio_key(key) or not isinstance(key, str):
            continue
        if before.get(key, _ABSENT) is not value:
            found.append(key)
    return found


def _number(x: Any) -> str:
    if isinstance(x, bool) or isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{x:.4g}"
    return str(x)


def _dims(shape: Iterable) -> str:
    return "×".join(str(int(s)) for s in shape) or "scalar"


def summary(value: Any, depth: int = 0) -> str:
    """``value`` as one short line of text (at most ``MAX_TEXT`` characters): a tensor's metadata as
    ``2×8×8×8 float32``, numbers compactly, a long list of numbers by count, min, mean and max."""
    text = _summary(value, depth)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _summary(value: Any, depth: int) -> str:
    if isinstance(value, TensorMetadata):
        quantized = " quantized" if value.is_quantized else ""
        return f"{_dims(value.shape)} {str(value.dtype).replace('torch.', '')}{quantized}"
    if isinstance(value, torch.Tensor):
        if value.numel() == 1 and not value.is_quantized:
            try:
                return f"tensor({_number(value.item())})"
            except Exception:  # noqa: BLE001 - a fake or meta tensor
                pass
        return f"tensor {_dims(value.shape)} {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, (bool, int, float)) or value is None:
        return _number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) and len(value) > 4:
            floats = [float(v) for v in value]
            return (f"{len(floats)} values: min {_number(min(floats))}, mean {_number(sum(floats) / len(floats))}, "
                    f"max {_number(max(floats))}")
        if depth > 2:
            return "[…]"
        inner = ", ".join(_summary(v, depth + 1) for v in list(value)[:8])
        more = ", …" if len(value) > 8 else ""
        return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
    if isinstance(value, dict):
        if depth > 2:
            return "{…}"
        items = list(value.items())[:8]
        inner = ", ".join(f"{_summary(k, depth + 1)}: {_summary(v, depth + 1)}" for k, v in items)
        return "{" + inner + (", …" if len(value) > 8 else "") + "}"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails
        text = f"<{type(value).__name__}>"
    return " ".join(text.split())


def counts_text(counts: dict[str, int]) -> str:
    """``tensor_meta, type on 12 nodes; runtimes_sec on 11 nodes`` (keys with the same count grouped)."""
    by_count: dict[int, list[str]] = {}
    for key, n in counts.items():
        by_count.setdefault(n, []).append(key)
    return "; ".join(f"{', '.join(keys)} on {n} node{'s' if n != 1 else ''}" for n, keys in by_count.items())
