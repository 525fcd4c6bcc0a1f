"""Ops that add, remove or rename nodes: insert, erase, duplicate, rename, eliminate_dead_code."""

from __future__ import annotations

import torch.fx

from fxstudio.core.edits.bulk import parse_with_anchor, select_anchors
from fxstudio.core.edits.common import check_refs_usable, node_field, nodes_in, plural, target_in_graph, text_field
from fxstudio.core.edits.ops_args import fresh_submodule_name, replace_uses
from fxstudio.core.edits.primitives import AddSubmodule, NodeLife, Rename, Transaction
from fxstudio.core.edits.state import ID_KEY, EditState
from fxstudio.core.edits.call_checks import check_call
from fxstudio.core.edits.validation import bulk_fields_problem
from fxstudio.core.errors import EditRefused
from fxstudio.core.targets import NewSubmodule, check_node_name

INSERT_KINDS = ("call_function", "call_method", "call_module", "get_attr")
_FRAME_KEYS = ("fxs_module_path", "fxs_module_stack")


def _enclosing_frame(anchor: torch.fx.Node) -> dict:
    """The module path and stack an inserted node takes from its anchor: the module the anchor runs
    in. A call of a leaf submodule (``layer1.0.bn2``) is *in* its parent (``layer1.0``): a node
    inserted next to it belongs to the parent, not inside the BatchNorm."""
    meta = {key: anchor.meta[key] for key in _FRAME_KEYS if key in anchor.meta}
    path = meta.get("fxs_module_path")
    if anchor.op == "call_module" and path and path == anchor.target:
        meta["fxs_module_path"] = path.rsplit(".", 1)[0] if "." in path else ""
        stack = meta.get("fxs_module_stack")
        if stack and stack[-1][0] == path:
            meta["fxs_module_stack"] = list(stack[:-1])
    return meta


def _free_name(state: EditState, edit: dict) -> str | None:
    if edit.get("name") is None:
        return None
    name = check_node_name(edit["name"])
    if state.find(name) is not None:
        raise EditRefused(f"A node named {name!r} already exists; choose another name.")
    return name


_WHERE = ("before", "after", "before_each", "after_each")


def op_insert(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "insert", "before"|"after"|"before_each"|"after_each", "kind", "target", "args", "kwargs",
    "name", "reroute"}``: a new node next to an anchor, or one next to each anchor a match object
    selects (one edit); with ``"reroute": true`` (after only) each anchor's other users move to it.
    ``%@`` in ``args``/``kwargs`` is the anchor."""
    state = tx.state
    given = [w for w in _WHERE if w in edit]
    if len(given) != 1:
        raise EditRefused("insert needs exactly one of 'before' or 'after' (a node name), or 'before_each' or "
                          "'after_each' (a match object).")
    where = given[0]
    side = where.removesuffix("_each")
    anchor = node_field(state, edit, where) if where == side else None
    kind = edit["kind"]
    if kind not in INSERT_KINDS:
        raise EditRefused(f"Unknown node kind {kind!r} (one of {', '.join(INSERT_KINDS)}).")
    problem = bulk_fields_problem(edit)
    if problem:
        raise EditRefused(problem)
    if anchor is not None:
        return _insert_one(tx, edit, anchor, side, each=False)
    if edit.get("name") is not None:
        raise EditRefused(f"'name' names one node; with '{where}' each new node is named after its target.")
    anchors, described = select_anchors(state, where, edit[where])
    record: dict = {}
    for anchor in anchors:
        _, record = _insert_one(tx, edit, anchor, side, each=True)
    record = {"op": "insert", where: dict(edit[where]),
              **{k: v for k, v in record.items() if k not in ("op", side, "name")}, "sites": len(anchors)}
    label = f"Insert {record['target']} {side} each {described} ({plural(len(anchors), 'node')})"
    return label, record


def _insert_one(tx: Transaction, edit: dict, anchor: torch.fx.Node, where: str, *, each: bool) -> tuple[str, dict]:
    """Insert the node ``edit`` describes ``where`` (before/after) ``anchor`` (one of several when
    ``each``: fx names it); its label and record."""
    state = tx.state
    kind = edit["kind"]
    if where == "before" and anchor.op == "placeholder":
        raise EditRefused(f"Cannot insert before the input %{anchor.name}: inputs come first; "
                          "insert after the last input.")
    if where == "after" and anchor.op == "output":
        raise EditRefused("Cannot insert after the output node: nothing runs after the return.")
    reroute = edit.get("reroute", False)
    if not isinstance(reroute, bool):
        raise EditRefused(f"Field 'reroute' must be true or false, not {reroute!r}.")
    if reroute and where == "before":
        raise EditRefused("'reroute' moves the anchor's users to the new node, so it needs 'after': "
                          "a node inserted before the anchor cannot take the anchor's value.")
    name = None if each else _free_name(state, edit)
    args_text = text_field(edit, "args", "()").strip()
    kwargs_text = text_field(edit, "kwargs", "{}").strip()
    args = () if args_text == "()" else parse_with_anchor(state, args_text, anchor)
    kwargs = {} if kwargs_text == "{}" else parse_with_anchor(state, kwargs_text, anchor)
    if not isinstance(args, tuple):
        raise EditRefused(f"'args' must be a tuple such as (%{anchor.name},), not {args_text!r}.")
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) and k.isidentifier() for k in kwargs):
        raise EditRefused(f"'kwargs' must be a dict with keyword names such as {{'dim': 1}}, not {kwargs_text!r}.")
    refs = nodes_in((args, kwargs))
    check_refs_usable(refs)
    for ref in refs:
        if ref > anchor or (ref is anchor and where == "before"):
            raise EditRefused(f"%{ref.name} is defined after the insertion point ({where} %{anchor.name}); "
                              "insert later, or insert first and rewire afterwards.")
    target_text = text_field(edit, "target").strip()
    target = target_in_graph(state, kind, target_text)
    if isinstance(target, NewSubmodule):
        target_text = target.text
        sub = fresh_submodule_name(state.gm, target.base_name)
        tx.do(AddSubmodule(sub, target.module))
        target = sub
    reason = check_call(kind, target, args, kwargs, state.gm)
    if reason:
        raise EditRefused(reason)
    frame = anchor if anchor.op not in ("placeholder", "output") else None
    meta = {ID_KEY: state.new_id(), **(_enclosing_frame(frame) if frame is not None else {})}
    prev_id = state.prev_id(anchor) if where == "before" else anchor.meta[ID_KEY]
    life = NodeLife(meta[ID_KEY], name, kind, target, state.encode(args), state.encode(kwargs), None, meta,
                    prev_id, create=True)
    tx.do(life)
    record = {"op": "insert", where: anchor.name, "kind": kind, "target": target_text,
              "args": args_text, "kwargs": kwargs_text, "name": life.name}
    label = f"Insert {life.name} {where} {anchor.name}"
    if reroute:
        # the anchor's users (not the new node itself) now use the new node: the window's default
        record["reroute"] = True
        if replace_uses(tx, anchor, state.by_id[meta[ID_KEY]]):
            label += f" (its users now use {life.name})"
    return label, record


def op_erase(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "erase", "node", "replace_uses_with"?}``: remove a node, optionally rewiring its users."""
    state = tx.state
    node = node_field(state, edit, "node")
    if node.op == "output":
        raise EditRefused("The output node cannot be erased: it is what forward returns.")
    if node.op == "placeholder":
        raise EditRefused(f"Cannot erase the input %{node.name}: it would change forward's signature, "
                          "and the example inputs would no longer fit.")
    record = {"op": "erase", "node": node.name}
    label = f"Erase {node.name}"
    if edit.get("replace_uses_with") is not None:
        replacement = node_field(state, edit, "replace_uses_with")
        replace_uses(tx, node, replacement)
        record["replace_uses_with"] = replacement.name
        label += f" (uses → {replacement.name})"
        if node.users:
            raise EditRefused(f"Cannot erase %{node.name}: its replacement %{replacement.name} uses it.")
    elif node.users:
        users = ", ".join(f"%{u.name}" for u in node.users)
        raise EditRefused(f"Cannot erase %{node.name}: it is used by {users}. "
                          "Give replace_uses_with, or erase its users first.")
    tx.do(NodeLife.erasing(state, node))
    return label, record


