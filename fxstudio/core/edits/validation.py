"""Checks made before an edit touches the graph: call signatures (arity, accepted keywords) and
keyword names. The fields of an edit dict are checked by ``registry.check_fields``.
"""

from __future__ import annotations

import inspect
import keyword
import operator
import re
import unicodedata
from typing import Any

import torch
import torch.fx

from fxstudio.core.argsyntax import format_value, short_repr
from fxstudio.core.errors import EditRefused
from fxstudio.core.node_text import call_label
from fxstudio.core.signatures import target_signatures


def signatures(op: str, target: Any, gm: torch.nn.Module | None = None,
               args: tuple | None = None) -> list[inspect.Signature] | None:
    """Call signatures a node's args must fit (several for overloaded torch ops), or None if unknown:
    those of ``fxstudio.core.signatures`` (which decides the ``call_method`` case: only a method on a
    known tensor, ``args[0]``, has signatures), the same the Properties panel shows."""
    sigs = target_signatures(op, target, gm) if args is None else target_signatures(op, target, gm, args)
    return list(sigs) or None


_KEYWORDS: dict[int, tuple[tuple, set[str] | None]] = {}


def _keywords_of(sigs: tuple) -> set[str] | None:
    """``_keyword_names`` of a signatures tuple, remembered per tuple (``fxstudio.core.signatures``
    caches the tuples, so a script repeating one target computes them once)."""
    hit = _KEYWORDS.get(id(sigs))
    if hit is not None and hit[0] is sigs:
        return hit[1]
    names = _keyword_names(list(sigs))
    if len(_KEYWORDS) > 1024:
        _KEYWORDS.clear()
    _KEYWORDS[id(sigs)] = (sigs, names)
    return names


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
    raw = target_signatures(op, target, gm, args)
    if not raw:
        return None
    sigs = list(raw)
    name = call_label(op, target)
    known = _keywords_of(raw) if isinstance(raw, tuple) else _keyword_names(sigs)
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


# ------------------------------------------------------------------------- kwargs a swap drops


def droppable_kwargs(op: str, old: Any, new: Any, args: tuple, kwargs: dict,
                     gm: torch.nn.Module | None = None) -> list[str]:
    """The keywords of a call that a swap from ``old`` to ``new`` may drop: those ``new`` does not
    accept (by its known signatures) whose value equals their default in a signature of ``old``
    (``F.relu``'s ``inplace=False`` when swapping to ``F.gelu``). A keyword with another value stays,
    and ``check_call`` then refuses it by name; nothing is dropped when ``new``'s signature is unknown."""
    if op not in ("call_function", "call_method") or not kwargs:
        return []
    new_sigs = signatures(op, new, gm, args)
    accepted = _keyword_names(new_sigs) if new_sigs else None
    if accepted is None:
        return []
    old_sigs = signatures(op, old, gm, args) or []
    return [k for k, v in kwargs.items()
            if k not in accepted and any(_is_default(sig, k, v) for sig in old_sigs)]


def _is_default(sig: inspect.Signature, key: str, value: Any) -> bool:
    param = sig.parameters.get(key)
    if param is None or param.default is inspect.Parameter.empty or isinstance(value, torch.fx.Node):
        return False
    try:
        return type(value) is type(param.default) and bool(value == param.default)
    except Exception:  # noqa: BLE001 - an odd value that cannot be compared is not a default
        return False


# ------------------------------------------------------------------- fields of the bulk forms

MAX_REGEX_CHARS = 200
"""The longest ``{"regex": ...}`` an anchor of ``insert`` may have."""

_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")


def anchor_spec_problem(field: str, spec: Any) -> str | None:
    """Why ``spec`` is not a valid ``after_each``/``before_each`` object (``{"match": TARGET}`` or
    ``{"regex": PATTERN}``), or None."""
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in ("match", "regex"):
        return (f"'{field}' must be an object with one field, \"match\" (a target such as torch.nn.Conv2d) "
                f"or \"regex\" (node names), not {short_repr(spec, 60)}.")
    key, value = next(iter(spec.items()))
    if not isinstance(value, str) or not value.strip():
        return f"'{field}': \"{key}\" must be non-empty text, not {short_repr(value, 60)}."
    if key == "regex":
        try:
            name_regex(field, value)
        except EditRefused as exc:
            return exc.message
    return None


def name_regex(field: str, text: str) -> re.Pattern:
    """The compiled node-name pattern of an anchor object; ``EditRefused`` (one line) when it is too
    long, does not compile, or nests repetitions (``(a+)+``, whose matching can take exponential time)."""
    if len(text) > MAX_REGEX_CHARS:
        raise EditRefused(f"'{field}': the regex has {len(text):,} characters; at most {MAX_REGEX_CHARS} are allowed.")
    try:
        pattern = re.compile(text)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        where = f" at position {exc.pos}" if getattr(exc, "pos", None) is not None else ""
        reason = getattr(exc, "msg", None) or str(exc).splitlines()[0]
        raise EditRefused(f"'{field}': the regex {short_repr(text, 60)} does not compile: {reason}{where}.") from None
    if _nested_repeat(text):
        raise EditRefused(f"'{field}': the regex {short_repr(text, 60)} repeats a group that itself repeats or "
                          "branches (like (a+)+ or (a|b)*), which can take exponential time; write it without "
                          "the nesting.")
    return pattern


def _nested_repeat(text: str) -> bool:
    try:
        import re._parser as sre_parse  # noqa: PLC0415 - Python 3.11+; the check is skipped without it
    except ImportError:  # pragma: no cover
        return False
    try:
        parsed = sre_parse.parse(text)
    except Exception:  # noqa: BLE001 - it compiled, so this does not happen
        return False

    def walk(value):
        if isinstance(value, (list, sre_parse.SubPattern)):
            for item in value:
                yield from walk(item)
        elif isinstance(value, tuple):
            if len(value) == 2 and isinstance(value[0], int) and hasattr(value[0], "name"):
                yield value
            for item in value:
                yield from walk(item)

    for op, av in walk(parsed):
        if op.name in _REPEATS and av[1] > 1:
            if any(o.name == "BRANCH" or (o.name in _REPEATS and a[1] > 1) for o, a in walk(av[2])):
                return True
    return False


def bulk_fields_problem(edit: dict) -> str | None:
    """Why the bulk fields of an ``insert`` or ``set_target`` edit are malformed, or None: the anchor
    objects ``after_each``/``before_each``, and the recorded ``sites`` (a count) and ``dropped_kwargs``
    (keyword names)."""
    for field in ("after_each", "before_each"):
        if field in edit:
            problem = anchor_spec_problem(field, edit[field])
            if problem:
                return problem
    sites = edit.get("sites", 1)
    if isinstance(sites, bool) or not isinstance(sites, int) or not 1 <= sites <= 10**9:
        return f"'sites' (recorded) must be a count of nodes, 1 or more, not {short_repr(sites, 40)}."
    dropped = edit.get("dropped_kwargs", ["x"])
    if not isinstance(dropped, list) or not dropped or len(dropped) > 1000:
        return f"'dropped_kwargs' (recorded) must be a list of keyword names, not {short_repr(dropped, 60)}."
    for key in dropped:
        problem = keyword_problem(key)
        if problem:
            return f"'dropped_kwargs': {problem}"
    return None
