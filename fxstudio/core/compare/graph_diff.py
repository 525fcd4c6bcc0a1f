"""Which nodes an edit added, removed or changed: the original and edited graphs side by side.

Nodes are matched by stable id (``meta["fxs_id"]``), by name, or by structure (the keys a
``node_pairing.GraphPairing`` stamped, ``match="structure"``). A matched node is *changed* when
its op, target or arguments differ, arguments being compared with node references replaced by the
referenced node's key (so a rename of an input alone does not mark its users changed).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from fxstudio.core.compare.node_pairing import PAIR_META


def match_key(kind: str) -> Callable[[torch.fx.Node], Hashable | None]:
    """The function matching nodes across graphs: ``"id"`` (``meta['fxs_id']``), ``"name"``, or
    ``"structure"`` (``meta['fxs_pair']``, written by ``node_pairing.GraphPairing.stamp``)."""
    if kind == "id":
        return lambda n: n.meta.get("fxs_id")
    if kind == "name":
        return lambda n: n.name
    if kind == "structure":
        return lambda n: n.meta.get(PAIR_META)
    raise ValueError(f"match must be 'id', 'name' or 'structure', not {kind!r}")


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
    return GraphDiffer(original, match=match).diff(edited)


def _entry(n: torch.fx.Node, key, mods) -> tuple:
    """(node, signature or None when uncomparable, name, the object a ``call_module`` or
    ``get_attr`` reads: its submodule or tensor, or None)."""
    try:
        sig = node_signature(n, key)
    except Exception:  # noqa: BLE001 - compared through repr below
        sig = None
    held = None
    if mods is not None and n.op in ("call_module", "get_attr") and isinstance(n.target, str):
        held = _held(mods, n.target) if n.op == "get_attr" else _module(mods, n.target)
    return (n, sig, n.name, held)


def _module(mods, path: str):
    return mods(path) if callable(mods) else mods.get(path)


def _held(mods, target: str):
    """What ``get_attr`` ``target`` reads (a submodule's tensor or a submodule), or None."""
    owner_path, _, attr = target.rpartition(".")
    owner = _module(mods, owner_path)
    found = _module(mods, target)
    if found is not None or owner is None:
        return found
    return getattr(owner, attr, None)


def _same_tensor(a, b) -> bool:
    """The very tensor, or one equal to it in shape, dtype and every value (a deep copy's)."""
    if a is b:
        return True
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    try:
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
    except Exception:  # noqa: BLE001 - tensors that cannot be compared (meta, quantized): not the same
        return False


def _same_weights(a, b) -> bool:
    sa, sb = a.state_dict(keep_vars=True), b.state_dict(keep_vars=True)
    return sa.keys() == sb.keys() and all(_same_tensor(sa[k], sb[k]) for k in sa)


def _same_object(a, b, by_identity: bool) -> bool:
    """Whether a ``call_module`` or ``get_attr`` computes the same from ``a`` as from ``b``: the
    same object, or (``by_identity``: both graphs of one lineage, such as a document's original
    and edited modules, which share the weights no edit changed) a module of the same class and
    configuration holding the same tensors (the very ones, or equal ones: a deep copy's), so a
    fusion that rewrote a conv's weights shows as a change. Across two files (``by_identity``
    False) only the submodule classes are compared."""
    if a is b or a is None or b is None:
        return True
    if not by_identity:
        return type(a) is type(b)
    if isinstance(a, torch.nn.Module) and isinstance(b, torch.nn.Module):
        if type(a) is not type(b):
            return False
        try:
            return a.extra_repr() == b.extra_repr() and _same_weights(a, b)
        except Exception:  # noqa: BLE001 - a module whose repr or state fails: not the same
            return False
    return _same_tensor(a, b)


def _signatures(graph: torch.fx.Graph, key, mods) -> dict[Hashable, tuple]:
    """Per matched node key: its ``_entry``."""
    out: dict[Hashable, tuple] = {}
    for n in graph.nodes:
        k = key(n)
        if k is not None:
            out[k] = _entry(n, key, mods)
    return out


def _submodule_or_none(gm: torch.fx.GraphModule):
    def get(target):
        try:
            return gm.get_submodule(target)
        except Exception:  # noqa: BLE001 - a dangling target: no module
            return None
    return get


class GraphDiffer:
    """``graph_diff`` against one fixed ``original``, whose node signatures are computed once.

    The original must not change while the differ is used (a ``Document``'s original never does).
    ``diff(edited)`` costs one pass over the edited graph; after it, ``update(edited, ids, node_of)``
    (``match="id"``) re-examines only the nodes whose ids an edit reported (a ``DocumentEvent``'s
    added, removed and changed), so following a document costs what its edits touch.
    """

    def __init__(self, original: torch.fx.Graph | torch.fx.GraphModule, *, match: str = "id"):
        self.match = match
        self.key = match_key(match)
        og = original.graph if isinstance(original, torch.fx.GraphModule) else original
        self.omods = dict(original.named_modules(remove_duplicate=False)) if isinstance(original, torch.fx.GraphModule) else None
        self.osigs = _signatures(og, self.key, self.omods)
        self._esigs: dict[Hashable, tuple] | None = None
        self._sets: dict[str, set] = {}

    def _same(self, k) -> bool:
        o, osig, _, otype = self.osigs[k]
        e, esig, _, etype = self._esigs[k]
        same = None
        if osig is not None and esig is not None:
            try:
                same = bool(osig == esig)
            except Exception:  # noqa: BLE001 - uncomparable constants: fall back to their text
                same = None
        if same is None:
            same = repr(node_signature(o, self.key)) == repr(node_signature(e, self.key))
        if same and o.op in ("call_module", "get_attr"):
            same = _same_object(otype, etype, self.match == "id")
        return same

    def _classify(self, k) -> None:
        sets = self._sets
        for s in sets.values():
            s.discard(k)
        in_o, in_e = k in self.osigs, k in self._esigs
        if in_e and not in_o:
            sets["added"].add(k)
        elif in_o and not in_e:
            sets["removed"].add(k)
        elif in_o and in_e:
            if not self._same(k):
                sets["changed"].add(k)
            elif self.osigs[k][2] != self._esigs[k][2]:
                sets["renamed"].add(k)

    def _result(self) -> GraphDiff:
        s = self._sets
        return GraphDiff(frozenset(s["added"]), frozenset(s["removed"]), frozenset(s["changed"]),
                         frozenset(s["renamed"]))

    def diff(self, edited: torch.fx.Graph | torch.fx.GraphModule) -> GraphDiff:
        """Nodes added, removed and changed from the original to ``edited`` (a full pass)."""
        eg = edited.graph if isinstance(edited, torch.fx.GraphModule) else edited
        emods = dict(edited.named_modules(remove_duplicate=False)) if isinstance(edited, torch.fx.GraphModule) else None
        self._esigs = _signatures(eg, self.key, emods if self.omods is not None else None)
        self._sets = {"added": set(), "removed": set(), "changed": set(), "renamed": set()}
        for k in self.osigs.keys() | self._esigs.keys():
            self._classify(k)
        return self._result()

    def current(self) -> GraphDiff:
        """The diff as the last ``diff`` or ``update`` left it."""
        return self._result()

    def update(self, edited: torch.fx.Graph | torch.fx.GraphModule, ids, node_of) -> GraphDiff:
        """The diff after an edit that touched only the nodes ``ids`` (``node_of(id)``: the edited
        graph's node with that id, or None once gone). Falls back to ``diff`` before the first."""
        if self._esigs is None or self.match != "id":
            return self.diff(edited)
        mods = _submodule_or_none(edited) if (self.omods is not None and isinstance(edited, torch.fx.GraphModule)) else None
        for k in ids:
            node = node_of(k)
            if node is None or self.key(node) != k:
                self._esigs.pop(k, None)
            else:
                self._esigs[k] = _entry(node, self.key, mods)
            self._classify(k)
        return self._result()
