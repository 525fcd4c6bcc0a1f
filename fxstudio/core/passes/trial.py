"""The run a pass's result gets before it is installed, and the shapes that run tells.

A result that does not run must never be installed silently: ``trial_run`` runs it once on copies of
the document's example inputs, on a copy of the module that owns its buffers and every weight the
graph writes into (observers gather statistics and training-mode batch norms update running stats
as they run; the result itself keeps the state the pass gave it). The run goes node by node
(``torch.fx.Interpreter``) and keeps each node's result metadata.

Fake tensors cannot tell every result's size (observers, quantized modules, ``quantize_per_tensor``):
for those, the shape refresh takes the size this run measured (``ran_shape``). The pass is trusted
code, and its result running on the example inputs is the same trust. Only the runner writes the
record (``RUN_META_KEY``, a ``RanShape``), on the nodes of a pass's result; it stands only while
the node's call (op, target, arguments, the very input nodes) and its inputs' shapes are those of
the run, so an edit of the node or upstream of it makes its size unknown again.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core.threads import choose_for, torch_threads
from fxstudio.core import fx_compat
from fxstudio.core.module_state import copy_to_run
from fxstudio.core.passes.calling import copy_inputs

RUN_META_KEY = "fxs_ran"
"""``node.meta`` key of a node's ``RanShape``: written by the pass runner only."""


class RanShape:
    """A node's result metadata as the trial run of a pass's result measured it, with what it
    depended on: the node's call and its inputs' shapes at the time."""

    __slots__ = ("meta", "op", "target", "args", "inputs")

    def __init__(self, node: torch.fx.Node, meta: Any, inputs: tuple):
        self.meta = meta
        self.op = node.op
        self.target = node.target
        self.args = _call_key(node)
        self.inputs = inputs

    def __repr__(self) -> str:
        return f"RanShape({_signature(self.meta)!r})"


def _leaf(value: Any) -> Any:
    if isinstance(value, torch.fx.Node):
        return ("node", id(value), value)
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value))
    return value


def _call_key(node: torch.fx.Node) -> Any:
    return torch.fx.node.map_aggregate((node.args, node.kwargs), _leaf)


def _signature(meta: Any) -> Any:
    """What a result's size depends on: shapes and dtypes (None: not a tensor, or unknown)."""
    if isinstance(meta, TensorMetadata):
        return tuple(int(s) for s in meta.shape), meta.dtype
    if isinstance(meta, (list, tuple)):
        return tuple(_signature(m) for m in meta)
    return None


_FORMATS = (torch.contiguous_format, torch.channels_last, torch.channels_last_3d)


def _plain_meta(value: torch.Tensor) -> TensorMetadata:
    """``TensorMetadata`` of a dense, unquantized tensor from its C++ accessors (torch's own helper
    checks memory formats in Python: ~0.3 ms a node, most of a trial run's bookkeeping)."""
    fmt = next((f for f in _FORMATS if value.is_contiguous(memory_format=f)), None)
    return TensorMetadata(value.shape, value.dtype, value.requires_grad, value.stride(), fmt, False, {})


def tensor_meta(value: Any) -> Any:
    """The ``TensorMetadata`` of a tensor result, a list/tuple of them (None items) for a sequence
    holding tensors, or None."""
    if isinstance(value, torch.Tensor):
        try:
            if type(value) is torch.Tensor and value.layout is torch.strided and not value.is_quantized:
                return _plain_meta(value)
            return fx_compat.extract_tensor_metadata(value)
        except Exception:  # noqa: BLE001 - a tensor fx cannot describe
            return None
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        metas = [tensor_meta(v) if isinstance(v, torch.Tensor) else None for v in value]
        return metas if isinstance(value, list) else tuple(metas)
    return None


class _Recorder(torch.fx.Interpreter):
    """An Interpreter that keeps the result metadata of every node it runs."""

    def __init__(self, module: torch.nn.Module):
        super().__init__(module)
        self.metas: dict[torch.fx.Node, Any] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        """Run ``n`` and keep its result's metadata."""
        value = super().run_node(n)
        self.metas[n] = tensor_meta(value)
        return value


