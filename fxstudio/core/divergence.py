"""Per-node divergence: the original and the edited graph run side by side, node by node.

``run_divergence`` runs the lockstep schedule (``divergence_schedule``) as one generated function
(``divergence_codegen``) and falls back to two ``torch.fx.Interpreter`` instances stepped in
lockstep (below) for graphs with in-place ops or what the generator cannot express; both give the
same rows (``divergence_result``). Each edited node runs, then the
original graph is advanced just far enough to produce the node's counterpart (matched by stable
id, or by name for an exported file), the two values are compared at once, and every value is
released as soon as no later node needs it and it has been compared. Peak memory is therefore
about the live values of both graphs plus one comparison's temporaries, not every intermediate.

Random ops: the run reseeds once, and each graph then draws from its own generator state,
swapped in around the nodes that may draw (``random_ops``): each graph's values are those of a
run of that graph alone after the seed, whatever the interleaving. Unchanged random nodes agree;
a random node the edit adds shifts the edited graph's later draws, as it would in a run alone.
"""

from __future__ import annotations

import contextlib
import gc
import operator
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx
import torch.utils._pytree

from fxstudio.core import divergence_codegen as codegen
from fxstudio.core import divergence_schedule as schedule
from fxstudio.core import module_inline
from fxstudio.core import random_ops
from fxstudio.core.divergence_codegen import Unsupported
from fxstudio.core.divergence_result import (DivergenceResult, NodeDivergence, NodeFailure, RunCancelled,  # noqa: F401
                                             _failure, _is_oom, format_target)
from fxstudio.core.graph_diff import match_key
from fxstudio.core.run_metrics import DiffScratch, diff_values, fast_equal, node_diff, reseed
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
            for inp in node._input_nodes:
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
        schema = getattr(target, "_schema", None)  # aten ops say so themselves (add_.Tensor, copy_)
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
    return torch.utils._pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)


def run_divergence(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, args: tuple[Any, ...], *,
                   rtol: float, atol: float, match: str = "id", progress: ProgressFn | None = None,
                   cancel: CancelFn | None = None, seed: int | None = 0, share: bool = True,
                   engine: str = "auto") -> DivergenceResult:
    """Run both graphs on ``args`` in lockstep and compare every matched node's value.

    With ``share``, an edited node that provably computes its counterpart's value (same op and
    arguments on equal inputs and state, upstream of every edit: ``same_computation``) is not run
    again: it takes the original's value and is reported ``equal`` with ``shared`` set. Sharing is
    off when a graph has in-place ops. A node that may draw random numbers is shared only while
    the draws before it pair up in both graphs (``random_ops.limit_sharing``). Raises
    ``RunCancelled`` when ``cancel()`` turns true; an exception in a node is returned as
    ``result.failure`` (the run stops there), not raised.

    ``seed``: both generators (CPU, and the inputs' CUDA device) are seeded with it first; each
    graph then draws from its own state (``random_ops.GraphGenerators``). None: no reseed, both
    graphs start from the current state.

    ``engine``: ``"generated"`` runs the schedule as one generated function
    (``divergence_codegen``), ``"interpreter"`` steps two ``torch.fx.Interpreter`` instances;
    ``"auto"`` (default) uses the generated one unless a graph may write in place or holds
    something it cannot express. Both give the same result.
    """
    if engine not in ("auto", "generated", "interpreter"):
        raise ValueError(f"engine must be 'auto', 'generated' or 'interpreter', not {engine!r}")
    key = match_key(match)
    if engine != "interpreter":
        try:
            return _run_generated(original, edited, args, match, key, rtol=rtol, atol=atol, progress=progress,
                                  cancel=cancel, seed=seed, share=share)
        except Unsupported:
            if engine == "generated":
                raise
    return _run_interpreted(original, edited, args, key, rtol=rtol, atol=atol, progress=progress,
                            cancel=cancel, seed=seed, share=share)


def _input_device(args: tuple[Any, ...]) -> torch.device | str:
    return next((a.device for a in torch.utils._pytree.tree_leaves(args) if isinstance(a, torch.Tensor)), "cpu")


def _reseed_for(args: tuple[Any, ...], seed: int | None) -> None:
    if seed is not None:  # each graph's random ops draw what they draw in a run alone from the seed
        reseed(seed, _input_device(args))


