"""The colour scale of a numeric overlay and its legend on the canvas.

``metric_tints(metrics, key)`` turns one metric of a ``NodeMetrics`` into a colour per node name:
the badness of a value (0 = best, 1 = worst) on a logarithmic scale for values that spread over
decades (errors, time, memory), linear for SQNR, read through the gradient stops the node-data
JSON carries (``fxstudio.core.overlays.gradient_for``: Model Explorer's own stops when a file gave
them, its thresholds when it gave only those). A zero error and an infinite SQNR (identical
values) get no tint, as an equal node stays white under the divergence overlay.

``ScaleLegend`` is the box in the canvas's bottom-left corner (the divergence has its own legend,
top left: ``overlays.OverlayLegend``): the overlay chooser (a combo box), the colour bar with the lowest
and highest value and the unit, and a status line (what was measured, on which device; progress).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPen
from PySide6.QtWidgets import QComboBox, QFrame, QGridLayout, QLabel, QSizePolicy, QWidget

from fxstudio.core.overlays import NodeMetrics, format_value, gradient_for

DIVERGENCE = "divergence"
CHOICES = (  # (key, text) in the chooser's order
    (DIVERGENCE, "Divergence (last run)"), ("error", "Accumulated error"), ("isolated", "Isolated error"),
    ("sqnr", "SQNR"), ("time", "Time"), ("memory", "Peak memory"), ("data", "Loaded node data"),
)


def value_range(values: dict[str, float], log: bool) -> tuple[float, float] | None:
    """(lowest, highest) finite value (positive ones on a log scale), or None when there is none."""
    finite = [v for v in values.values() if math.isfinite(v) and (v > 0 or not log)]
    return (min(finite), max(finite)) if finite else None


def badness(value: float, lo: float, hi: float, *, log: bool, low_is_worse: bool) -> float | None:
    """Where ``value`` sits between the best (0) and the worst (1) of the range; None for no tint."""
    if math.isnan(value):
        return None
    if low_is_worse:
        if value == math.inf:
            return None
        if value == -math.inf:
            return 1.0
        return 1.0 if hi == lo else (hi - value) / (hi - lo)
    if value == math.inf:
        return 1.0
    if value <= 0 and log or value == -math.inf:
        return None
    if hi == lo:
        return 1.0
    if log:
        return min(1.0, max(0.0, (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))))
    return (value - lo) / (hi - lo)


def stop_color(stops: list[dict], position: float) -> QColor:
    """The colour at ``position`` (0..1) of gradient ``stops`` (``{"stop", "bgColor"}``), interpolated."""
    points = sorted((float(s["stop"]), QColor(s.get("bgColor") or "#ffffff")) for s in stops)
    if not points:
        return QColor("#c81e1e")
    if position <= points[0][0]:
        return points[0][1]
    for (a, ca), (b, cb) in zip(points, points[1:]):
        if position <= b:
            t = 0.0 if b == a else (position - a) / (b - a)
            return QColor.fromRgbF(ca.redF() + t * (cb.redF() - ca.redF()), ca.greenF() + t * (cb.greenF() - ca.greenF()),
                                   ca.blueF() + t * (cb.blueF() - ca.blueF()))
    return points[-1][1]


def pale(colour: QColor, strength: float = 0.45) -> QColor:
    """``colour`` blended into white (a cell background that black text stays readable on)."""
    return QColor(*(round(255 + (c - 255) * strength) for c in (colour.red(), colour.green(), colour.blue())))


def metric_marks(metrics: NodeMetrics, key: str, doc) -> tuple[dict[int, QColor], dict[int, str]]:
    """Metric ``key`` on the nodes of document ``doc`` (matched by name): (tint by node id, value
    text by node id). Names ``doc`` does not have are left out."""
    colours = metric_tints(metrics, key)
    tints, texts = {}, {}
    for name, value in metrics.metric(key).items():
        node = doc.find(name)
        if node is None:
            continue
        node_id = doc.id_of(node)
        texts[node_id] = metrics.text(key, value)
        if name in colours:
            tints[node_id] = colours[name]
    return tints, texts


def metric_tints(metrics: NodeMetrics, key: str) -> dict[str, QColor]:
    """A colour per node name for metric ``key`` (nodes without a tint are left out)."""
    values = metrics.metric(key)
    info = metrics.info(key)
    thresholds = metrics.styles.get(key, {}).get("thresholds") or []
    if thresholds and not metrics.styles.get(key, {}).get("gradient"):
        return _threshold_tints(values, thresholds)
    span = value_range(values, info.log)
    if span is None:
        return {n: QColor("#c81e1e") for n, v in values.items() if v == math.inf or (v == -math.inf and info.worse == "low")}
    stops = gradient_for(metrics, key)
    low_worse = info.worse == "low"
    tints = {}
    for name, value in values.items():
        bad = badness(value, *span, log=info.log, low_is_worse=low_worse)
        if bad is not None:
            tints[name] = stop_color(stops, 1.0 - bad if low_worse else bad)
    return tints


def _threshold_tints(values: dict[str, float], thresholds: list[dict]) -> dict[str, QColor]:
    """Model Explorer's thresholds: a value <= a threshold's value takes the first such one's colour."""
    ordered = sorted(thresholds, key=lambda t: t["value"])
    tints = {}
    for name, value in values.items():
        for t in ordered:
            if value <= t["value"]:
                if t.get("bgColor"):
                    tints[name] = QColor(t["bgColor"])
                break
    return tints


