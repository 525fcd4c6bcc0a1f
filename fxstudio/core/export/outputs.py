"""The input and output structure of an exported (``torch.export``) graph, as a plain ``forward``.

``ExportedProgram.module()`` flattens its inputs and rebuilds its outputs with pytree specs. An
exported file writes instead

- inputs: positional parameters, in the order the graph takes them; a program called with keyword
  arguments (``input_ids=..., use_cache=False``) takes them in its ``in_spec``'s order, positional
  ones first (as ``ExportedProgram.module()``'s own forward does);
- outputs: a literal structure of tuples, lists and dicts, namedtuples built by a call, and a
  dict-like output class such as a Hugging Face ``ModelOutput`` built by a keyword call
  (``CausalLMOutputWithCrossAttentions(logits=linear)``). Such a class is imported guarded: where its
  package is not importable, the name is ``dict`` and the output a dict with the same keys; the
  file's header says so.
"""

from __future__ import annotations

import collections
import keyword
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.code_names import is_attribute_path, is_identifier
from fxstudio.core.errors import ExportError

_PLAIN_MODULES = ("builtins", "collections")  # their dict types need no guarded import


@dataclass
class OutputClass:
    """A dict-like output class the exported file imports guarded (falling back to ``dict``)."""

    cls: type
    keys: tuple[str, ...]

    @property
    def guarded(self) -> bool:
        """Whether the import may fail where the file runs (a class outside the standard library)."""
        return getattr(self.cls, "__module__", "").split(".")[0] not in _PLAIN_MODULES


def check_inputs(in_spec: Any, count: int) -> None:
    """Refuse inputs nested deeper than positional and keyword arguments of the graph's leaves."""
    try:
        structure = fx_compat.tree_unflatten(list(range(count)), in_spec)
    except Exception:  # noqa: BLE001 - any mismatch means a structure we do not rebuild
        structure = None
    ok = (isinstance(structure, tuple) and len(structure) == 2 and isinstance(structure[0], tuple)
          and isinstance(structure[1], dict))
    if ok:
        args, kwargs = structure
        ok = list(args) + list(kwargs.values()) == list(range(count))
    if not ok:
        raise ExportError(
            "cannot export this graph: its forward takes nested inputs "
            f"({in_spec}); only positional and keyword tensor or constant inputs are written as a plain forward."
        )


def build_outputs(graph: torch.fx.Graph, flat: list, out_spec: Any, classes: dict[type, OutputClass]) -> Any:
    """The output structure ``out_spec`` describes, over the output values ``flat``, as graph values:
    containers as literals, namedtuples and dict-like classes made by call nodes (``classes`` collects
    the latter)."""
    leaves = iter(flat)
    value = _build(graph, out_spec, leaves, classes)
    return value


def _build(graph: torch.fx.Graph, spec: Any, leaves, classes: dict[type, OutputClass]) -> Any:
    if spec.is_leaf():
        return next(leaves)
    kids = [_build(graph, child, leaves, classes) for child in spec.children()]
    typ, context = spec.type, spec.context
    if typ in (tuple, list):
        return typ(kids)
    if typ is dict:
        return dict(zip(context, kids))
    if typ is collections.namedtuple and isinstance(context, type):  # torch's spec of any namedtuple
        typ = context
    if isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields"):
        return graph.call_function(typ, tuple(kids))
    if isinstance(typ, type) and issubclass(typ, dict):
        keys = list(context) if isinstance(context, (list, tuple)) else None
        if keys is not None and len(keys) == len(kids) and all(_keyword_name(k) for k in keys):
            _check_importable(typ)
            classes.setdefault(typ, OutputClass(typ, tuple(keys)))
            return graph.call_function(typ, (), dict(zip(keys, kids)))
    raise ExportError(
        f"cannot export this graph: its output contains a {getattr(typ, '__name__', typ)}; only tuples, "
        "lists, dicts, namedtuples, dict-like classes with identifier keys (a Hugging Face ModelOutput), "
        "tensors and plain values are written as a literal output structure."
    )


def _keyword_name(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _check_importable(typ: type) -> None:
    module = getattr(typ, "__module__", "")
    if not is_attribute_path(module) or not is_identifier(typ.__name__) or typ.__qualname__ != typ.__name__:
        raise ExportError(f"cannot export this graph: its output class {typ!r} cannot be imported by name.")


def import_lines(name: str, item: OutputClass) -> list[str]:
    """The lines that define ``name`` as the output class: a guarded import, ``dict`` where it fails."""
    module, attr = item.cls.__module__, item.cls.__name__
    line = f"from {module} import {attr}" + (f" as {name}" if name != attr else "")
    if not item.guarded:
        return [line]
    package = module.split(".")[0]
    return ["try:", f"    {line}",
            f"except ImportError:  # {package} is not installed here: the output is a dict with the same keys",
            f"    {name} = dict"]


def header_lines(names: dict[str, OutputClass]) -> list[str]:
    """Header lines stating how each guarded output class is made."""
    out = []
    for name, item in names.items():
        if item.guarded:
            out.append(f"Output: {item.cls.__module__}.{item.cls.__name__} when that package is importable, "
                       f"else a dict with the same keys ({', '.join(item.keys)}).")
    return out
