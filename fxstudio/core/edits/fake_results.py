"""Fake results by call key: what the shape refresh (``edits/shapes.py``) already computed for a call
of the same target on operands of the same shapes, strides and dtypes and the same literals.

A fake tensor carries only metadata, so a call's fake result depends on nothing else: a graph of
repeated blocks, or a script of repeated inserts, evaluates each distinct call once. The key of an
operand comes from the value computed in the running refresh or from the node's recorded
``tensor_meta``; operands that are fake constants (whose values may decide a shape), values on
another device or needing grad, and anything that is not a literal are not keyed (``NoKey``).
"""

from __future__ import annotations

import threading
from typing import Any

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import trust

UNKNOWN = object()
"""A value the shape refresh cannot tell (shared with ``edits/shapes.py``)."""
_LOCAL = threading.local()
_CACHE_LIMIT = 50_000  # results kept per thread


class MetaOnly:
    """A result known by its metadata only (from the result cache): a fake tensor is made from it
    when a later evaluation needs the value."""

    __slots__ = ("meta",)

    def __init__(self, meta: Any):
        self.meta = meta


class NoKey(Exception):
    """An operand that cannot be part of a result-cache key."""


_LITERALS = frozenset({int, float, bool, str, complex, type(None), torch.dtype, torch.device, torch.layout,
                       torch.memory_format, type(Ellipsis)})


def meta_key(meta: Any) -> tuple:
    """The key of a value made from ``tensor_meta`` (``_fake_from_meta``: cpu, no grad)."""
    if isinstance(meta, TensorMetadata):
        return ("T", tuple(meta.shape), tuple(meta.stride), meta.dtype)
    if isinstance(meta, (list, tuple)) and meta and all(isinstance(m, TensorMetadata) for m in meta):
        return ("L", type(meta) is list, tuple(meta_key(m) for m in meta))
    raise NoKey


def value_key(value: Any) -> tuple:
    """The key of an operand's value computed in this refresh."""
    if isinstance(value, MetaOnly):
        return meta_key(value.meta)
    if isinstance(value, torch.Tensor):
        if getattr(value, "constant", None) is not None or value.requires_grad or value.device.type != "cpu":
            raise NoKey
        try:
            return ("T", tuple(int(s) for s in value.shape), tuple(int(s) for s in value.stride()), value.dtype)
        except Exception:  # noqa: BLE001 - symbolic sizes
            raise NoKey from None
    if value is UNKNOWN:
        raise NoKey
    if isinstance(value, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in value) and value:
        return ("L", isinstance(value, list), tuple(value_key(v) for v in value))
    return key_of(value, {})


def key_of(value: Any, values: dict) -> tuple:
    """The key of one argument: a node's value (or metadata), or a literal with its type."""
    if isinstance(value, torch.fx.Node):
        if value in values:
            return value_key(values[value])
        meta = value.meta.get("tensor_meta")
        if meta is None:
            raise NoKey
        return meta_key(meta)
    kind = type(value)
    if kind in _LITERALS:
        return ("V", kind, value)
    if isinstance(value, (list, tuple)):  # fx's immutable_list, tuples, torch.Size
        return ("S", kind.__name__, tuple(key_of(v, values) for v in value))
    if kind is slice:
        return ("slice", key_of(value.start, values), key_of(value.stop, values), key_of(value.step, values))
    raise NoKey


_KINDS: dict[Any, str] = {}


def function_kind(target: Any) -> str:
    """Whether calls of ``target`` may be answered from the result cache (remembered per target):
    "yes" (``trust.evaluable``), "traced" (only if the traced graph calls it), "no" (in place, or
    not hashable)."""
    try:
        kind = _KINDS.get(target)
    except TypeError:  # unhashable
        return "no"
    if kind is None:
        name = getattr(target, "__name__", None)
        if not isinstance(name, str) or name.split(".")[0].endswith("_"):
            kind = "no"
        else:
            kind = "yes" if trust.evaluable(target) else "traced"
        if len(_KINDS) > 4096:
            _KINDS.clear()
        _KINDS[target] = kind
    return kind


def result_cache() -> dict:
    """This thread's fake results by call key (see ``ShapeRefresher.cache_key``)."""
    cache = getattr(_LOCAL, "results", None)
    if cache is None:
        cache = _LOCAL.results = {}
    return cache


def remember(key: Any, meta: Any) -> None:
    """Keep the ``tensor_meta`` of a tensor result (or of a list/tuple of tensors) for ``key``."""
    if isinstance(meta, TensorMetadata) or (meta and all(isinstance(m, TensorMetadata) for m in meta)):
        cache = result_cache()
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = meta


__all__ = ["MetaOnly", "NoKey", "UNKNOWN", "function_kind", "key_of", "meta_key", "remember", "result_cache",
           "value_key"]
