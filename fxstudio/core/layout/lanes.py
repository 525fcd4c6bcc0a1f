"""Long edges drawn as single lanes beside the graph, for graphs whose dummies would not fit the budget.

A layered layout gives a long edge one dummy per layer it crosses. Sources share their dummies, so a
fan-out costs one lane, but a graph can still ask for a quadratic number of them (50k sources that
all feed one consumer 50k layers down). The sources with the longest lanes then get no dummies
(``layers.lanes_over``) and their long edges run in columns right of everything else: down from the
source card to the gap below its band, across to the column, down the column to the gap above the
destination's band, across and down onto the destination. Horizontal runs lie in the gaps between
bands, where there are no cards, and the columns lie right of every card, dummy and frame, so such a
route crosses no card; each takes six points whatever its length.

The edges of one column share it: a column belongs to the source of its edges, or to their
destination when the destination gathers more of them (a fan-in is one column, like a fan-out).
Columns whose vertical runs do not meet share an x (greedy interval partitioning).
"""

from __future__ import annotations

import heapq

import numpy as np

LANE_GAP = 40.0      # from the rightmost card, dummy or frame to the first column
LANE_SPACING = 14.0  # between columns (as ``engine.DUMMY_GAP`` between dummies)
ROUTE_POINTS = 6


def lane_columns(upper: np.ndarray, lower: np.ndarray, gap_lo: np.ndarray, gap_hi: np.ndarray, n: int) -> np.ndarray:
    """Column (0 = nearest the graph) of each laned edge from unit ``upper`` to unit ``lower`` whose
    vertical run goes from the gap below layer ``gap_lo`` to the gap below layer ``gap_hi``."""
    m = len(upper)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    out_deg = np.bincount(upper, minlength=n)
    in_deg = np.bincount(lower, minlength=n)
    owner = np.where(in_deg[lower] > out_deg[upper], n + lower, upper)
    keys, which = np.unique(owner, return_inverse=True)
    start = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
    end = np.full(len(keys), -1, dtype=np.int64)
    np.minimum.at(start, which, gap_lo)
    np.maximum.at(end, which, gap_hi)
    column = np.empty(len(keys), dtype=np.int64)
    free: list[tuple[int, int]] = []  # (last gap used, column) of the columns opened so far
    opened = 0
    st, en = start.tolist(), end.tolist()
    for k in np.lexsort((keys, start)).tolist():
        if free and free[0][0] < st[k]:
            _, col = heapq.heappop(free)
        else:
            col, opened = opened, opened + 1
        column[k] = col
        heapq.heappush(free, (en[k], col))
    return column[which]


def lane_points(xa: np.ndarray, bottom_a: np.ndarray, xb: np.ndarray, top_b: np.ndarray, mid_a: np.ndarray,
                mid_b: np.ndarray, lane_x: np.ndarray, upward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the ``ROUTE_POINTS`` points of each laned route, one row per edge: from the bottom
    of the upper card (``xa``, ``bottom_a``) to the top of the lower one (``xb``, ``top_b``) through
    its column at ``lane_x``, crossing over at heights ``mid_a`` and ``mid_b``; reversed where
    ``upward`` (an edge drawn from the lower card up to the upper one)."""
    px = np.stack([xa, xa, lane_x, lane_x, xb, xb], axis=1)
    py = np.stack([bottom_a, mid_a, mid_a, mid_b, mid_b, top_b], axis=1)
    if upward.any():
        px[upward] = px[upward, ::-1]
        py[upward] = py[upward, ::-1]
    return px, py