def legend_grid(frame: QFrame, name: str, widgets: str) -> QGridLayout:
    """Style ``frame`` as a canvas legend (white, rounded, a thin border; ``widgets``, a selector such
    as ``"QLabel, QCheckBox"``, in 9 pt) and give it its grid layout."""
    frame.setObjectName(name)
    frame.setFrameShape(QFrame.Shape.StyledPanel)
    frame.setAutoFillBackground(True)
    frame.setStyleSheet(f"#{name} {{ background: #ffffff; border: 1px solid #b4bfcc; border-radius: 5px; }}"
                        f" {widgets} {{ font-size: 9pt; }}")
    grid = QGridLayout(frame)
    grid.setContentsMargins(7, 4, 7, 4)
    grid.setHorizontalSpacing(6)
    grid.setVerticalSpacing(2)
    return grid


class ScaleBar(QWidget):
    """The colour bar: the gradient from the lowest value (left) to the highest (right)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.stops: list[dict] = []
        self.setFixedHeight(12)
        self.setMinimumWidth(150)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_stops(self, stops: list[dict]) -> None:
        """Show ``stops`` (``{"stop", "bgColor"}`` as in node-data JSON)."""
        self.stops = [dict(s) for s in stops]
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Paint the gradient with a thin border."""
        p = QPainter(self)
        r = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        grad = QLinearGradient(r.left(), 0, r.right(), 0)
        for s in self.stops:
            grad.setColorAt(min(1.0, max(0.0, float(s["stop"]))), QColor(s.get("bgColor") or "#ffffff"))
        p.setBrush(grad)
        p.setPen(QPen(QColor("#8a96a3"), 1))
        p.drawRect(r)
        p.end()


class ScaleLegend(QFrame):
    """The numeric overlay's box: chooser, colour bar with its range and unit, status line."""

    chosen = Signal(str)   # a key of CHOICES

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        grid = legend_grid(self, "canvasScaleLegend", "QLabel, QComboBox")
        self.combo = QComboBox(self)
        for key, text in CHOICES:
            self.combo.addItem(text, key)
        self.combo.setToolTip("What colours the cards and the minimap: the last run's divergence, or a "
                              "per-node measurement (run with the Run pane's device and inputs), or node data loaded "
                              "from a Model Explorer file (View ▸ Load Node Data…)")
        self.combo.activated.connect(lambda i: self.chosen.emit(self.combo.itemData(i)))
        self.low = QLabel("", self)
        self.high = QLabel("", self)
        self.high.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.bar = ScaleBar(self)
        self.status = QLabel("", self)
        self.status.setStyleSheet("color: #4a5663;")
        grid.addWidget(QLabel("Overlay", self), 0, 0)
        grid.addWidget(self.combo, 0, 1, 1, 2)
        grid.addWidget(self.bar, 1, 0, 1, 3)
        grid.addWidget(self.low, 2, 0, 1, 2)
        grid.addWidget(self.high, 2, 2)
        grid.addWidget(self.status, 3, 0, 1, 3)
        self.show_scale(None)

    def key(self) -> str:
        """The chosen overlay's key."""
        return self.combo.currentData()

    def set_key(self, key: str) -> None:
        """Select ``key`` in the chooser without emitting ``chosen``."""
        index = self.combo.findData(key)
        if index >= 0 and index != self.combo.currentIndex():
            self.combo.blockSignals(True)
            self.combo.setCurrentIndex(index)
            self.combo.blockSignals(False)

    def show_scale(self, metrics: NodeMetrics | None, key: str = "", status: str = "") -> None:
        """The colour bar of ``metrics``'s ``key`` (None: no bar, the divergence is shown) and a status line."""
        has_bar = metrics is not None and bool(metrics.metric(key))
        for w in (self.bar, self.low, self.high):
            w.setVisible(has_bar)
        if has_bar:
            info = metrics.info(key)
            span = value_range(metrics.metric(key), info.log)
            stops = gradient_for(metrics, key)
            self.bar.set_stops(stops)
            unit = metrics.units.get(key, info.unit)
            lo, hi = (format_value(v, unit) for v in span) if span else ("-", "-")
            self.low.setText(f"{lo}{' (log)' if info.log else ''}")
            self.high.setText(hi)
            self.bar.setToolTip(f"{info.title}: {info.help}")
        self.set_status(status)
        self.adjustSize()

    def set_status(self, text: str) -> None:
        """The line under the bar (progress, what was measured, an error)."""
        self.status.setText(text)
        self.status.setVisible(bool(text))
        self.adjustSize()
