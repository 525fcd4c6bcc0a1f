"""Two or more graphs compared: every graph against the first (the base), row by row.

``diff_graphs([DiffGraph(...), ...])`` matches each graph's nodes with the base's
(``matching.match_nodes``) and lists, per comparison, one ``NodeDiff`` per node in graph order:
``same`` and ``changed`` for matched pairs (``changed`` with its ``changes.Change`` list),
``removed`` for base nodes without a partner, ``added`` for the other graph's. ``GraphsDiff`` prints
itself (``format_text``), writes the ``--json`` record (``to_json``, schema in
``fxstudio diff --help``) and tells the window which node of each graph is which (``partners``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.fx

from fxstudio.core.diff.changes import Change, node_changes
from fxstudio.core.diff.matching import NodeMatching, match_nodes
from fxstudio.core.node_text import META_HIDDEN, target_text

FORMAT = "fxstudio.diff/1"
STATUSES = ("added", "removed", "changed", "same")
MARK = {"added": "+", "removed": "-", "changed": "~", "same": "="}


def is_plumbing(node: torch.fx.Node) -> bool:
    """Export plumbing the views hide (``fxs_hidden``), or an attribute read nothing uses."""
    return bool(node.meta.get(META_HIDDEN)) or (node.op == "get_attr" and not node.users)


@dataclass
class DiffGraph:
    """One graph to compare: ``label`` (``A``, ``B``, …), its module, where it came from (a file and
    tracer, for titles), and ``lineage``: graphs with one lineage tag (a document's original and
    edited) are matched by stable id first."""

    label: str
    module: torch.fx.GraphModule
    source: str = ""
    lineage: str | None = None


@dataclass
class NodeDiff:
    """One row of a comparison: a base node, an other node, or a matched pair of both."""

    status: str
    base: torch.fx.Node | None = None
    other: torch.fx.Node | None = None
    how: str | None = None                       # lineage / structure / name, for matched pairs
    changes: list[Change] = field(default_factory=list)

    @property
    def hidden(self) -> bool:
        """Export plumbing both sides hide (lifted weight reads, the guards call)."""
        return all(is_plumbing(n) for n in (self.base, self.other) if n is not None)

    def name(self) -> str:
        """The base node's name (``a -> b`` when the other's differs), else the other's."""
        if self.base is not None and self.other is not None and self.base.name != self.other.name:
            return f"{self.base.name} -> {self.other.name}"
        return (self.base or self.other).name


@dataclass
class Comparison:
    """One graph (``other``, an index into ``GraphsDiff.graphs``) against the base (index 0)."""

    other: int
    matching: NodeMatching
    rows: list[NodeDiff]

    def counts(self) -> dict[str, int]:
        """Nodes per status."""
        out = dict.fromkeys(STATUSES, 0)
        for row in self.rows:
            out[row.status] += 1
        return out

    @property
    def differ(self) -> bool:
        """True unless every node is matched and the same."""
        return any(row.status != "same" for row in self.rows)


@dataclass
class GraphsDiff:
    """Every graph of a diff against the first (module docstring)."""

    graphs: list[DiffGraph]
    comparisons: list[Comparison]

    @property
    def differ(self) -> bool:
        """True when any graph differs from the base."""
        return any(c.differ for c in self.comparisons)

    def partners(self, index: int, node: torch.fx.Node) -> dict[int, torch.fx.Node]:
        """The nodes of the other graphs matched with ``node`` of graph ``index`` (by way of the
        base for two non-base graphs), by graph index; the node itself included."""
        base = node if index == 0 else self.comparisons[index - 1].matching.to_base.get(node)
        out = {index: node}
        if base is None:
            return out
        out[0] = base
        for c in self.comparisons:
            partner = c.matching.to_other.get(base)
            if partner is not None:
                out[c.other] = partner
        return out

    def status_of(self, index: int) -> dict[torch.fx.Node, str]:
        """Each node of graph ``index`` that is not the same everywhere: ``removed`` (a base node
        missing from some graph), ``added`` (a node the base lacks), or ``changed``."""
        out: dict[torch.fx.Node, str] = {}
        for c in self.comparisons:
            if index not in (0, c.other):
                continue
            for row in c.rows:
                node = row.base if index == 0 else row.other
                if node is None or row.status == "same":
                    continue
                if out.get(node) != "removed":
                    out[node] = row.status
        return out

    def format_text(self, *, show_hidden: bool = False) -> str:
        """The report ``fxstudio diff`` prints: per graph a summary line, then a line per node that
        differs (changed ones per argument). Hidden export plumbing is counted, listed with ``show_hidden``."""
        lines = [f"{g.label} = {g.source or '<graph>'} ({len(g.module.graph.nodes)} nodes)" for g in self.graphs]
        base = self.graphs[0].label
        for c in self.comparisons:
            counts = c.counts()
            hidden = sum(1 for r in c.rows if r.status in ("added", "removed") and r.hidden)
            head = ", ".join(f"{counts[s]} {s}" for s in STATUSES)
            if hidden and not show_hidden:
                head += f" ({hidden} of them export weight reads or guards, not listed: --all lists them)"
            lines.append(f"{self.graphs[c.other].label} vs {base}: {head}")
            for row in c.rows:
                if row.status == "same" or (row.hidden and not show_hidden and row.status != "changed"):
                    continue
                lines.extend(_row_lines(row))
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict:
        """The ``--json`` record (``FORMAT``; schema in ``fxstudio diff --help``)."""
        return {
            "format": FORMAT,
            "differ": self.differ,
            "graphs": [{"label": g.label, "source": g.source,
                        "nodes": [_node_json(n) for n in g.module.graph.nodes]} for g in self.graphs],
            "comparisons": [_comparison_json(self, c) for c in self.comparisons],
        }


