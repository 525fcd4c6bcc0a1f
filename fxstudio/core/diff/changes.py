"""What differs between two matched nodes, down to the argument.

``node_changes(base, other, to_base, base_mod, other_mod)`` lists ``Change(field, before, after)``:
``op``, ``target``, ``args[i]``, ``kwargs['k']`` (a side that does not pass it reads ``<none>``), and for a
``call_module`` or ``get_attr`` what it reads: ``module`` (class and configuration) and
``weights`` (a tensor's shape, dtype or values). A node argument is the same when it names the
partner of the base's argument, so renames alone change nothing; it is written ``%name`` in each
graph's own names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.fx

from fxstudio.core.argsyntax import format_value
from fxstudio.core.metadata import normalized_arguments
from fxstudio.core.node_text import target_text

MISSING = object()   # an argument one side does not pass
NONE_TEXT = "<none>"
MAX_TEXT = 200


class Change(NamedTuple):
    """One difference of a matched pair: ``field`` (``args[1]``, ``kwargs['alpha']``, ``target``,
    ``op``, ``module``, ``weights``) and its text in the base graph and in the other."""

    field: str
    before: str
    after: str

    def text(self) -> str:
        """``args[1]: 0.5 -> 0.25`` (``weights['weight']: values (max |Δ| 0.5)`` for what has no before text)."""
        return f"{self.field}: {self.before} -> {self.after}" if self.before else f"{self.field}: {self.after}"


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _text(value: Any) -> str:
    """The argument syntax of ``value`` (a node as ``%name``)."""
    try:
        return format_value(value)
    except Exception:  # noqa: BLE001 - an exotic constant: its repr
        return repr(value)


def _key_text(value: Any, key: Callable[[torch.fx.Node], str]) -> str:
    """``value``'s text with each node replaced by ``key(node)`` (a string no constant spells)."""
    return _text(torch.fx.node.map_arg(value, lambda n: "\x00" + key(n)))


def node_changes(base: torch.fx.Node, other: torch.fx.Node, to_base: dict, base_mod: torch.nn.Module | None,
                 other_mod: torch.nn.Module | None) -> list[Change]:
    """The differences of a matched pair (module docstring); [] when they compute the same."""
    if base.op == other.op and _same_call_quick(base, other, to_base):
        return _held_changes(base, other, base_mod, other_mod) if base.op in ("call_module", "get_attr") else []
    out: list[Change] = []
    bt, ot = target_text(base), target_text(other)
    if base.op != other.op:
        # a module call against the ATen op it became: their argument lists do not align
        return [Change("op", f"{base.op} {bt}", f"{other.op} {ot}")]
    if bt != ot:
        out.append(Change("target", bt, ot))

    def as_base(n: torch.fx.Node) -> str:
        partner = to_base.get(n)
        return partner.name if partner is not None else "+" + n.name

    args: list[Change] = []
    for i in range(max(len(base.args), len(other.args))):
        _compare(args, f"args[{i}]", base.args[i] if i < len(base.args) else MISSING,
                 other.args[i] if i < len(other.args) else MISSING, as_base)
    for k in [*base.kwargs, *(k for k in other.kwargs if k not in base.kwargs)]:
        _compare(args, f"kwargs[{k!r}]", base.kwargs.get(k, MISSING), other.kwargs.get(k, MISSING), as_base)
    if args and bt == ot and _same_call(base, other, as_base):
        args = []   # one call spelled two ways: f(x, dtype=d) and f(x, None, None, d)
    out.extend(args)
    if base.op == other.op and base.op in ("call_module", "get_attr"):
        out.extend(_held_changes(base, other, base_mod, other_mod))
    return out


