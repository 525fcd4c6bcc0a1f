"""Which node of one graph is which node of another: lineage first, then structure, then name.

``match_nodes(base, other, same_lineage)`` pairs ``other``'s nodes with ``base``'s, one to one,
each pair tagged with how it was found:

- ``lineage``: exact, where fxstudio knows where a node came from: equal stable ids
  (``meta["fxs_id"]``) when both graphs belong to one document (original and edited, before and
  after a pass: the edit engine keeps the ids of the nodes a pass kept); and torch's provenance
  (``meta["from_node"]``: a node a torch pass made out of a node of the base graph by that name,
  such as the decomposition of ``linear``), the last node made from it (the one whose value the
  rest of the graph reads) taking the pair.
- ``structure``: what the nodes compute (``compare.pair_graphs``: placeholders by position, each
  node by op, target and constants over already paired inputs, looking through inserted nodes),
  then, for graphs at two levels (``torch.fx`` modules against ATen ops), by origin: nodes traced
  from the same module (``nn_module_stack``) and the same source line (``stack_trace``) pair by
  operator family (``Conv2d`` with ``aten.conv2d``, ``operator.add`` with ``aten.add.Tensor``),
  and a leaf module left alone in its group takes the last node of the other group with its shape
  (``nn.LSTM`` with the ATen op that gives its output); last, by neighbourhood: the unpaired
  inputs, at one argument position, of a pair, when their shapes agree (what feeds ``add`` on
  both sides: an fx ``getitem`` of a module's tuple and the ATen op that gives that value).
- ``name``: what is left, with the same name and op.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass, field

import torch
import torch.fx

from fxstudio.core.compare import pair_graphs
from fxstudio.core.node_text import META_MODULE_PATH, META_SHAPE, META_SOURCE

ID_KEY = "fxs_id"
HOW = ("lineage", "structure", "name")


@dataclass
class NodeMatching:
    """Pairs of one graph's nodes (``other``) with a base graph's; one to one."""

    base: torch.fx.Graph
    other: torch.fx.Graph
    to_base: dict[torch.fx.Node, torch.fx.Node] = field(default_factory=dict)   # other node -> base node
    to_other: dict[torch.fx.Node, torch.fx.Node] = field(default_factory=dict)  # base node -> other node
    how: dict[torch.fx.Node, str] = field(default_factory=dict)                 # other node -> HOW entry

    def add(self, other: torch.fx.Node, base: torch.fx.Node, how: str) -> bool:
        """Pair ``other`` with ``base`` unless either is paired already; True when paired."""
        if other in self.to_base or base in self.to_other:
            return False
        self.to_base[other], self.to_other[base], self.how[other] = base, other, how
        return True


def match_nodes(base: torch.fx.GraphModule, other: torch.fx.GraphModule, *, same_lineage: bool = False) -> NodeMatching:
    """Pair ``other``'s nodes with ``base``'s (module docstring). ``same_lineage``: both graphs come
    from one document, so equal ``fxs_id`` means the same node (never assumed across files: two
    documents number their nodes alike)."""
    m = NodeMatching(base.graph, other.graph)
    if same_lineage:
        by_id = {n.meta[ID_KEY]: n for n in base.graph.nodes if ID_KEY in n.meta}
        for n in other.graph.nodes:
            b = by_id.get(n.meta.get(ID_KEY, object()))
            if b is not None:
                m.add(n, b, "lineage")
        if len(m.to_base) == len(other.graph.nodes) or len(m.to_other) == len(base.graph.nodes):
            return m   # one side wholly matched by lineage: the rest was added or removed, nothing to guess
    _match_provenance(m)
    pairing = pair_graphs(base, other)
    for o in other.graph.nodes:
        b = pairing.pairs.get(o)
        if b is not None:
            m.add(o, b, "structure")
    _match_origin(m)
    _match_inputs(m)
    base_by_name = {n.name: n for n in base.graph.nodes if n not in m.to_other}
    for o in other.graph.nodes:
        b = base_by_name.get(o.name)
        if o not in m.to_base and b is not None and b.op == o.op:
            m.add(o, b, "name")
    return m


def _sources(node: torch.fx.Node) -> list[str]:
    """The names torch's provenance (``meta["from_node"]``) gives for ``node``, nearest first."""
    out: list[str] = []
    todo = list(node.meta.get("from_node") or ())
    for _ in range(64):
        if not todo:
            break
        src = todo.pop(0)
        name = getattr(src, "name", None)
        if isinstance(name, str) and name not in out:
            out.append(name)
        todo.extend(getattr(src, "from_node", None) or ())
    return out


