"""Which module groups a large graph opens folded, and which stay folded when one is opened (#28).

Laying out 200,000 nodes takes 10 s; a viewer that waits for it is not on screen in 3 s. As Model
Explorer does, a graph over ``FOLD_ABOVE`` nodes opens with its modules folded, at the deepest
module level that leaves at most ``CARDS`` cards: a decoder's layers at their attention and MLP, a
chain of 47,000 blocks as one card. Opening a folded module shows its contents by the same rule: its
child modules stay folded when showing them all would pass ``CARDS``. A folded module is never laid
out until it is opened.

A module path's depth is its number of dotted parts (``blocks`` 1, ``blocks.7`` 2); a node belongs to
the group of its module path and every ancestor of it (``groups.py``).
"""

from __future__ import annotations

from collections import Counter

from fxstudio.core.node_text import META_MODULE_PATH

FOLD_ABOVE = 20_000
"""Graphs with more nodes than this open folded (a full layout of 20,000 nodes takes about 1 s)."""
CARDS = 3_000
"""The most cards a fold leaves on screen, where the graph's modules allow it."""


def module_path_counts(graph) -> Counter:
    """How many nodes of ``graph`` (a ``torch.fx.Graph``) have each module path ('' for none)."""
    return Counter(node.meta.get(META_MODULE_PATH) or "" for node in graph.nodes)


def _depth(path: str) -> int:
    return path.count(".") + 1 if path else 0


def fold_inside(counts: Counter, inside: str = "", cards: int = CARDS) -> frozenset[str]:
    """The groups to fold so that what is shown of ``inside`` ('' the whole graph) is at most
    ``cards`` cards: every group at the deepest module level that fits, or at the level just
    under ``inside`` when none fits. Empty when everything fits unfolded."""
    top = _depth(inside)
    parts = {p: p.split(".") if p else [] for p, c in counts.items()
             if not inside or p == inside or p.startswith(inside + ".")}
    deepest = max(map(len, parts.values()), default=top)
    if sum(counts[p] for p in parts) <= cards or deepest <= top:
        return frozenset()
    at_depth = Counter(map(len, parts.values()))   # distinct paths per depth: a lower bound on groups
    for level in range(deepest, top, -1):
        loose = sum(counts[p] for p, split in parts.items() if len(split) < level)
        if loose + at_depth[level] > cards and level > top + 1:
            continue   # cannot fit: no need to name its groups
        groups = {".".join(split[:level]) for split in parts.values() if len(split) >= level}
        if loose + len(groups) <= cards or level == top + 1:
            return frozenset(groups)
    return frozenset()   # not reached: the loop returns at ``top + 1``


def opening_collapsed(graph, *, above: int = FOLD_ABOVE, cards: int = CARDS) -> frozenset[str]:
    """The groups ``graph`` opens folded: none up to ``above`` nodes, else ``fold_inside`` of it all."""
    if len(graph.nodes) <= above:
        return frozenset()
    return fold_inside(module_path_counts(graph), "", cards)


def opened_collapsed(graph, collapsed, path: str, *, above: int = FOLD_ABOVE,
                     cards: int = CARDS) -> frozenset[str]:
    """``collapsed`` after the user opens ``path``: without it, and, in a graph over ``above``
    nodes, with what ``fold_inside(path)`` folds (the contents it would take too many cards to show)."""
    rest = frozenset(p for p in collapsed if p != path)
    if len(graph.nodes) <= above:
        return rest
    return rest | fold_inside(module_path_counts(graph), path, cards)
