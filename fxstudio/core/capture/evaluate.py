"""A rebuilt capture graph evaluated once on fake tensors, before anything real runs.

Every node's output is counted in bytes against the graph's data budget (``core/budgets.py``),
summed over the graph: a later real run (export verification, compare's node-by-node run, which
keeps every output) then needs no more than the budget, and a graph that asks for more
(``torch.ones((65536, 65536))``, a ``repeat`` of a large tensor, an ``expand`` that a later node
materializes) is refused here, naming the node. A node that cannot be evaluated on fake tensors is
refused too: its memory could not be bounded before it runs. Python functions of the reviewed
standard library are checked again on the values the evaluation computes (``trust.check_cost``),
as the values recorded in the file may lie.

The shapes found are written as shape propagation writes them (``tensor_meta``, ``type``), with
the fake value in ``val`` (``capture_loader`` hands them to ``annotate`` instead of a second
propagation). Calls repeated with the same operand layouts share one result: a deep graph of
identical blocks costs little more than its distinct calls. Sharing is sound while no call
changes an operand's layout in place (``unsqueeze_``, ``resize_``, ``set_``); the first that does
starts the evaluation again without sharing.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.fx
from torch.fx.immutable_collections import immutable_dict, immutable_list
from torch.fx.node import map_aggregate, map_arg

from fxstudio.core import budgets, fx_compat, trust
from fxstudio.core.errors import FxStudioError, LoadError
from fxstudio.core.metadata import tensor_metadata

_SCALARS = (bool, int, float, complex, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout)


class _Mutated(Exception):
    """A call changed an operand's layout in place while fake values were shared."""


class _NoKey(Exception):
    """A call whose operands cannot key the shared results (a mutable list, an unknown object)."""


def evaluate_graph(gm: torch.fx.GraphModule, inputs: tuple, budget: budgets.DataBudget, where: str) -> None:
    """Run ``gm`` on fake versions of ``inputs``, taking each node's output bytes from ``budget``
    and writing each node's shape metadata; ``LoadError`` (one line naming the node) when the
    budget would be passed or a node cannot be evaluated on fake tensors."""
    start = budget.used
    try:
        _Evaluation(gm, budget, where, share=True).run(inputs)
    except _Mutated:
        budget.used = start
        _Evaluation(gm, budget, where, share=False).run(inputs)


