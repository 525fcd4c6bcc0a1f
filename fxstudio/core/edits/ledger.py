"""The running cost of an edited graph: the bytes of every node's output and the work of every node
(``edits/work.py``), summed over the whole graph and kept up to date per edit, so that the edit
budgets (``fxstudio.core.budgets``) are checked in time proportional to what an edit changed.

One ``Ledger`` per edited module, made when its first edit starts (so it counts the graph as
opened: the baseline). Entries are by stable node id and follow the shape metadata:

* the shape refresh (``ShapeRefresher._write``) sets the entry of every node it evaluates;
* ``NodeLife`` sets it when a node comes (back) into the graph and drops it when it leaves;
* ``SwapModule`` (a pass) recounts the whole graph it installs;
* ``AddSubmodule`` counts the weights of a new submodule (they are real tensors, made at edit time);
* a node whose shape a budgeted refresh left unknown keeps its last entry and is ``stale``: the
  next edit's check evaluates it first (``call_checks.check_budgets``).

No Qt, no torch calls: only arithmetic on metadata.
"""

from __future__ import annotations

import weakref

import torch
import torch.fx

from fxstudio.core.edits.work import node_cost

ID_KEY = "fxs_id"
_LEDGERS: "weakref.WeakKeyDictionary[torch.nn.Module, Ledger]" = weakref.WeakKeyDictionary()


class Ledger:
    """Bytes and work per node id of one edited module, their sums, and the sums as opened."""

    def __init__(self, graph: torch.fx.Graph, gm: torch.nn.Module):
        self.entries: dict[int, tuple[int, int]] = {}
        self.total_bytes = 0
        self.total_work = 0
        self.modules: dict[str, int] = {}  # bytes of the weights of submodules edits added, by name
        self.module_bytes = 0
        self.stale: set[int] = set()  # ids of nodes a budgeted refresh left without a shape
        # ids the running edit's budget check evaluated: their shapes are current, so the refresh
        # right after the edit is committed skips them (a rollback forgets them)
        self.fresh: set[int] = set()
        self.recount(graph, gm)
        self.base_bytes = self.total_bytes
        self.base_work = self.total_work

    def recount(self, graph: torch.fx.Graph, gm: torch.nn.Module, only: set[int] | None = None) -> None:
        """Count the nodes of ``graph`` afresh (a pass installed a new graph). ``only``: the ids of
        the nodes whose call changed or that are new; every other node keeps its entry (and its
        ``stale`` mark), which its unchanged call and metadata would give again."""
        nodes = list(graph.nodes)
        kept = {}
        if only is not None:
            for node in nodes:
                node_id = node.meta.get(ID_KEY)
                if node_id not in only and node_id in self.entries:
                    kept[node_id] = self.entries[node_id]
        self.stale.intersection_update(kept)
        self.entries = kept
        self.total_bytes = sum(e[0] for e in kept.values())
        self.total_work = sum(e[1] for e in kept.values())
        modules = dict(gm.named_modules(remove_duplicate=False)) if gm is not None else None
        for node in nodes:
            if node.meta.get(ID_KEY) not in kept:
                self.update(node, gm, modules)

    def snapshot(self) -> tuple[dict[int, tuple[int, int]], set[int]]:
        """The entries and stale marks now (a swap keeps them for the graph it takes out)."""
        return dict(self.entries), set(self.stale)

    def restore(self, snapshot: tuple[dict[int, tuple[int, int]], set[int]]) -> None:
        """Go back to a ``snapshot`` (the graph it was taken of is installed again)."""
        entries, stale = snapshot
        self.entries, self.stale = dict(entries), set(stale)
        self.total_bytes = sum(e[0] for e in self.entries.values())
        self.total_work = sum(e[1] for e in self.entries.values())

    def entry(self, node_id: int) -> tuple[int, int] | None:
        """The (bytes, work) counted for ``node_id``, or None."""
        return self.entries.get(node_id)

    def put(self, node_id: int, entry: tuple[int, int] | None) -> None:
        """Set (or, with None, remove) the entry of ``node_id``, keeping the sums."""
        old = self.entries.pop(node_id, None)
        if old is not None:
            self.total_bytes -= old[0]
            self.total_work -= old[1]
        if entry is not None:
            self.entries[node_id] = entry
            self.total_bytes += entry[0]
            self.total_work += entry[1]

    def update(self, node: torch.fx.Node, gm: torch.nn.Module | None,
               modules: dict[str, torch.nn.Module] | None = None) -> tuple[int, int]:
        """Count ``node`` from its metadata now; returns its (bytes, work). ``modules``: see ``node_cost``."""
        entry = node_cost(node, gm, modules)
        node_id = node.meta.get(ID_KEY)
        if node_id is not None:
            self.put(node_id, entry)
            self.stale.discard(node_id)
        return entry

    def drop(self, node: torch.fx.Node) -> None:
        """``node`` left the graph."""
        node_id = node.meta.get(ID_KEY)
        if node_id is not None:
            self.put(node_id, None)
            self.stale.discard(node_id)

    def set_module(self, name: str, nbytes: int | None) -> None:
        """Count (or, with None, forget) the weights of a submodule an edit added."""
        self.module_bytes -= self.modules.pop(name, 0)
        if nbytes is not None:
            self.modules[name] = nbytes
            self.module_bytes += nbytes

    @property
    def spent_bytes(self) -> int:
        """Bytes of every node output, plus the weights of the submodules edits added."""
        return self.total_bytes + self.module_bytes

    @property
    def added_bytes(self) -> int:
        """Bytes beyond the graph as opened (negative when edits removed some)."""
        return self.spent_bytes - self.base_bytes

    @property
    def added_work(self) -> int:
        """Work beyond the graph as opened."""
        return self.total_work - self.base_work


def ledger_of(gm: torch.nn.Module | None) -> Ledger | None:
    """The ledger of the edited module ``gm``, or None when no edit started on it yet."""
    return _LEDGERS.get(gm) if gm is not None else None


def attach(gm: torch.fx.GraphModule) -> Ledger:
    """The ledger of ``gm``, made (counting its graph now: the baseline) if it has none."""
    ledger = _LEDGERS.get(gm)
    if ledger is None:
        ledger = _LEDGERS[gm] = Ledger(gm.graph, gm)
    return ledger


__all__ = ["Ledger", "attach", "ledger_of"]
