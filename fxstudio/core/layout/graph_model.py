"""The FX graph as data the layout and the canvas share: a networkx ``DiGraph`` and flat arrays.

``to_networkx`` is the public graph model (nodes keyed by name, edge attribute ``key`` = the
argument position or keyword name the edge feeds). ``extract_graph`` gives the same graph as
numpy arrays plus per-node facts, which is what the layout works on at 100k nodes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np
import torch.fx

from fxstudio.core.card_text import card_lines
from fxstudio.core.layout.folding import row_label
from fxstudio.core.layout.groups import collapse_owner
from fxstudio.core.node_text import (META_DTYPE, META_HIDDEN, META_MODULE_PATH, META_MODULE_STACK, META_PARAM, META_SHAPE,
                                     is_lifted_weight, target_label)

_CALLS = frozenset(("call_function", "call_method", "call_module"))


def _flat_inputs(value, key, out):
    """Append (node, key) for every Node inside ``value`` (nested lists, tuples, dicts, slices)."""
    if isinstance(value, torch.fx.Node):
        out.append((value, key))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _flat_inputs(item, key, out)
    elif isinstance(value, dict):
        for item in value.values():
            _flat_inputs(item, key, out)
    elif isinstance(value, slice):
        _flat_inputs(value.start, key, out)
        _flat_inputs(value.stop, key, out)
        _flat_inputs(value.step, key, out)


def node_inputs(node: torch.fx.Node) -> list[tuple[torch.fx.Node, int | str]]:
    """The input nodes of ``node`` with the key they feed (arg position or kwarg name), in order.

    A node used twice under different keys appears twice; twice under the same key, once.
    """
    out: list[tuple[torch.fx.Node, int | str]] = []
    for i, arg in enumerate(node.args):
        _flat_inputs(arg, i, out)
    for name, arg in node.kwargs.items():
        _flat_inputs(arg, name, out)
    seen = set()
    unique = []
    for src, key in out:
        if (src, key) not in seen:
            seen.add((src, key))
            unique.append((src, key))
    return unique


def is_hidden(node: torch.fx.Node) -> bool:
    """True for lifted-parameter noise the loader marked (``node.meta["fxs_hidden"]``)."""
    return bool(node.meta.get(META_HIDDEN))


@dataclass
class GraphArrays:
    """An FX graph flattened for the layout: node facts by index, edges as index arrays.

    ``edges`` holds every (src, dst, key) triple; ``src``/``dst`` the same as int arrays.
    ``weight_like`` marks nodes that only carry data (get_attr, lifted parameters, constants,
    nodes computed only from those, and non-tensor plumbing such as ``x.shape`` and its items
    when shapes are known): the layout puts them right above their consumer.
    """

    names: list[str]
    ops: list[str]
    targets: list[str]
    module_paths: list[str]
    module_stacks: list[list[tuple[str, str]]]
    label_len: np.ndarray  # characters of the longest text on the card: name, target or shape
    weight_like: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    keys: list
    # With ``fold=True`` (``folding.py``): weights folded into their user's card and plumbing drawn
    # nowhere are left out (``skipped`` of them); ``rows`` counts each node's folded weights.
    rows: np.ndarray | None = None
    lines: np.ndarray | None = None   # lines under each card's title without a module caption (``card_text.card_lines``)
    hosts: dict | None = None   # host name -> names of the weights folded into its card, graph order
    skipped: int = 0
    fold: bool = False
    exported: bool = False
    # With ``collapsed`` (``extract_graph``): each node's outermost collapsed group (None: shown as
    # a card), for that set of collapsed paths; only shown cards' ``lines`` are counted.
    owners: list | None = None
    owners_for: frozenset | None = None

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.names)


@functools.lru_cache(maxsize=4096)
def _shape_text_len(shape: tuple) -> int:
    return len("×".join(str(d) for d in shape))


_NESTED = (list, tuple, dict, slice)


def _nested_inputs(value, key) -> list[tuple[torch.fx.Node, int | str]]:
    """(node, key) for every Node inside one nested argument, each node once (as ``node_inputs``)."""
    found: list[tuple[torch.fx.Node, int | str]] = []
    _flat_inputs(value, key, found)
    if len(found) < 2:
        return found
    seen = set()
    return [item for item in found if not (item[0] in seen or seen.add(item[0]))]


def extract_graph(graph: torch.fx.Graph, fold: bool = False, collapsed: frozenset = frozenset()) -> GraphArrays:
    """Flatten ``graph`` into ``GraphArrays`` (nodes in graph order, which is topological).

    ``fold``: leave out the weights folded into their user's card and the export plumbing drawn
    nowhere (``folding.fold_plan``); a host's ``rows`` and label length count its weight rows.
    ``collapsed``: module paths drawn as one card each; their members' card texts are not measured
    (a large graph opens folded: ``opening_fold.py``)."""
    nodes = list(graph.nodes)
    plan = _fold_plan(nodes) if fold else None
    if plan is not None:
        nodes = plan[3]
    index = {node: i for i, node in enumerate(nodes)}
    names = [node.name for node in nodes]
    ops = [node.op for node in nodes]
    metas = [node.meta for node in nodes]
    texts: dict = {}  # target -> label: graphs call the same few hundred targets over and over
    targets = []
    for node in nodes:
        target = node.target
        if type(target) is str:
            targets.append(target)
            continue
        try:
            text = texts.get(target)
        except TypeError:  # an unhashable target
            text = None
        if text is None:
            text = target_label(node)
            try:
                texts[target] = text
            except TypeError:
                pass
        targets.append(text)
    paths = [meta.get(META_MODULE_PATH) or "" for meta in metas]
    stacks = [meta.get(META_MODULE_STACK) or [] for meta in metas]
    shapes = [meta.get(META_SHAPE) for meta in metas]
    shape_lens: dict[tuple, int] = {}
    shape_len = []
    for shape, meta in zip(shapes, metas):
        if type(shape) is tuple:
            length = shape_lens.get(shape)
            if length is None:
                length = shape_lens[shape] = _shape_text_len(shape)
            dtype = meta.get(META_DTYPE)   # the card reads "1×64×56×56 float32"
            shape_len.append(length + 1 + len(dtype) if type(dtype) is str else length)
        else:
            shape_len.append(0)
    count = len(nodes)
    label_len = np.maximum(np.maximum(np.fromiter(map(len, names), np.int64, count),
                                      np.fromiter(map(len, targets), np.int64, count)),
                           np.asarray(shape_len, dtype=np.int64))
    wl = [False] * len(nodes)
    src: list[int] = []
    dst: list[int] = []
    keys: list = []
    node_type = torch.fx.Node
    for i, node in enumerate(nodes):
        all_weights = True
        kwargs = node.kwargs
        for k, a in (*enumerate(node.args), *kwargs.items()) if kwargs else enumerate(node.args):
            if type(a) is node_type:
                j = index.get(a)
                if j is None:   # folded into this card (fold=True): no edge
                    continue
                src.append(j)
                dst.append(i)
                keys.append(k)
                all_weights = all_weights and wl[j]
            elif isinstance(a, _NESTED):
                for inp, key in _nested_inputs(a, k):
                    j = index.get(inp)
                    if j is None:
                        continue
                    src.append(j)
                    dst.append(i)
                    keys.append(key)
                    all_weights = all_weights and wl[j]
        op = ops[i]
        if op == "get_attr" or (op == "placeholder" and (metas[i].get(META_HIDDEN) or metas[i].get(META_PARAM))):
            wl[i] = True
        elif op in ("call_function", "call_method") and (
            all_weights or (META_SHAPE in metas[i] and shapes[i] is None and node.users)
        ):
            # Parameters and constants, and non-tensor plumbing (x.shape, its getitems): both
            # belong next to the op that uses them.
            wl[i] = True
    owners = collapse_owner(paths, collapsed) if collapsed else None
    if owners is None:
        lines = np.fromiter(map(card_lines, nodes), np.int64, count)
    else:
        lines = np.fromiter((card_lines(node) if owner is None else 2 for node, owner in zip(nodes, owners)),
                            np.int64, count)
    ga = GraphArrays(
        names=names, ops=ops, targets=targets, module_paths=paths, module_stacks=stacks,
        label_len=label_len, weight_like=np.asarray(wl, dtype=bool),
        src=np.asarray(src, dtype=np.int64), dst=np.asarray(dst, dtype=np.int64), keys=keys,
        lines=lines, owners=owners, owners_for=frozenset(collapsed) if owners is not None else None,
    )
    if plan is None:
        return ga
    dropped, hosts, exported, _ = plan
    rows = np.zeros(ga.n, dtype=np.int64)
    if hosts:
        where = [index[h] for h in hosts]
        rows[where] = [len(ws) for ws in hosts.values()]
        widest = [max(map(_row_len, ws)) for ws in hosts.values()]
        label_len[where] = np.maximum(label_len[where], widest)
    return replace(ga, rows=rows, hosts={h.name: tuple(w.name for w in ws) for h, ws in hosts.items()},
                   skipped=len(dropped), fold=True, exported=exported)


def _row_len(node: torch.fx.Node) -> int:
    """``folding.row_text_len``, with the shape texts' lengths cached."""
    label = str(node.target).rpartition(".")[2] if node.op == "get_attr" else row_label(node)
    shape = node.meta.get(META_SHAPE)
    if type(shape) is tuple:
        return len(label) + 1 + (_shape_text_len(shape) if shape else len("scalar"))
    return len(label)


