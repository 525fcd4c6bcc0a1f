"""Pairing the nodes of two graphs by what they compute, not by their names.

Reopening an exported file traces it again, and tracing names nodes after their targets: an
inserted ``neutral = torch.mul(x, 1.0)`` may come back as ``mul`` and push the old ``mul`` to
``mul_1``, and fx drops attribute reads nothing uses, renumbering what follows. Matching such a
graph with the original by name pairs the wrong nodes. ``pair_graphs`` pairs them structurally:

- placeholders by position, the output with the output;
- ``get_attr`` nodes by target (a tied weight by its first name), then (level 2) by the value's
  shape and dtype; reads of one object count as one input of their users;
- every other node by op, target and constant arguments, its node arguments already paired
  (level 1), processed in graph order. An input of an edited node that has no partner and reads
  exactly one node (an inserted ``neutral = mul(x, 1.0)``) is looked through to that node, so the
  nodes after an insertion still pair;
- what level 1 leaves: the same op, target and paired inputs with other constants (level 3: an
  edited argument), then the same op, target and name (level 4: a rewired node). After each pair
  found at a lower level the stricter levels run again (the nodes downstream now pair).

Among several candidates an equal name wins, then the nearest position. Nodes of one graph only
stay unpaired: added (edited graph) or removed (original). ``pair_items`` is the engine, on plain
``Item`` records, so that a graph can also be paired with a recorded structure (the loader hands
it to ``export.restore_exported_names``, which does not import this package).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
import torch.fx

PAIR_META = "fxs_pair"
"""The ``node.meta`` key holding a node's structural match key (``graph_diff.match_key("structure")``)."""


class Item(NamedTuple):
    """One node as the pairing sees it: ``inputs`` are the indices (in its own list) of the nodes
    its arguments read, in argument order; ``heads[k]`` what must be equal at level ``k`` besides
    the paired inputs (None: the node takes no part in that level); ``pos`` its position, for the
    nearest-position choice; ``same_as`` the index its users' ``inputs`` name instead of its own
    (reads of one tied weight count as one input), -1 for none. A plain tuple in this field order
    does as well (``export.names``)."""

    name: str
    pos: int
    inputs: tuple[int, ...]
    heads: tuple[Hashable | None, ...]
    same_as: int = -1


class Level(NamedTuple):
    """One matching level: its name (for notes), and whether the paired inputs are part of the key."""

    name: str
    inputs: bool = True


def pair_items(a: Sequence[Item], b: Sequence[Item], levels: Sequence[Level]) -> dict[int, int]:
    """Pair ``b``'s items (in order: inputs before users) with ``a``'s; returns b index -> a index.

    Items and levels may be plain tuples in the field order of ``Item`` and ``Level``. Each level
    sweeps the unpaired items of ``b``; a pair found below the first level sends the search back
    to the first level. Every pair joins equal keys, so each item pairs at most once."""
    a = [Item(*item) for item in a]
    b = [Item(*item) for item in b]
    levels = [Level(*level) for level in levels]
    tables: list[dict[Hashable, list[int]]] = []
    for k, level in enumerate(levels):
        table: dict[Hashable, list[int]] = {}
        for i, item in enumerate(a):
            head = item.heads[k] if k < len(item.heads) else None
            if head is not None:
                table.setdefault((head, item.inputs) if level.inputs else head, []).append(i)
        tables.append(table)
    state = _State(a, b)
    k = 0
    while k < len(levels):
        found = state.sweep(k, levels[k], tables[k])
        k = 0 if (found and k > 0) else k + 1
    return state.b_to_a


