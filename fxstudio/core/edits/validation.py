"""Checks made before an edit touches the graph: call signatures (arity, accepted keywords) and
the shape of an edit dict (its op and fields).
"""

from __future__ import annotations

import inspect
import keyword
import operator
import unicodedata
from typing import Any

import torch
import torch.fx
from torch.fx.operator_schemas import get_signature_for_torch_op

from fxstudio.core.argsyntax import format_value, short_repr
from fxstudio.core.errors import EditRefused

# Fields of each op of design §4: (required, optional). "node"/"match" and "before"/"after" are
# alternatives checked by the op itself.
OP_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "set_arg": (frozenset({"node", "key", "value"}), frozenset()),
    "del_kwarg": (frozenset({"node", "key"}), frozenset()),
    "insert": (frozenset({"kind", "target"}), frozenset({"before", "after", "args", "kwargs", "name", "reroute"})),
    "erase": (frozenset({"node"}), frozenset({"replace_uses_with"})),
    "replace_uses": (frozenset({"node", "with"}), frozenset()),
    "set_target": (frozenset({"target"}), frozenset({"node", "match"})),
    "duplicate": (frozenset({"node"}), frozenset({"name"})),
    "rename": (frozenset({"node", "name"}), frozenset()),
    "eliminate_dead_code": (frozenset(), frozenset()),
}


def check_fields(edit: Any) -> str:
    """The edit's op after checking its fields; ``EditRefused`` for an unknown op or field."""
    if not isinstance(edit, dict):
        raise EditRefused(f"An edit must be an object with an 'op' field, not {type(edit).__name__}.")
    op = edit.get("op")
    if not isinstance(op, str) or op not in OP_FIELDS:
        raise EditRefused(f"Unknown edit op {short_repr(op)} (known: {', '.join(OP_FIELDS)}).")
    required, optional = OP_FIELDS[op]
    unknown = sorted(set(edit) - required - optional - {"op"}, key=str)
    if unknown:
        raise EditRefused(f"Unknown field(s) {', '.join(short_repr(f, 40) for f in unknown[:5])} for op {op!r} "
                          f"(fields: {', '.join(sorted(required | optional))}).")
    missing = sorted(required - set(edit))
    if missing:
        raise EditRefused(f"Op {op!r} needs the field(s) {', '.join(map(repr, missing))}.")
    return op


def signatures(op: str, target: Any, gm: torch.nn.Module | None = None) -> list[inspect.Signature] | None:
    """Call signatures a node's args must fit (several for overloaded torch ops), or None if unknown.

    ``call_method`` signatures are unknown: tensor methods take varargs that the functional
    schemas do not describe (``x.view(-1, 1)``).
    """
    if op == "call_function":
        if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) or _is_torch_builtin(target):
            try:
                sigs = get_signature_for_torch_op(target)
            except Exception:  # noqa: BLE001 - schema lookup is best effort
                sigs = None
            if sigs:
                return sigs
        try:
            return [inspect.signature(target)]
        except (TypeError, ValueError):
            return None
    if op == "call_module" and gm is not None and isinstance(target, str):
        try:
            return [inspect.signature(gm.get_submodule(target).forward)]
        except (AttributeError, TypeError, ValueError):
            return None
    return None


def _is_torch_builtin(fn: Any) -> bool:
    return (inspect.isbuiltin(fn) or type(fn).__name__ == "builtin_function_or_method") and \
        (getattr(fn, "__module__", None) or "").startswith("torch")


def target_label(op: str, target: Any) -> str:
    """Short text for messages: ``torch.add``, ``.view``, ``layer1.conv``."""
    from fxstudio.core.targets import format_callable

    if op == "call_function":
        return format_callable(target)
    if op == "call_method":
        return f".{target}()"
    return str(target)


