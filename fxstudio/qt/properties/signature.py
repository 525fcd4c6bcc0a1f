"""What the panel knows of a node's callee: parameter names for its positional arguments and the
defaults it does not pass (Qt-free; the panel shows these greyed and editable).

torch builtins have several overloads; the ones that accept the node's arguments are kept, tensor
overloads preferred, and a default is only shown when every remaining overload agrees on it, so
the panel never shows a default that might not be the one used. The signatures themselves come from
``fxstudio.core.signatures``, the resolver edit validation uses too (a ``call_method`` has some only
when it is called on a known tensor).
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxstudio.core.metadata import normalized_arguments
from fxstudio.core.signatures import node_signatures, target_signatures


@dataclass
class ParamView:
    """Labels of the node's positional args, keyword names it may take, and unused defaults.

    Every name shown is a key an edit script accepts: ``positional_names[i]`` is the parameter's
    name where it may also be passed as a keyword, ``[i] name`` for a positional-only parameter
    (``operator.mul``'s ``a``, ``b``: the script's key is the position ``i``), or None when unknown.
    ``defaults`` and ``keywords`` hold only parameters that can be passed by keyword.
    """

    positional_names: list[str | None] = field(default_factory=list)
    defaults: list[tuple[str, Any]] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    note: str = ""


def _candidate_signatures(node: torch.fx.Node, root: torch.nn.Module | None) -> list[inspect.Signature]:
    """The node's callee signatures, from THE resolver (``fxstudio.core.signatures``): the same that
    edit validation checks arguments against."""
    return list(node_signatures(node, root))


def _binds(sig: inspect.Signature, node: torch.fx.Node) -> bool:
    try:
        sig.bind(*node.args, **node.kwargs)
        return True
    except TypeError:
        return False


def _mentions_tensor(sig: inspect.Signature) -> bool:
    return any("Tensor" in str(p.annotation) for p in sig.parameters.values())


def parameter_view(node: torch.fx.Node, root: torch.nn.Module | None) -> ParamView:
    """Names for ``node.args`` positions, keyword names accepted, and the defaults not passed.

    ``metadata.normalized_arguments`` (which tells overloads apart by the propagated types) decides
    names and defaults where it can; otherwise only what every fitting overload agrees on is shown.
    """
    if node.op not in ("call_function", "call_method", "call_module"):
        return ParamView(positional_names=[None] * len(node.args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's schema parser warns about List[~t] parameters
        view = _signature_view(node, root)
        normalized, note = normalized_arguments(node)
    if normalized is None:
        if note and "positional-only" not in note and node.op != "call_method":
            view.note = note
        return view
    keys = list(normalized)
    if len(keys) < len(node.args) or any(isinstance(normalized[k], tuple) and k == "args" for k in keys):
        return view
    only = _positional_only(node, root)
    view.positional_names = [position_label(i, k) if k in only else k for i, k in enumerate(keys[: len(node.args)])]
    view.defaults = [(k, normalized[k]) for k in keys[len(node.args):] if k not in node.kwargs and k not in only]
    view.keywords = [k for k in view.keywords if k not in node.kwargs] or \
        [k for k, _ in view.defaults]
    view.note = ""
    return view


def position_label(index: int, name: str) -> str:
    """The label of a positional-only argument: visibly a position (``[1] b``), since a script
    sets it with the int key ``1``, never with ``"b"``."""
    return f"[{index}] {name}"


def _positional_only(node: torch.fx.Node, root: torch.nn.Module | None) -> set[str]:
    """Names that some candidate signature of the node's callee declares positional-only."""
    return {p.name for sig in _candidate_signatures(node, root) for p in sig.parameters.values()
            if p.kind is inspect.Parameter.POSITIONAL_ONLY}


def _signature_view(node: torch.fx.Node, root: torch.nn.Module | None) -> ParamView:
    sigs = [s for s in _candidate_signatures(node, root) if "out" not in s.parameters]
    bound = [s for s in sigs if _binds(s, node)]
    if any(_mentions_tensor(s) for s in bound):
        bound = [s for s in bound if _mentions_tensor(s)]
    view = ParamView(positional_names=[None] * len(node.args))
    if not bound:
        if node.op in ("call_function", "call_method", "call_module"):
            view.note = "signature unknown: no defaults shown" if not sigs else \
                "no known signature accepts these arguments"
        return view
    first = list(bound[0].parameters.values())
    for i in range(len(node.args)):
        names, only = set(), False
        for sig in bound:
            params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            names.add(params[i].name if i < len(params) else None)
            only = only or (i < len(params) and params[i].kind is inspect.Parameter.POSITIONAL_ONLY)
        if len(names) == 1:
            name = names.pop()
            view.positional_names[i] = position_label(i, name) if only and name else name
    given = set(node.kwargs)
    for i, p in enumerate(first):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) or p.default is inspect.Parameter.empty:
            continue
        if p.name in given or p.name in view.positional_names:
            continue
        agreeing = all(
            p.name in s.parameters and _same(s.parameters[p.name].default, p.default) for s in bound[1:]
        )
        if agreeing:
            view.defaults.append((p.name, p.default))
    view.keywords = [
        p.name for p in first
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in given
        and p.name not in view.positional_names
    ]
    if len(bound) > 1 and len({tuple(s.parameters) for s in bound}) > 1:
        view.note = f"{len(bound)} overloads accept these arguments; defaults shown are common to all"
    return view


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - tensors and odd defaults compare strangely
        return a is b


def signature_text(op: str, target: Any) -> str:
    """A one-line call signature for a resolved target, without annotations: ``(input, *, alpha=1)``;
    ``""`` when unknown. Several overloads show the first and how many more there are."""
    if op not in ("call_function", "call_method"):
        return ""
    sigs = [s for s in target_signatures(op, target) if "out" not in s.parameters]
    if any(_mentions_tensor(s) for s in sigs):
        sigs = [s for s in sigs if _mentions_tensor(s)]
    if not sigs:
        return ""
    parts, star = [], False
    for p in sigs[0].parameters.values():
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = {p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}"}.get(p.kind, p.name)
        if p.default is not inspect.Parameter.empty:
            text += f"={p.default!r}"
        parts.append(text)
    more = f"   (+{len(sigs) - 1} overloads)" if len(sigs) > 1 else ""
    return f"({', '.join(parts)}){more}"