def op_duplicate(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "duplicate", "node", "name"?}``: a copy of the node (``node_copy``) right after it."""
    state = tx.state
    node = node_field(state, edit, "node")
    if node.op in ("placeholder", "output"):
        raise EditRefused(f"%{node.name} is {'an input' if node.op == 'placeholder' else 'the output'}; it cannot be duplicated.")
    name = _free_name(state, edit)
    meta = dict(node.meta)
    meta[ID_KEY] = state.new_id()
    life = NodeLife(meta[ID_KEY], name, node.op, node.target, state.encode(node.args), state.encode(node.kwargs),
                    node.type, meta, node.meta[ID_KEY], create=True)
    tx.do(life)
    return f"Duplicate {node.name} as {life.name}", {"op": "duplicate", "node": node.name, "name": life.name}


def op_rename(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "rename", "node", "name"}``: rename a node; its id (and its users) follow."""
    state = tx.state
    node = node_field(state, edit, "node")
    if node.op == "output":
        raise EditRefused("The output node's name is fixed.")
    if edit["name"] == node.name:
        raise EditRefused(f"%{node.name} already has that name.")
    name = _free_name(state, edit)
    old = node.name
    tx.do(Rename(node.meta[ID_KEY], old, name))
    return f"Rename {old} to {name}", {"op": "rename", "node": old, "name": name}


def dead_nodes(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """Nodes that ``eliminate_dead_code`` removes, later ones first (so each has no users when erased)."""
    dead: set[torch.fx.Node] = set()
    order = []
    for node in reversed(graph.nodes):
        if node.op in ("placeholder", "output") or node.is_impure():
            continue
        if all(u in dead for u in node.users):
            dead.add(node)
            order.append(node)
    return order


def op_eliminate_dead_code(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "eliminate_dead_code"}``: erase every pure node whose value is never used."""
    nodes = dead_nodes(tx.state.graph)
    if not nodes:
        raise EditRefused("Nothing to eliminate: every node is used (or has side effects).")
    for node in nodes:
        tx.do(NodeLife.erasing(tx.state, node))
    return f"Eliminate dead code ({plural(len(nodes), 'node')})", {"op": "eliminate_dead_code"}
