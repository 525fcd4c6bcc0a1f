"""Primitive graph changes, each with an exact inverse, and the transaction that applies them.

A command is a list of primitives. Undo reverts them in reverse order and redo applies them again:
since every primitive refers to nodes by stable id and stores names and positions, redo rebuilds
exactly the same graph (same names, same ids) as the first application.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from fxstudio.core.edits.ledger import attach, ledger_of
from fxstudio.core.edits.shapes import META_KEYS
from fxstudio.core.edits.state import ID_KEY, Changes, EditState, Ref


def _ref_ids(value: Any) -> list[int]:
    ids: list[int] = []
    torch.fx.node.map_aggregate(value, lambda v: ids.append(v.id) if isinstance(v, Ref) else None)
    return ids


class Primitive:
    """One reversible change of the edited module."""

    def apply(self, state: EditState, changes: Changes) -> None:
        """Make the change."""
        raise NotImplementedError

    def revert(self, state: EditState, changes: Changes) -> None:
        """Undo the change (the state is exactly as ``apply`` left it)."""
        raise NotImplementedError


@dataclass
class SetArgs(Primitive):
    """Replace a node's args and kwargs (values stored with ``Ref`` for node references)."""

    node_id: int
    old_args: Any
    old_kwargs: Any
    new_args: Any
    new_kwargs: Any

    def _set(self, state: EditState, changes: Changes, args: Any, kwargs: Any, before: tuple) -> None:
        node = state.by_id[self.node_id]
        node.args = state.decode(args)
        node.kwargs = state.decode(kwargs)
        changes.compute(self.node_id)
        changes.change(*_ref_ids(before), *_ref_ids((args, kwargs)))

    def apply(self, state: EditState, changes: Changes) -> None:
        self._set(state, changes, self.new_args, self.new_kwargs, (self.old_args, self.old_kwargs))

    def revert(self, state: EditState, changes: Changes) -> None:
        self._set(state, changes, self.old_args, self.old_kwargs, (self.new_args, self.new_kwargs))


@dataclass
class NodeLife(Primitive):
    """Create a node (``create=True``) or erase one; each is the other's inverse.

    Holds everything needed to rebuild the node: id, name, op, target, encoded args, type, the
    meta dict itself (so ids and load-time metadata come back on undo) and its place in the list.
    """

    node_id: int
    name: str | None  # None: fx picks one on first creation, which is then kept for redo
    op: str
    target: Any
    args: Any
    kwargs: Any
    type_expr: Any
    meta: dict
    prev_id: int | None
    create: bool

    @classmethod
    def erasing(cls, state: EditState, node: torch.fx.Node) -> "NodeLife":
        """The primitive that erases ``node`` as it is now."""
        return cls(node.meta[ID_KEY], node.name, node.op, node.target, state.encode(node.args),
                   state.encode(node.kwargs), node.type, node.meta, state.prev_id(node), create=False)

    def _create(self, state: EditState, changes: Changes) -> None:
        graph = state.graph
        node = graph.create_node(self.op, self.target, state.decode(self.args), state.decode(self.kwargs),
                                 name=self.name, type_expr=self.type_expr)
        if self.name is None:
            self.name = node.name
        state.force_name(node, self.name)
        node.meta = self.meta
        state.by_id[self.node_id] = node
        state.place_after(node, self.prev_id)
        ledger = ledger_of(state.gm)
        if ledger is not None and (self.__dict__.get("_counted") or not self.create):
            ledger.update(node, state.gm)  # (a node inserted now is counted by the edit's budget check)
        self.__dict__["_counted"] = True
        changes.add(self.node_id)
        changes.change(*_ref_ids((self.args, self.kwargs)))

    def _erase(self, state: EditState, changes: Changes) -> None:
        node = state.by_id.pop(self.node_id)
        if state.by_name.get(node.name) is node:
            del state.by_name[node.name]
        ledger = ledger_of(state.gm)
        if ledger is not None:
            ledger.drop(node)
        state.graph.erase_node(node)
        changes.remove(self.node_id)
        changes.change(*_ref_ids((self.args, self.kwargs)))

    def apply(self, state: EditState, changes: Changes) -> None:
        (self._create if self.create else self._erase)(state, changes)

    def revert(self, state: EditState, changes: Changes) -> None:
        (self._erase if self.create else self._create)(state, changes)