def _same_call_quick(base: torch.fx.Node, other: torch.fx.Node, to_base: dict) -> bool:
    """The common case without formatting anything: the same target object and equal arguments,
    each node argument the partner of the base's (False also where ``==`` cannot tell)."""
    if not (base.target is other.target or (isinstance(base.target, str) and base.target == other.target)):
        return False

    def as_base(v):   # typed leaves: 2, 2.0 and True are equal to == but not to torch
        if isinstance(v, torch.fx.Node):
            p = to_base.get(v)
            return ("%", p.name) if p is not None else ("+", v.name)
        return (type(v), v)

    def own(v):
        return ("%", v.name) if isinstance(v, torch.fx.Node) else (type(v), v)

    try:
        return bool(torch.fx.node.map_aggregate((other.args, other.kwargs), as_base)
                    == torch.fx.node.map_aggregate((base.args, base.kwargs), own))
    except Exception:  # noqa: BLE001 - tensors and other values == cannot compare: the full comparison
        return False


def _same_call(base: torch.fx.Node, other: torch.fx.Node, other_as_base) -> bool:
    """Whether both calls bind the same value to every parameter (``normalized_arguments``)."""
    b, _ = normalized_arguments(base)
    o, _ = normalized_arguments(other)
    return b is not None and o is not None and _key_text(b, lambda n: n.name) == _key_text(o, other_as_base)


def _compare(out: list[Change], name: str, b: Any, o: Any, other_as_base) -> None:
    if b is MISSING or o is MISSING:
        if b is not o:
            out.append(Change(name, NONE_TEXT if b is MISSING else _short(_text(b)),
                              NONE_TEXT if o is MISSING else _short(_text(o))))
        return
    if _key_text(b, lambda n: n.name) != _key_text(o, other_as_base):
        out.append(Change(name, _short(_text(b)), _short(_text(o))))


def _fetch(module: torch.nn.Module | None, path: str) -> Any:
    obj: Any = module
    for part in path.split(".") if path else ():
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _module_text(m: torch.nn.Module) -> str:
    try:
        extra = m.extra_repr()
    except Exception:  # noqa: BLE001 - a module whose repr fails: its class alone
        extra = ""
    return f"{type(m).__name__}({extra})"


def tensor_difference(a: Any, b: Any) -> str | None:
    """Why two tensors differ (``shape 8×3 -> 8×4``, ``values (max |Δ| 0.5)``), or None when equal."""
    if a is b:
        return None
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return None if type(a) is type(b) else f"{type(a).__name__} -> {type(b).__name__}"
    if type(a) is not type(b):
        return f"{type(a).__name__} -> {type(b).__name__}"
    if a.shape != b.shape:
        return f"shape {'×'.join(map(str, a.shape))} -> {'×'.join(map(str, b.shape))}"
    if a.dtype != b.dtype:
        return f"dtype {str(a.dtype).removeprefix('torch.')} -> {str(b.dtype).removeprefix('torch.')}"
    try:
        if a.device.type == "meta" or b.device.type == "meta" or torch.equal(a, b):
            return None
        delta = (a.detach().double() - b.detach().double()).abs().max().item() if a.is_floating_point() else None
    except Exception:  # noqa: BLE001 - tensors torch cannot compare (quantized, subclasses): say so
        return "values (not comparable)"
    return f"values (max |Δ| {delta:.3g})" if delta is not None else "values"


def _held_changes(base: torch.fx.Node, other: torch.fx.Node, base_mod, other_mod) -> list[Change]:
    """A ``call_module``'s module class, configuration and weights; a ``get_attr``'s tensor."""
    a, b = _fetch(base_mod, str(base.target)), _fetch(other_mod, str(other.target))
    if a is None or b is None:
        return []
    if isinstance(a, torch.nn.Module) and isinstance(b, torch.nn.Module):
        out = []
        at, bt = _module_text(a), _module_text(b)
        if at != bt:
            out.append(Change("module", _short(at), _short(bt)))
        sa, sb = a.state_dict(keep_vars=True), b.state_dict(keep_vars=True)
        for key in [*sa, *(k for k in sb if k not in sa)]:
            why = ("missing" if key not in sb else "added") if (key not in sa or key not in sb) \
                else tensor_difference(sa[key], sb[key])
            if why:
                out.append(Change(f"weights[{key!r}]", "", why))
        return out
    why = tensor_difference(a, b)
    return [Change("weights", "", why)] if why else []
