"""Helpers shared by the op handlers: reading fields of an edit dict, finding nodes, parsing values."""

from __future__ import annotations

from typing import Any

import torch.fx

from fxstudio.core.argsyntax import parse_value
from fxstudio.core.edits.state import EditState
from fxstudio.core.errors import EditRefused


def text_field(edit: dict, field: str, default: str | None = None) -> str:
    """A field that must be text (argument or target syntax, or a node name)."""
    value = edit.get(field, default)
    if not isinstance(value, str):
        raise EditRefused(f"Field {field!r} must be text, e.g. \"10\" or \"%add\", not {value!r}.")
    return value


def node_field(state: EditState, edit: dict, field: str) -> torch.fx.Node:
    """The live node named by ``edit[field]`` (``add`` or ``%add``); refuses unknown names."""
    name = text_field(edit, field).strip().removeprefix("%")
    node = state.find(name)
    if node is None:
        raise EditRefused(f"Unknown node {name!r}: there is no node of that name in the graph.")
    return node


def parse_in_graph(state: EditState, text: str) -> Any:
    """Parse argument text, resolving ``%name`` against the edited graph."""
    return parse_value(text, state.find)


def nodes_in(value: Any) -> list[torch.fx.Node]:
    """The nodes referenced anywhere in an argument value, in order, without repeats."""
    found: dict[torch.fx.Node, None] = {}
    torch.fx.node.map_arg(value, lambda n: found.setdefault(n, None))
    return list(found)


def check_refs_usable(refs: list[torch.fx.Node]) -> None:
    """Refuse references to the output node, which produces no value."""
    for ref in refs:
        if ref.op == "output":
            raise EditRefused("%output is the graph's return, not a value; it cannot be used as an input.")


def plural(n: int, word: str) -> str:
    """``1 node`` / ``3 nodes``."""
    return f"{n} {word}{'' if n == 1 else 's'}"