@dataclass
class MoveNode(Primitive):
    """Move a node to just after another one (None: to the front), to keep topological order."""

    node_id: int
    old_prev_id: int | None
    new_prev_id: int | None

    def apply(self, state: EditState, changes: Changes) -> None:
        state.place_after(state.by_id[self.node_id], self.new_prev_id)
        changes.change(self.node_id)

    def revert(self, state: EditState, changes: Changes) -> None:
        state.place_after(state.by_id[self.node_id], self.old_prev_id)
        changes.change(self.node_id)


@dataclass
class SetTarget(Primitive):
    """Replace a node's target (same op)."""

    node_id: int
    old: Any
    new: Any

    def apply(self, state: EditState, changes: Changes) -> None:
        state.by_id[self.node_id].target = self.new
        changes.compute(self.node_id)

    def revert(self, state: EditState, changes: Changes) -> None:
        state.by_id[self.node_id].target = self.old
        changes.compute(self.node_id)


@dataclass
class Rename(Primitive):
    """Rename a node (its id stays)."""

    node_id: int
    old: str
    new: str

    def apply(self, state: EditState, changes: Changes) -> None:
        state.force_name(state.by_id[self.node_id], self.new)
        changes.change(self.node_id, *(u.meta[ID_KEY] for u in state.by_id[self.node_id].users))

    def revert(self, state: EditState, changes: Changes) -> None:
        state.force_name(state.by_id[self.node_id], self.old)
        changes.change(self.node_id, *(u.meta[ID_KEY] for u in state.by_id[self.node_id].users))


@dataclass
class AddSubmodule(Primitive):
    """Add a new top-level submodule to the edited module (removed again on revert)."""

    name: str
    module: torch.nn.Module

    def apply(self, state: EditState, changes: Changes) -> None:
        self.module.train(state.gm.training)  # a new Dropout in an eval-mode model is in eval mode too
        state.gm.add_submodule(self.name, self.module)
        ledger = ledger_of(state.gm)
        if ledger is not None:  # its weights count against the edit budget
            tensors = [*self.module.parameters(), *self.module.buffers()]
            ledger.set_module(self.name, sum(t.numel() * t.element_size() for t in tensors))

    def revert(self, state: EditState, changes: Changes) -> None:
        delattr(state.gm, self.name)
        ledger = ledger_of(state.gm)
        if ledger is not None:
            ledger.set_module(self.name, None)


class Transaction:
    """Applies primitives one by one; on failure ``rollback`` reverts them, the shape metadata the
    edit's budget check wrote (``save_meta``), the cost ledger and fx's name bookkeeping.

    Made for every edit: its cost does not grow with the graph (the first one of a document counts
    the graph as opened, once: the ledger's baseline)."""

    def __init__(self, state: EditState):
        self.state = state
        self.done: list[Primitive] = []
        self.changes = Changes()
        self.ledger = attach(state.gm)
        self.ledger.fresh.clear()
        self._namespace = state.snapshot_namespace()
        self._next_id = state.next_id
        self._saved: dict[torch.fx.Node, tuple] = {}

    def do(self, primitive: Primitive) -> None:
        """Apply ``primitive`` now and remember it."""
        primitive.apply(self.state, self.changes)
        self.done.append(primitive)

    def save_meta(self, node: torch.fx.Node) -> None:
        """Keep ``node``'s shape metadata and ledger entry as they are before this transaction first
        writes them (the shape refresh of the budget check calls this)."""
        if node not in self._saved:
            node_id = node.meta.get(ID_KEY)
            self._saved[node] = (node.meta, {k: node.meta[k] for k in META_KEYS if k in node.meta},
                                 self.ledger.entry(node_id), node_id in self.ledger.stale)

    def had_shape(self, node: torch.fx.Node) -> bool:
        """Whether ``node`` had a recorded shape before this transaction wrote its metadata."""
        saved = self._saved.get(node)
        return "tensor_meta" in (saved[1] if saved is not None else node.meta)

    def rollback(self) -> None:
        """Revert everything done, newest first, leaving the state as it was before the transaction."""
        scratch = Changes()
        for primitive in reversed(self.done):
            primitive.revert(self.state, scratch)
        self.done.clear()
        for meta, keys, entry, stale in self._saved.values():
            for key in META_KEYS:
                meta.pop(key, None)
            meta.update(keys)
            node_id = meta.get(ID_KEY)
            live = self.state.by_id.get(node_id)
            if live is not None and live.meta is meta:  # the node (or its re-creation) is in the graph
                self.ledger.put(node_id, entry)
                (self.ledger.stale.add if stale else self.ledger.stale.discard)(node_id)
        self._saved.clear()
        self.ledger.fresh.clear()
        self.state.restore_namespace(self._namespace)
        self.state.next_id = self._next_id  # a checked or refused edit uses up no ids
