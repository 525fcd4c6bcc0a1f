"""Node names across an export round trip.

Tracing an exported file names each node after its target (``add``, ``my_relu``, ``layer1_0_conv1``),
so an edited graph whose nodes were renamed, inserted under a chosen name, or renumbered by erasing
comes back under other names. An export of an edited graph therefore ends with two constants: the
node names, and a signature of the graph's structure (ops, targets and wiring, names left out).
When fxstudio opens the file and the traced graph has that same signature, the names are put back;
otherwise nothing changes. Plain torch ignores both constants.
"""

from __future__ import annotations

import hashlib
import textwrap
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.code_names import check_identifier

NAMES_VARIABLE = "FXSTUDIO_NODE_NAMES"
SIGNATURE_VARIABLE = "FXSTUDIO_GRAPH_SIGNATURE"


def _target_text(node: torch.fx.Node) -> str:
    """The target as the graph signature stored in exported files spells it: not a presentation
    (``node_text.target_text``) but a persisted format, kept byte-stable so older exports verify."""
    target = node.target
    if callable(target):
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}"
    return str(target)


def _ordered(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """Nodes in a tracer-independent order: everything but ``get_attr`` in graph order, then the
    ``get_attr`` nodes by target (tracers place attribute reads differently)."""
    nodes = list(graph.nodes)
    attrs = sorted((n for n in nodes if n.op == "get_attr"), key=lambda n: (str(n.target), nodes.index(n)))
    return [n for n in nodes if n.op != "get_attr"] + attrs


def graph_signature(graph: torch.fx.Graph) -> str:
    """A short hash of the graph's ops, targets and wiring, independent of node names."""
    order = _ordered(graph)
    index = {n: i for i, n in enumerate(order)}
    lines = []
    for n in order:
        args = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: f"%{index[a]}")
        lines.append(f"{n.op} {_target_text(n)} {args!r}")
    return hashlib.sha1("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def names_block(graph: torch.fx.Graph) -> list[str]:
    """Source lines of the two constants for ``graph`` (appended to an exported file)."""
    order = _ordered(graph)
    for node in order:
        check_identifier(node.name, "node name")
    names = " ".join(n.name for n in order)
    wrapped = textwrap.wrap(names, width=92, break_long_words=False, break_on_hyphens=False)
    body = [f'    "{chunk} "' for chunk in wrapped[:-1]] + [f'    "{wrapped[-1]}"']  # identifiers only (checked)
    return [
        "# fxstudio: the node names of the edited graph, restored when fxstudio opens this file (tracing",
        "# would name each node after its target); plain torch ignores these two constants.",
        f"{NAMES_VARIABLE} = (",
        *body,
        ")",
        f'{SIGNATURE_VARIABLE} = "{graph_signature(graph)}"',
    ]


def restore_exported_names(gm: torch.fx.GraphModule, module: Any) -> bool:
    """Rename the nodes of ``gm`` (traced from an exported file whose module is ``module``) to the
    names the file records, if its structure signature matches; True if names were restored."""
    names_text = getattr(module, NAMES_VARIABLE, None)
    signature = getattr(module, SIGNATURE_VARIABLE, None)
    if not isinstance(names_text, str) or not isinstance(signature, str):
        return False
    names = names_text.split()
    order = _ordered(gm.graph)
    if len(names) != len(order) or len(set(names)) != len(names) or graph_signature(gm.graph) != signature:
        return False
    if not all(n.isidentifier() for n in names):
        return False
    for node, name in zip(order, names):
        node.name = name
    fx_compat.reserve_names(gm.graph, names)
    gm.recompile()
    return True
