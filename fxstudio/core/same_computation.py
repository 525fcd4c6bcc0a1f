"""Which edited nodes provably compute what their original counterparts compute.

A node of the edited graph computes the same value as its counterpart when it has the same op,
target and arguments (references compared by stable id), every node it reads does too, and the
state it reads is equal: the same attribute tensor for ``get_attr``, a submodule of the same
type, configuration and weights for ``call_module``. For deterministic ops such a value is
bitwise equal by construction, so the node-by-node run computes it once and shares it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import torch
import torch.fx

from torch.fx.node import map_aggregate

from fxstudio.core import fx_compat


class _Ref:
    """A node reference or a tensor constant in a signature, printed by its key."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(node: torch.fx.Node, key: Callable[[torch.fx.Node], Hashable | None]) -> tuple:
    """What a node computes as text: repr keeps ``2`` and ``2.0`` and ``True`` apart (they give
    tensors of other dtypes); tensor constants are never equal across graphs (not provable cheaply)."""
    def leaf(v: Any) -> Any:
        if isinstance(v, torch.fx.Node):
            return _Ref(f"%{key(v)!r}")
        if isinstance(v, torch.Tensor):
            return _Ref(f"<tensor {id(v)}>")
        return v

    target = node.target if isinstance(node.target, str) else (
        getattr(node.target, "__module__", None), getattr(node.target, "__qualname__", None), id(node.target))
    return (node.op, target, repr(map_aggregate(node.args, leaf)), repr(map_aggregate(node.kwargs, leaf)))


_MODULE_INTERNALS = frozenset(vars(torch.nn.Module())) | {"_is_full_backward_hook"}


def _public_config(module: torch.nn.Module) -> dict[str, Any]:
    """A module's own attributes (``negative_slope``, ``padding``, a user's ``_scale``), without the
    bookkeeping every ``nn.Module`` has (parameters, buffers and submodules are compared apart)."""
    return {k: v for k, v in vars(module).items() if k not in _MODULE_INTERNALS}


def same_module(a: torch.nn.Module | None, b: torch.nn.Module | None) -> bool:
    """Whether two modules compute the same function: type, configuration, mode and state."""
    if a is None or b is None:
        return False
    if a is b:
        return True
    if type(a) is not type(b) or a.training != b.training:
        return False
    subs_a, subs_b = dict(a.named_modules()), dict(b.named_modules())
    if subs_a.keys() != subs_b.keys():
        return False
    for name, sub in subs_a.items():
        other = subs_b[name]
        if type(sub) is not type(other) or sub.training != other.training:
            return False
        try:
            if _public_config(sub) != _public_config(other):
                return False
        except Exception:  # noqa: BLE001 - attributes whose == is not a bool: assume they differ
            return False
    state_a, state_b = a.state_dict(keep_vars=True), b.state_dict(keep_vars=True)
    if state_a.keys() != state_b.keys():
        return False
    return all(_same_tensor(state_a[k], state_b[k]) for k in state_a)


def _same_tensor(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a is b or (a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
                          and torch.equal(a.detach(), b.detach()))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def fetch_path(gm: torch.nn.Module, path: str) -> Any:
    """``gm.<path>`` along a dotted path, or None where a step is missing."""
    obj: Any = gm
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def same_computation(original: torch.fx.GraphModule, edited: torch.fx.GraphModule,
                     key: Callable[[torch.fx.Node], Hashable | None]) -> set[torch.fx.Node]:
    """Edited nodes whose value is, by construction, their counterpart's (see the module docstring)."""
    orig_by_key = {key(n): n for n in original.graph.nodes if key(n) is not None}
    orig_placeholders = [n for n in original.graph.nodes if n.op == "placeholder"]
    edit_placeholders = [n for n in edited.graph.nodes if n.op == "placeholder"]
    same: set[torch.fx.Node] = set()
    counterpart_of: dict[torch.fx.Node, torch.fx.Node] = {}
    module_verdicts: dict[str, bool] = {}
    with torch.no_grad():
        for node in edited.graph.nodes:
            k = key(node)
            other = orig_by_key.get(k) if k is not None else None
            if other is None or not all(inp in same for inp in fx_compat.node_input_nodes(node)):
                continue
            other_inputs = fx_compat.node_input_nodes(other)
            if not all(counterpart_of[inp] in other_inputs for inp in fx_compat.node_input_nodes(node)):
                continue
            try:
                if _signature(node, key) != _signature(other, key):
                    continue
            except Exception:  # noqa: BLE001 - uncomparable constants: not provably the same
                continue
            if node.op == "placeholder":
                if node not in edit_placeholders or other not in orig_placeholders or (
                        edit_placeholders.index(node) != orig_placeholders.index(other)):
                    continue
            elif node.op == "get_attr":
                if not _same_tensor(fetch_path(original, other.target), fetch_path(edited, node.target)):
                    continue
            elif node.op == "call_module":
                target = node.target
                if target not in module_verdicts:
                    module_verdicts[target] = same_module(fetch_path(original, other.target), fetch_path(edited, target))
                if not module_verdicts[target]:
                    continue
            same.add(node)
            counterpart_of[node] = other
    return same
