"""The mutable state commands work on: the edited module, its nodes by stable id, and helpers."""

from __future__ import annotations

import types
from dataclasses import dataclass, field

import torch
import torch.fx
from torch.fx.node import map_aggregate

from fxstudio.core.passes import DEFAULT_PASS_TRUST

from fxstudio.core import fx_compat
from fxstudio.core.edits.shapes import ShapeRefresher

ID_KEY = "fxs_id"


class Ref:
    """A node reference by stable id inside a stored argument value (nodes die on erase; ids don't)."""

    __slots__ = ("id",)

    def __init__(self, node_id: int):
        self.id = node_id

    def __repr__(self) -> str:
        return f"Ref({self.id})"


@dataclass
class Changes:
    """Node ids added, removed and changed by a run of primitives (what events report)."""

    added: set[int] = field(default_factory=set)
    removed: set[int] = field(default_factory=set)
    changed: set[int] = field(default_factory=set)
    recompute: set[int] = field(default_factory=set)  # nodes whose value may differ (args/target changed, added)

    def add(self, node_id: int) -> None:
        """Record a node coming into the graph."""
        if node_id in self.removed:
            self.removed.discard(node_id)
            self.changed.add(node_id)
        else:
            self.added.add(node_id)
        self.recompute.add(node_id)

    def remove(self, node_id: int) -> None:
        """Record a node leaving the graph."""
        if node_id in self.added:
            self.added.discard(node_id)
        else:
            self.removed.add(node_id)
        self.changed.discard(node_id)
        self.recompute.discard(node_id)

    def change(self, *node_ids: int) -> None:
        """Record nodes whose args, target, name, position or users changed."""
        self.changed.update(i for i in node_ids if i not in self.added and i not in self.removed)

    def compute(self, node_id: int) -> None:
        """Record a node whose value may have changed (its args or target did)."""
        self.change(node_id)
        if node_id not in self.removed:
            self.recompute.add(node_id)


class EditState:
    """The edited ``GraphModule`` with an id → node index; all graph access of the commands goes here."""

    def __init__(self, gm: torch.fx.GraphModule, next_id: int, user_module: types.ModuleType | None):
        self.gm = gm
        self.graph = gm.graph
        self.user_module = user_module
        self.next_id = next_id
        self.by_id: dict[int, torch.fx.Node] = {n.meta[ID_KEY]: n for n in gm.graph.nodes}
        self.by_name: dict[str, torch.fx.Node] = {n.name: n for n in gm.graph.nodes}
        # functions the traced graph calls: valid targets even outside torch/operator/math
        self.known_functions = tuple({id(n.target): n.target for n in gm.graph.nodes
                                      if n.op == "call_function"}.values())
        # which pass files run_pass / replace_pattern may run (default: none; built-in passes always)
        self.pass_trust = DEFAULT_PASS_TRUST
        # (edit, PassOutcome) computed off the GUI thread by Document.prepare_edit, taken by the next
        # run_pass / replace_pattern handler if it is for the same edit (edits/whole_graph.py).
        self.prepared_outcome: tuple | None = None
        # the shape refresh the budget check of every edit runs (as the document's: the traced
        # graph's own targets may run on fake tensors); see call_checks.check_budgets
        self.shapes = ShapeRefresher(gm)
        # (kind, text) -> resolved function or method target (edits/common.py, target_in_graph)
        self.resolved_targets: dict[tuple[str, str], object] = {}

    def new_id(self) -> int:
        """A fresh id, never used before in this document."""
        self.next_id += 1
        return self.next_id - 1

    def find(self, name: str) -> torch.fx.Node | None:
        """The live node called ``name``, or None (an index kept by the primitives). A name fx
        never handed out in this graph is no node's: that answer costs no scan; otherwise the
        graph is scanned, in case a node was renamed behind the document's back."""
        node = self.by_name.get(name)
        if node is not None and not fx_compat.node_erased(node) and node.name == name:
            return node
        if fx_compat.name_never_used(self.graph, name):
            return None
        for node in self.graph.nodes:
            if node.name == name:
                self.by_name[name] = node
                return node
        return None

    @staticmethod
    def id_of(node: torch.fx.Node) -> int:
        """Stable id of a node of the edited graph."""
        return node.meta[ID_KEY]

    def encode(self, value):
        """``value`` with every node replaced by a ``Ref`` to its id."""
        return map_aggregate(value, lambda v: Ref(v.meta[ID_KEY]) if isinstance(v, torch.fx.Node) else v)

    def decode(self, value):
        """``value`` with every ``Ref`` replaced by the live node of that id."""
        return map_aggregate(value, lambda v: self.by_id[v.id] if isinstance(v, Ref) else v)

    def prev_id(self, node: torch.fx.Node) -> int | None:
        """Id of the node just before ``node`` (None when it is first)."""
        prev = node.prev
        return None if prev.op == "root" else prev.meta[ID_KEY]

    def place_after(self, node: torch.fx.Node, prev_id: int | None) -> None:
        """Move ``node`` to just after the node ``prev_id`` (to the front when None)."""
        if prev_id is None:
            first = next(iter(self.graph.nodes))
            if first is not node:
                first.prepend(node)
        else:
            anchor = self.by_id[prev_id]
            if anchor.next is not node:
                anchor.append(node)

    def force_name(self, node: torch.fx.Node, name: str) -> None:
        """Give ``node`` exactly ``name`` (free among live nodes; fx never frees names of erased ones)."""
        if node.name != name:
            if self.by_name.get(node.name) is node:
                del self.by_name[node.name]
            node.name = name
            fx_compat.rename_in_namespace(self.graph, node, name)
        self.by_name[name] = node

    def snapshot_namespace(self) -> tuple:
        """A mark of fx's name bookkeeping, to restore when a transaction rolls back. Costs nothing
        per edit (``fx_compat.namespace_mark``: a copy per edit made a script of 100k inserts quadratic)."""
        return fx_compat.namespace_mark(self.graph)

    def restore_namespace(self, saved: tuple) -> None:
        """Put fx's name bookkeeping back to ``saved`` (a ``snapshot_namespace``), so a refused or
        checked edit leaves no trace in later names."""
        fx_compat.namespace_rewind(saved)
