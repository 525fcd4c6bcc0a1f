"""Regions around a node and the subgraphs that compute it from captured values.

A region is a set of edited nodes that computes the target node; every value it reads from outside
(a *cut*) becomes an input of the subgraph, fed with the **original** graph's value of that node's
counterpart. The original's subgraph is the matching region of the original graph: its nodes whose
counterpart is in the edited region, plus those the edits removed; it is cut wherever the original
value is known. Both subgraphs then start from the same, original values, so what differs between
them happens inside the region.

Nodes that are never cut: ``get_attr`` (weights travel with the subgraph) and edited nodes without
a counterpart (no original value exists for them). Graph inputs are always cut.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import torch
import torch.fx


@dataclass
class Pairs:
    """The edited nodes paired with the original's (``forward``: edited -> original) and back."""

    forward: dict[torch.fx.Node, torch.fx.Node]
    backward: dict[torch.fx.Node, torch.fx.Node]


def pair_nodes(original: torch.fx.Graph, edited: torch.fx.Graph, key: Callable[[torch.fx.Node], Hashable | None]) -> Pairs:
    """Pair the nodes of both graphs whose ``key`` (stable id, name, structural key) is equal."""
    by_key = {}
    for node in original.nodes:
        k = key(node)
        if k is not None:
            by_key.setdefault(k, node)
    forward = {}
    for node in edited.nodes:
        k = key(node)
        if k is not None and k in by_key:
            forward[node] = by_key[k]
    return Pairs(forward, {o: e for e, o in forward.items()})


def distances(target: torch.fx.Node, free: Callable[[torch.fx.Node], bool], limit: int) -> dict[torch.fx.Node, int]:
    """Hops from each ancestor of ``target`` up to it (at most ``limit``); a ``free`` node costs no hop
    (a chain of nodes added by an edit, or a weight, counts as one step of its inputs)."""
    found = {target: 0}
    queue = collections.deque([target])
    while queue:
        node = queue.popleft()
        for arg in node.all_input_nodes:
            step = found[node] + (0 if free(arg) else 1)
            if step <= limit and step < found.get(arg, limit + 1):
                found[arg] = step
                if step == found[node]:
                    queue.appendleft(arg)
                else:
                    queue.append(arg)
    return found


def edited_region(target: torch.fx.Node, interior: set[torch.fx.Node], pairs: Pairs,
                  known: Callable[[torch.fx.Node], bool]) -> set[torch.fx.Node]:
    """The edited nodes computing ``target`` with every paired node outside ``interior`` cut
    (unless its original value is not ``known``: then it is computed too)."""
    return _walk(target, pairs.forward, lambda node, partner: node in interior or not known(partner))


def original_region(target: torch.fx.Node, edited: set[torch.fx.Node], pairs: Pairs,
                    known: Callable[[torch.fx.Node], bool]) -> set[torch.fx.Node]:
    """The original nodes computing ``target`` whose counterpart is in the ``edited`` region (or that
    have none: removed by an edit); cut elsewhere, where the original value is ``known``."""
    return _walk(target, pairs.backward, lambda node, partner: partner in edited or not known(node))


def _walk(target: torch.fx.Node, partners: dict[torch.fx.Node, torch.fx.Node],
          keep_paired: Callable[[torch.fx.Node, torch.fx.Node], bool]) -> set[torch.fx.Node]:
    """``target`` and its ancestors up to the cuts: graph inputs are always cut, weights and nodes
    without a partner never, a paired node when ``keep_paired(node, partner)`` is false."""
    region = {target}
    stack = [target]
    while stack:
        for arg in stack.pop().all_input_nodes:
            if arg in region or arg.op == "placeholder":
                continue
            partner = partners.get(arg)
            if arg.op == "get_attr" or partner is None or keep_paired(arg, partner):
                region.add(arg)
                stack.append(arg)
    return region


def boundary(region: set[torch.fx.Node]) -> list[torch.fx.Node]:
    """The nodes outside ``region`` whose values it reads, in graph order."""
    outside = {arg for node in region for arg in node.all_input_nodes if arg not in region}
    return [node for node in _in_order(region, outside) if node in outside]


def _in_order(*groups: Iterable[torch.fx.Node]) -> list[torch.fx.Node]:
    nodes = {n for group in groups for n in group}
    if not nodes:
        return []
    graph = next(iter(nodes)).graph
    return [n for n in graph.nodes if n in nodes]


def subgraph(gm: torch.fx.GraphModule, region: set[torch.fx.Node], target: torch.fx.Node,
             input_key: Callable[[torch.fx.Node], str], class_name: str) -> tuple[torch.fx.GraphModule, list[str]]:
    """A module computing ``target`` from the values of the region's boundary, and the keys of its
    inputs in order (``input_key`` of each boundary node: the name its captured value is stored under)."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    keys = []
    for node in boundary(region):
        key = input_key(node)
        env[node] = graph.placeholder(key if key.isidentifier() else "value")
        keys.append(key)
    for node in _in_order(region):
        env[node] = graph.node_copy(node, lambda arg: env[arg])
    graph.output(env[target])
    module = torch.fx.GraphModule(gm, graph, class_name=class_name)
    module.training = gm.training  # not train(): the submodules are the graph's own objects, shared
    return module, keys


def count_nodes(module: torch.fx.GraphModule) -> int:
    """The nodes of a graph, inputs, weights and output included (what ``inspect`` lists)."""
    return len(module.graph.nodes)
