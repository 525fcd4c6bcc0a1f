"""Node metadata written at load time (keys in docs/CONTRACTS.md) and the helpers that read it.

``annotate`` fills shapes and dtypes (shape propagation under ``FakeTensorMode``, falling back to
real tensors), module paths and stacks, and source lines. ``normalized_arguments`` and
``shape_text`` read a node for display.
"""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import fx_compat
from fxstudio.core import signatures
from fxstudio.core.node_text import (META_DTYPE, META_HIDDEN, META_MODULE_PATH, META_MODULE_STACK, META_SHAPE, META_SOURCE,
                                     callable_text, dtype_name, shape_text)  # noqa: F401 - shape_text: re-exported
from fxstudio.core.shape_propagation import contiguous_metadata, propagate_shapes, tensor_metadata  # noqa: F401 - re-exported

_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]*)\n(?P<code>[^\n]*)')
_LIBRARY_PARTS = ("/torch/", "/site-packages/", "/lib/python3", "<eval_with_key>", "<frozen", "fxstudio/core/")


def annotate(
    gm: torch.fx.GraphModule,
    example_inputs: tuple,
    *,
    user_file: Path | None,
    notes: list[str],
    exported: bool = False,
    prefer_real: bool = False,
) -> None:
    """Write every ``fxs_*`` key (except ``fxs_id``) and ``tensor_meta`` on the nodes of ``gm``
    (``prefer_real``: ``propagate_shapes``'s, for a model whose code the user runs anyway)."""
    if exported and _has_export_values(gm):
        _tensor_meta_from_values(gm)
    else:
        propagate_shapes(gm, example_inputs, notes, prefer_real=prefer_real)
    user_path = str(Path(user_file).resolve()) if user_file else None
    known = _stack_classes(gm.graph)
    for node in gm.graph.nodes:
        _write_shape_keys(node)
        stack = module_stack_of(node, gm, known)
        node.meta[META_MODULE_STACK] = stack
        node.meta[META_MODULE_PATH] = stack[-1][0] if stack else ""
        source = source_of(node, user_path)
        if source:
            node.meta[META_SOURCE] = source
        else:
            node.meta.pop(META_SOURCE, None)
    if exported:
        mark_hidden(gm)


def _has_export_values(gm: torch.fx.GraphModule) -> bool:
    return any("val" in n.meta for n in gm.graph.nodes if n.op == "call_function")


def _tensor_meta_from_values(gm: torch.fx.GraphModule) -> None:
    """Exported graphs carry fake values in ``meta["val"]``: derive ``tensor_meta`` from them."""
    for node in gm.graph.nodes:
        if "tensor_meta" in node.meta or "val" not in node.meta:
            continue
        node.meta["tensor_meta"] = _meta_of(node.meta["val"])


def _meta_of(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        try:
            return tensor_metadata(value)
        except Exception:  # noqa: BLE001 - symbolic sizes etc.
            return None
    if isinstance(value, (list, tuple)):
        return type(value)(_meta_of(v) for v in value) if isinstance(value, list) else tuple(_meta_of(v) for v in value)
    return None


def _write_shape_keys(node: torch.fx.Node) -> None:
    meta = node.meta.get("tensor_meta")
    if isinstance(meta, TensorMetadata):
        node.meta[META_SHAPE] = _shape_tuple(meta.shape)
        node.meta[META_DTYPE] = dtype_name(meta.dtype)
    elif isinstance(meta, (list, tuple)) and meta:
        node.meta[META_SHAPE] = [_shape_tuple(m.shape) if isinstance(m, TensorMetadata) else None for m in meta]
        node.meta[META_DTYPE] = [dtype_name(m.dtype) if isinstance(m, TensorMetadata) else None for m in meta]
    else:
        node.meta[META_SHAPE] = None
        node.meta[META_DTYPE] = None


def _shape_tuple(shape) -> tuple:
    return tuple(int(s) if isinstance(s, (int, torch.SymInt)) and _is_concrete(s) else str(s) for s in shape)


def _is_concrete(s) -> bool:
    try:
        int(s)
        return True
    except Exception:  # noqa: BLE001 - unbacked symbolic sizes
        return False


# ---- module paths -------------------------------------------------------------------------------


def _stack_classes(graph: torch.fx.Graph) -> dict[str, str]:
    """Class name by module path, from every node's ``nn_module_stack`` (an exported graph's
    get_attr nodes have none, and its unlifted submodules are plain Modules)."""
    known: dict[str, str] = {}
    for node in graph.nodes:
        raw = node.meta.get("nn_module_stack")
        if not raw:
            continue
        for value in raw.values():
            path, cls = value if isinstance(value, tuple) else (value, "")
            name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1]
            if name:
                known.setdefault(_clean_path(str(path)), name)
    return known


