"""Ops that change what existing nodes compute: set_arg, del_kwarg, replace_uses, set_target.

Each handler validates first, then applies primitives through the transaction, and returns the
command's label and the edit as recorded in scripts.
"""

from __future__ import annotations

from typing import Any

import torch.fx

from fxstudio.core.argsyntax import format_value, short_repr
from fxstudio.core.edits.bulk import drop_unused, match_nodes, no_match
from fxstudio.core.edits.common import (check_refs_usable, node_field, nodes_in, parse_in_graph, plural,
                                        target_in_graph, text_field)
from fxstudio.core.edits.ordering import ensure_before
from fxstudio.core.edits.primitives import AddSubmodule, SetArgs, SetTarget, Transaction
from fxstudio.core.edits.state import ID_KEY
from fxstudio.core.edits.call_checks import check_call
from fxstudio.core.edits.validation import bulk_fields_problem, droppable_kwargs, keyword_problem
from fxstudio.core.errors import EditRefused
from fxstudio.core.targets import NewSubmodule, format_target

_CALLS = ("call_function", "call_method", "call_module")


def set_args(tx: Transaction, node: torch.fx.Node, args: tuple, kwargs: dict) -> None:
    """Give ``node`` new args/kwargs, first moving nodes so every new input is defined before it."""
    check_refs_usable(nodes_in((args, kwargs)))
    for ref in nodes_in((args, kwargs)):
        if ref not in node.all_input_nodes:
            ensure_before(tx, ref, node)
    state = tx.state
    tx.do(SetArgs(node.meta[ID_KEY], state.encode(node.args), state.encode(node.kwargs),
                  state.encode(tuple(args)), state.encode(dict(kwargs))))


def op_set_arg(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "set_arg", "node", "key": int|str, "value": text}``: set one argument (a rewire when
    the value references nodes)."""
    state = tx.state
    node = node_field(state, edit, "node")
    key = edit["key"]
    text = text_field(edit, "value").strip()
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise EditRefused(f"Field 'key' must be a position (int) or a keyword (text), not {key!r}.")
    if node.op == "placeholder":
        raise EditRefused(f"%{node.name} is an input of the model; it has no arguments to set.")
    if node.op == "output" and key != 0:
        raise EditRefused("The output node has one argument, key 0 (the returned value).")
    value = parse_in_graph(state, text)
    args, kwargs = list(node.args), dict(node.kwargs)
    if isinstance(key, int):
        if key < 0 or key > len(args) or (key == len(args) and node.op not in _CALLS):
            raise EditRefused(f"Index {key} is out of range: %{node.name} has "
                              f"{plural(len(args), 'positional argument')}"
                              + (f" (args[0] to args[{len(args) - 1}])." if args else "."))
        if key == len(args):
            args.append(value)
        else:
            args[key] = value
        label = f"Set {node.name}.args[{key}] = {text}"
    else:
        problem = keyword_problem(key)
        if problem:
            raise EditRefused(problem)
        kwargs[key] = value
        label = f"Set {node.name}.{key} = {text}"
    refs = nodes_in(value)
    if node in refs:
        raise EditRefused(f"Using %{node.name} as an input of itself would create a cycle: {node.name} → {node.name}.")
    reason = check_call(node.op, node.target, tuple(args), kwargs, state.gm)
    if reason:
        raise EditRefused(reason)
    set_args(tx, node, tuple(args), kwargs)
    return label, {"op": "set_arg", "node": node.name, "key": key, "value": text}


def op_del_kwarg(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "del_kwarg", "node", "key"}``: remove a keyword argument."""
    state = tx.state
    node = node_field(state, edit, "node")
    key = edit["key"]
    if not isinstance(key, str) or key not in node.kwargs:
        have = ", ".join(node.kwargs) or "none"
        raise EditRefused(f"%{node.name} has no keyword argument {short_repr(key, 40)} (its keywords: {have}).")
    kwargs = {k: v for k, v in node.kwargs.items() if k != key}
    reason = check_call(node.op, node.target, node.args, kwargs, state.gm)
    if reason:
        raise EditRefused(f"Cannot remove {key!r}: {reason}")
    set_args(tx, node, node.args, kwargs)
    return f"Delete {node.name}.{key}", {"op": "del_kwarg", "node": node.name, "key": key}


def replace_uses(tx: Transaction, node: torch.fx.Node, replacement: torch.fx.Node) -> int:
    """Point every user of ``node`` except ``replacement`` itself at ``replacement``; returns how many."""
    if replacement is node:
        raise EditRefused(f"Cannot replace the uses of %{node.name} with itself.")
    check_refs_usable([replacement])
    users = [u for u in node.users if u is not replacement]
    for user in users:
        swap = lambda n: replacement if n is node else n  # noqa: E731
        set_args(tx, user, torch.fx.node.map_arg(user.args, swap), torch.fx.node.map_arg(user.kwargs, swap))
    return len(users)