def _fold_plan(nodes: list[torch.fx.Node]) -> tuple[set, dict, bool, list]:
    """(nodes left out, host → its folded weights, whether the graph is exported, nodes kept), as
    ``folding.fold_host`` decides (the same rule, inlined: this runs on every layout)."""
    kept: list = []
    dropped: set = set()
    hosts: dict[torch.fx.Node, list] = {}
    unused: list = []
    exported = False
    calls = _CALLS
    for node in nodes:
        op = node.op
        if op != "get_attr" and op != "placeholder" and op != "call_module":
            kept.append(node)
            continue
        hidden = node.meta.get(META_HIDDEN)
        if hidden:
            exported = True   # only weights and submodule calls carry it (metadata.mark_hidden)
        users = node.users
        if op == "get_attr" or (op == "placeholder" and (hidden or node.meta.get(META_PARAM))):
            if len(users) == 1:
                host = next(iter(users))
                if host.op in calls and not host.meta.get(META_HIDDEN):
                    dropped.add(node)
                    hosts.setdefault(host, []).append(node)
                    continue
            elif not users:
                unused.append(node)
        elif hidden and not users:   # _guards_fn
            dropped.add(node)
            continue
        kept.append(node)
    if exported and unused:   # parameter reads nothing uses: plumbing of an exported graph
        dropped.update(unused)
        gone = set(unused)
        kept = [node for node in kept if node not in gone]
    return dropped, hosts, exported, kept


