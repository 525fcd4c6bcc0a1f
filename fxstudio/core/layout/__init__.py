"""Laying out a graph for the canvas: layers, crossings, coordinates, module frames and edge
routes (``docs/notes/layout.md``). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.layout.engine import MAX_W, WEIGHT_ROW_H, WEIGHT_ROWS_PAD, compute_layout
from fxstudio.core.layout.folding import fold_plan, folded_weights, is_exported, row_label, row_shape, rows_of
from fxstudio.core.layout.types import EdgeRoute, GroupBox, Layout, NodeBox
from fxstudio.core.layout.graph_model import feeding_input
from fxstudio.core.layout.metrics import count_crossings, overlapping_pairs, upward_edges
from fxstudio.core.layout.groups import ancestors, repeated_groups
from fxstudio.core.layout.reroute import routes_into
from fxstudio.core.layout.frame_checks import frame_problems
from fxstudio.core.layout.opening_fold import FOLD_ABOVE, fold_inside, opened_collapsed, opening_collapsed
from fxstudio.core.layout.repeats import RepeatFold, RepeatRun, differing_blocks, label_folds, repeat_folds, repeat_runs

__all__ = ["EdgeRoute", "GroupBox", "Layout", "MAX_W", "NodeBox", "WEIGHT_ROW_H", "WEIGHT_ROWS_PAD", "ancestors", "compute_layout",
           "fold_plan", "folded_weights", "is_exported", "row_label", "row_shape", "rows_of", "count_crossings", "feeding_input", "overlapping_pairs", "repeated_groups", "routes_into", "upward_edges",
           "frame_problems", "FOLD_ABOVE", "fold_inside", "opened_collapsed", "opening_collapsed", "RepeatFold", "RepeatRun", "differing_blocks", "label_folds", "repeat_folds", "repeat_runs"]
