"""What bulk edits share: choosing nodes by what they call or by their names, ``%@`` (the anchor) in
``insert``'s arguments, and dropping a submodule no node uses any more.

* ``set_target``'s ``match`` and ``insert``'s ``{"match": ...}`` anchors name a target: a function
  (``torch.relu``, ``model_file.fn``), a tensor method (``view`` or ``.view``), or an ``nn.Module``
  class (``torch.nn.ReLU``, ``model_file.Block``, or the class's qualified name): the ``call_module``
  nodes whose submodule is *exactly* that class (``type(m) is cls``). The text is only compared
  with what is already there, or resolved through the trust boundary: nothing is imported or run.
* ``{"regex": ...}`` anchors are the nodes whose whole name matches (``re.fullmatch``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat, trust
from fxstudio.core.argsyntax import rewrite_percent
from fxstudio.core.edits.common import parse_cached
from fxstudio.core.edits.primitives import Primitive
from fxstudio.core.edits.state import Changes, EditState
from fxstudio.core.edits.validation import anchor_spec_problem, name_regex
from fxstudio.core.errors import EditRefused
from fxstudio.core.targets import MODEL_FILE_ALIAS, format_target, resolve_function
from fxstudio.core.node_text import user_module_stem

ANCHOR = "%@"
"""In ``insert``'s ``args``/``kwargs``: the anchor node (each anchor, with ``after_each``/``before_each``)."""

