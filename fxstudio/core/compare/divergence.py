"""Per-node divergence: the original and the edited graph run side by side, node by node.

``run_divergence`` runs the lockstep schedule (``divergence_schedule``) as one generated function
(``divergence_codegen``) and falls back to two ``torch.fx.Interpreter`` instances stepped in
lockstep (``divergence_interpreted``) for what the generator cannot express; both give the
same rows (``divergence_result``). Each edited node runs, then the original graph is advanced
just far enough to produce the node's counterpart (matched by stable id, by name, or by structure
for an exported file: ``node_pairing``), the two values are compared at once, and every value is
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
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx

from fxstudio.core.compare import divergence_codegen as codegen
from fxstudio.core.compare import divergence_schedule as schedule
from fxstudio.core.compare import module_inline
from fxstudio.core.compare import random_ops
from fxstudio.core.compare.divergence_codegen import Unsupported
from fxstudio.core.compare.divergence_interpreted import _Stepper, run_interpreted  # noqa: F401 (_Stepper: tests)
from fxstudio.core.compare.divergence_result import (DivergenceResult, NodeDivergence, NodeFailure, RunCancelled,  # noqa: F401
                                             _failure, _is_oom, format_target)
from fxstudio.core.compare.graph_diff import match_key
from fxstudio.core.inplace_ops import clone_tensors, graph_may_mutate, may_mutate, mutating_nodes  # noqa: F401
from fxstudio.core.compare.run_metrics import DiffScratch, node_diff
from fxstudio.core.compare.run_support import input_device, release_memory, reseed_for

ProgressFn = Callable[[float, str], None]
CancelFn = Callable[[], bool]


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
    return run_interpreted(original, edited, args, key, rtol=rtol, atol=atol, progress=progress,
                            cancel=cancel, seed=seed, share=share)


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
    graphs = {"original": original, "edited": edited}
    modules = codegen.fetch_modules(sched, graphs)
    inlined = module_inline.inline_values(modules)
    writes = _generated_writes(sched, modules, inlined)
    draws = _generated_draws(sched, modules, inlined)
    shared = frozenset()
    follow = -1
    if share and writes is None:  # a graph that writes in place shares nothing (as the Interpreter run)
        shared = schedule.shared_positions(sched, original, edited)
        shared, follow = random_ops.limit_sharing(shared, lambda i: sched.share_plan[i][0], draws[1], draws[0],
                                                  sched.counter_pos)
    recipes = {key: recipe for key, (recipe, _) in inlined.items()}
    options = (shared, progress is not None, cancel is not None, tuple(recipes.get(k) for k in sched.module_nodes),
               draws, follow, writes)
    prog = sched.programs.pop(options, None)  # re-inserted below: the dict runs least recently used first
    if prog is None:
        prog = codegen.generate(sched, shared, progress is not None, cancel is not None, recipes, draws, follow,
                                writes)
        if len(sched.programs) >= 4:
            sched.programs.pop(next(iter(sched.programs)))
    sched.programs[options] = prog
    table = codegen.fetch_table(prog, sched, graphs, modules, inlined)
    return sched, prog, table, shared


def _generated_writes(sched: schedule.Schedule, modules: dict[tuple[str, int], Any],
                      inlined: dict) -> frozenset[int] | None:
    """None when neither graph may write in place (``may_mutate``), else the positions of the
    original's nodes that may: the calls found with the schedule plus the submodules whose
    ``inplace`` flag is set now (``inlined``: ``module_inline.inline_values``, exact torch classes)."""
    owrites, ewrites = sched.mutates
    flagged = codegen.inplace_modules(modules, inlined)
    if flagged:
        owrites = owrites | {pos for side, pos in flagged if side == "original"}
        ewrites = ewrites | {pos for side, pos in flagged if side == "edited"}
    return owrites if owrites or ewrites else None


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

    fresh = prog.writes is not None  # each graph gets its own inputs when either may write into them
    oin = iter(original.graph.process_inputs(*(clone_tensors(args) if fresh else args)))
    ein = iter(edited.graph.process_inputs(*(clone_tensors(args) if fresh else args)))
    reseed_for(args, seed)
    rng = (random_ops.GraphGenerators(input_device(args)),) if prog.rng else ()
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
        release_memory()
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


