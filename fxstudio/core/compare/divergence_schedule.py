"""The lockstep schedule of a node-by-node run: which original node answers each edited one.

``build_schedule`` matches the two graphs (by id, name or structural key), fixes the order in
which the original is advanced, the row texts, which edited nodes provably compute their
counterpart's value (the structural half of ``same_computation``; ``shared_positions`` checks the
weights part at each run) and which only rearrange an input already compared. Schedules are cached on the edited graph,
keyed by a ``fingerprint`` of both graphs; ``divergence_codegen`` turns one into a program.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.compare import random_ops
from fxstudio.core.compare.node_pairing import PAIR_META

_CACHE_ATTR = "_fxstudio_lockstep_cache"
_CACHE_SIZE = 4  # programs kept per edited graph (original graph, options)


class Unsupported(Exception):
    """The graphs hold something the generated runner does not express; use the Interpreter."""


@dataclass
class Schedule:
    """What the run needs of the two graphs, fixed by their structure and the match: counterparts,
    row texts, the nodes that may write in place, and the generated programs made so far."""

    fingerprint: tuple
    match: str                             # "id", "name" or "structure"
    keep: list                             # argument objects whose ids the fingerprint holds
    original_graph: torch.fx.Graph
    onodes: list[torch.fx.Node]
    enodes: list[torch.fx.Node]
    counter_pos: list[int]                 # per edited node: its counterpart's position, -1 if none
    removed: list[str]                     # original names without counterpart
    rows: list[tuple]                      # per edited node: (index, id, name, op, target text, counterpart name)
    expect_equal: list[bool]               # per edited node: same op and arguments as its counterpart, recursively
    share_plan: list[tuple | None]         # the structural half of same_computation (see _share_plan)
    rearranges: list[int]                  # per edited node: the input whose comparison it repeats, or -1
    mutates: tuple[frozenset[int], frozenset[int]]  # (original, edited) positions of nodes that may write in
                                                    # place whatever their submodules do (``may_mutate``)
    module_nodes: list[tuple[str, int]]    # ("original"|"edited", position) of call_module nodes
    draws: tuple[frozenset[int], frozenset[int]]  # call_function/call_method positions that may draw
                                                  # random numbers, in (original, edited); random_ops
    programs: dict[tuple, Any] = field(default_factory=dict)  # divergence_codegen.Program by options
    resolved: tuple | None = None          # submodules found last time, and the links to check (fetch_modules)


def fingerprint(nodes: Sequence[torch.fx.Node]) -> tuple[tuple, list]:
    """What a generated program depends on in one graph, and the objects to keep alive with it.

    Per node: the node, op, target, the *identity* of its argument tuple and keyword dict (fx
    replaces them on every change), name, ``fxs_id`` and structural key (``fxs_pair``). Identity,
    not equality: ``2 == 2.0`` but ``x * 2`` and ``x * 2.0`` differ, and literals are written into
    the code. The argument objects are returned to be kept with the fingerprint, so that their ids
    cannot be reused meanwhile.
    """
    keep = [(fx_compat.node_args(n), fx_compat.node_kwargs(n)) for n in nodes]
    return tuple([(n, n.op, n.target, id(a), id(kw), n.name, n.meta.get("fxs_id"), n.meta.get(PAIR_META))
                  for n, (a, kw) in zip(nodes, keep)]), keep


_KEY_FIELD = {"name": 5, "id": 6, "structure": 7}  # where ``fingerprint`` keeps each match key


def match_keys(prints: tuple, match: str) -> list[Hashable | None]:
    """The match key of every node of a fingerprint (``graph_diff.match_key``'s, read off it)."""
    i = _KEY_FIELD[match]
    return [p[i] for p in prints]


def cached_schedule(original: torch.fx.GraphModule, edited: torch.fx.GraphModule, prints: tuple,
                    match: str) -> Schedule | None:
    """The schedule built earlier for these graphs if neither changed since, else None."""
    cache = getattr(edited.graph, _CACHE_ATTR, None)
    if not cache:
        return None
    for sched in cache:
        if sched.original_graph is not original.graph or sched.match != match:
            continue
        try:
            if sched.fingerprint == prints:
                cache.remove(sched)
                cache.insert(0, sched)
                return sched
        except Exception:  # noqa: BLE001 - a target whose == is not a bool: not the same
            pass
    return None


def remember_schedule(edited: torch.fx.GraphModule, sched: Schedule) -> None:
    """Keep ``sched`` on the edited graph: it lives and dies with the graph (a copy of the graph
    does not carry it), and holds the original graph while it is there."""
    cache = getattr(edited.graph, _CACHE_ATTR, None)
    if cache is None:
        cache = []
        try:
            setattr(edited.graph, _CACHE_ATTR, cache)
        except AttributeError:
            return
    cache.insert(0, sched)
    del cache[_CACHE_SIZE:]


def build_schedule(original: torch.fx.GraphModule, edited: torch.fx.GraphModule,
                   onodes: list[torch.fx.Node], enodes: list[torch.fx.Node], match: str,
                   okeys: list[Hashable | None], ekeys: list[Hashable | None], prints: tuple, keep: list,
                   key: Callable[[torch.fx.Node], Hashable | None], target_text: Callable[[torch.fx.Node], str],
                   may_mutate: Callable[[torch.fx.Node], bool]) -> Schedule:
    """Match the graphs and work out everything about the run that their structure fixes.

    ``may_mutate(node)`` is asked of every node but ``call_module`` ones (only their
    ``inplace=True`` keyword counts here), whose submodule's ``inplace`` flag is read at each run
    (``module_nodes``). Raises ``Unsupported`` when a match key
    appears twice in a graph (the Interpreter path keeps its exact release order then).
    """
    for keys in (okeys, ekeys):
        present = [k for k in keys if k is not None]
        if len(set(present)) != len(present):
            raise Unsupported("a match key appears twice")
    orig_pos = {k: i for i, k in enumerate(okeys) if k is not None}
    counter_pos = [orig_pos.get(k, -1) if k is not None else -1 for k in ekeys]
    edited_keys = set(ekeys) - {None}
    removed = [n.name for n, k in zip(onodes, okeys) if k not in edited_keys]
    text = memoized_by_target(target_text)
    rows = [(i, n.meta.get("fxs_id"), n.name, n.op, text(n), onodes[p].name if p >= 0 else None)
            for i, (n, p) in enumerate(zip(enodes, counter_pos))]
    mutates: list[frozenset[int]] = []
    module_nodes: list[tuple[str, int]] = []
    draws: list[frozenset[int]] = []
    for side, nodes in (("original", onodes), ("edited", enodes)):
        drawing = []
        writing = []
        for pos, node in enumerate(nodes):
            if node.op == "call_module":
                module_nodes.append((side, pos))  # the submodule's inplace flag is read at each run
                if node.kwargs.get("inplace") is True:
                    writing.append(pos)
                continue
            if may_mutate(node):
                writing.append(pos)
            if node.op in ("call_function", "call_method") and random_ops.function_may_draw(node):
                drawing.append(pos)
        draws.append(frozenset(drawing))
        mutates.append(frozenset(writing))
    plan = _share_plan(onodes, enodes, counter_pos, key)
    return Schedule(prints, match, keep, original.graph, onodes, enodes, counter_pos, removed, rows,
                    _expect_equal(plan), plan, _rearranges(enodes, counter_pos, plan), (mutates[0], mutates[1]),
                    module_nodes,
                    (draws[0], draws[1]))


def _share_plan(onodes: list[torch.fx.Node], enodes: list[torch.fx.Node], counter_pos: list[int],
                key: Callable[[torch.fx.Node], Hashable | None]) -> list[tuple | None]:
    """The structural half of ``same_computation``, per edited node: None when the node can never
    be shared (no counterpart, other op/target/arguments, inputs wired to other counterparts, a
    placeholder at another position), else ``(edited positions of its inputs, state check)`` with
    the state check ``("attr" | "module", original target, edited target)`` or None."""
    from fxstudio.core.same_computation import _signature

    position = {n: i for i, n in enumerate(enodes)}
    counterpart = {n: onodes[p] for n, p in zip(enodes, counter_pos) if p >= 0}
    oplaces = [n for n in onodes if n.op == "placeholder"]
    eplaces = [n for n in enodes if n.op == "placeholder"]
    plan: list[tuple | None] = []
    for node in enodes:
        other = counterpart.get(node)
        inputs = list(fx_compat.node_input_nodes(node))
        if other is None or any(counterpart.get(inp) not in fx_compat.node_input_nodes(other) for inp in inputs):
            plan.append(None)
            continue
        try:
            if _signature(node, key) != _signature(other, key):
                plan.append(None)
                continue
        except Exception:  # noqa: BLE001 - uncomparable constants: not provably the same
            plan.append(None)
            continue
        if node.op == "placeholder" and (other not in oplaces or oplaces.index(other) != eplaces.index(node)):
            plan.append(None)
            continue
        check = (node.op, other.target, node.target) if node.op in ("get_attr", "call_module") else None
        plan.append((tuple(position[inp] for inp in inputs), check))
    return plan


# Ops whose output holds exactly its first argument's elements, rearranged: the same elements in
# another shape (by the shapes alone) or another order (by constant dimension arguments).
_BY_SHAPE_METHODS = frozenset({"view", "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "clone", "detach"})
_BY_DIMS_METHODS = frozenset({"transpose", "permute", "t", "swapaxes", "swapdims", "movedim"})
_BY_SHAPE_FUNCTIONS = frozenset({torch.reshape, torch.flatten, torch.squeeze, torch.unsqueeze, torch.clone,
                                 torch.detach, torch.ops.aten.view.default, torch.ops.aten.reshape.default,
                                 torch.ops.aten._unsafe_view.default, torch.ops.aten.squeeze.dim,
                                 torch.ops.aten.squeeze.dims, torch.ops.aten.unsqueeze.default,
                                 torch.ops.aten.clone.default, torch.ops.aten.flatten.using_ints})
_BY_DIMS_FUNCTIONS = frozenset({torch.transpose, torch.permute, torch.t, torch.swapaxes, torch.swapdims,
                                torch.movedim, torch.ops.aten.transpose.int, torch.ops.aten.permute.default,
                                torch.ops.aten.t.default})


def _rearranges(enodes: list[torch.fx.Node], counter_pos: list[int], plan: list[tuple | None]) -> list[int]:
    """Per edited node: the position of its first argument when the node only rearranges that
    argument's elements exactly as its counterpart rearranges the counterpart's (same op and
    arguments: ``plan``), else -1.

    The comparison of such a pair is the comparison of the argument pair with the elements
    permuted alike, and every figure of it (equality, max error, score, NaN matching) is
    invariant under a common permutation; the run reuses the argument pair's result when both
    pairs are plain tensors of one shape (``_rearranged`` checks it at run time)."""
    position = {n: i for i, n in enumerate(enodes)}
    out = []
    for node, pos, step in zip(enodes, counter_pos, plan):
        source = node.args[0] if node.args else None
        found = -1
        if step is not None and pos >= 0 and isinstance(source, torch.fx.Node) and counter_pos[position[source]] >= 0:
            rest = list(node.args[1:]) + list(node.kwargs.values())
            flat: list[Any] = []
            torch.fx.node.map_aggregate(rest, flat.append)
            constant = not any(isinstance(a, torch.fx.Node) for a in flat)
            typed = any(isinstance(a, (torch.dtype, torch.Tensor)) for a in flat)  # x.view(dtype) reinterprets
            target = node.target
            if node.op == "call_method":
                by_shape, by_dims = target in _BY_SHAPE_METHODS, target in _BY_DIMS_METHODS
            elif node.op == "call_function":
                try:
                    by_shape, by_dims = target in _BY_SHAPE_FUNCTIONS, target in _BY_DIMS_FUNCTIONS
                except TypeError:  # an unhashable target
                    by_shape = by_dims = False
            else:
                by_shape = by_dims = False
            if not typed and (by_shape or (by_dims and constant)):
                found = position[source]
        out.append(found)
    return out


def _expect_equal(plan: list[tuple | None]) -> list[bool]:
    """Per edited node: structurally the same computation as its counterpart, inputs included
    (weights are not compared). Only a guess of which comparison comes out equal, to try the
    cheaper test first; results never depend on it."""
    out: list[bool] = []
    for step in plan:
        out.append(step is not None and all(out[j] for j in step[0]))
    return out


def shared_positions(sched: Schedule, original: torch.fx.GraphModule, edited: torch.fx.GraphModule) -> frozenset[int]:
    """Positions of the edited nodes ``same_computation(original, edited, key)`` returns, from the
    cached structural half plus the state checks (attribute tensors, submodules) made now."""
    from fxstudio.core.same_computation import _same_tensor, same_module

    memos: dict[int, dict[str, Any]] = {id(original): {}, id(edited): {}}

    def attr_or_none(module: torch.nn.Module, target: str) -> Any:
        try:  # same_computation's fetch_path (None when missing), with the walk memoised
            return fetch_attr(module, target, memos[id(module)])
        except Unsupported:
            return None

    same: set[int] = set()
    verdicts: dict[str, bool] = {}
    with torch.no_grad():
        for i, step in enumerate(sched.share_plan):
            if step is None or not same.issuperset(step[0]):
                continue
            check = step[1]
            if check is not None:
                op, otarget, etarget = check
                if op == "get_attr":
                    if not _same_tensor(attr_or_none(original, otarget), attr_or_none(edited, etarget)):
                        continue
                else:
                    if etarget not in verdicts:
                        verdicts[etarget] = same_module(attr_or_none(original, otarget), attr_or_none(edited, etarget))
                    if not verdicts[etarget]:
                        continue
            same.add(i)
    return frozenset(same)


def memoized_by_target(text_of: Callable[[torch.fx.Node], str]) -> Callable[[torch.fx.Node], str]:
    """``text_of`` remembered per node target: graphs call the same few targets over and over."""
    texts: dict[Any, str] = {}

    def text(node: torch.fx.Node) -> str:
        t = node.target
        try:
            return texts[t] if t in texts else texts.setdefault(t, text_of(node))
        except TypeError:  # an unhashable target
            return text_of(node)

    return text


_MISSING = object()


def fetch_attr(module: torch.nn.Module, target: str, memo: dict[str, Any] | None = None) -> Any:
    """``Interpreter.fetch_attr``: the attribute at a dotted path; ``Unsupported`` when missing.

    Submodules are read from ``_modules`` directly (what ``getattr`` finds for them, without
    ``nn.Module.__getattr__``), and ``memo`` keeps the paths resolved so far (``blocks.0``)."""
    if memo is not None:
        found = memo.get(target, _MISSING)
        if found is not _MISSING:
            return found
    parent, _, atom = target.rpartition(".")
    obj = fetch_attr(module, parent, memo) if parent else module
    attrs = getattr(obj, "__dict__", None)
    children = attrs.get("_modules") if attrs is not None else None
    if children is not None and atom in children and atom not in attrs:
        found = children[atom]
    else:
        try:
            found = getattr(obj, atom)
        except AttributeError:
            raise Unsupported(f"no attribute {target}") from None
    if memo is not None:
        memo[target] = found
    return found
