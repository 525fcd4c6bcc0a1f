"""Which nodes the canvas draws as a row inside another node's card, and which it does not draw.

Netron draws a convolution as one card with rows ``weight ⟨64×3×7×7⟩``, not as four cards. Here a
*weight* is a ``get_attr`` node or a lifted parameter/buffer/constant placeholder (marked
``fxs_hidden`` or ``fxs_param`` by the loader). A weight with exactly one user, that user a call (``call_function``,
``call_method``, ``call_module``) drawn as a card, *folds* into that user's card: it is a row
there, has no card and no edge of its own, and the layout leaves it out. A weight with a second
user (a tied embedding) or used by the output keeps its card.

*Export plumbing* is drawn nowhere: the ``_guards_fn`` call (``fxs_hidden``, no users) and, in an
exported graph (one holding ``fxs_hidden`` nodes), parameter or buffer reads no node uses (the
``num_batches_tracked`` of every BatchNorm that ``ExportedProgram.module()`` reads).

Both stay in the graph: Properties, the Table, search and edits still see them. An edit that gives
a folded weight a second user un-folds it (the next layout draws its card again).
"""

from __future__ import annotations

import torch.fx

from fxstudio.core.node_text import META_HIDDEN, META_PARAM, META_SHAPE, is_lifted_weight

_CALLS = frozenset(("call_function", "call_method", "call_module"))
_FOLDABLE = frozenset(("get_attr", "placeholder", "call_module"))   # the ops ``fold_host`` may take off
HIDDEN = None
"""The host ``fold_plan`` gives a node drawn nowhere."""


def is_weight(node: torch.fx.Node) -> bool:
    """A ``get_attr`` read or a lifted parameter/buffer/constant placeholder."""
    return node.op == "get_attr" or is_lifted_weight(node)


def is_exported(graph: torch.fx.Graph) -> bool:
    """Whether ``graph`` carries export plumbing the loader marked (``fxs_hidden``)."""
    # Only weights and submodule calls carry it (``metadata.mark_hidden``).
    return any(node.meta.get(META_HIDDEN) for node in graph.nodes if node.op in _FOLDABLE)


def fold_host(node: torch.fx.Node, exported: bool) -> torch.fx.Node | None | bool:
    """Where ``node`` is drawn: the host node whose card shows it as a row, ``HIDDEN`` (None) when
    it is drawn nowhere, ``False`` when it has its own card. ``exported``: ``is_exported(graph)``."""
    op = node.op
    if op == "get_attr" or is_lifted_weight(node):
        users = node.users
        if len(users) == 1:
            host = next(iter(users))
            if host.op in _CALLS and not host.meta.get(META_HIDDEN):
                return host
            return False
        if not users and exported:
            return HIDDEN
        return False
    if op == "call_module" and not node.users and node.meta.get(META_HIDDEN):
        return HIDDEN   # _guards_fn
    return False


def fold_plan(graph: torch.fx.Graph) -> dict[torch.fx.Node, torch.fx.Node | None]:
    """Every node not drawn as a card of its own: weight → host node, plumbing → ``HIDDEN``."""
    exported = is_exported(graph)
    plan: dict[torch.fx.Node, torch.fx.Node | None] = {}
    for node in graph.nodes:
        if node.op in _FOLDABLE:
            host = fold_host(node, exported)
            if host is not False:
                plan[node] = host
    return plan


def folded_weights(graph: torch.fx.Graph) -> dict[torch.fx.Node, torch.fx.Node]:
    """Weight node → the node whose card shows it as a row (plumbing drawn nowhere left out)."""
    return {node: host for node, host in fold_plan(graph).items() if host is not None}


def row_label(node: torch.fx.Node) -> str:
    """What a folded weight's row is called: the attribute it reads (``weight``, ``running_mean``)."""
    if node.op == "get_attr":
        return str(node.target).rpartition(".")[2]
    qualname = node.meta.get(META_PARAM)
    if qualname:
        return str(qualname).rpartition(".")[2]
    return node.name


def row_shape(node: torch.fx.Node) -> str:
    """The weight's shape as a row shows it (``64×3×7×7``; ``""`` when not a tensor of known shape)."""
    shape = node.meta.get(META_SHAPE)
    if type(shape) is tuple:
        return "×".join(str(d) for d in shape) if shape else "scalar"
    return ""


def rows_of(host: torch.fx.Node, exported: bool) -> list[torch.fx.Node]:
    """The weights folded into ``host``'s card, in the order of its inputs."""
    return [inp for inp in host.all_input_nodes if is_weight(inp) and fold_host(inp, exported) is host]


def row_text_len(node: torch.fx.Node) -> int:
    """Characters of a row's text (label, a space, shape): for the card's width."""
    shape = row_shape(node)
    return len(row_label(node)) + (1 + len(shape) if shape else 0)
