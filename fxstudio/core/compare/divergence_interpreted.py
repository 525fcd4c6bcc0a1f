"""The Interpreter engine of the node-by-node run: two ``torch.fx.Interpreter`` instances stepped
in lockstep (``divergence.run_divergence`` uses it for what the generated engine cannot express).

It gives the generated engine's rows exactly; it is the reference the generated engine is tested
against, and runs any graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.compare import divergence_schedule as schedule
from fxstudio.core.compare import random_ops
from fxstudio.core.compare.divergence_result import DivergenceResult, NodeDivergence, RunCancelled, _failure, _is_oom, format_target
from fxstudio.core.inplace_ops import clone_tensors, graph_may_mutate, mutating_nodes
from fxstudio.core.compare.run_metrics import diff_values, fast_equal
from fxstudio.core.compare.run_support import input_device, release_memory, reseed_for
from fxstudio.core.same_computation import same_computation

ProgressFn = Callable[[float, str], None]
CancelFn = Callable[[], bool]


class _NodeRunner(torch.fx.Interpreter):
    """An Interpreter whose ``run_node`` skips recording the current node's metadata for tracing
    (``fx_traceback.set_current_meta``): nothing is traced here, and it costs a context manager
    per node, a sixth of the per-node overhead on small graphs."""

    def run_node(self, n: torch.fx.Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def call_module(self, target: Any, args: tuple, kwargs: dict) -> Any:
        # The submodule table built at construction, not a walk down the dotted path per call.
        submodule = self.submodules.get(target) if isinstance(target, str) else None
        if submodule is None:
            return super().call_module(target, args, kwargs)
        return submodule(*args, **kwargs)


class _Stepper:
    """An Interpreter advanced one node at a time, with values freed by the caller's rules.

    ``call_function``/``call_method``/``call_module`` nodes whose arguments are Nodes or plain
    constants (no containers holding Nodes) run from a plan made once: the callable resolved and
    the argument positions to fill from ``env``. That skips the Interpreter's generic argument
    mapping and dispatch (about half the per-node Python cost on small graphs); any other node
    goes through ``run_node`` as before, with the same results.
    """

    def __init__(self, gm: torch.fx.GraphModule, args: tuple[Any, ...] | None = None):
        self.interp = _NodeRunner(gm, garbage_collect_values=False)
        self.interp.env = {}
        if args is not None:
            self.feed(args)
        self.nodes = list(gm.graph.nodes)
        self.pos = 0
        self.position = {n: i for i, n in enumerate(self.nodes)}
        # last_use[n] = the node after which n's value is no longer read by its own graph.
        self.last_use: dict[torch.fx.Node, torch.fx.Node] = {}
        self.freed_after: dict[torch.fx.Node, list[torch.fx.Node]] = {}
        for node in reversed(self.nodes):
            for inp in fx_compat.node_input_nodes(node):
                if inp not in self.last_use:
                    self.last_use[inp] = node
                    self.freed_after.setdefault(node, []).append(inp)
        # What finished_uses returns for each node, computed once.
        self._finished = [self.freed_after.get(n, []) + ([n] if n not in self.last_use and n.op != "output" else [])
                          for n in self.nodes]
        self._plans = [self._plan(n) for n in self.nodes]
        self.uses_done: set[torch.fx.Node] = set()

    def _plan(self, node: torch.fx.Node) -> tuple | None:
        """``(callable, args, node positions in args, kwargs, is_method)`` or None for ``run_node``."""
        if node.op not in ("call_function", "call_method", "call_module"):
            return None
        args = tuple(node.args)
        positions = []
        for i, a in enumerate(args):
            t = type(a)
            if t is torch.fx.Node:
                positions.append(i)
            elif t not in _LEAF_TYPES and _holds_node(a):
                return None
        if node.kwargs and any(_holds_node(v) for v in node.kwargs.values()):
            return None
        positions = tuple(positions)
        kwargs = dict(node.kwargs)
        if node.op == "call_function":
            return (node.target, args, positions, kwargs, False)
        if node.op == "call_method":
            if not args or not isinstance(node.target, str):
                return None
            return (node.target, args, positions, kwargs, True)
        submodule = self.interp.submodules.get(node.target) if isinstance(node.target, str) else None
        if submodule is None:
            return None
        return (submodule, args, positions, kwargs, False)

    def feed(self, args: tuple[Any, ...]) -> None:
        """The inputs the placeholders take, in order."""
        self.interp.args_iter = iter(self.interp.module.graph.process_inputs(*args))

    def done(self) -> bool:
        return self.pos >= len(self.nodes)

    def step(self) -> torch.fx.Node:
        """Run the next node; returns it (its value is in ``env``). Exceptions propagate."""
        pos = self.pos
        node = self.nodes[pos]
        plan = self._plans[pos]
        env = self.interp.env
        if plan is None:
            env[node] = self.interp.run_node(node)
        else:
            fn, args, positions, kwargs, method = plan
            if positions:
                filled = list(args)
                for i in positions:
                    filled[i] = env[args[i]]
                args = filled
            if method:
                env[node] = getattr(args[0], fn)(*args[1:], **kwargs)
            else:
                env[node] = fn(*args, **kwargs)
        self.pos = pos + 1
        return node

    def finished_uses(self, node: torch.fx.Node) -> list[torch.fx.Node]:
        """Inputs whose last reader was ``node`` (plus ``node`` itself if nothing reads it)."""
        out = self._finished[self.position[node]]
        self.uses_done.update(out)
        return out

    def release(self, node: torch.fx.Node) -> None:
        self.interp.env.pop(node, None)


_LEAF_TYPES = {int, float, bool, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout}


def _holds_node(value: Any) -> bool:
    """Whether an argument is, or contains, a Node (containers, slices)."""
    if isinstance(value, torch.fx.Node):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_node(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_node(v) for v in value.values())
    if isinstance(value, slice):
        return any(_holds_node(v) for v in (value.start, value.stop, value.step))
    return False


def run_interpreted(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, args: tuple[Any, ...],
                     key: Callable[[torch.fx.Node], Any], *, rtol: float, atol: float,
                     progress: ProgressFn | None, cancel: CancelFn | None, seed: int | None,
                     share: bool) -> DivergenceResult:
    """``run_divergence`` by two Interpreters stepped in lockstep (any graph, in-place ops included)."""
    orig = _Stepper(original)
    edit = _Stepper(edited)
    mutating = mutating_nodes(original, orig.interp.submodules)
    # Both graphs read the same input tensors: each gets its own when either may write into them.
    fresh = bool(mutating) or graph_may_mutate(edited, edit.interp.submodules)
    orig.feed(clone_tensors(args) if fresh else args)
    edit.feed(clone_tensors(args) if fresh else args)
    shared = same_computation(original, edited, key) if share and not fresh else set()
    snapshots: dict[torch.fx.Node, Any] = {}  # values as computed, before an in-place op changed them
    target_text = schedule.memoized_by_target(format_target)
    orig_keys = [key(n) for n in orig.nodes]
    edit_keys = [key(n) for n in edit.nodes]
    orig_by_key = {}
    for n, k in zip(orig.nodes, orig_keys):
        if k is not None:
            orig_by_key.setdefault(k, n)
    edited_keys = set(edit_keys) - {None}
    pending = {n for n, k in zip(orig.nodes, orig_keys) if k in edited_keys}  # originals awaiting comparison
    result = DivergenceResult(removed=[n.name for n, k in zip(orig.nodes, orig_keys) if k not in edited_keys])
    # Per edited node, in order: its counterpart (or None) and the counterpart's position.
    counterparts = [orig_by_key.get(k) if k is not None else None for k in edit_keys]
    counter_pos = [orig.position[c] if c is not None else -1 for c in counterparts]
    # Each graph draws random numbers from its own generator state (random_ops).
    odraw = random_ops.drawing_positions(orig.nodes, orig.interp.submodules)
    edraw = random_ops.drawing_positions(edit.nodes, edit.interp.submodules)
    follow = -1
    if shared and edraw:
        kept, follow = random_ops.limit_sharing([edit.position[n] for n in shared],
                                                lambda i: [edit.position[n] for n in fx_compat.node_input_nodes(edit.nodes[i])],
                                                edraw, odraw, counter_pos)
        shared = {edit.nodes[i] for i in kept}
    total = len(edit.nodes)
    every = max(1, total // 100)

    def release_original(nodes: list[torch.fx.Node]) -> None:
        for n in nodes:
            if n not in pending:
                orig.release(n)

    reseed_for(args, seed)
    rng = random_ops.GraphGenerators(input_device(args)) if odraw or edraw else None
    with torch.no_grad():
        while not edit.done():
            if cancel is not None and cancel():
                raise RunCancelled("The run was cancelled.")
            index = edit.pos
            enode = edit.nodes[index]
            eid = enode.meta.get("fxs_id")
            counterpart = counterparts[index]
            # Bring the original up to the counterpart first.
            if counterpart is not None:
                while counter_pos[index] >= orig.pos:
                    onode = orig.nodes[orig.pos]
                    if onode in mutating:
                        # An in-place op must not change a value still waiting for its comparison.
                        for inp in fx_compat.node_input_nodes(onode):
                            if inp in pending and inp in orig.interp.env and inp not in snapshots:
                                snapshots[inp] = clone_tensors(orig.interp.env[inp])
                    if rng is not None and orig.pos in odraw:
                        rng.enter("original")
                    try:
                        orig.step()
                    except Exception as exc:  # noqa: BLE001 - reported, not raised
                        result.failure = _failure("original", onode, exc, onode.meta.get("fxs_id"))
                        _cleanup(orig, edit, exc)
                        return result
                    if orig.pos - 1 == follow:
                        rng.follow()
                    release_original(orig.finished_uses(onode))
            if enode in shared:
                edit.interp.env[enode] = orig.interp.env[counterpart]
                edit.pos += 1
                row = NodeDivergence(index, eid, enode.name, enode.op, target_text(enode), counterpart.name,
                                     "equal", 0.0, 0.0, shared=True)
                pending.discard(counterpart)
                if counterpart in orig.uses_done:
                    orig.release(counterpart)
                result.nodes.append(row)
                for n in edit.finished_uses(enode):
                    edit.release(n)
                if progress is not None and (index % every == 0 or index == total - 1):
                    progress((index + 1) / total, enode.name)
                continue
            if rng is not None and index in edraw:
                rng.enter("edited")
            try:
                edit.step()
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                result.failure = _failure("edited", enode, exc, eid)
                result.nodes.append(NodeDivergence(index, eid, enode.name, enode.op, target_text(enode),
                                                   counterpart.name if counterpart is not None else None,
                                                   "error", note=result.failure.message))
                _cleanup(orig, edit, exc)
                return result
            row = NodeDivergence(index, eid, enode.name, enode.op, target_text(enode), None, "no_counterpart")
            if counterpart is not None:
                row.counterpart = counterpart.name
                reference = snapshots.pop(counterpart) if counterpart in snapshots else orig.interp.env[counterpart]
                value = edit.interp.env[enode]
                if (type(reference) is torch.Tensor and type(value) is torch.Tensor
                        and reference.dtype == value.dtype and reference.shape == value.shape
                        and reference.device == value.device and fast_equal(reference, value)):
                    diff = None  # equal (torch.equal), the common case: one pass, no TensorDiff
                else:
                    diff = diff_values(reference, value, rtol=rtol, atol=atol, with_rel=False, with_cosine=False)
                del value
                if diff is None or diff.equal:
                    row.status, row.max_abs, row.score = "equal", 0.0, 0.0
                else:
                    row.status = "close" if diff.allclose else "diverged"
                    row.max_abs, row.score, row.note = diff.max_abs, diff.score, diff.note
                pending.discard(counterpart)
                if counterpart in orig.uses_done:
                    orig.release(counterpart)
            result.nodes.append(row)
            if row.status == "diverged" and result.first is None:
                result.first = row
            for n in edit.finished_uses(enode):
                edit.release(n)
            if progress is not None and (index % every == 0 or index == total - 1):
                progress((index + 1) / total, enode.name)
    orig.interp.env.clear()
    edit.interp.env.clear()
    return result


def _cleanup(orig: _Stepper, edit: _Stepper, exc: BaseException) -> None:
    orig.interp.env.clear()
    edit.interp.env.clear()
    if _is_oom(exc):
        release_memory()
