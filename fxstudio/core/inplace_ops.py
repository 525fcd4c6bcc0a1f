"""Which nodes may write into a tensor in place, and copies that protect values from them.

Used by the node-by-node runs (a value awaiting its comparison is copied before an in-place op may
change it; each graph gets its own inputs) and by the loaded-weights bookkeeping
(``module_state``), which copies a module that a run could write into.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat


_INPLACE_OPERATORS = {operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                      operator.ifloordiv, operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
                      operator.ilshift, operator.irshift, operator.imatmul}


def may_mutate(node: torch.fx.Node, gm: torch.nn.Module, modules: dict[str, torch.nn.Module] | None = None) -> bool:
    """Whether running ``node`` may write into one of its input tensors (an in-place op).

    A heuristic on names: ``x.add_()``, ``torch.relu_``, ``inplace=True``, ``nn.ReLU(inplace=True)``,
    ``x[i] = v`` and augmented assignments. Mutations hidden inside a user's own module are not seen.
    """
    if node.op in ("placeholder", "get_attr", "output"):
        return False
    if node.kwargs.get("inplace") is True:
        return True
    target = node.target
    if node.op == "call_method":
        return isinstance(target, str) and target.endswith("_") and not target.startswith("__")
    if node.op == "call_function":
        if target in _INPLACE_OPERATORS:
            return True
        schema = fx_compat.op_schema(target)  # aten ops say so themselves (add_.Tensor, copy_)
        if schema is not None and getattr(schema, "is_mutable", False):
            return True
        name = getattr(target, "__name__", "") or ""
        return name.endswith("_") and not name.startswith("__")
    if node.op == "call_module":
        if modules is None:
            modules = dict(gm.named_modules())
        return getattr(modules.get(node.target), "inplace", False) is True
    return False


def graph_may_mutate(gm: torch.fx.GraphModule, modules: dict[str, torch.nn.Module] | None = None) -> bool:
    """Whether any node of ``gm`` may write into a tensor in place (see ``may_mutate``)."""
    return bool(mutating_nodes(gm, modules))


def mutating_nodes(gm: torch.fx.GraphModule,
                   modules: dict[str, torch.nn.Module] | None = None) -> set[torch.fx.Node]:
    """The nodes of ``gm`` that may write into a tensor in place (see ``may_mutate``); ``modules``
    is ``dict(gm.named_modules())`` when the caller has it already."""
    if modules is None:
        modules = dict(gm.named_modules())
    return {n for n in gm.graph.nodes if may_mutate(n, gm, modules)}


def clone_tensors(value: Any) -> Any:
    """``value`` with every tensor in it cloned (containers rebuilt, other leaves shared)."""
    return fx_compat.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)