def trial_run(result: torch.fx.GraphModule, inputs: tuple) -> dict[torch.fx.Node, Any]:
    """Run ``result`` once on copies of ``inputs``, on a copy of it that owns what the run may
    write (``result``'s state is left as it is); the result metadata of each node. Raises what the
    run raises."""
    runnable = copy_to_run(result, force=True)
    recorder = _Recorder(runnable)
    with torch.no_grad(), warnings.catch_warnings(), torch_threads(choose_for(result, inputs).count):
        warnings.simplefilter("ignore")  # fxstudio's run: its deprecation notes are nobody's business
        recorder.run(*copy_inputs(inputs))
    return recorder.metas


def record_shapes(result: torch.fx.GraphModule, metas: dict[torch.fx.Node, Any] | None) -> None:
    """Write each node's ``RanShape`` (from a ``trial_run``'s ``metas``; None: no run, no record),
    after taking away any the pass itself left."""
    seen: set[int] = set()
    for node in result.graph.nodes:
        if id(node.meta) in seen:  # one dict shared by two nodes (a pass may do that): each its own
            node.meta = dict(node.meta)
        seen.add(id(node.meta))
        node.meta.pop(RUN_META_KEY, None)
        meta = metas.get(node) if metas is not None else None
        if meta is None or node.op in ("placeholder", "output"):
            continue
        inputs = tuple(_signature(metas.get(i)) for i in node.all_input_nodes)
        node.meta[RUN_META_KEY] = RanShape(node, meta, inputs)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - values that do not compare: not the same call
        return False


def ran_shape(node: torch.fx.Node) -> Any:
    """The result metadata a pass's trial run measured for ``node``, if it still holds: the node
    calls what it called then, on the same input nodes, whose recorded shapes are those of the run
    (an input that is not a tensor must be a ``get_attr``: a constant of the module). Else None."""
    record = node.meta.get(RUN_META_KEY)
    if type(record) is not RanShape:
        return None
    if record.op != node.op or record.target is not node.target and not _same(record.target, node.target):
        return None
    if not _same(record.args, _call_key(node)):
        return None
    inputs = node.all_input_nodes
    if len(inputs) != len(record.inputs):
        return None
    for inp, then in zip(inputs, record.inputs):
        now = _signature(inp.meta.get("tensor_meta"))
        if then is None:
            if inp.op != "get_attr":
                return None
        elif now != then:
            return None
    return record.meta


def has_unfolded_constants(result: torch.nn.Module) -> bool:
    """Whether ``result`` is a ``FoldedGraphModule`` (``torch.fx.experimental.const_fold``) whose
    folding has not run: its folded attributes are still empty."""
    from torch.fx.experimental.const_fold import FoldedGraphModule

    return isinstance(result, FoldedGraphModule) and not result.has_folding_been_run \
        and result.const_subgraph_module is not None


def placeholder_kinds(graph: torch.fx.Graph) -> list[tuple[str, bool]]:
    """Each input's kind, in order: ``*`` / ``**`` / plain, and whether it has a default."""
    kinds = []
    for node in graph.nodes:
        if node.op == "placeholder":
            target = str(node.target)
            star = "**" if target.startswith("**") else "*" if target.startswith("*") else ""
            kinds.append((star, bool(node.args)))
    return kinds


def restore_input_names(before: torch.fx.Graph, after: torch.fx.Graph) -> bool:
    """Give ``after``'s inputs ``before``'s names where a pass renamed them (``make_fx`` names them
    ``arg0_1``…), when every old name is free in ``after`` (no other node holds it); True when
    renamed. Same count, order and kinds of inputs is the caller's check."""
    old = [n for n in before.nodes if n.op == "placeholder"]
    new = [n for n in after.nodes if n.op == "placeholder"]
    pairs = [(o, n) for o, n in zip(old, new) if o.target != n.target]
    if not pairs:
        return False
    names = {n.name: n for n in after.nodes}
    for o, n in pairs:
        holder = names.get(o.name)
        if (holder is not None and holder is not n) or not str(o.target).lstrip("*").isidentifier():
            return False  # the old name is another node's now (or two inputs swapped names)
    for o, n in pairs:
        n.target = o.target
        n.name = o.name
        fx_compat.rename_in_namespace(after, n, o.name)
    return True