_ANCHOR_NAME = "__fxsref__anchor"  # what %@ reads as: no node can be named so (check_node_name)
_MATCH_TEXT = re.compile(r"\.?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


# ------------------------------------------------------------------------------------------ match


def check_match_text(text: str) -> None:
    """Refuse match text that is not a dotted name, or that names a dunder (``X.__init__.__globals__``)."""
    if not _MATCH_TEXT.match(text):
        raise trust.refuse(text, trust.RULE_SYNTAX, "match a target by its dotted name, like torch.relu, "
                           "torch.nn.ReLU or view.")
    for part in text.lstrip(".").split("."):
        if part.startswith("__"):
            raise trust.refuse(text, trust.RULE_PRIVATE, f"{part!r} is a dunder name.")


def submodule_class(gm: torch.nn.Module, node: torch.fx.Node) -> type | None:
    """The class of the submodule a ``call_module`` node calls (None for any other node)."""
    if node.op != "call_module":
        return None
    try:
        return type(gm.get_submodule(str(node.target)))
    except AttributeError:
        return None


def module_class(state: EditState, text: str) -> type | None:
    """The ``nn.Module`` class ``text`` names, or None when it names none (then it may name a function
    or a method): ``torch.nn.X`` / ``nn.X`` (the namespace's own entry), a class defined in the model
    file (``model_file.X``, ``<stem>.X``), or the exact qualified name of the class of a submodule
    the graph calls (``torchvision.ops.misc.Conv2dNormActivation``): compared, never imported."""
    check_match_text(text)
    parts = text.split(".")
    cls: Any = None
    if len(parts) == 3 and parts[:2] == ["torch", "nn"] or len(parts) == 2 and parts[0] == "nn":
        if parts[-1].startswith("_"):
            raise trust.refuse(text, trust.RULE_PRIVATE, f"{parts[-1]!r} is private.")
        cls = vars(nn).get(parts[-1])
    elif len(parts) == 2 and state.user_module is not None and \
            parts[0] in (MODEL_FILE_ALIAS, user_module_stem(state.user_module), state.user_module.__name__):
        cls = vars(state.user_module).get(parts[1])
        if getattr(cls, "__module__", None) != state.user_module.__name__:
            cls = None  # imported into the model file, not defined there
    if isinstance(cls, type) and issubclass(cls, nn.Module):
        return cls
    for node in state.graph.nodes:
        found = submodule_class(state.gm, node)
        if found is not None and f"{found.__module__}.{found.__qualname__}" == text:
            return found
    return None


def _calls(node: torch.fx.Node, match: str, fn: Any, user_module) -> bool:
    if node.op == "call_function":
        return (fn is not None and node.target is fn) or format_target(node, user_module) == match
    if node.op == "call_method":
        return node.target == match.removeprefix(".")
    return False


def match_nodes(state: EditState, match: str) -> tuple[list[torch.fx.Node], type | None, EditRefused | None]:
    """The nodes calling ``match`` in graph order, the module class when it names one, and why the
    text does not resolve as a function (reported when nothing matches)."""
    cls = module_class(state, match)
    if cls is not None:
        return [n for n in state.graph.nodes if submodule_class(state.gm, n) is cls], cls, None
    try:
        fn, why = resolve_function(match, state.user_module, state.known_functions), None
    except EditRefused as exc:
        fn, why = None, exc
    return [n for n in state.graph.nodes if _calls(n, match, fn, state.user_module)], None, why


def no_match(what: str, why: EditRefused | None, outcome: str = "nothing to swap") -> EditRefused:
    """The refusal of a bulk edit whose match selects no node (with the trust rule the text broke,
    if it broke one)."""
    detail = f" ({why.message.rstrip('.')})" if why is not None and "rule:" in why.message else ""
    return EditRefused(f"No node {what}; {outcome}{detail}.")


def select_anchors(state: EditState, field: str, spec: Any) -> tuple[list[torch.fx.Node], str]:
    """The anchors of ``insert``'s ``after_each``/``before_each`` (``field``) in graph order, and how
    the label describes them; refuses a malformed object or one that selects nothing."""
    problem = anchor_spec_problem(field, spec)
    if problem:
        raise EditRefused(problem)
    if "regex" in spec:
        pattern = name_regex(field, spec["regex"])
        nodes = [n for n in state.graph.nodes if pattern.fullmatch(n.name)]
        if not nodes:
            raise no_match(f"name matches the regex {spec['regex']!r}", None, "nothing to insert")
        return nodes, f"/{spec['regex']}/"
    match = spec["match"].strip()
    nodes, cls, why = match_nodes(state, match)
    if not nodes:
        raise no_match(f"calls {'a ' if cls else ''}{match!r}{' submodule' if cls else ''}", why, "nothing to insert")
    return nodes, match


# ---------------------------------------------------------------------------------------- %@ anchor


def parse_with_anchor(state: EditState, text: str, anchor: torch.fx.Node) -> Any:
    """Parse argument text against the graph, ``%@`` standing for ``anchor`` (outside string literals)."""
    if ANCHOR not in text:
        return parse_cached(text, state.find)
    try:
        return parse_cached(_substitute_anchor(text),
                            lambda name: anchor if name == _ANCHOR_NAME else state.find(name))
    except EditRefused as exc:
        raise EditRefused(exc.message.replace(f"%{_ANCHOR_NAME}", ANCHOR)) from None


_SUBSTITUTED: dict[str, str] = {}


def _substitute_anchor(text: str) -> str:
    done = _SUBSTITUTED.get(text)
    if done is None:
        done = rewrite_percent(text, lambda nxt: nxt.string == "@", f"%{_ANCHOR_NAME}", 2)
        if len(_SUBSTITUTED) > 4096:
            _SUBSTITUTED.clear()
        _SUBSTITUTED[text] = done
    return done


# ------------------------------------------------------------------------------- unused submodules


def _shallow_module(module: nn.Module) -> nn.Module:
    """A module object sharing everything of ``module`` but its own table of children."""
    copy = object.__new__(type(module))
    copy.__dict__.update(module.__dict__)
    copy.__dict__["_modules"] = dict(fx_compat.module_children(module))
    return copy


@dataclass
class DropSubmodule(Primitive):
    """Remove the submodule at ``path`` from the edited module (put back on revert, in its place).

    The edited module shares its submodules with the loaded model, so a nested path is removed from
    copies of its parents (each sharing all else), installed under the root's own entry: only the
    edited root's table changes, as with ``AddSubmodule``."""

    path: str
    top: nn.Module | None = None
    index: int = -1

    def apply(self, state: EditState, changes: Changes) -> None:
        gm = state.gm
        head, *rest = self.path.split(".")
        self.index = list(fx_compat.module_children(gm)).index(head)
        self.top = fx_compat.module_children(gm)[head]
        if not rest:
            delattr(gm, head)
            return
        parent = copy_top = _shallow_module(self.top)
        for part in rest[:-1]:
            child = _shallow_module(fx_compat.module_children(parent)[part])
            fx_compat.module_children(parent)[part] = child
            parent = child
        del fx_compat.module_children(parent)[rest[-1]]
        fx_compat.module_children(gm)[head] = copy_top

    def revert(self, state: EditState, changes: Changes) -> None:
        table = fx_compat.module_children(state.gm)
        head = self.path.split(".")[0]
        if head in table:
            table[head] = self.top
            return
        items = list(table.items())
        items.insert(self.index, (head, self.top))
        table.clear()
        table.update(items)


def used_paths(graph: torch.fx.Graph) -> list[str]:
    """The submodule and attribute paths the graph's ``call_module`` and ``get_attr`` nodes name."""
    return [str(n.target) for n in graph.nodes if n.op in ("call_module", "get_attr")]


def drop_unused(tx, paths: list[str]) -> list[str]:
    """Drop each submodule of ``paths`` that no node uses any more (itself or below it); the dropped ones."""
    used = used_paths(tx.state.graph)
    dropped = []
    for path in dict.fromkeys(paths):
        if any(u == path or u.startswith(path + ".") for u in used):
            continue
        try:
            tx.state.gm.get_submodule(path)
        except AttributeError:
            continue
        tx.do(DropSubmodule(path))
        dropped.append(path)
    return dropped