def to_networkx(graph: torch.fx.Graph) -> nx.DiGraph:
    """The FX graph as a ``DiGraph``: nodes keyed by name with ``op``, ``target``, ``module_path``;
    each edge has ``key`` (the first arg position / kwarg name it feeds) and ``keys`` (all of them).
    """
    g = nx.DiGraph()
    for node in graph.nodes:
        g.add_node(
            node.name, op=node.op, target=target_label(node),
            module_path=node.meta.get(META_MODULE_PATH) or "", hidden=is_hidden(node),
        )
    for node in graph.nodes:
        for inp, key in node_inputs(node):
            if g.has_edge(inp.name, node.name):
                g.edges[inp.name, node.name]["keys"].append(key)
            else:
                g.add_edge(inp.name, node.name, key=key, keys=[key])
    return g


def feeding_input(graph: torch.fx.Graph) -> tuple[str, set[str]] | None:
    """The input (not a lifted weight) that feeds the most of the graph's calls, and the names of
    every node it feeds: where a view of the graph should open (GPT-2's ``input_ids``, not its
    ``use_cache``). None when no input feeds a call."""
    inputs = [n for n in graph.nodes if n.op == "placeholder" and not is_lifted_weight(n) and n.users]
    if not inputs:
        return None
    bit = {n: 1 << k for k, n in enumerate(inputs)}
    reach: dict[torch.fx.Node, int] = {}
    counts = [0] * len(inputs)
    for node in graph.nodes:
        m = bit.get(node, 0)
        for inp in node.all_input_nodes:
            m |= reach.get(inp, 0)
        if not m:
            continue
        reach[node] = m
        if node.op in _CALLS:
            while m:
                low = m & -m
                counts[low.bit_length() - 1] += 1
                m ^= low
    k = max(range(len(inputs)), key=lambda i: counts[i])
    if counts[k] == 0:
        return None
    mask = 1 << k
    return inputs[k].name, {n.name for n, m in reach.items() if m & mask}
