"""How a node is presented as text, in one place: its target, its shape and dtype, and the names of
the ``node.meta`` keys the loader writes (docs/CONTRACTS.md).

Targets have two texts, and they genuinely differ:

* :func:`target_text` is the target *as the user types it* (target syntax of docs/edit-scripts.md:
  ``torch.nn.functional.gelu``, ``operator.add``, ``reshape``, ``layer1.0.conv1``); it parses back with
  ``targets.parse_target`` and is what the Properties panel, the Table dock, ``fxstudio inspect``, the
  divergence report and the canvas cards show. :func:`callable_text` is the same for a bare callable.
* :func:`target_label` is the *short* name (``gelu``, ``add``, ``layer1.0.conv1``) the layout uses to
  size cards and to recognise repeated blocks: it does not depend on the opened model file, so two
  graphs (original and edited, or two tracers) give equal labels to equal calls.

:func:`card_target_text` is the card's second line (``target_text`` plus the class of a called
submodule), and :func:`call_label` the target as messages quote it (``.view()`` for a method).

Shapes: :func:`shape_text` (``1×64×56×56 float32``) for a whole node, :func:`shape_columns` for the
Table's separate shape and dtype columns, :func:`edge_label` for an edge, :func:`dtype_name` for a dtype.
"""

from __future__ import annotations

import builtins
import operator
import sys
import types
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat

# ---- node.meta keys (docs/CONTRACTS.md) ---------------------------------------------------------

META_ID = "fxs_id"
"""Stable node id (int), kept through edits."""
META_SHAPE = "fxs_shape"
"""Output shape: a tuple of dims, a list of such tuples (or None) for tuple outputs, or None."""
META_DTYPE = "fxs_dtype"
"""Output dtype name (``"float32"``), a list of them for tuple outputs, or None."""
META_SHAPE_ERROR = "fxs_shape_error"
"""Why shape propagation failed at this node, after an edit: torch's one-line message (the node is
rejected by torch, :func:`rejection_text`)."""
META_SHAPE_UNKNOWN = "fxs_shape_unknown"
"""Why the node's shape cannot be told after an edit (it reads "unknown", :func:`unknown_text`):
``"upstream"`` (an input torch rejects), ``"fake"`` (fake tensors cannot tell it before a run) or
``"budget"`` (not recomputed yet: the next edit, or ``Document.refresh_shapes()``, does)."""
META_MODULE_PATH = "fxs_module_path"
"""Dotted path of the innermost submodule the node was traced in (``""`` at the top)."""
META_MODULE_STACK = "fxs_module_stack"
"""``[(path, class_name), ...]`` outermost first."""
META_SOURCE = "fxs_source"
"""``{"file", "line", "code"}`` of the user's source line, when known."""
META_HIDDEN = "fxs_hidden"
"""True for lifted parameters of an exported graph (noise the views hide)."""
META_PARAM = "fxs_param"
"""The qualified name of the parameter or buffer a placeholder stands for (a hidden one of an
exported graph, or one Dynamo lifted into a torch.compile capture's graph)."""


def is_lifted_weight(node) -> bool:
    """A placeholder that carries a weight, not a model input: export's lifted parameters
    (``fxs_hidden``) and a capture's parameters and buffers (``fxs_param``)."""
    meta = node.meta
    return node.op == "placeholder" and bool(meta.get(META_HIDDEN) or meta.get(META_PARAM))

_PUBLIC_NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft")


# ---- targets ------------------------------------------------------------------------------------


def user_module_stem(user_module: types.ModuleType | None) -> str | None:
    """The opened model file's stem (``relu_add``), under which its functions are written."""
    if user_module is None:
        return None
    file = getattr(user_module, "__file__", None)
    return Path(file).stem if file else user_module.__name__.rsplit(".", 1)[-1]


def target_text(node: torch.fx.Node, user_module: types.ModuleType | None = None) -> str:
    """The text of ``node.target`` in target syntax, as the user types it (parses back with
    ``targets.parse_target``). Never raises: an exotic target is shown by its repr."""
    try:
        if node.op == "call_function":
            return callable_text(node.target, user_module)
        return str(node.target)
    except Exception:  # noqa: BLE001 - an exotic target: its repr still names it
        return node.target if isinstance(node.target, str) else repr(node.target)


def callable_text(fn: Any, user_module: types.ModuleType | None = None) -> str:
    """Dotted path of a function target, preferring public names (``torch.nn.functional.gelu``)."""
    if isinstance(fn, fx_compat.OP_TYPES):
        from fxstudio.core.argsyntax import format_value

        return format_value(fn)
    name = getattr(fn, "__name__", None)
    if name is None:
        return repr(fn)
    if getattr(builtins, name, None) is fn:
        return name
    if getattr(operator, name, None) is fn:
        return f"operator.{name}"
    module_name = getattr(fn, "__module__", None)
    if user_module is not None and module_name == user_module.__name__ and getattr(user_module, name, None) is fn:
        return f"{user_module_stem(user_module)}.{name}"
    for ns in _PUBLIC_NAMESPACES:
        if getattr(sys.modules.get(ns), name, None) is fn:
            return f"{ns}.{name}"
    try:
        return fx_compat.qualified_name(fn)
    except Exception:  # noqa: BLE001 - lambdas and odd callables: fall back to what Python knows
        qual = getattr(fn, "__qualname__", name)
        return f"{module_name}.{qual}" if module_name else qual


