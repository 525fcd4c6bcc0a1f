"""Which nodes an edit added, removed or changed: the original and edited graphs side by side.

Nodes are matched by stable id (``meta["fxs_id"]``) or by name. A matched node is *changed* when
its op, target or arguments differ, arguments being compared with node references replaced by the
referenced node's key (so a rename of an input alone does not mark its users changed).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx


def match_key(kind: str) -> Callable[[torch.fx.Node], Hashable | None]:
    """The function matching nodes across graphs: ``"id"`` (``meta['fxs_id']``) or ``"name"``."""
    if kind == "id":
        return lambda n: n.meta.get("fxs_id")
    if kind == "name":
        return lambda n: n.name
    raise ValueError(f"match must be 'id' or 'name', not {kind!r}")


@dataclass(frozen=True)
class GraphDiff:
    """Keys (stable ids, or names with ``match="name"``) of nodes added, removed and changed.

    ``renamed`` holds matched nodes whose name alone changed (they are not in ``changed``).
    """

    added: frozenset
    removed: frozenset
    changed: frozenset
    renamed: frozenset = frozenset()

    @property
    def empty(self) -> bool:
        """True when the graphs compute the same thing node for node."""
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, list]:
        """Sorted lists, for ``--json`` output and tests."""
        return {k: sorted(getattr(self, k), key=str) for k in ("added", "removed", "changed", "renamed")}


def _canonical(value: Any, key) -> Any:
    """A comparable form of an argument: nodes become ``("%", key)``, tensors their content."""
    if isinstance(value, torch.fx.Node):
        return ("%", key(value) if key(value) is not None else ("name", value.name))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_canonical(v, key) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _canonical(v, key)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _canonical(value.start, key), _canonical(value.stop, key), _canonical(value.step, key))
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), value.detach().cpu().reshape(-1).tolist()
                if value.numel() <= 64 else id(value))
    if isinstance(value, float) and value != value:
        return ("nan",)
    return value


def node_signature(node: torch.fx.Node, key) -> tuple:
    """What a node computes, in a comparable form: op, target, and arguments with references by key."""
    target = node.target if isinstance(node.target, str) else (
        getattr(node.target, "__module__", ""), getattr(node.target, "__qualname__", repr(node.target)))
    return (node.op, target, _canonical(node.args, key), _canonical(node.kwargs, key))


def graph_diff(original: torch.fx.Graph | torch.fx.GraphModule, edited: torch.fx.Graph | torch.fx.GraphModule,
               *, match: str = "id") -> GraphDiff:
    """Nodes added, removed and changed from ``original`` to ``edited`` (Qt-free, cheap: no run).

    A ``call_module`` node whose target path is unchanged but whose submodule was replaced is only
    seen as changed when a module is passed (then the submodules' types are compared too).
    """
    key = match_key(match)
    og = original.graph if isinstance(original, torch.fx.GraphModule) else original
    eg = edited.graph if isinstance(edited, torch.fx.GraphModule) else edited
    omods = dict(original.named_modules()) if isinstance(original, torch.fx.GraphModule) else None
    emods = dict(edited.named_modules()) if isinstance(edited, torch.fx.GraphModule) else None
    onodes: dict[Hashable, torch.fx.Node] = {key(n): n for n in og.nodes if key(n) is not None}
    enodes: dict[Hashable, torch.fx.Node] = {key(n): n for n in eg.nodes if key(n) is not None}
    added = frozenset(enodes.keys() - onodes.keys())
    removed = frozenset(onodes.keys() - enodes.keys())
    changed, renamed = set(), set()
    for k in onodes.keys() & enodes.keys():
        o, e = onodes[k], enodes[k]
        try:
            same = node_signature(o, key) == node_signature(e, key)
        except Exception:  # noqa: BLE001 - uncomparable constants: fall back to their text
            same = repr(node_signature(o, key)) == repr(node_signature(e, key))
        if same and o.op == "call_module" and omods is not None and emods is not None:
            same = type(omods.get(o.target)) is type(emods.get(e.target))
        if not same:
            changed.add(k)
        elif o.name != e.name:
            renamed.add(k)
    return GraphDiff(added, removed, frozenset(changed), frozenset(renamed))
