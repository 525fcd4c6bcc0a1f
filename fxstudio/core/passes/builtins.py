"""The built-in passes, ``fxstudio.passes.<name>``: each wraps the torch implementation it mirrors.

Every pass takes the working copy of the edited ``GraphModule`` (its own module objects, tensors
shared with the document: none of these passes writes into a tensor) and returns the result.
The graph is never re-traced: ``symbolic_trace`` of a traced module would trace through the
model's leaf modules and wrapped functions and lose the nodes' metadata.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.errors import EditRefused
from fxstudio.core.module_state import written_paths

BUILTIN_PREFIX = "fxstudio.passes."


def fuse_conv_bn(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Fold eval-mode BatchNorm into the Conv (or Linear) before it:
    ``torch.fx.experimental.optimization.fuse`` on the working copy (no re-trace)."""
    from torch.fx.experimental.optimization import fuse, matches_module_pattern

    patterns = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
                (nn.Linear, nn.BatchNorm1d)]
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        for pattern in patterns:
            if matches_module_pattern(pattern, node, modules) and len(node.args[0].users) == 1:
                first, bn = modules[node.args[0].target], modules[node.target]
                if bn.track_running_stats and (first.training or bn.training):
                    raise EditRefused(f"fuse_conv_bn folds eval-mode batch norms, and {node.target} (after "
                                      f"{node.args[0].target}) is in training mode; switch the model to eval mode first.")
    return fuse(gm, inplace=True, no_trace=True)


class _DropoutRemover(torch.fx.Transformer):
    """``torch.fx.experimental.optimization.remove_dropout``'s transformer, run on the module as it
    is (torch's function re-traces it first)."""

    def call_module(self, target, args, kwargs):
        if isinstance(self.submodules[target], nn.Dropout):
            if len(args) != 1:
                raise EditRefused(f"{target} is a Dropout called with {len(args)} arguments; remove_dropout expects one.")
            return args[0]
        return super().call_module(target, args, kwargs)


def remove_dropout(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Remove every ``nn.Dropout`` call (its input takes its place)."""
    return _DropoutRemover(gm).transform()


def fold_constants(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Precompute the subgraphs that depend only on weights and constants
    (``torch.fx.experimental.const_fold.split_const_subgraphs``, folded at once). Weights the graph
    writes into in place are not constants and are left alone.

    Folding computes for real, so it runs inside the edit budgets (``fxstudio.core.budgets``): before
    anything is computed, the bytes and work of every node it would fold are summed from their
    estimates on fake-tensor shapes (``node.meta["fxs_cost"]``, which the edit engine gives the
    nodes for the run, ``fxstudio.core.edits.work``; without it, the bytes and elements of the
    node's ``tensor_meta``). A node whose shape is unknown is not folded, and a fold that would
    pass either budget is refused (``EditRefused``) before anything is computed."""
    from torch.fx.experimental.const_fold import split_const_subgraphs

    written = written_paths(gm)
    spent = [0, 0, 0]  # bytes, work, nodes

    def skip(node: torch.fx.Node) -> bool:
        if node.op == "get_attr":
            return str(node.target) in written
        cost = _cost(node)
        if cost is None:
            return True  # what it costs cannot be told before computing it: not folded
        spent[0] += cost[0]
        spent[1] += cost[1]
        spent[2] += 1
        return False

    folded = split_const_subgraphs(gm, skip_folding_node_fn=skip, device_for_folded_attrs="cpu")
    if folded.const_subgraph_module is None:
        return gm  # nothing to fold
    _check_fold_budget(*spent)
    folded.run_folding()
    # a plain GraphModule over the folded graph: keeps what the graph uses, drops the const subgraph
    return torch.fx.GraphModule(folded, folded.graph, class_name=type(gm).__name__)


def _cost(node: torch.fx.Node) -> tuple[int, int] | None:
    """(bytes, work) of computing ``node``: its ``fxs_cost`` estimate, else the bytes and elements
    of its ``tensor_meta`` (a list for several results); None when its shape is unknown."""
    meta = node.meta.get("tensor_meta")
    if meta is None:
        return None
    cost = node.meta.get("fxs_cost")
    if isinstance(cost, tuple) and len(cost) == 2:
        return cost
    nbytes = elements = 0
    for m in meta if isinstance(meta, (list, tuple)) else (meta,):
        shape, dtype = getattr(m, "shape", None), getattr(m, "dtype", None)
        if shape is None:
            return None
        count = 1
        for size in shape:
            count *= int(size)
        elements += count
        nbytes += count * (getattr(dtype, "itemsize", 16) or 16)
    return nbytes, elements


def _check_fold_budget(nbytes: int, work: int, nodes: int) -> None:
    """Refuse a fold whose constants would take more than the edit budgets (nothing computed yet)."""
    from fxstudio.core import budgets, trust

    what = f"{nodes} constant node{'s' if nodes != 1 else ''}"
    if nbytes > budgets.edit_budget_bytes():
        raise EditRefused(f"folding {what} would compute {budgets.byte_text(nbytes)} of tensors, more than fxstudio's "
                          f"edit budget of {budgets.byte_text(budgets.edit_budget_bytes())} (rule: "
                          f"{trust.RULE_EDIT_BUDGET}; FXSTUDIO_EDIT_BUDGET raises it); nothing was folded.")
    if work > budgets.edit_work_budget():
        raise EditRefused(f"folding {what} would cost about {budgets.work_text(work)}, more than fxstudio's edit "
                          f"budget of {budgets.work_text(budgets.edit_work_budget())} (rule: {trust.RULE_WORK}; "
                          "FXSTUDIO_EDIT_WORK raises it); nothing was folded.")


def normalize_args(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Write every call's arguments as keywords where the signature is known
    (``torch.fx.experimental.normalize.NormalizeArgs``). Calls of ``torch.ops`` overloads (graphs
    traced with ``torch.export``) are left as they are: NormalizeArgs would name their arguments
    after the Python signature (``input=``), which the operator does not accept."""
    from torch.fx.experimental.normalize import NormalizeArgs

    class _Normalize(NormalizeArgs):
        def call_function(self, target, args, kwargs, *types):
            if isinstance(target, fx_compat.OP_TYPES):
                return torch.fx.Transformer.call_function(self, target, args, kwargs)
            return super().call_function(target, args, kwargs, *types)

    return _Normalize(gm).transform()


def eliminate_dead_code(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Erase every pure node whose value is never used (``torch.fx.Graph.eliminate_dead_code``)."""
    gm.graph.eliminate_dead_code()
    return gm


BUILTIN_PASSES: dict[str, Callable[[torch.fx.GraphModule], torch.fx.GraphModule]] = {
    BUILTIN_PREFIX + fn.__name__: fn
    for fn in (fuse_conv_bn, remove_dropout, fold_constants, normalize_args, eliminate_dead_code)
}
"""Every built-in pass by its full name (``fxstudio.passes.fuse_conv_bn``)."""


def builtin_pass(name: str) -> Callable[[torch.fx.GraphModule], torch.fx.GraphModule]:
    """The built-in pass called ``name``; ``EditRefused`` listing them for an unknown one."""
    fn = BUILTIN_PASSES.get(name)
    if fn is None:
        raise EditRefused(f"Unknown built-in pass {name!r} (built-ins: {', '.join(BUILTIN_PASSES)}).")
    return fn
