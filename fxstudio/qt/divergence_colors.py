"""Colours for a node's divergence and diff state, shared by the run pane and the canvas.

The canvas tints a card with ``divergence_color(report.divergence_by_id.get(node_id))`` after a run
(``RunPane.report_ready``) and outlines it with ``diff_color(kind)`` after an edit
(``RunPane.diff_changed``), so both views speak the same colours.
"""

from __future__ import annotations

import math

from PySide6.QtGui import QColor

EQUAL = QColor(150, 160, 170)
CLOSE = QColor(46, 139, 87)
DIVERGED_LOW = QColor(230, 160, 40)
DIVERGED_HIGH = QColor(200, 30, 30)
DIFF_COLORS = {"added": QColor(46, 139, 87), "removed": QColor(200, 40, 40), "changed": QColor(214, 120, 20)}


def divergence_color(score: float | None) -> QColor | None:
    """The tint for a tolerance score (``max |e-o| / (atol + rtol|o|)``): grey when equal, green
    within tolerance, amber to red beyond it by decades (red from 10^4 x the tolerance and for
    another shape); None when the node has no counterpart (no score)."""
    if score is None:
        return None
    if score == 0:
        return QColor(EQUAL)
    if score <= 1:
        return QColor(CLOSE)
    t = 1.0 if not math.isfinite(score) else min(1.0, math.log10(score) / 4.0)
    return QColor.fromRgbF(
        DIVERGED_LOW.redF() + t * (DIVERGED_HIGH.redF() - DIVERGED_LOW.redF()),
        DIVERGED_LOW.greenF() + t * (DIVERGED_HIGH.greenF() - DIVERGED_LOW.greenF()),
        DIVERGED_LOW.blueF() + t * (DIVERGED_HIGH.blueF() - DIVERGED_LOW.blueF()),
    )


def diff_color(kind: str) -> QColor:
    """The outline colour for ``"added"``, ``"removed"`` or ``"changed"`` nodes."""
    return QColor(DIFF_COLORS[kind])