def target_label(node: torch.fx.Node) -> str:
    """The short label of the node's target (``conv2d``, ``layer1.0.conv1``, ``add``): the layout's
    name for a call, independent of the opened model file (see the module docstring)."""
    target = node.target
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", None)
    if name:
        return name
    return str(target)


def card_target_text(node: torch.fx.Node, gm: torch.nn.Module | None = None) -> str:
    """A canvas card's second line: ``input``/``output`` for the graph's ends, else the target as
    typed, with the class of a called submodule (``layer1.0.conv1 · Conv2d``)."""
    if node.op in ("placeholder", "output"):
        return "input" if node.op == "placeholder" else "output"
    text = target_text(node)
    if node.op == "call_module" and gm is not None:
        try:
            text = f"{text} · {type(gm.get_submodule(str(node.target))).__name__}"
        except AttributeError:
            pass
    return text


def call_label(op: str, target: Any) -> str:
    """A target as messages quote it: ``torch.add``, ``.view()``, ``layer1.conv``."""
    if op == "call_function":
        return callable_text(target)
    if op == "call_method":
        return f".{target}()"
    return str(target)


# ---- shapes and dtypes --------------------------------------------------------------------------


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` → ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def dims_text(shape: tuple) -> str:
    """``(1, 64, 56, 56)`` → ``"1×64×56×56"``; ``()`` → ``"scalar"``."""
    return "×".join(str(d) for d in shape) if shape else "scalar"


REJECTED_PREFIX = "torch rejects this node: "
REJECTED_SHAPE = "rejected by torch"
"""What a rejected node shows for its shape (its message: :func:`rejection_text`)."""
UNKNOWN_SHAPE = "unknown"
"""What a node whose shape cannot be told after an edit shows for its shape."""
_UNKNOWN_WHY = {
    "upstream": "an input of it is rejected by torch (see the red node above it)",
    "fake": "fake tensors cannot tell it before a run",
    "budget": "not recomputed yet (too many shapes changed at once; the next edit recomputes it)",
}


def rejection_text(node: torch.fx.Node) -> str:
    """``"torch rejects this node: <torch's one-line message>"`` when fake-tensor propagation after
    an edit raised at ``node`` (a run would fail there), else ``""``."""
    error = node.meta.get(META_SHAPE_ERROR)
    return f"{REJECTED_PREFIX}{error}" if error else ""


def unknown_text(node: torch.fx.Node) -> str:
    """``"shape unknown: <why>"`` for a node whose shape an edit left untold, else ``""``."""
    why = node.meta.get(META_SHAPE_UNKNOWN)
    if not why or node.meta.get(META_SHAPE) is not None:
        return ""
    return f"shape {UNKNOWN_SHAPE}: {_UNKNOWN_WHY.get(why, why)}"


def _no_shape_text(node: torch.fx.Node) -> str:
    """What a node without a recorded shape shows: rejected, unknown, or nothing (a Python value)."""
    if node.meta.get(META_SHAPE_ERROR):
        return REJECTED_SHAPE
    return UNKNOWN_SHAPE if node.meta.get(META_SHAPE_UNKNOWN) else ""


def shape_text(node: torch.fx.Node) -> str:
    """``"1×64×56×56 float32"`` for a tensor node, ``"(2×3 float32, 4 int64)"`` for tuples,
    ``"rejected by torch"`` / ``"unknown"`` after an edit torch rejects or whose shape cannot be told,
    ``""`` if never known. Never raises: odd metadata has no shape to show."""
    try:
        shape, dtype = node.meta.get(META_SHAPE), node.meta.get(META_DTYPE)
        if shape is None:
            return _no_shape_text(node)
        if isinstance(shape, list):
            dtypes = dtype if isinstance(dtype, list) else [None] * len(shape)
            parts = [_one_shape_text(s, d) if s is not None else "?" for s, d in zip(shape, dtypes)]
            return "(" + ", ".join(parts) + ")"
        return _one_shape_text(shape, dtype)
    except Exception:  # noqa: BLE001 - a node with odd metadata simply has no shape to show
        return ""


def _one_shape_text(shape: tuple, dtype: str | None) -> str:
    dims = dims_text(shape)
    return f"{dims} {dtype}" if dtype else dims


def shape_columns(node: torch.fx.Node) -> tuple[str, str]:
    """The shape and the dtype as two texts (the Table's columns): ``("1×64", "float32")``, for a
    tuple output ``("2×3, 4", "float32, int64")``; ``"rejected by torch"`` / ``"unknown"`` as
    :func:`shape_text` says them, else ``""``."""
    shape, dtype = node.meta.get(META_SHAPE), node.meta.get(META_DTYPE)
    if isinstance(shape, tuple):
        shape_part = dims_text(shape)
    elif isinstance(shape, list):
        shape_part = ", ".join("×".join(str(d) for d in s) if isinstance(s, tuple) else "?" for s in shape)
    else:
        shape_part = _no_shape_text(node)
    dtype_part = ", ".join(str(d) for d in dtype) if isinstance(dtype, list) else (dtype or "")
    return shape_part, dtype_part


def edge_label(node: torch.fx.Node) -> str:
    """The shape a node's output edges carry (``1×64×56×56``), or ``""`` unless fully concrete."""
    shape = node.meta.get(META_SHAPE)
    if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape):
        return dims_text(shape)
    return ""