class _State:
    """The pairs found so far, and one level's sweep over ``b``."""

    def __init__(self, a: Sequence[Item], b: Sequence[Item]):
        self.a, self.b = a, b
        self.b_to_a: dict[int, int] = {}
        self.a_to_b: dict[int, int] = {}
        self.b_reads: dict[int, list[int]] = {}  # b index named as an input -> the items reading that object
        for j, item in enumerate(b):
            if item.same_as >= 0:
                self.b_reads.setdefault(item.same_as, [item.same_as]).append(j)

    def _partner(self, j: int) -> int | None:
        """The input ``a`` names for what ``b[j]`` reads, if some read of it is paired."""
        for m in self.b_reads.get(j, (j,)):
            i = self.b_to_a.get(m)
            if i is not None:
                same = self.a[i].same_as
                return same if same >= 0 else i
        return None

    def resolve(self, j: int) -> int | None:
        """The ``a`` item that ``b[j]`` stands for as an input: its partner, or, for an unpaired
        item reading exactly one node, what that node stands for (looked through); else None."""
        for _ in range(len(self.b) + 1):
            i = self._partner(j)
            if i is not None:
                return i
            distinct = set(self.b[j].inputs)
            if len(distinct) != 1:
                return None
            j = distinct.pop()
        return None

    def sweep(self, k: int, level: Level, table: dict[Hashable, list[int]]) -> int:
        """Pair what level ``k`` can; returns how many pairs it found."""
        found = 0
        offset = 0
        for j, item in enumerate(self.b):
            if j in self.b_to_a:
                offset = self.a[self.b_to_a[j]].pos - item.pos
                continue
            head = item.heads[k] if k < len(item.heads) else None
            if head is None:
                continue
            if level.inputs:
                resolved = tuple(self.resolve(i) for i in item.inputs)
                if None in resolved:
                    continue
                key: Hashable = (head, resolved)
            else:
                key = head
            candidates = [i for i in table.get(key, ()) if i not in self.a_to_b]
            if not candidates:
                continue
            named = [i for i in candidates if self.a[i].name == item.name]
            expected = item.pos + offset
            choice = named[0] if named else min(candidates, key=lambda i: (abs(self.a[i].pos - expected), i))
            self.b_to_a[j], self.a_to_b[choice] = choice, j
            offset = self.a[choice].pos - item.pos
            found += 1
        return found


# -- graphs -----------------------------------------------------------------------------------

GRAPH_LEVELS = (Level("same computation"), Level("attribute of the same shape"), Level("other constants"),
                Level("same name", inputs=False))


def target_key(node: torch.fx.Node) -> Hashable:
    """A node's target as a comparable value: the text of a string target, else the callable's
    module and qualified name (the same function imported by two files compares equal)."""
    target = node.target
    if isinstance(target, str):
        return target
    return (getattr(target, "__module__", None), getattr(target, "__qualname__", None) or repr(target))


def _leaf(value: Any) -> Any:
    if isinstance(value, torch.fx.Node):
        return _Slot()
    if isinstance(value, torch.Tensor):
        small = value.numel() <= 16 and value.device.type != "meta"
        return _Text(f"tensor({tuple(value.shape)}, {value.dtype}"
                     + (f", {value.detach().cpu().reshape(-1).tolist()})" if small else ")"))
    return value


class _Slot:
    """Where a node argument sits, in the text of the constant arguments."""

    def __repr__(self) -> str:
        return "%"