def _node_json(n: torch.fx.Node) -> dict:
    return {"name": n.name, "op": n.op, "target": target_text(n), "hidden": is_plumbing(n)}


def _comparison_json(diff: GraphsDiff, c: Comparison) -> dict:
    matches = [{"base": r.base.name, "other": r.other.name, "how": r.how, "status": r.status,
                "changes": [{"field": ch.field, "before": ch.before, "after": ch.after} for ch in r.changes]}
               for r in c.rows if r.base is not None and r.other is not None]
    return {"base": diff.graphs[0].label, "other": diff.graphs[c.other].label, "counts": c.counts(),
            "matches": matches,
            "added": [r.other.name for r in c.rows if r.status == "added"],
            "removed": [r.base.name for r in c.rows if r.status == "removed"]}


def _row_lines(row: NodeDiff) -> list[str]:
    mark = MARK[row.status]
    if row.status in ("added", "removed"):
        node = row.other if row.status == "added" else row.base
        args = ", ".join(f"%{a.name}" for a in node.all_input_nodes)
        return [f"  {mark} {node.name}: {node.op} {target_text(node)}" + (f" ({args})" if args else "")]
    how = f"  [{row.how}]" if row.how != "lineage" and row.base.name != row.other.name else ""
    return [f"  {mark} {row.name()}: {ch.text()}{how}" for ch in row.changes]


def _rows(base: torch.fx.GraphModule, other: torch.fx.GraphModule, m: NodeMatching) -> list[NodeDiff]:
    """The rows of one comparison in the other graph's order, each removed base node placed just
    before the first matched node that follows it in the base."""
    base_nodes = list(base.graph.nodes)
    pos = {n: i for i, n in enumerate(base_nodes)}
    emitted = 0
    rows: list[NodeDiff] = []

    def removed_until(limit: int) -> None:
        nonlocal emitted
        while emitted < limit:
            b = base_nodes[emitted]
            if b not in m.to_other:
                rows.append(NodeDiff("removed", base=b))
            emitted += 1

    for o in other.graph.nodes:
        b = m.to_base.get(o)
        if b is None:
            rows.append(NodeDiff("added", other=o))
            continue
        removed_until(pos[b])
        emitted = max(emitted, pos[b] + 1)
        changes = node_changes(b, o, m.to_base, base, other)
        rows.append(NodeDiff("changed" if changes else "same", b, o, m.how[o], changes))
    removed_until(len(base_nodes))
    return rows


def diff_graphs(graphs: Sequence[DiffGraph]) -> GraphsDiff:
    """Compare every graph with the first (module docstring); at least two graphs."""
    graphs = list(graphs)
    if len(graphs) < 2:
        raise ValueError("a diff needs two graphs or more")
    base = graphs[0]
    comparisons = []
    for i, g in enumerate(graphs[1:], start=1):
        same = base.lineage is not None and base.lineage == g.lineage
        m = match_nodes(base.module, g.module, same_lineage=same)
        comparisons.append(Comparison(i, m, _rows(base.module, g.module, m)))
    return GraphsDiff(graphs, comparisons)