def op_replace_uses(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "replace_uses", "node", "with"}``: ``node.replace_all_uses_with(with)``."""
    state = tx.state
    node = node_field(state, edit, "node")
    replacement = node_field(state, edit, "with")
    if node.op == "output":
        raise EditRefused("The output node has no users.")
    if not any(u is not replacement for u in node.users):
        raise EditRefused(f"%{node.name} has no users to point at %{replacement.name}.")
    count = replace_uses(tx, node, replacement)
    label = f"Replace uses of {node.name} with {replacement.name} ({plural(count, 'user')})"
    return label, {"op": "replace_uses", "node": node.name, "with": replacement.name}


def retarget(tx: Transaction, node: torch.fx.Node, target: Any) -> dict[str, Any]:
    """Give ``node`` a new target (adding a new submodule first for a constructor), checking arity;
    keywords equal to the old target's defaults that the new one does not accept are dropped
    (``droppable_kwargs``). Returns the dropped keywords and their values."""
    state = tx.state
    if isinstance(target, NewSubmodule):
        name = fresh_submodule_name(state.gm, target.base_name)
        tx.do(AddSubmodule(name, target.module))
        target = name
    drop = droppable_kwargs(node.op, node.target, target, node.args, node.kwargs, state.gm)
    kwargs = {k: v for k, v in node.kwargs.items() if k not in drop}
    reason = check_call(node.op, target, node.args, kwargs, state.gm)
    if reason:
        raise EditRefused(reason)
    dropped = {k: node.kwargs[k] for k in drop}
    if dropped:
        set_args(tx, node, node.args, kwargs)
    tx.do(SetTarget(node.meta[ID_KEY], node.target, target))
    return dropped


def fresh_submodule_name(gm: torch.nn.Module, base: str) -> str:
    """``base``, or ``base_1``, ``base_2``... whichever is not an attribute of ``gm`` yet."""
    name, i = base, 0
    while hasattr(gm, name):
        i += 1
        name = f"{base}_{i}"
    return name


def _dropped_text(dropped: dict[str, Any]) -> str:
    return "dropped " + ", ".join(f"{k}={format_value(v)}" for k, v in dropped.items())


def op_set_target(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "set_target", "node"|"match", "target"}``: swap the target of one node, or of every
    node calling ``match`` (the torch.fx.Transformer pattern) as one edit. ``match`` may name an
    ``nn.Module`` class: each ``call_module`` node of exactly that class gets a fresh submodule from
    the constructor ``target``, and old submodules no node uses any more are dropped."""
    state = tx.state
    text = text_field(edit, "target").strip()
    if ("node" in edit) == ("match" in edit):
        raise EditRefused("set_target needs exactly one of 'node' (one node) or 'match' (every node calling a target).")
    problem = bulk_fields_problem(edit)
    if problem:
        raise EditRefused(problem)
    if "node" in edit:
        node = node_field(state, edit, "node")
        if node.op not in (*_CALLS, "get_attr"):
            raise EditRefused(f"%{node.name} is a {node.op} node; it has no target to set.")
        old = format_target(node, state.user_module)
        dropped = retarget(tx, node, target_in_graph(state, node.op, text))
        record = {"op": "set_target", "node": node.name, "target": text}
        label = f"Set {node.name} target {old} → {text}"
        if dropped:
            record["dropped_kwargs"] = list(dropped)
            label += f" ({_dropped_text(dropped)})"
        return label, record
    match = text_field(edit, "match").strip()
    nodes, cls, why = match_nodes(state, match)
    if not nodes:
        raise no_match(f"calls a {match!r} submodule" if cls else f"calls {match!r}", why)
    dropped = {}
    old_paths = [str(n.target) for n in nodes] if cls is not None else []
    for node in nodes:
        try:
            dropped.update(retarget(tx, node, target_in_graph(state, node.op, text)))
        except EditRefused as exc:
            hint = (" (a module class is swapped for a constructor such as torch.nn.GELU(), or a submodule path)"
                    if cls is not None and "(" not in text else "")
            raise EditRefused(f"Cannot swap %{node.name}: {exc.message}{hint}") from None
    record: dict[str, Any] = {"op": "set_target", "match": match, "target": text}
    notes = [plural(len(nodes), "node")]
    if cls is not None:
        gone = drop_unused(tx, old_paths)
        record["sites"] = len(nodes)
        if gone:
            notes.append(f"{plural(len(gone), 'unused submodule')} dropped")
    if dropped:
        record["dropped_kwargs"] = list(dropped)
        notes.append(_dropped_text(dropped))
    return f"Swap {match} → {text} ({'; '.join(notes)})", record