class _Text:
    """A value written as given text (a tensor constant, by shape, dtype and small contents)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def constants_text(node: torch.fx.Node) -> str:
    """The constant arguments of ``node`` as text, node arguments as ``%`` (``repr`` keeps ``2``,
    ``2.0`` and ``True`` apart: they give tensors of other dtypes)."""
    try:
        return repr(torch.fx.node.map_aggregate((node.args, node.kwargs), _leaf))
    except Exception:  # noqa: BLE001 - a constant whose repr fails: nothing to tell it by
        return f"<unprintable {id(node)}>"


def input_indices(node: torch.fx.Node, index: dict[torch.fx.Node, int]) -> tuple[int, ...]:
    """The positions (in ``index``) of the nodes ``node`` reads, in argument order, repeats kept."""
    found: list[int] = []

    def visit(n: torch.fx.Node) -> torch.fx.Node:
        found.append(index[n])
        return n

    torch.fx.node.map_arg((node.args, node.kwargs), visit)
    return tuple(found)


def _fetch(module: torch.nn.Module | None, target: str) -> Any:
    """The object at a dotted attribute path of ``module``; None when there is none."""
    obj: Any = module
    if obj is None:
        return None
    for part in target.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 - a dangling path: nothing to pair it by
            return None
    return obj


def _describe(obj: Any) -> Hashable:
    """An attribute's value as the second level pairs it: a tensor's shape and dtype, else its type."""
    if isinstance(obj, torch.Tensor):
        return ("tensor", tuple(obj.shape), str(obj.dtype))
    return ("object", type(obj).__module__, type(obj).__qualname__)


def alias_names(module: torch.nn.Module | None) -> dict[str, str]:
    """Per path of a tied weight or buffer (one tensor under several names), the first of its
    names: a graph may read it under either, and an export round trip may swap them."""
    if module is None:
        return {}
    groups: dict[int, list[str]] = {}
    try:
        for path, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
            groups.setdefault(id(t), []).append(path)
    except Exception:  # noqa: BLE001 - a module that cannot list its state: no aliases known
        return {}
    return {p: min(paths) for paths in groups.values() if len(paths) > 1 for p in paths}


def graph_items(graph: torch.fx.Graph, module: torch.nn.Module | None = None) -> list[Item]:
    """The ``GRAPH_LEVELS`` items of a graph's nodes, in graph order. ``module`` gives the values of
    ``get_attr`` nodes: reads of one object (a tied weight under two names) count as one input of
    their users, and the second level pairs attributes by shape and dtype."""
    nodes = list(graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    aliases = alias_names(module)
    first_read: dict[Hashable, int] = {}
    items: list[Item] = []
    placeholders = 0
    for i, n in enumerate(nodes):
        if n.op == "placeholder":
            heads: tuple = (("placeholder", placeholders), None, None, None)
            placeholders += 1
            inputs: tuple[int, ...] = ()
        elif n.op == "output":
            heads, inputs = (("output",), None, None, None), ()
        elif n.op == "get_attr":
            target = str(n.target)
            obj = _fetch(module, target)
            index[n] = first = first_read.setdefault(("object", id(obj)) if obj is not None else ("path", target), i)
            heads = (("get_attr", aliases.get(target, target)), ("get_attr", _describe(obj)) if obj is not None else None,
                     None, None)
            inputs = ()
            if first != i:
                items[first] = items[first]._replace(same_as=first)
                items.append(Item(n.name, i, inputs, heads, first))
                continue
        else:
            target = target_key(n)
            heads = ((n.op, target, constants_text(n)), None, (n.op, target), (n.op, target, n.name))
            inputs = input_indices(n, index)
        items.append(Item(n.name, i, inputs, heads))
    return items


@dataclass
class GraphPairing:
    """The structural pairing of an original graph's nodes with an edited graph's."""

    original: torch.fx.Graph
    edited: torch.fx.Graph
    pairs: dict[torch.fx.Node, torch.fx.Node] = field(default_factory=dict)  # edited node -> original node
    added: list[str] = field(default_factory=list)    # edited nodes without a partner
    removed: list[str] = field(default_factory=list)  # original nodes without a partner

    def key(self, node: torch.fx.Node) -> str:
        """The match key of a node of either graph: an original node's name; a paired edited node
        takes its partner's, an unpaired one ``+`` and its own name (never an original's key)."""
        if node.graph is self.edited:
            partner = self.pairs.get(node)
            return partner.name if partner is not None else "+" + node.name
        return node.name

    def stamp(self) -> None:
        """Write every node's key into ``node.meta[PAIR_META]`` (copies of the graphs keep it),
        where ``graph_diff.match_key("structure")`` and the node-by-node run read it."""
        for graph in (self.original, self.edited):
            for node in graph.nodes:
                node.meta[PAIR_META] = self.key(node)

    def describe(self) -> str:
        """One line for the report: how many pairs, and which nodes are in one graph only."""
        def few(names: list[str]) -> str:
            shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
            return f" ({shown})" if names else ""

        return (f"nodes matched by structure (what they compute, not their names): {len(self.pairs)} pairs; "
                f"{len(self.added)} only in the edited graph{few(self.added)}, "
                f"{len(self.removed)} only in the original{few(self.removed)}")


def pair_graphs(original: torch.fx.Graph | torch.fx.GraphModule,
                edited: torch.fx.Graph | torch.fx.GraphModule) -> GraphPairing:
    """Pair the nodes of ``edited`` with those of ``original`` by what they compute (module docstring)."""
    omod = original if isinstance(original, torch.fx.GraphModule) else None
    emod = edited if isinstance(edited, torch.fx.GraphModule) else None
    og = original.graph if isinstance(original, torch.fx.GraphModule) else original
    eg = edited.graph if isinstance(edited, torch.fx.GraphModule) else edited
    onodes, enodes = list(og.nodes), list(eg.nodes)
    found = pair_items(graph_items(og, omod), graph_items(eg, emod), GRAPH_LEVELS)
    pairing = GraphPairing(og, eg, {enodes[j]: onodes[i] for j, i in found.items()})
    taken = set(found.values())
    pairing.added = [n.name for j, n in enumerate(enodes) if j not in found]
    pairing.removed = [n.name for i, n in enumerate(onodes) if i not in taken]
    return pairing