def _match_provenance(m: NodeMatching) -> None:
    """Pair nodes a torch pass made from a base node that the other graph no longer holds by name."""
    base_by_name = {n.name: n for n in m.base.nodes}
    other_names = {n.name for n in m.other.nodes}
    for o in reversed(list(m.other.nodes)):
        if o in m.to_base:
            continue
        for name in _sources(o):
            if name != o.name and name not in other_names and name in base_by_name:
                if m.add(o, base_by_name[name], "lineage"):
                    break


_TRAILING_DIMS = re.compile(r"(\d+d)$")


def family(node: torch.fx.Node, module: torch.nn.Module | None) -> str:
    """A node's operator family, equal across tracing levels: ``conv`` for a ``Conv2d`` module call
    and for ``aten.conv2d.default``, ``add`` for ``operator.add`` and ``aten.add.Tensor``,
    ``relu`` for ``torch.relu``, ``F.relu``, ``Tensor.relu_`` and ``aten.relu_.default``."""
    if node.op == "call_module":
        try:
            name = type(module.get_submodule(str(node.target))).__name__ if module is not None else str(node.target)
        except Exception:  # noqa: BLE001 - a dangling target: its last path part
            name = str(node.target).rsplit(".", 1)[-1]
    elif node.op == "call_method":
        name = str(node.target)
    elif node.op == "call_function":
        target = node.target
        packet = getattr(target, "overloadpacket", None)
        name = getattr(packet, "__name__", None) or getattr(target, "__name__", None) or repr(target)
        name = name.rsplit(".", 1)[-1]
    else:
        return node.op
    name = name.lower().replace("_", "")
    return _TRAILING_DIMS.sub("", name) or name


def _origin(node: torch.fx.Node) -> Hashable | None:
    """Where a node was traced from: its module path and source line (None for graph plumbing)."""
    if node.op in ("placeholder", "output", "get_attr"):
        return None
    src = node.meta.get(META_SOURCE) or {}
    return (node.meta.get(META_MODULE_PATH) or "", src.get("file"), src.get("line"))


def _groups(graph: torch.fx.Graph, paired, module) -> dict[Hashable, list[tuple[torch.fx.Node, str]]]:
    out: dict[Hashable, list[tuple[torch.fx.Node, str]]] = {}
    for n in graph.nodes:
        key = _origin(n) if n not in paired else None
        if key is not None:
            out.setdefault(key, []).append((n, family(n, module)))
    return out


def _match_origin(m: NodeMatching) -> None:
    """Pair what is left by origin and operator family (module docstring)."""
    base_mod = getattr(m.base, "owning_module", None)
    other_mod = getattr(m.other, "owning_module", None)
    base_groups = _groups(m.base, m.to_other, base_mod)
    for key, others in _groups(m.other, m.to_base, other_mod).items():
        bases = base_groups.get(key)
        if not bases:
            continue
        for o, fam in others:
            for b, bfam in bases:
                if bfam == fam and b not in m.to_other:
                    m.add(o, b, "structure")
                    break
        left_b = [b for b, _ in bases if b not in m.to_other]
        left_o = [o for o, _ in others if o not in m.to_base]
        if len(left_b) == 1 and left_o:
            _pair_last_of_shape(m, left_b[0], left_o, other_side=True)
        elif len(left_o) == 1 and left_b:
            _pair_last_of_shape(m, left_o[0], left_b, other_side=False)


def _pair_last_of_shape(m: NodeMatching, one: torch.fx.Node, many: list[torch.fx.Node], *, other_side: bool) -> None:
    """Pair ``one`` with the last of ``many`` whose output shape is ``one``'s (a module's result;
    for a module returning a tuple, such as ``nn.MultiheadAttention``, its first element's)."""
    shape = one.meta.get(META_SHAPE)
    if isinstance(shape, list) and shape:
        shape = shape[0]
    if shape is None:
        return
    for n in reversed(many):
        if n.meta.get(META_SHAPE) == shape:
            if other_side:
                m.add(n, one, "structure")
            else:
                m.add(one, n, "structure")
            return


def _match_inputs(m: NodeMatching) -> None:
    """Pair the unpaired inputs of paired nodes, position by position, where shapes agree; from
    the output up, so a pair found feeds the next."""
    for o in reversed(list(m.other.nodes)):
        b = m.to_base.get(o)
        if b is None:
            continue
        o_in, b_in = o.all_input_nodes, b.all_input_nodes
        if len(o_in) != len(b_in):
            continue
        for oi, bi in zip(o_in, b_in):
            if oi in m.to_base or bi in m.to_other or "placeholder" in (oi.op, bi.op):
                continue
            shape = oi.meta.get(META_SHAPE)
            if shape is not None and shape == bi.meta.get(META_SHAPE):
                m.add(oi, bi, "structure")