def _run_generated(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, args: tuple[Any, ...],
                   match: str, key: Callable[[torch.fx.Node], Any], *, rtol: float, atol: float,
                   progress: ProgressFn | None, cancel: CancelFn | None, seed: int | None,
                   share: bool) -> DivergenceResult:
    """``run_divergence`` through a generated lockstep function (``divergence_codegen``)."""
    with _gc_paused():
        prepared = _prepare_generated(original, edited, match, key, progress, cancel, share)
    return _run_prepared(*prepared, original, edited, args, rtol=rtol, atol=atol, progress=progress, cancel=cancel,
                         seed=seed)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a while. The bookkeeping before and after a run makes a
    few objects per node and frees none: on a large graph the collector would otherwise scan the
    whole heap again and again (a third of the time at 8000 nodes)."""
    collect = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collect:
            gc.enable()


def _prepare_generated(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, match: str,
                       key: Callable[[torch.fx.Node], Any], progress: ProgressFn | None, cancel: CancelFn | None,
                       share: bool) -> tuple:
    """The schedule, program, table and shared positions of a generated run (cached when possible)."""
    onodes = list(original.graph.nodes)
    enodes = list(edited.graph.nodes)
    print_o, keep_o = schedule.fingerprint(onodes)
    print_e, keep_e = schedule.fingerprint(enodes)
    prints = (print_o, print_e)
    sched = schedule.cached_schedule(original, edited, prints, match)
    if sched is None:
        okeys, ekeys = schedule.match_keys(print_o, match), schedule.match_keys(print_e, match)
        sched = schedule.build_schedule(original, edited, onodes, enodes, match, okeys, ekeys, prints,
                                       keep_o + keep_e, key, format_target,
                                       lambda n: may_mutate(n, n.graph.owning_module, {}))
        schedule.remember_schedule(edited, sched)
    if sched.mutating:
        raise Unsupported("a node may write in place")
    graphs = {"original": original, "edited": edited}
    modules = codegen.fetch_modules(sched, graphs)
    inlined = module_inline.inline_values(modules)
    draws = _generated_draws(sched, modules, inlined)
    shared = frozenset()
    follow = -1
    if share:
        shared = schedule.shared_positions(sched, original, edited)
        shared, follow = random_ops.limit_sharing(shared, lambda i: sched.share_plan[i][0], draws[1], draws[0],
                                                  sched.counter_pos)
    recipes = {key: recipe for key, (recipe, _) in inlined.items()}
    options = (shared, progress is not None, cancel is not None, tuple(recipes.get(k) for k in sched.module_nodes),
               draws, follow)
    prog = sched.programs.pop(options, None)  # re-inserted below: the dict runs least recently used first
    if prog is None:
        prog = codegen.generate(sched, shared, progress is not None, cancel is not None, recipes, draws, follow)
        if len(sched.programs) >= 4:
            sched.programs.pop(next(iter(sched.programs)))
    sched.programs[options] = prog
    table = codegen.fetch_table(prog, sched, graphs, modules, inlined)
    return sched, prog, table, shared


def _generated_draws(sched: schedule.Schedule, modules: dict[tuple[str, int], Any], inlined: dict
                     ) -> tuple[frozenset[int], frozenset[int]]:
    """The positions of the nodes that may draw random numbers in (original, edited): the calls
    found with the schedule, plus the submodules that may draw in their current mode (``inlined``:
    ``module_inline.inline_values``, whose modules run their class's own forward)."""
    found = random_ops.drawing_modules(modules, inlined)
    if not found:
        return sched.draws
    odraw, edraw = sched.draws
    return (odraw | {pos for side, pos in found if side == "original"},
            edraw | {pos for side, pos in found if side == "edited"})


def _run_prepared(sched: schedule.Schedule, prog: codegen.Program, table: list, shared: frozenset[int],
                  original: torch.fx.GraphModule, edited: torch.fx.GraphModule, args: tuple[Any, ...], *,
                  rtol: float, atol: float, progress: ProgressFn | None, cancel: CancelFn | None,
                  seed: int | None) -> DivergenceResult:
    """Run a prepared generated program and turn what it found into rows."""
    onodes, enodes = sched.onodes, sched.enodes
    differing: dict[int, Any] = {}   # edited position -> TensorDiff, for the pairs not equal
    plain_pairs: set[int] = set()     # positions compared as two plain tensors of one dtype and shape

    scratch = DiffScratch()

    def expected_equal(i: int, ref: Any, val: Any) -> None:
        d = node_diff(ref, val, rtol=rtol, atol=atol, expect_equal=True, scratch=scratch)
        if d is not None:
            differing[i] = d

    def expected_different(i: int, ref: Any, val: Any) -> None:
        d = node_diff(ref, val, rtol=rtol, atol=atol, expect_equal=False, scratch=scratch)
        if d is not None:
            differing[i] = d

    def record(i: int, ref: Any, val: Any) -> None:
        if (type(ref) is torch.Tensor and type(val) is torch.Tensor and ref.dtype == val.dtype
                and ref.shape == val.shape and ref.device == val.device):
            plain_pairs.add(i)

    def expected_equal_recorded(i: int, ref: Any, val: Any) -> None:
        record(i, ref, val)
        expected_equal(i, ref, val)

    def expected_different_recorded(i: int, ref: Any, val: Any) -> None:
        record(i, ref, val)
        expected_different(i, ref, val)

    def rearranged(i: int, source: int, ref: Any, val: Any) -> None:
        # Both values rearrange the source pair's elements alike (``schedule._rearranges``): when
        # that pair was two plain tensors of one shape and so is this one, its result holds.
        if source in plain_pairs and type(ref) is torch.Tensor and type(val) is torch.Tensor and ref.shape == val.shape:
            plain_pairs.add(i)
            if source in differing:
                differing[i] = differing[source]
        else:
            expected_different_recorded(i, ref, val)

    def check_cancel() -> None:
        if cancel():
            raise RunCancelled("The run was cancelled.")

    oin = iter(original.graph.process_inputs(*args))
    ein = iter(edited.graph.process_inputs(*args))
    _reseed_for(args, seed)
    rng = (random_ops.GraphGenerators(_input_device(args)),) if prog.rng else ()
    failure = None
    out_of_memory = False
    stop = len(enodes)
    with torch.no_grad(), scratch:
        try:
            prog.fn(oin, ein, table, expected_equal, expected_different, expected_equal_recorded,
                    expected_different_recorded, rearranged, check_cancel, progress, *rng)
        except Exception as exc:  # noqa: BLE001 - a node's exception is reported, anything else raised
            owner = codegen.failing_line(prog, exc)
            if owner is None:
                raise
            graph, pos, stop = owner
            node = (onodes if graph == "original" else enodes)[pos]
            failure = _failure(graph, node, exc, node.meta.get("fxs_id"))
            out_of_memory = _is_oom(exc)
    del table, oin, ein
    with _gc_paused():
        result = _rows(sched, shared, differing, stop, failure)
    if out_of_memory:
        _release_memory()
    return result


def _rows(sched: schedule.Schedule, shared: frozenset[int], differing: dict[int, Any], stop: int,
          failure: NodeFailure | None) -> DivergenceResult:
    """The result of a generated run that stopped before edited node ``stop`` (all: its length)."""
    result = DivergenceResult(removed=list(sched.removed), failure=failure)
    rows = result.nodes
    for i in range(stop):
        index, eid, name, op, target, counterpart = sched.rows[i]
        if i in shared:
            rows.append(NodeDivergence(index, eid, name, op, target, counterpart, "equal", 0.0, 0.0, shared=True))
        elif counterpart is None:
            rows.append(NodeDivergence(index, eid, name, op, target, None, "no_counterpart"))
        elif i not in differing:
            rows.append(NodeDivergence(index, eid, name, op, target, counterpart, "equal", 0.0, 0.0))
        else:
            d = differing[i]
            row = NodeDivergence(index, eid, name, op, target, counterpart, "close" if d.allclose else "diverged",
                                 d.max_abs, d.score, d.note)
            if result.first is None and row.status == "diverged":
                result.first = row
            rows.append(row)
    if failure is not None and failure.graph == "edited":
        index, eid, name, op, target, counterpart = sched.rows[stop]
        rows.append(NodeDivergence(index, eid, name, op, target, counterpart, "error", note=failure.message))
    return result


def _run_interpreted(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, args: tuple[Any, ...],
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
                                                lambda i: [edit.position[n] for n in edit.nodes[i]._input_nodes],
                                                edraw, odraw, counter_pos)
        shared = {edit.nodes[i] for i in kept}
    total = len(edit.nodes)
    every = max(1, total // 100)

    def release_original(nodes: list[torch.fx.Node]) -> None:
        for n in nodes:
            if n not in pending:
                orig.release(n)

    _reseed_for(args, seed)
    rng = random_ops.GraphGenerators(_input_device(args)) if odraw or edraw else None
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
                        for inp in onode._input_nodes:
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
        _release_memory()


def _release_memory() -> None:
    """After an out-of-memory error: collect what the failed run left, return cached device memory."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
