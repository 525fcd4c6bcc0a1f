"""THE call signatures of a node's callee, for everyone who asks: the Properties panel (names,
defaults), ``metadata.normalized_arguments`` and edit validation (``edits.validation.check_call``).

* ``call_function``: a torch op (``OpOverload``/packet) or builtin has the schemas torch knows for it
  (several for an overloaded op); else ``inspect.signature`` (which follows ``functools.wraps``).
* ``call_module``: the signature of the submodule's bound ``forward``.
* ``call_method``: decided once, here. A method has a signature only when the object it is called on
  (``args[0]``) is *known to be a tensor* (its propagated ``tensor_meta``/``val``); then it has the
  signatures of ``torch.<name>`` (else the ``aten.<name>`` overloads), the tensor as first parameter,
  which is how ``Tensor.<name>(...)`` takes its arguments. Sizes passed one by one (``x.view(-1, 1)``,
  ``x.permute(0, 2, 1)``) fill a list parameter, so a schema whose second parameter is an int list
  also gets a variant taking those sizes as ``*name``. A method on anything else (a list, a
  ``torch.Size``, a value whose type was not propagated) has **no** known signature: its receiver's
  methods cannot be looked up from the text of the target, so neither the panel shows names nor
  validation refuses arguments. Without a receiver at hand (a hint for a target being typed) the
  receiver is taken to be a tensor.

Nothing here imports or calls user code; the trust boundary (``fxstudio.core.trust``) is unaffected:
this only describes parameters.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import fx_compat

Signatures = tuple[inspect.Signature, ...]

_ANY_RECEIVER = object()


def is_torch_op(fn: Any) -> bool:
    """True for targets whose signatures come from torch's schemas: ops (``OpOverload`` and packets)
    and torch's builtins (``torch.add``); ``operator.add`` or ``math.sqrt`` keep their Python signature."""
    if isinstance(fn, fx_compat.OP_TYPES):
        return True
    return (inspect.isbuiltin(fn) or type(fn).__name__ == "builtin_function_or_method") and \
        (getattr(fn, "__module__", None) or "").startswith("torch")


def function_signatures(fn: Any) -> Signatures:
    """Signatures of a function target: torch's schemas for a torch op or builtin (all overloads), else
    ``inspect.signature``; ``()`` when unknown."""
    try:
        return _function_signatures(fn)
    except TypeError:  # an unhashable target: not worth caching, rare
        return _function_signatures.__wrapped__(fn)


@functools.lru_cache(maxsize=1024)
def _function_signatures(fn: Any) -> Signatures:
    if is_torch_op(fn):
        from torch.fx.operator_schemas import get_signature_for_torch_op

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's schema parser warns about List[~t] parameters
                schemas = get_signature_for_torch_op(fn)
        except Exception:  # noqa: BLE001 - schema lookup is best effort
            schemas = None
        if schemas:
            return tuple(schemas)
    try:
        return (inspect.signature(fn),)
    except (TypeError, ValueError):
        return ()


def method_function(name: str) -> Any:
    """The function whose signatures stand for ``Tensor.<name>``: ``torch.<name>``, else the
    ``aten.<name>`` overload packet; None when there is none."""
    fn = getattr(torch, name, None) if name.isidentifier() else None
    if fn is None or not callable(fn) or isinstance(fn, type):
        try:
            fn = getattr(torch.ops.aten, name, None) if name.isidentifier() and not name.startswith("_") else None
        except Exception:  # noqa: BLE001 - torch.ops raises assorted errors for odd names
            fn = None
    return fn if callable(fn) else None


@functools.lru_cache(maxsize=1024)
def method_signatures(name: str) -> Signatures:
    """Signatures of ``Tensor.<name>`` with the tensor first, plus the sizes-one-by-one variants
    (see the module docstring); ``()`` when unknown."""
    fn = method_function(str(name))
    if fn is None:
        return ()
    sigs = list(function_signatures(fn))
    return tuple(sigs + [v for v in (_sizes_variant(s) for s in sigs) if v is not None])


def _sizes_variant(sig: inspect.Signature) -> inspect.Signature | None:
    """``(input, size: List[int], *, k=...)`` → ``(input, *size, k=...)``, or None when the second
    parameter is not an int list or later parameters have no default."""
    params = list(sig.parameters.values())
    if len(params) < 2 or "out" in sig.parameters:
        return None
    second = params[1]
    if second.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD or "List[int]" not in str(second.annotation):
        return None
    rest = params[2:]
    if any(p.default is inspect.Parameter.empty or p.kind is inspect.Parameter.VAR_KEYWORD for p in rest):
        return None
    return sig.replace(parameters=[params[0], second.replace(kind=inspect.Parameter.VAR_POSITIONAL,
                                                             default=inspect.Parameter.empty)]
                       + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in rest])


def is_known_tensor(value: Any) -> bool:
    """True when ``value`` is a node whose propagated metadata says it is a single tensor."""
    if not isinstance(value, torch.fx.Node):
        return isinstance(value, torch.Tensor)
    if isinstance(value.meta.get("tensor_meta"), TensorMetadata):
        return True
    return isinstance(value.meta.get("val"), torch.Tensor)


def target_signatures(op: str, target: Any, gm: torch.nn.Module | None = None,
                      args: tuple | Any = _ANY_RECEIVER) -> Signatures:
    """The call signatures ``target`` of a ``op`` node must fit; ``()`` when unknown.

    ``args``: the call's positional arguments, whose first is a method's receiver; leave it out for
    a target without a call (a ``call_method`` receiver is then taken to be a tensor).
    """
    if op == "call_function":
        return function_signatures(target)
    if op == "call_method":
        if args is not _ANY_RECEIVER and (not args or not is_known_tensor(args[0])):
            return ()
        return method_signatures(str(target))
    if op == "call_module" and gm is not None and isinstance(target, str):
        try:
            return (inspect.signature(gm.get_submodule(target).forward),)
        except (AttributeError, TypeError, ValueError):
            return ()
    return ()


def node_signatures(node: torch.fx.Node, gm: torch.nn.Module | None = None) -> Signatures:
    """The call signatures of ``node``'s callee (``gm``: the module owning its submodules, by
    default the graph's owning module); ``()`` when unknown."""
    root = gm if gm is not None else node.graph.owning_module
    return target_signatures(node.op, node.target, root, tuple(node.args))
