"""The Run pane plots' axes: tick labels that never run together. Round values as far apart as
their labels need and at most ``MAX_TICKS`` on a horizontal axis (``SpacedAxis``; the histogram's
log-error ``ErrorAxis``), node names on the per-node plot's x axis (``NodeAxis``), and its
error / tolerance axis naming the levels it is read by (``ScoreAxis``: ``1 = tol``, ``equal``).
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics

FLOOR = 1e-6
"""Where exactly-equal nodes sit on the log-scaled error axis (they have no error to plot)."""

MIN_TICKS = 3
"""The histogram's error axis gets at least this many labelled ticks, however narrow the range."""
MAX_TICKS = 5
"""A horizontal value axis labels at most this many ticks: more read as one run of digits."""
LABEL_GAP = 14
"""Pixels kept free between two neighbouring tick labels of a horizontal axis."""
MIN_GAP = 6
"""The least gap, where ``LABEL_GAP`` would leave fewer than ``MIN_TICKS`` labels."""


def tick_metrics(axis: pg.AxisItem) -> QFontMetrics:
    """The metrics of the font ``axis`` draws its tick labels in."""
    return QFontMetrics(axis.style["tickFont"] or axis.font())


def _spaced(ticks: list[tuple[float, str]], lo: float, hi: float, size: float,
            metrics: QFontMetrics) -> list[tuple[float, str]]:
    """Those of ``ticks`` (position, label) whose labels lie wholly on an axis ``size`` pixels long
    from ``lo`` to ``hi`` and stand ``LABEL_GAP`` apart, at most ``MAX_TICKS``: powers of ten first,
    then 5× and 2× ones where they fit (log-spaced ticks are not evenly apart: thinning by count is
    not enough). Where that leaves fewer than ``MIN_TICKS``, as many as fit ``MIN_GAP`` apart,
    left to right, whatever their mantissa."""
    if hi <= lo or not ticks:
        return ticks
    placed = []  # (pixel, half width, position, label), the label inside the axis
    for pos, text in ticks:
        px, half = (pos - lo) / (hi - lo) * size, metrics.horizontalAdvance(text) / 2
        if half + 1 <= px <= size - half - 1:
            placed.append((px, half, pos, text))

    def pick(order, gap):
        kept = []
        for tick in order:
            if len(kept) < MAX_TICKS and all(abs(tick[0] - k[0]) >= tick[1] + k[1] + gap for k in kept):
                kept.append(tick)
        return kept

    rank = {"1": 0, "5": 1, "2": 2}
    kept = pick(sorted(placed, key=lambda t: rank.get(t[3][:1], 3) if "e" in t[3] else 0), LABEL_GAP)
    if len(kept) < min(MIN_TICKS, len(placed)):
        kept = max(kept, pick(sorted(placed), MIN_GAP), key=len)
    return [(pos, text) for _, _, pos, text in sorted(kept)]


