"""What one layout may allocate: a byte budget derived from the graph's size (issue #23).

A layered layout's arrays grow with the dummy nodes of long edges, the points of the routes and the
segment pairs the crossing counter keeps, and each of those can be quadratic in the graph (a source
whose users sit in 50k different layers, 50k sources that all feed one far consumer). Every such
count is made *before* anything of that size is allocated and checked against ``LayoutBudget``;
past the budget the layout takes a cheaper path that is still a complete drawing (long edges as
single lanes beside the graph, ``lanes.py``), never a refusal. The budget grows with the graph
(``ITEMS_PER_ELEMENT`` placed items per node or edge) from ``MIN_BYTES`` up to ``LAYOUT_BYTES``,
so a 100k-node model with a million dummies (``synthetic.skip_chain``) keeps its full layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from fxstudio.core.budgets import LAYOUT_BYTES, MiB

ITEM_BYTES = 640
"""Peak bytes of the whole pipeline per placed item (card or dummy), measured with tracemalloc on
dummy-heavy graphs (about 610 on ``skip_chain``)."""

DEPTH_BYTES = 48
"""More per dummy and level of module nesting (``frames.item_frames`` keeps a column per level)."""

POINT_BYTES = 160
"""Per route point: the numpy coordinates and the Python tuple of two floats of the result."""

PAIR_BYTES = 64
"""Per pair of segments a ``CrossingCounter`` keeps (four int64 ends and their temporaries)."""

CUT_BYTES = 128
"""Per cut of an edge at a node row in ``metrics.count_crossings`` (coordinates, ranks, merge count)."""

ITEMS_PER_ELEMENT = 8
"""Placed items (cards and dummies) a graph may have per node or edge it holds."""

MIN_BYTES = 128 * MiB
"""The budget of any graph, however small (a few thousand nodes never take the cheaper path)."""


@dataclass(frozen=True)
class LayoutBudget:
    """The bytes one layout of a graph may take, and what that buys of each kind of array."""

    bytes: int

    @classmethod
    def for_graph(cls, nodes: int, edges: int) -> "LayoutBudget":
        """The budget of a graph of ``nodes`` cards and ``edges`` edges: ``ITEMS_PER_ELEMENT`` items
        per node or edge, at least ``MIN_BYTES``, at most ``LAYOUT_BYTES``."""
        want = ITEM_BYTES * ITEMS_PER_ELEMENT * (nodes + edges)
        return cls(min(LAYOUT_BYTES, max(MIN_BYTES, want)))

    def dummies(self, cards: int, depth: int = 0) -> int:
        """How many long-edge dummies may sit beside ``cards`` cards under frames ``depth`` deep."""
        per_item = ITEM_BYTES + DEPTH_BYTES * max(depth, 0)
        return max(0, self.bytes // per_item - cards)

    def points(self, edges: int) -> int:
        """How many route points the routes of ``edges`` edges may have (never fewer than the eight
        per edge that a route beside the graph takes, so the cheaper routes always fit)."""
        return max(self.bytes // POINT_BYTES, 8 * edges)

    def pairs(self) -> int:
        """How many segment pairs a ``CrossingCounter`` may keep."""
        return self.bytes // PAIR_BYTES

    def cuts(self) -> int:
        """How many (edge, node row) cuts ``count_crossings`` may make at once."""
        return self.bytes // CUT_BYTES