def module_stack_of(node: torch.fx.Node, gm: torch.nn.Module, known: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """``[(path, class_name), ...]`` outermost first, from ``nn_module_stack`` or the node's target.

    ``known``: class names by path from the graph's module stacks (``_stack_classes``), preferred
    to the class of the submodule found in ``gm`` (an unlifted export has plain Modules)."""
    raw = node.meta.get("nn_module_stack")
    stack: list[tuple[str, str]] = []
    if raw:
        for value in raw.values():
            path, cls = value if isinstance(value, tuple) else (value, "")
            path = _clean_path(str(path))
            if not path:
                continue
            name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1]
            if not stack or stack[-1][0] != path:
                stack.append((path, name))
        if node.op == "call_module" and (not stack or stack[-1][0] != node.target):
            stack.append((str(node.target), _class_at(gm, str(node.target))))
        return stack
    if node.op == "call_module":
        return _prefix_stack(gm, str(node.target).split("."), known)
    if node.op == "get_attr":
        return _prefix_stack(gm, str(node.target).split(".")[:-1], known)
    return []


@functools.lru_cache(maxsize=65536)  # a graph repeats each module path on every node inside it
def _clean_path(path: str) -> str:
    # Dynamo-style keys such as "L['self'].layer1" or "L__self___layer1" appear in some exports.
    if "L" not in path and "_modules" not in path:
        return path.strip(".")
    path = re.sub(r"^L\['self'\]\.?", "", path)
    path = re.sub(r"\._modules\['([^']+)'\]", r".\1", path)
    return path.strip(".")


def _prefix_stack(gm: torch.nn.Module, parts: list[str], known: dict[str, str] | None = None) -> list[tuple[str, str]]:
    stack = []
    for i in range(1, len(parts) + 1):
        path = ".".join(parts[:i])
        stack.append((path, (known or {}).get(path) or _class_at(gm, path)))
    return stack


def _class_at(gm: torch.nn.Module, path: str) -> str:
    """The class name of the submodule at ``path``; '' when unknown or a plain ``nn.Module`` (the
    stand-in an unlifted export uses, which says nothing)."""
    try:
        cls = type(gm.get_submodule(path))
    except (AttributeError, TypeError):
        return ""
    return "" if cls is torch.nn.Module else cls.__name__


# ---- source lines -------------------------------------------------------------------------------


