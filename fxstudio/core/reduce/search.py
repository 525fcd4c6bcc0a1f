"""Finding the smallest region that still shows a divergence or an exception.

``reduce_graphs`` runs the node-by-node comparison (``compare.run_divergence``) to find the first
diverging or failing edited node (or takes the one asked for), captures the original graph's values
around it, then grows a region upstream of it a few hops at a time until the two subgraphs, fed the
same original values, show the problem again (the same exception type and message, or a difference
beyond tolerance). Last, it tries to cut the region at each of its nodes, farthest first, and keeps
every cut after which the problem still shows (delta debugging over the region's boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from fxstudio.core.compare import RunCancelled, match_key, run_divergence
from fxstudio.core.errors import FxStudioError, RunError
from fxstudio.core.inplace_ops import clone_tensors
from fxstudio.core.reduce import region as regions
from fxstudio.core.reduce.repro_check import first_line, judge

ProgressFn = Callable[[float, str], None]

_DEPTHS = (0, 1, 2, 3, 4, 6, 8, 12, 16)
_CAPTURE_DEPTH = _DEPTHS[-1] + 1
_NO_LIMIT = 1 << 30


class ReduceError(RunError):
    """Nothing to reduce (no divergence, a node that does not diverge), or a problem that no subgraph shows (exit 1)."""


@dataclass
class Reduction:
    """The subgraphs that still show the problem, the values they start from, and how it was found.

    ``original`` is None when the failing edited node has no counterpart. ``inputs`` maps each input
    key to its captured value; ``original_inputs`` / ``edited_inputs`` list the keys each subgraph
    takes, in order. ``expected`` is what ``repro_check.judge`` checks for; ``verdict`` its line.
    """

    node: str
    kind: str
    original: torch.fx.GraphModule | None
    edited: torch.fx.GraphModule
    original_inputs: list[str]
    edited_inputs: list[str]
    inputs: dict[str, Any]
    expected: dict[str, str]
    verdict: str
    rtol: float
    atol: float
    whole_nodes: tuple[int, int]
    trials: int = 0

    @property
    def sub_nodes(self) -> tuple[int, int]:
        """Node counts of the (original, edited) subgraphs (0: no original subgraph)."""
        return (regions.count_nodes(self.original) if self.original is not None else 0,
                regions.count_nodes(self.edited))


def reduce_graphs(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, args: tuple[Any, ...], *,
                  node: str | None = None, rtol: float = 1e-5, atol: float = 1e-6, match: str = "id",
                  seed: int | None = 0, progress: ProgressFn | None = None,
                  cancel: Callable[[], bool] | None = None) -> Reduction:
    """Shrink the first divergence or exception of ``edited`` against ``original`` on ``args`` (or
    the one at edited node ``node``) to the smallest pair of subgraphs that still shows it.

    Raises ``ReduceError`` when there is nothing to reduce or no subgraph shows it, and
    ``RunCancelled`` when ``cancel()`` turns true.
    """
    report = progress or (lambda fraction, message: None)
    stop = cancel or (lambda: False)
    report(0.0, "Running both graphs node by node")
    result = run_divergence(original, edited, args, rtol=rtol, atol=atol, match=match, seed=seed,
                            progress=lambda f, m: report(0.4 * f, m), cancel=cancel)
    if result.failure is not None and result.failure.graph == "original":
        raise ReduceError(f"{result.failure.describe()} Only the edited graph's problems can be reduced.")
    target_name, kind = _target(result, node)
    target = _node_named(edited.graph, target_name)
    pairs = regions.pair_nodes(original.graph, edited.graph, match_key(match))
    partner = pairs.forward.get(target)
    if kind == "divergence" and partner is None:
        raise ReduceError(f"%{target_name} was added by the edits: it has no original value to diverge from.")

    report(0.45, "Capturing the original's values")
    captured = _capture(original, args, _wanted(original, target, partner, pairs), stop)
    search = _Search(original, edited, target, partner, pairs, captured, rtol, atol, stop)
    if kind == "exception":
        search.expected = search.exception_of_whole()
    return search.run(target_name, kind, report)


def _target(result, node: str | None) -> tuple[str, str]:
    """(edited node name, "divergence" or "exception") to reduce."""
    failed = result.failure.node_name if result.failure is not None else None
    if node is None:
        if failed is not None:
            return failed, "exception"
        if result.first is None:
            raise ReduceError("The edited graph does not diverge from the original within tolerance and raises "
                              "nothing: there is nothing to reduce.")
        return result.first.name, "divergence"
    if node.startswith("%"):
        node = node[1:]
    if node == failed:
        return node, "exception"
    for row in result.nodes:
        if row.name == node:
            if row.status != "diverged":
                raise ReduceError(f"%{node} does not diverge from the original (status: {row.status}).")
            return node, "divergence"
    if failed is not None:
        raise ReduceError(f"%{node} was not reached: the edited graph raises first, at %{failed}.")
    raise FxStudioError(f"The edited graph has no node %{node}.")  # bad usage (exit 2)


def _node_named(graph: torch.fx.Graph, name: str) -> torch.fx.Node:
    for node in graph.nodes:
        if node.name == name:
            return node
    raise FxStudioError(f"The edited graph has no node %{name}.")


def _wanted(original: torch.fx.GraphModule, target: torch.fx.Node, partner: torch.fx.Node | None,
            pairs: regions.Pairs) -> set[torch.fx.Node]:
    """The original nodes whose values a region of up to ``_CAPTURE_DEPTH`` hops may be cut at."""
    near = regions.distances(target, lambda n: n not in pairs.forward or n.op == "get_attr", _CAPTURE_DEPTH)
    wanted = {pairs.forward[n] for n in near if n in pairs.forward}
    if partner is not None:
        wanted |= set(regions.distances(partner, lambda n: n.op == "get_attr", _CAPTURE_DEPTH))
    wanted |= {n for n in original.graph.nodes if n.op == "placeholder"}
    return {n for n in wanted if n.op != "get_attr"}


def _capture(gm: torch.fx.GraphModule, args: tuple[Any, ...], wanted: set[torch.fx.Node],
             stop: Callable[[], bool]) -> dict[torch.fx.Node, Any]:
    """The values of the ``wanted`` nodes in a run of ``gm`` on ``args`` (copied: later in-place ops
    do not change them)."""
    captured: dict[torch.fx.Node, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            if stop():
                raise RunCancelled("The reduction was cancelled.")
            value = super().run_node(n)
            if n in wanted:
                captured[n] = clone_tensors(value)
            return value

    with torch.no_grad():
        Recorder(gm).run(*clone_tensors(args))
    return captured


def _inputs_only(node: torch.fx.Node) -> bool:
    return node.op == "placeholder"


class _Search:
    """One reduction's state: the graphs, the pairing, the captured values, the trials so far."""

    def __init__(self, original, edited, target, partner, pairs, captured, rtol, atol, stop):
        self.original, self.edited, self.target, self.partner = original, edited, target, partner
        self.pairs, self.captured, self.rtol, self.atol, self.stop = pairs, captured, rtol, atol, stop
        self.expected: dict[str, str] = {"kind": "divergence"}
        self.trials = 0
        self.known = lambda n: n in captured
        self.values = {n.name: v for n, v in captured.items()}  # by original node name: the subgraphs' input keys

    def exception_of_whole(self) -> dict[str, str]:
        """The exception the target raises when its whole upstream graph runs from the inputs."""
        known, self.known = self.known, _inputs_only
        try:
            _, _, _, error = self._try(set())
        finally:
            self.known = known
        if error is None:
            raise ReduceError(f"%{self.target.name} raises nothing when its upstream graph runs alone.")
        return {"kind": "exception", "type": type(error).__name__, "message": first_line(error)}

    def run(self, name: str, kind: str, report: ProgressFn) -> Reduction:
        """Grow a region until it shows the problem, then cut it down; the smallest found."""
        paired = lambda n: n in self.pairs.forward and n.op not in ("get_attr", "placeholder")  # noqa: E731
        near = regions.distances(self.target, lambda n: not paired(n), _NO_LIMIT)
        found = None
        for step, depth in enumerate(_DEPTHS):
            report(0.5 + 0.02 * step, f"Trying a region of {depth} hop(s) around %{name}")
            interior = {n for n, d in near.items() if d <= depth and paired(n)}
            if self._shows(interior):
                found = interior
                break
        if found is None:
            found = {n for n in near if paired(n)}
            self.known = _inputs_only  # the whole upstream graph, from the graph's inputs
            if not self._shows(found):
                raise ReduceError(f"The problem at %{name} does not show when the subgraph computing it runs alone "
                                  "(random ops, or state that the graphs change while they run).")
        ordered = sorted((n for n in found if n is not self.target), key=lambda n: -near.get(n, 0))
        chunks = [ordered]
        while chunks:  # delta debugging: cut a whole chunk of the region at once, else each half of it
            chunk = chunks.pop(0)
            done = max(0.0, 1 - len(found) / max(len(ordered), 1))
            report(0.7 + 0.3 * done, f"Cutting the region at {len(chunk)} node(s)")
            if self._shows(found - set(chunk)):
                found = found - set(chunk)
            elif len(chunk) > 1:
                chunks[:0] = [chunk[:len(chunk) // 2], chunk[len(chunk) // 2:]]
        return self._reduction(found, name, kind)

    def _shows(self, interior: set[torch.fx.Node]) -> bool:
        ok, *_ = self._try(interior)
        return ok

    def _subgraphs(self, interior: set[torch.fx.Node]):
        edited = regions.edited_region(self.target, interior | {self.target}, self.pairs, self.known)
        original = (regions.original_region(self.partner, edited, self.pairs, self.known)
                    if self.partner is not None else None)
        esub, ekeys = regions.subgraph(self.edited, edited, self.target,
                                       lambda n: self.pairs.forward[n].name, "EditedSubgraph")
        osub, okeys = (regions.subgraph(self.original, original, self.partner, lambda n: n.name, "OriginalSubgraph")
                       if original is not None else (None, []))
        return osub, okeys, esub, ekeys

    def _try(self, interior: set[torch.fx.Node]):
        """(shows the problem, verdict line, subgraphs, the edited subgraph's exception)."""
        if self.stop():
            raise RunCancelled("The reduction was cancelled.")
        self.trials += 1
        try:
            osub, okeys, esub, ekeys = self._subgraphs(interior)
        except Exception:  # noqa: BLE001 - a region torch.fx cannot make a module of is not a candidate
            return False, "", None, None
        values = self.values
        reference = value = error = None
        with torch.no_grad():
            if osub is not None:
                try:
                    reference = osub.forward(*clone_tensors(tuple(values[k] for k in okeys)))
                except Exception:  # noqa: BLE001 - a region of the original that cannot run alone
                    return False, "", None, None
            try:
                value = esub.forward(*clone_tensors(tuple(values[k] for k in ekeys)))
            except Exception as exc:  # noqa: BLE001 - the edited subgraph's exception is the finding
                error = exc
        ok, verdict = judge(self.expected, reference, value, error, self.rtol, self.atol)
        return ok, verdict, (osub, okeys, esub, ekeys), error

    def _reduction(self, interior: set[torch.fx.Node], name: str, kind: str) -> Reduction:
        ok, verdict, subgraphs, _ = self._try(interior)
        if not ok:  # cannot happen: the last region kept showed it
            raise ReduceError(f"The reduced subgraph of %{name} no longer shows the problem: {verdict}")
        osub, okeys, esub, ekeys = subgraphs
        inputs = {k: self.values[k] for k in dict.fromkeys(okeys + ekeys)}
        return Reduction(name, kind, osub, esub, okeys, ekeys, inputs, self.expected, verdict, self.rtol, self.atol,
                         (len(self.original.graph.nodes), len(self.edited.graph.nodes)), self.trials)
