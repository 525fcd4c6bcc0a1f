"""Helpers shared by the op handlers: reading fields of an edit dict, finding nodes, parsing values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from fxstudio.core.argsyntax import parse_value
from fxstudio.core.edits.state import EditState
from fxstudio.core.errors import EditRefused
from fxstudio.core.targets import NewSubmodule, parse_target


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
    return parse_cached(text, state.find)


class _Ref:
    """A ``%name`` in a parsed template (``parse_cached``)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class _Missing(Exception):
    """A template's node name that the graph does not have (the parser then says so)."""


_NOT_CACHED = object()
_TEMPLATES: dict[str, Any] = {}
_TEMPLATE_LIMIT = 4096
_PLAIN = (int, float, complex, str, bool, type(None), torch.dtype, torch.memory_format, torch.layout,
          torch.device, range)


def parse_cached(text: str, lookup: Callable[[str], Any]) -> Any:
    """``parse_value(text, lookup)``, the text parsed once per process: a script that repeats an
    argument text (a 100k-insert script) pays the tokenizer once. The parse is kept as a template
    whose ``%name`` references are looked up again at every use; a text that does not parse, or
    whose value holds anything but literals, containers and references, is parsed every time, and
    so is one naming a node the graph lacks (the parser's refusal is the message)."""
    template = _TEMPLATES.get(text)
    if template is None:
        refs: dict[str, _Ref] = {}
        try:
            template = parse_value(text, lambda name: refs.setdefault(name, _Ref(name)))
        except EditRefused:
            template = _NOT_CACHED
        if template is not _NOT_CACHED and not _plain(template):
            template = _NOT_CACHED
        if len(_TEMPLATES) >= _TEMPLATE_LIMIT:
            _TEMPLATES.clear()
        _TEMPLATES[text] = template
    if template is _NOT_CACHED:
        return parse_value(text, lookup)
    try:
        return _fill(template, lookup)
    except _Missing:
        return parse_value(text, lookup)


def _plain(value: Any) -> bool:
    if isinstance(value, _Ref) or type(value) in _PLAIN:
        return True
    if type(value) in (tuple, list):
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) in _PLAIN and _plain(v) for k, v in value.items())
    if type(value) is slice:
        return _plain(value.start) and _plain(value.stop) and _plain(value.step)
    return False


def _fill(value: Any, lookup: Callable[[str], Any]) -> Any:
    kind = type(value)
    if kind is _Ref:
        node = lookup(value.name)
        if node is None:
            raise _Missing
        return node
    if kind is tuple:
        return tuple(_fill(v, lookup) for v in value)
    if kind is list:
        return [_fill(v, lookup) for v in value]
    if kind is dict:
        return {k: _fill(v, lookup) for k, v in value.items()}
    if kind is slice:
        return slice(_fill(value.start, lookup), _fill(value.stop, lookup), _fill(value.step, lookup))
    return value


def target_in_graph(state: EditState, kind: str, text: str) -> Any:
    """``parse_target`` of ``text`` for a ``kind`` node of the edited graph; a function or method
    target is resolved once per document (the same text names the same callable: the trust
    boundary looks only at the text, the model file and the traced graph's own targets)."""
    if kind not in ("call_function", "call_method"):
        return parse_target(kind, text, state.gm, state.user_module, state.known_functions)
    cache = state.resolved_targets
    key = (kind, text)
    if key in cache:
        return cache[key]
    target = parse_target(kind, text, state.gm, state.user_module, state.known_functions)
    if not isinstance(target, NewSubmodule) and len(cache) < _TEMPLATE_LIMIT:
        cache[key] = target
    return target


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