def source_of(node: torch.fx.Node, user_path: str | None) -> dict | None:
    """``{"file", "line", "code"}`` of the node's line in the user's file (else the innermost non-library line)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = [m.groupdict() for m in _FRAME_RE.finditer(trace)]
    if not frames:
        return None
    chosen = None
    if user_path:
        mine = [f for f in frames if _same_file(f["file"], user_path)]
        chosen = mine[-1] if mine else None
    if chosen is None:
        outside = [f for f in frames if not any(p in f["file"].replace("\\", "/") for p in _LIBRARY_PARTS)]
        chosen = outside[-1] if outside else None
    if chosen is None:
        return None
    return {"file": chosen["file"], "line": int(chosen["line"]), "code": chosen["code"].strip()}


def _same_file(a: str, b: str) -> bool:
    return a == b or _resolved(a) == b


@functools.lru_cache(maxsize=256)
def _resolved(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, ValueError):
        return filename


# ---- hidden plumbing ----------------------------------------------------------------------------


def mark_hidden(gm: torch.fx.GraphModule) -> int:
    """Mark export plumbing ``fxs_hidden``: the ``_guards_fn`` call and lifted parameter/buffer reads."""
    count = 0
    for node in gm.graph.nodes:
        hidden = False
        if node.op == "call_module" and str(node.target).startswith("_guards_fn"):
            hidden = True
        elif node.op == "get_attr" and node.users and _is_param_or_buffer(gm, str(node.target)):
            hidden = True
        if hidden:
            node.meta[META_HIDDEN] = True
            count += 1
    return count


def _is_param_or_buffer(gm: torch.nn.Module, target: str) -> bool:
    owner_path, _, attr = target.rpartition(".")
    try:
        owner = gm.get_submodule(owner_path) if owner_path else gm
    except AttributeError:
        return False
    return attr in fx_compat.module_parameters(owner) or attr in fx_compat.module_buffers(owner)


# ---- normalized arguments -----------------------------------------------------------------------


def normalized_arguments(node: torch.fx.Node) -> tuple[dict | None, str]:
    """The node's arguments by parameter name with defaults filled, and a note when that is not possible.

    Overloads (``torch.clamp`` with numbers or tensors) are told apart with the propagated types of the
    arguments; when more than one signature still fits, returns ``None`` and says so rather than guess.
    """
    if node.op not in ("call_function", "call_method", "call_module"):
        return None, f"{node.op} nodes take no call arguments"
    try:
        if node.op == "call_module":
            return _normalize_module(node)
        if node.op == "call_method":
            return _normalize_method(node)
        label = node.target if isinstance(node.target, str) else callable_text(node.target)
        return _normalize_function(node.target, node.args, node.kwargs, label)
    except Exception as exc:  # noqa: BLE001 - torch's schema machinery raises broadly
        return None, f"could not match the arguments to a signature ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"


def _normalize_module(node: torch.fx.Node) -> tuple[dict | None, str]:
    root = node.graph.owning_module
    sub = root.get_submodule(str(node.target)) if root is not None else None
    if sub is None:
        return None, "the submodule is not available"
    try:
        sig = inspect.signature(sub.forward)
        bound = sig.bind(*node.args, **node.kwargs)
    except (TypeError, ValueError) as exc:
        return None, f"{type(sub).__name__}.forward does not accept these arguments ({exc})"
    bound.apply_defaults()
    return dict(bound.arguments), ""


def _normalize_method(node: torch.fx.Node) -> tuple[dict | None, str]:
    """A Tensor method against ``torch.<name>`` (else the ``aten.<name>`` overloads), ``self`` first.

    Size-like varargs (``x.view(-1, 1)``, ``x.permute(0, 2, 1)``) are matched as the list
    parameter they stand for, and the note says so.
    """
    name = str(node.target)
    label = f"Tensor.{name}"
    if not signatures.node_signatures(node):
        if node.args and not signatures.is_known_tensor(node.args[0]):
            return None, f".{name}() is called on something not known to be a tensor: its signature is unknown"
        return None, f"{label} has no torch.{name} or aten.{name} signature to match its arguments against"
    fn = signatures.method_function(name)
    result, note = _normalize_function(fn, node.args, node.kwargs, label)
    if result is None and len(node.args) > 2 and all(_int_like(a) for a in node.args[1:]):
        packed = (node.args[0], list(node.args[1:]))
        packed_result, packed_note = _normalize_function(fn, packed, node.kwargs, label)
        if packed_result is not None:
            note = f"the sizes passed one by one are shown as the list parameter they fill{'; ' + packed_note if packed_note else ''}"
            return packed_result, note
    return result, note


def _int_like(value: Any) -> bool:
    if isinstance(value, torch.fx.Node):
        return _arg_type(value) in (int, None) and "tensor_meta" not in value.meta
    return isinstance(value, int) and not isinstance(value, bool)


def _arg_type(value: Any) -> Any:
    """The type used to choose between overloads; ``None`` when unknown (matches anything)."""
    if isinstance(value, torch.fx.Node):
        meta = value.meta.get("tensor_meta")
        if isinstance(meta, TensorMetadata):
            return torch.Tensor
        if isinstance(meta, (list, tuple)) and meta:
            return None
        example = value.meta.get("val")
        if isinstance(example, torch.Tensor):
            return torch.Tensor
        if isinstance(example, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(example)]
        if isinstance(example, (int, float, bool)):
            return type(example)
        recorded = value.meta.get("type")  # ShapeProp records the Python type of every result
        return recorded if recorded in (int, float, bool) else None
    if isinstance(value, (list, tuple)):
        kinds = {_arg_type(v) for v in value}
        if len(kinds) == 1 and next(iter(kinds)) in (int, float, torch.Tensor):
            return list[next(iter(kinds))]
        return None
    return type(value)


def _normalize_function(target: Any, args: tuple, kwargs: dict, label: str) -> tuple[dict | None, str]:
    schemas = signatures.function_signatures(target)
    if not schemas:
        return None, f"{label} has no known signature"
    if not signatures.is_torch_op(target):
        return _bind(schemas[0], args, kwargs, label)
    fitting = [s for s in schemas if _binds(s, args, kwargs)]
    if not fitting:
        return None, f"no signature of {label} accepts these arguments"
    if len(fitting) > 1:
        typed = [s for s in fitting if _types_fit(s, args, kwargs)]
        fitting = typed or fitting
    results = [_bind(s, args, kwargs, label)[0] for s in fitting]
    distinct = {tuple(r) for r in results if r is not None}
    if len(fitting) > 1 and len(distinct) != 1 or not distinct:
        listing = "; ".join(str(s) for s in fitting[:4])
        return None, f"ambiguous: {len(fitting)} signatures of {label} fit these arguments ({listing})"
    note = f"one of {len(fitting)} signatures with the same parameter names" if len(fitting) > 1 else ""
    return results[0], note


def _binds(sig: inspect.Signature, args: tuple, kwargs: dict) -> bool:
    try:
        sig.bind(*args, **kwargs)
        return True
    except TypeError:
        return False


def _types_fit(sig: inspect.Signature, args: tuple, kwargs: dict) -> bool:
    from torch.fx.operator_schemas import type_matches

    bound = sig.bind(*args, **kwargs)
    for name, value in bound.arguments.items():
        param = sig.parameters[name]
        if param.annotation is inspect.Parameter.empty or value is None:
            continue
        kind = _arg_type(value)
        if kind is None:
            continue
        if kind is bool and param.annotation in (int, float):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # type_matches warns on parametric annotations it skips
            if not type_matches(param.annotation, kind):
                return False
    return True


def _bind(sig: inspect.Signature, args: tuple, kwargs: dict, label: str) -> tuple[dict | None, str]:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        return None, f"{label} does not accept these arguments ({exc})"
    if any(p.kind == inspect.Parameter.POSITIONAL_ONLY for p in sig.parameters.values()):
        return None, f"{label} takes positional-only operands; they have no names"
    bound.apply_defaults()
    return dict(bound.arguments), ""