def check_call(op: str, target: Any, args: tuple, kwargs: dict, gm: torch.nn.Module | None = None) -> str | None:
    """Why ``target(*args, **kwargs)`` cannot be called (keyword, arity, a tensor constant that fx
    cannot write into code), or None when it can or the signature is unknown."""
    tensors: list = []
    torch.fx.node.map_aggregate((args, kwargs), lambda v: tensors.append(v) if isinstance(v, torch.Tensor) else v)
    if tensors:
        return ("A tensor constant cannot be written into the graph's code; insert a get_attr node for a "
                "parameter or buffer and reference it instead.")
    if op == "get_attr":
        return None if not args and not kwargs else "A get_attr node takes no arguments."
    if op == "output":
        return None if len(args) == 1 and not kwargs else "The output node takes exactly one argument (the returned value)."
    if op == "placeholder":
        return None if len(args) <= 1 and not kwargs else "An input node takes at most one argument (its default)."
    for key in kwargs:
        reason = keyword_problem(key)
        if reason:
            return reason
    if op == "call_function" and target is getattr:
        reason = _getattr_problem(args)
        if reason:
            return reason
    if op == "call_function" and target is operator.getitem and args and \
            isinstance(args[0], (int, float, complex, type(None))):
        return f"{format_value(args[0])}[...] cannot be indexed: args[0] of getitem must be a node or a sequence."
    if op == "call_method" and (not args or not isinstance(args[0], torch.fx.Node)):
        return f"The object .{target}() is called on (args[0]) must be a node reference such as %x."
    sigs = signatures(op, target, gm)
    if not sigs:
        return None
    name = target_label(op, target)
    known = _keyword_names(sigs)
    if known is not None:
        bad = [k for k in kwargs if k not in known]
        if bad:
            position = positional_only_index(sigs, bad[0])
            if position is not None:
                return (f"{bad[0]!r} is a positional-only parameter of {name}: set it by position "
                        f"(key {position}), not as a keyword.")
            return (f"{name} does not accept the keyword {bad[0]!r} "
                    f"(its keywords: {', '.join(sorted(known)) or 'none'}).")
    errors = []
    for sig in sigs:
        try:
            sig.bind(*args, **kwargs)
            return None
        except TypeError as exc:
            errors.append(str(exc))
    shown = "; ".join(dict.fromkeys(errors))
    return (f"Wrong arguments for {name}: {len(args)} positional and keywords "
            f"{sorted(kwargs) if kwargs else 'none'} fit none of its signatures ({shown}). "
            f"Signature: {name}{sigs[0]}.")


def keyword_problem(key: Any) -> str | None:
    """Why ``key`` cannot be a keyword argument in generated code, or None when it can.

    Python reads identifiers in NFKC form, so ``ｘ=1`` is ``x=1`` once compiled: such a key would
    not round-trip (and clashes with ``x``), so only keys already in NFKC form are accepted.
    """
    if not isinstance(key, str) or not key.isidentifier():
        return f"{short_repr(key, 40)} is not a keyword name."
    if keyword.iskeyword(key):
        return f"{key!r} is a Python keyword; it cannot be used as a keyword argument name."
    normal = unicodedata.normalize("NFKC", key)
    if normal != key:
        return f"The keyword {key!r} is read by Python as {normal!r}; write {normal!r} instead."
    return None


def _getattr_problem(args: tuple) -> str | None:
    """Why fx cannot write ``getattr(obj, name)`` as the ``obj.name`` it generates, or None."""
    if args and isinstance(args[0], (bool, int, float, complex, type(None))):
        attr = args[1] if len(args) > 1 and isinstance(args[1], str) else "attribute"
        return (f"getattr({format_value(args[0])}, ...) would be written as {format_value(args[0])}.{attr}: "
                "args[0] of getattr must be a node reference such as %x, not a number or None.")
    if len(args) == 2 and isinstance(args[1], str):
        for part in args[1].split("."):
            if part.isidentifier() and (keyword.iskeyword(part) or unicodedata.normalize("NFKC", part) != part):
                return f"{args[1]!r} cannot be written as an attribute name (a keyword or a non-normalized name)."
    return None


def positional_only_index(sigs: list[inspect.Signature], name: str) -> int | None:
    """The position of ``name`` where a signature declares it positional-only (``operator.mul``'s
    ``a``, ``b``), else None: a script sets such a parameter with an int key."""
    for sig in sigs:
        for i, p in enumerate(sig.parameters.values()):
            if p.name == name and p.kind is inspect.Parameter.POSITIONAL_ONLY:
                return i
    return None


def _keyword_names(sigs: list[inspect.Signature]) -> set[str] | None:
    names: set[str] = set()
    for sig in sigs:
        for p in sig.parameters.values():
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                return None
            if p.kind is not inspect.Parameter.POSITIONAL_ONLY:
                names.add(p.name)
    return names


def positional_names(op: str, target: Any, gm: torch.nn.Module | None = None) -> list[str]:
    """Names of the positional parameters of the first known signature ([] if unknown)."""
    sigs = signatures(op, target, gm)
    if not sigs:
        return []
    return [p.name for p in sigs[0].parameters.values()
            if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
