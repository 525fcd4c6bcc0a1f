"""Results of elementwise calls told by torch's broadcasting rule, before any fake mode is made.

The first ``FakeTensorMode`` of a process imports ``torch._dynamo`` (1-2 s; meta tensors do too,
through the Python meta kernels). The commonest edit, setting the constant of a ``mul`` or ``add``,
needs only the result of an elementwise call, which torch defines without running it: the shape is
``torch.broadcast_shapes`` of the operands', the dtype what the call gives on one-element stand-ins
of the operands' dtypes and ranks (type promotion depends on nothing else), and the layout
contiguous when every operand is. So ``fxstudio compare`` of such an edit never imports Dynamo.

Only a small, fixed set of elementwise functions and tensor methods is told this way, and only
when every tensor operand is a contiguous, non-quantized tensor of known metadata and every other
operand a plain number (``inplace=True`` and unknown keywords excluded). Anything else, and any
call whose stand-in run or broadcast raises, is told by the fake mode as before, with torch's own
message. The stand-in run goes through ``ShapeRefresher.call`` (the same trust checks) on
one-element tensors: it allocates nothing of the operands' size.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import fx_compat
from fxstudio.core.edits.fake_results import MetaOnly

FUNCTIONS = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.neg,
    torch.add, torch.sub, torch.mul, torch.div, torch.neg, torch.relu, torch.sigmoid, torch.tanh, torch.exp,
    F.relu, F.gelu, F.silu, F.sigmoid, F.tanh,
})
"""Elementwise functions whose result is the broadcast of their operands (at most two tensors)."""
METHODS = frozenset({"add", "sub", "mul", "div", "neg", "relu", "sigmoid", "tanh", "exp"})
"""Tensor methods of the same kind (``x.mul(2)``)."""
_KEYWORDS = frozenset({"alpha", "approximate", "inplace"})
_NUMBERS = (bool, int, float)


def pointwise_result(refresher, op: str, target: Any, args: tuple, kwargs: dict, values: dict) -> MetaOnly | None:
    """``MetaOnly(TensorMetadata)`` of an elementwise call on a node's operands (nodes among
    ``args``/``kwargs``, their values in ``values`` or their recorded metadata), or None when it
    is not told this way."""
    if op == "call_function":
        try:
            if target not in FUNCTIONS:
                return None
        except TypeError:  # an unhashable target
            return None
    elif op != "call_method" or target not in METHODS:
        return None
    if any(k not in _KEYWORDS for k in kwargs) or kwargs.get("inplace") not in (None, False):
        return None
    if "approximate" in kwargs and not isinstance(kwargs["approximate"], str):
        return None
    metas: list[TensorMetadata] = []
    probes = []
    for a in args:
        if isinstance(a, torch.fx.Node):
            meta = _operand_meta(a, values)
            if meta is None:
                return None
            metas.append(meta)
            probes.append(torch.ones((1,) * len(meta.shape), dtype=meta.dtype))
        elif type(a) in _NUMBERS:
            probes.append(a)
        else:
            return None
    if not metas or len(metas) > 2 or any(type(v) not in _NUMBERS and not isinstance(v, str) for v in kwargs.values()):
        return None
    try:
        shape = torch.broadcast_shapes(*(tuple(m.shape) for m in metas))
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            out = refresher.call(op, target, tuple(probes), dict(kwargs))
    except Exception:  # noqa: BLE001 - not told by the rule: the fake mode tells it, with torch's message
        return None
    if not isinstance(out, torch.Tensor) or out.is_quantized or out.dim() != max(len(m.shape) for m in metas):
        return None
    stride = _contiguous_stride(tuple(shape))
    try:
        result = torch.empty_strided(tuple(shape), stride, dtype=out.dtype, device="meta")
        return MetaOnly(fx_compat.extract_tensor_metadata(result))
    except Exception:  # noqa: BLE001 - metadata torch cannot describe
        return None


def _operand_meta(node: torch.fx.Node, values: dict) -> TensorMetadata | None:
    """The operand's metadata (this refresh's value, else what it recorded), when it is a
    contiguous, non-quantized tensor's."""
    if node in values:
        value = values[node]
        meta = getattr(value, "meta", None) if isinstance(value, MetaOnly) else None
    else:
        meta = node.meta.get("tensor_meta")
    if not isinstance(meta, TensorMetadata) or meta.is_quantized:
        return None
    if tuple(meta.stride) != _contiguous_stride(tuple(meta.shape)):
        return None
    return meta


def _contiguous_stride(shape: tuple) -> tuple:
    stride, step = [], 1
    for size in reversed(shape):
        stride.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(stride))