class _Evaluation:
    def __init__(self, gm: torch.fx.GraphModule, budget: budgets.DataBudget, where: str, share: bool):
        self.gm = gm
        self.budget = budget
        self.where = where
        self.share = share
        self.mode = fx_compat.fake_tensor_mode(allow_non_fake_inputs=True)
        self.results: dict[tuple, tuple[Any, Any]] = {}
        self.layouts: dict[int, tuple[torch.Tensor, tuple | None]] = {}
        self.attrs: dict[str, Any] = {}

    def run(self, inputs: tuple) -> None:
        fakes = [self.mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in inputs]
        env: dict[torch.fx.Node, Any] = {}
        position = 0
        with warnings.catch_warnings(), torch.no_grad(), fx_compat.fake_tensor_logs_off(), self.mode:
            warnings.simplefilter("ignore")
            for index, node in enumerate(self.gm.graph.nodes):
                at = f"{self.where}: node {index} ({node.name})"
                meta = None
                if node.op == "placeholder":
                    if position >= len(fakes):
                        raise LoadError(f"{at}: the graph takes more inputs than the {len(fakes)} it was given.")
                    value = fakes[position]
                    position += 1
                elif node.op == "get_attr":
                    value = self._attr(node.target)
                elif node.op == "output":
                    value = map_arg(node.args[0], env.__getitem__)
                else:
                    value, meta = self._call(node, env, at)
                    self._take(_output_bytes(value), f"node {index} ({node.name})'s output")
                env[node] = value
                self._write(node, value, meta)

    def _attr(self, target: str) -> Any:
        if target not in self.attrs:
            value = getattr(self.gm, target)
            self.attrs[target] = self.mode.from_tensor(value) if isinstance(value, torch.Tensor) else value
        return self.attrs[target]

    def _call(self, node: torch.fx.Node, env: dict, at: str) -> tuple[Any, Any]:
        args = map_arg(node.args, env.__getitem__)
        kwargs = map_arg(node.kwargs, env.__getitem__)
        target = node.target
        if node.op == "call_function" and trust.is_reviewed_stdlib(target):
            try:  # on the values computed, not the ones the file recorded
                trust.check_call_args(node.op, target, args, kwargs, lambda n: trust.UNKNOWN)
            except FxStudioError as exc:
                raise LoadError(f"{at}: {exc.message} The capture is refused; nothing was run.") from None
        key = None
        if self.share:
            try:
                key = (node.op, target, self._key(args), self._key(kwargs))
                hash(key)
            except (_NoKey, TypeError):
                key = None
            if key is not None and key in self.results:
                return self.results[key]
        operands = _tensors((args, kwargs)) if self.share else []
        before = [self._layout(t) for t in operands]
        try:
            if node.op == "call_method":
                value = getattr(args[0], target)(*args[1:], **kwargs)
            else:
                value = target(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure is a refusal
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise LoadError(f"{at} cannot be evaluated on fake tensors ({type(exc).__name__}: {first!r}), so "
                            "the memory it needs cannot be bounded before it runs; the capture is refused.") from None
        if any(layout != _layout(t) for t, layout in zip(operands, before)):
            raise _Mutated
        meta = _metadata(value)
        if key is not None and _all_tensors(value):
            self.results[key] = (value, meta)
        return value, meta

    def _key(self, value: Any) -> Any:
        """A hashable description of an operand: tensors by layout, immutable values as they are."""
        if isinstance(value, torch.Tensor):
            layout = self._layout(value)
            if layout is None:
                raise _NoKey
            return layout
        if isinstance(value, _SCALARS):
            return (type(value), value)  # 1, 1.0 and True hash alike but give different dtypes
        if isinstance(value, (tuple, immutable_list)):  # not a plain list: a call may change it
            return (type(value), tuple(self._key(v) for v in value))
        if type(value) is immutable_dict:
            return (dict, tuple((k, self._key(v)) for k, v in value.items()))
        if isinstance(value, slice):
            return (slice, self._key(value.start), self._key(value.stop), self._key(value.step))
        if value is Ellipsis:
            return (type(value),)
        raise _NoKey

    def _layout(self, tensor: torch.Tensor) -> tuple | None:
        cached = self.layouts.get(id(tensor))
        if cached is not None and cached[0] is tensor:
            return cached[1]
        layout = _layout(tensor)
        self.layouts[id(tensor)] = (tensor, layout)
        return layout

    def _take(self, nbytes: int, item: str) -> None:
        try:
            self.budget.take(nbytes, item)
        except budgets.BudgetExceeded as exc:
            raise LoadError(exc.message) from None

    @staticmethod
    def _write(node: torch.fx.Node, value: Any, meta: Any) -> None:
        """The keys ``ShapeProp`` writes: ``tensor_meta`` when the value holds a tensor, and ``type``."""
        if meta is None:
            meta = _metadata(value)
        if meta is not _NO_TENSOR:
            node.meta["tensor_meta"] = meta
            node.meta["val"] = value
        node.meta["type"] = type(value)


_NO_TENSOR = object()


def _metadata(value: Any) -> Any:
    """``ShapeProp``'s ``tensor_meta`` of ``value`` (tensors described, other leaves kept), or
    ``_NO_TENSOR`` when it holds no tensor."""
    found = False

    def describe(obj: Any) -> Any:
        nonlocal found
        if isinstance(obj, torch.Tensor):
            found = True
            return tensor_metadata(obj)
        return obj

    meta = map_aggregate(value, describe)
    return meta if found else _NO_TENSOR


def _layout(tensor: torch.Tensor) -> tuple | None:
    if tensor.layout != torch.strided:
        return None
    return (tensor.dtype, tuple(tensor.shape), tensor.stride(), tensor.storage_offset(), tensor.device,
            tensor.requires_grad)


def _tensors(value: Any, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 32 and isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v, depth + 1)]
    if depth < 32 and isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v, depth + 1)]
    return []


def _all_tensors(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    return type(value) is not list and isinstance(value, tuple) and bool(value) and all(
        _all_tensors(v) for v in value)


def _output_bytes(value: Any) -> int:
    """Dense bytes of every tensor in a node's output (a view counts whole: a later node may
    materialize it)."""
    return sum(t.numel() * t.element_size() for t in _tensors(value))
