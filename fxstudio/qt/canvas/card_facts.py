"""What a node's card shows, taken from the FX node: its input ports and its ``CardInfo``."""

from __future__ import annotations

import torch.fx

from fxstudio.core.card_text import card_target_line, constants_text
from fxstudio.core.layout import Layout
from fxstudio.core.node_text import card_target_text, rejection_text, shape_text
from fxstudio.qt.canvas.card_rows import WeightRow
from fxstudio.qt.canvas.items import CardInfo, PortSpec


def input_ports(node: torch.fx.Node) -> list[PortSpec]:
    """One port per node-valued input: positional args by index, keywords by name, list elements by path."""
    ports: list[PortSpec] = []

    def walk(key, value, path):
        if isinstance(value, torch.fx.Node):
            ports.append(PortSpec(key, value.name, path))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(key, v, path + (i,))
        elif isinstance(value, dict):
            for v in value.values():
                if isinstance(v, torch.fx.Node):   # dict entries are not addressable by a path; show them
                    ports.append(PortSpec(key, v.name, ()))

    for i, a in enumerate(node.args):
        walk(i, a, ())
    for k, v in node.kwargs.items():
        walk(k, v, ())
    return ports


def card_info(node: torch.fx.Node, node_id: int, gm: torch.nn.Module | None = None,
              rows: tuple[WeightRow, ...] = (), caption: str = "") -> CardInfo:
    """Everything a card shows about ``node``; ``rows``: the weights folded into it (``card_rows``);
    ``caption``: its module when no frame shows it (``card_text.module_caption``)."""
    return CardInfo(node.name, node_id, node.op, card_target_text(node, gm), shape_text(node), input_ports(node),
                    constants_text(node), not node.users and node.op != "output", rows, rejection_text(node),
                    card_target_line(node, gm), caption)


def folded_hosts(layout: Layout | None) -> dict[str, tuple[str, ...]]:
    """Host name → the weights folded into its card, as the layout left them out (``fold_weights``)."""
    inputs = layout.inputs if layout is not None else None
    hosts = inputs[1].hosts if inputs is not None else None
    return hosts or {}
