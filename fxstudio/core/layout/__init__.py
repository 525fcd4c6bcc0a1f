"""Laying out a graph for the canvas: layers, crossings, coordinates, module frames and edge
routes (``docs/notes/layout.md``). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.layout.engine import MAX_W, compute_layout
from fxstudio.core.layout.types import EdgeRoute, GroupBox, Layout, NodeBox
from fxstudio.core.layout.metrics import count_crossings, overlapping_pairs, upward_edges
from fxstudio.core.layout.groups import ancestors, repeated_groups
from fxstudio.core.layout.reroute import routes_into

__all__ = ["EdgeRoute", "GroupBox", "Layout", "MAX_W", "NodeBox", "ancestors", "compute_layout", "count_crossings", "overlapping_pairs", "repeated_groups", "routes_into", "upward_edges"]
