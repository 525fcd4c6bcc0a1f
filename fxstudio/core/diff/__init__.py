"""Graphs side by side: nodes of two or more graphs matched by lineage or structure, and what differs (``fxstudio diff``, the diff window). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.diff.changes import Change
from fxstudio.core.diff.matching import NodeMatching, match_nodes
from fxstudio.core.diff.result import FORMAT, STATUSES, Comparison, DiffGraph, GraphsDiff, NodeDiff, diff_graphs

__all__ = ["FORMAT", "STATUSES", "Change", "Comparison", "DiffGraph", "GraphsDiff", "NodeDiff", "NodeMatching", "diff_graphs",
           "match_nodes"]