def _round_ticks(lo: float, hi: float, size: float, metrics: QFontMetrics) -> list[tuple[float, str]]:
    """Round values in ``[lo, hi]`` for a linear horizontal axis ``size`` pixels long, 1-2-2.5-5
    apart, as many as fit side by side (``MAX_TICKS`` at most) with their labels."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return []
    for count in range(MAX_TICKS, 1, -1):
        raw = (hi - lo) / count
        magnitude = 10.0 ** math.floor(math.log10(raw))
        step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
        decimals = max(0, -math.floor(math.log10(step)) + (1 if round(step / magnitude, 3) == 2.5 else 0))
        first = math.ceil(lo / step) * step
        values = [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]
        big = max(abs(lo), abs(hi)) >= 1e5 or decimals > 4
        texts = [f"{v:.3g}" if big else f"{0.0 if abs(v) < step / 1e6 else v:.{decimals}f}" for v in values]
        widest = max((metrics.horizontalAdvance(t) for t in texts), default=0) + LABEL_GAP
        if len(values) * widest <= size or count == 2:
            return list(zip(values, texts))
    return []


class SpacedAxis(pg.AxisItem):
    """A horizontal linear axis whose labels never run together: round values, at most
    ``MAX_TICKS``, as many as fit side by side (``_round_ticks``)."""

    def __init__(self, orientation: str = "bottom"):
        super().__init__(orientation)
        self._labels: dict[float, str] = {}

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph override
        """Round values in range, spaced for their labels."""
        if self.logMode or maxVal <= minVal:
            return super().tickValues(minVal, maxVal, size)
        ticks = _round_ticks(minVal, maxVal, size, tick_metrics(self))
        self._labels = {round(v, 12): t for v, t in ticks}
        return [(1.0, [v for v, _ in ticks])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        """The labels ``tickValues`` chose."""
        if self.logMode:
            return super().tickStrings(values, scale, spacing)
        return [self._labels.get(round(v, 12), f"{v:.3g}") for v in values]


def _decade_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    """Ticks at 1, 2 and 5 times each power of ten between 10^lo and 10^hi (log10 positions);
    just the powers of ten when the range spans many decades; every 1..9 times, then evenly spaced
    round values, when that gives fewer than ``MIN_TICKS`` (errors within one decade)."""
    for steps in ((1,) if hi - lo > 4 else (1, 2, 5), range(1, 10)):
        ticks = []
        for decade in range(math.floor(lo), math.ceil(hi) + 1):
            for m in steps:
                pos = decade + math.log10(m)
                if lo - 0.01 <= pos <= hi + 0.01:
                    ticks.append((pos, _short(m, decade)))
        if len(ticks) >= MIN_TICKS:
            return ticks
    return _linear_ticks(10.0 ** lo, 10.0 ** hi)


def _short(m: int, decade: int) -> str:
    """``m``×10^``decade`` as ``5e-3``, or plainly from 1 up where that is shorter (``2``, ``50``)."""
    scientific, plain = f"{m}e{decade}", f"{m * 10.0 ** decade:g}"
    return plain if decade >= 0 and len(plain) < len(scientific) else scientific


def _linear_ticks(a: float, b: float) -> list[tuple[float, str]]:
    """About five round values between ``a`` and ``b`` (> 0), at their log10 positions."""
    raw = (b - a) / 4
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(a / step) * step
    values = [first + i * step for i in range(int((b - first) / step + 1e-9) + 1)]
    return [(math.log10(v), f"{v:.3g}") for v in values if v > 0]


def _short_name(name: str, limit: int = 14) -> str:
    """A node name short enough to sit under its point; long names keep both ends."""
    return name if len(name) <= limit else name[: limit // 2 - 1] + "…" + name[-(limit // 2):]


class ErrorAxis(SpacedAxis):
    """The histogram's x axis, log10 of the error: 1-2-5 ticks per decade (``_decade_ticks``) over the
    visible range, thinned to what fits side by side (at most ``MAX_TICKS``, never fewer than
    ``MIN_TICKS``); before a run, or with no error to plot, a ``SpacedAxis``."""

    def __init__(self):
        super().__init__("bottom")
        self.log_scale = False

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph override
        """Round error values inside ``[minVal, maxVal]`` at their log10 positions."""
        if not self.log_scale or maxVal <= minVal:
            return super().tickValues(minVal, maxVal, size)
        # pyqtgraph drops a label that would stick out of the axis: _spaced keeps only whole ones.
        ticks = _spaced(_decade_ticks(minVal, maxVal), minVal, maxVal, size, tick_metrics(self))
        self._labels = {round(pos, 12): text for pos, text in ticks}
        return [(1.0, [pos for pos, _ in ticks])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        """``5e-3`` style labels of the ticks ``tickValues`` chose."""
        if not self.log_scale:
            return super().tickStrings(values, scale, spacing)
        return [self._labels.get(round(v, 12), f"{10.0 ** v:.2g}") for v in values]


class ScoreAxis(pg.AxisItem):
    """The per-node plot's error / tolerance axis (log10): decades as far apart as the labels need,
    and the two levels the plot is read by named on the axis itself rather than over the points:
    ``1 = tol`` (the dashed tolerance line) and ``equal`` (where exactly-equal nodes sit)."""

    SPECIAL = {0.0: "1 = tol", round(math.log10(FLOOR), 9): "equal"}

    def __init__(self):
        super().__init__("left")

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph override
        """Whole decades every ``step`` (1, 2, 3, 5, 10…) so labels keep two text lines apart, plus the
        named levels; a decade too close to a named one is left out."""
        if maxVal <= minVal or size <= 0:
            return []
        line = tick_metrics(self).height()
        per_decade = size / (maxVal - minVal)
        step = next((m for m in (1, 2, 3, 5, 10, 20, 50, 100) if m * per_decade >= 2 * line), 100)
        specials = [v for v in self.SPECIAL if minVal <= v <= maxVal]
        decades = [float(d) for d in range(math.ceil(minVal), math.floor(maxVal) + 1) if d % step == 0]
        clear = 1.5 * line / per_decade
        values = specials + [d for d in decades if all(abs(d - v) >= clear for v in specials)]
        return [(float(step), sorted(values))]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        """``1 = tol``, ``equal``, else ``1e-4``, ``0.01``, ``100`` style powers of ten."""
        out = []
        for v in values:
            key = round(v, 9)
            if key in self.SPECIAL:
                out.append(self.SPECIAL[key])
            else:
                d = int(round(v))
                out.append(f"{10.0 ** d:g}" if -2 <= d <= 3 else f"1e{d}")
        return out


class NodeAxis(pg.AxisItem):
    """The per-node plot's x axis: node names at their graph positions, as many as fit side by side."""

    def __init__(self):
        super().__init__("bottom")
        self.names: dict[int, str] = {}
        self._widest: int | None = None

    def set_names(self, names: dict[int, str]) -> None:
        """``{graph index: node name}`` to label (empty: plain numbers)."""
        self.names = {i: _short_name(n) for i, n in names.items()}
        self._widest: int | None = None  # measured on first use, once per set of names
        self.picture = None
        self.update()

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph override
        """Every ``step``-th index, ``step`` chosen so that the widest name fits between two ticks."""
        if not self.names:
            return super().tickValues(minVal, maxVal, size)
        if size <= 0 or maxVal <= minVal:
            return []
        if self._widest is None:
            font = self.style["tickFont"] or self.font()
            metrics = QFontMetrics(font)
            # the widest of the longest names (by characters): all 10k would be measured on every paint
            longest = sorted(set(self.names.values()), key=len, reverse=True)[:32]
            self._widest = max(metrics.horizontalAdvance(n) for n in longest) + 10
        widest = self._widest
        per_index = size / (maxVal - minVal)
        step = next(m for m in (1, 2, 3, 4, 5, 10, 15, 20, 25, 50, 100, 200, 500, 1000, 10**4, 10**5, 10**6)
                    if m * per_index >= widest or m >= 10**6)
        start = max(0, math.ceil(minVal / step) * step)
        return [(float(step), [float(i) for i in range(start, math.floor(maxVal) + 1, step) if i in self.names])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 - pyqtgraph override
        """The node name at each tick."""
        if not self.names:
            return super().tickStrings(values, scale, spacing)
        return [self.names.get(int(round(v)), "") for v in values]
