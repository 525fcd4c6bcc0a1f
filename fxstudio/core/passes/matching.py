"""Matching the nodes of a graph before and after a pass, so stable node ids survive it.

Nodes are matched by name first (same name and same kind), then, among the rest, by position and
target: the longest common runs of (kind, target) in graph order (``difflib``). Unmatched old
nodes were removed by the pass, unmatched new ones were added.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

import torch.fx


def _target_key(node: torch.fx.Node) -> Any:
    target = node.target
    return (node.op, target if isinstance(target, str) else ("obj", id(target)))


def match_nodes(old: Sequence[torch.fx.Node], new: Sequence[torch.fx.Node]) -> dict[torch.fx.Node, torch.fx.Node]:
    """``{new node: old node}`` for the nodes of ``new`` that are the same node as one of ``old``."""
    by_name = {n.name: n for n in old}
    matched: dict[torch.fx.Node, torch.fx.Node] = {}
    taken: set[torch.fx.Node] = set()
    for node in new:
        twin = by_name.get(node.name)
        if twin is not None and twin.op == node.op and twin not in taken:
            matched[node] = twin
            taken.add(twin)
    rest_old = [n for n in old if n not in taken]
    rest_new = [n for n in new if n not in matched]
    if rest_old and rest_new:
        keys_old = [_target_key(n) for n in rest_old]
        keys_new = [_target_key(n) for n in rest_new]
        matcher = difflib.SequenceMatcher(None, keys_old, keys_new, autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                matched[rest_new[block.b + k]] = rest_old[block.a + k]
    return matched


def same_call(old: torch.fx.Node, new: torch.fx.Node, old_key: Callable[[torch.fx.Node], Any],
              new_key: Callable[[torch.fx.Node], Any]) -> bool:
    """Whether a matched pair has the same kind, target, args and kwargs (nodes compared by key)."""
    if old.op != new.op or not _same_target(old.target, new.target):
        return False
    try:
        return bool(_keyed((old.args, old.kwargs), old_key) == _keyed((new.args, new.kwargs), new_key))
    except Exception:  # noqa: BLE001 - values whose == is not a bool (tensors): treat as changed
        return False


_NODE = object()  # marks a node's key in _keyed's result: no literal argument can equal it


def _keyed(value: Any, key: Callable[[torch.fx.Node], Any]) -> Any:
    """``value`` with each node replaced by ``(_NODE, key(node))``, for comparing arguments across
    graphs (``map_arg`` rebuilds the containers and calls ``key`` on nodes only)."""
    return torch.fx.node.map_arg(value, lambda n: (_NODE, key(n)))


def _same_target(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a is b
