"""The run pane's pyqtgraph plots: per-node error along the graph's order (click a point to select
its node), a histogram of the outputs' absolute errors, and a scatter of original vs edited values.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont

from fxstudio.core.compare import CompareReport
from fxstudio.qt.run_axes import FLOOR, MIN_TICKS, ErrorAxis, NodeAxis, ScoreAxis, SpacedAxis, tick_metrics

__all__ = ["COLORS", "DEFAULT_TITLES", "FLOOR", "MIN_TICKS", "PAGES", "RunPlots"]

CEILING_FACTOR = 100.0
"""Infinite errors (another shape, NaN) are drawn this far above the largest finite one."""

COLORS = {
    "equal": QColor(150, 160, 170),
    "close": QColor(46, 139, 87),
    "diverged": QColor(214, 96, 40),
    "first": QColor(200, 30, 30),
    "selected": QColor(30, 90, 200),
    "tolerance": QColor(120, 120, 120),
    "bars": QColor(70, 110, 180, 170),
}


def _title(plot: pg.PlotItem, text: str) -> None:
    plot.setTitle(f"<span style='color:#333;font-size:9pt'>{text}</span>")


def _style(plot: pg.PlotItem, title: str, left: str, bottom: str) -> None:
    _title(plot, title)
    for side, text in (("left", left), ("bottom", bottom)):
        axis = plot.getAxis(side)
        axis.setLabel(f"<span style='color:#444'>{text}</span>")
        axis.enableAutoSIPrefix(False)  # else a log axis with a title reads "(x1e+09)" and shifted ticks
        axis.setPen(pg.mkPen("#888"))
        axis.setTextPen(pg.mkPen("#444"))
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMenuEnabled(False)
    plot.hideButtons()


def _tip(row) -> str:
    """A plotted node's tooltip: name, status and errors."""
    if row is None:
        return ""
    status = "unchanged (computed once)" if row.shared else row.status
    text = f"{row.name} ({row.op} {row.target})\n{status}"
    if row.max_abs:
        text += f", max abs {row.max_abs:.3g}, {row.score:.3g}× tolerance"
    return text + (f"\n{row.note}" if row.note else "")


DEFAULT_TITLES = {
    "node": ("Per-node error along the graph (click a point to select its node)", "Per-node error (click a point)"),
    "hist": ("Output absolute errors", "Output |error|"),
    "scatter": ("Original vs edited output values", "Original vs edited"),
}
"""(full, short) title of each plot before a run; the short one in a short dock."""
SHAPE_NOTE = ("  <span style='color:#d66028'>▲</span> other shape or NaN", "  ▲ shape/NaN")
"""Added to the per-node title when a point sits on the ceiling (it says so outside the points)."""

GRID_MIN_HEIGHT = 330
"""From this height the plots stack: the per-node plot above the other two."""
ROW_MIN_WIDTH = 640
"""Below this width (and ``GRID_MIN_HEIGHT``) three plots side by side are too narrow to read: the
plots take turns (``PAGES``), the per-node one or the other two."""
PAGES = ("node", "outputs")

AXIS_LABELS = {
    ("node_plot", "left"): ("error / tolerance", "err / tol"),
    ("node_plot", "bottom"): ("node (graph order)", ""),
    ("hist_plot", "left"): ("values", "count"),
    ("hist_plot", "bottom"): ("|edited − original| (log scale)", "|error|"),
    ("scatter_plot", "left"): ("edited", "edited"),
    ("scatter_plot", "bottom"): ("original", "original"),
}
"""(full, short) axis titles; an empty short one hides that axis title in a short dock."""


class RunPlots(pg.GraphicsLayoutWidget):
    """Three plots of a ``CompareReport``; ``node_clicked(int)`` carries the stable id of a clicked point."""

    node_clicked = Signal(int)
    arrangement_changed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setBackground("w")
        self.ci.layout.setSpacing(6)
        self.node_axis = NodeAxis()
        self.score_axis = ScoreAxis()
        self.node_plot = pg.PlotItem(axisItems={"bottom": self.node_axis, "left": self.score_axis})
        self.error_axis = ErrorAxis()
        self.hist_plot = pg.PlotItem(axisItems={"bottom": self.error_axis})
        self.scatter_plot = pg.PlotItem(axisItems={"bottom": SpacedAxis()})
        self.arrangement: str | None = None
        self.page = PAGES[0]  # which plots show while they take turns
        self._ceiling_note = False
        self._titles = dict(DEFAULT_TITLES)
        self._arrange("grid")
        _style(self.node_plot, "Per-node error along the graph (click a point to select its node)",
               "error / tolerance", "node (graph order)")
        self.node_plot.setLogMode(x=False, y=True)
        _style(self.hist_plot, "Output absolute errors", "values", "|edited − original| (log scale)")

        _style(self.scatter_plot, "Original vs edited output values", "edited", "original")
        self._points: pg.ScatterPlotItem | None = None
        self._selected_marker = pg.ScatterPlotItem(size=16, pen=pg.mkPen(COLORS["selected"], width=2),
                                                   brush=pg.mkBrush(None), symbol="o")
        # The ring lies over the selected node's point and takes its clicks (pyqtgraph gives a click
        # to the first item with a point there): a click on it is a click on that node, which shows
        # its card again (issue #26 item 10).
        self._marked: int | None = None
        self._selected_marker.sigClicked.connect(self._marker_clicked)
        self._xy_by_id: dict[int, tuple[float, float]] = {}
        self._first_label: pg.TextItem | None = None
        self.report: CompareReport | None = None
        self.scatter_output: str | None = None
        view = self.node_plot.getViewBox()
        view.sigResized.connect(self._fit_headroom)
        view.sigXRangeChanged.connect(self._place_first_label)
        self.clear_plots()

    @property
    def paged(self) -> bool:
        """True while the plots take turns (a short, narrow dock): ``page`` says which show."""
        return self.arrangement in PAGES

    def set_page(self, page: str) -> None:
        """Show the per-node plot (``"node"``) or the histogram and scatter (``"outputs"``) while paged."""
        self.page = page
        if self.paged:
            self._arrange(page)
            # No resize follows to lay the new page out (as one does for "row" and "grid"): the
            # layout's own pass would shrink the plots to their preferred size; fill the view again.
            self.ci.layout.activate()
            self.ci.setGeometry(self.range)

    def _arrange(self, arrangement: str) -> None:
        """``"grid"``: the per-node plot above the other two; ``"row"``: all three side by side
        (a short, wide dock such as the window's bottom area); ``"node"`` / ``"outputs"``: the
        per-node plot alone, or the other two side by side (a short, narrow dock)."""
        if arrangement == self.arrangement:
            return
        for plot in (self.node_plot, self.hist_plot, self.scatter_plot):
            if plot.scene() is not None:
                self.ci.removeItem(plot)
        layout = self.ci.layout
        for i in range(3):
            layout.setRowStretchFactor(i, 0)
            layout.setColumnStretchFactor(i, 0)
        if arrangement == "grid":
            self.ci.addItem(self.node_plot, row=0, col=0, colspan=2)
            self.ci.addItem(self.hist_plot, row=1, col=0)
            self.ci.addItem(self.scatter_plot, row=1, col=1)
            layout.setRowStretchFactor(0, 3)
            layout.setRowStretchFactor(1, 2)
            layout.setColumnStretchFactor(0, 1)
            layout.setColumnStretchFactor(1, 1)
        elif arrangement == "row":
            self.ci.addItem(self.node_plot, row=0, col=0)
            self.ci.addItem(self.hist_plot, row=0, col=1)
            self.ci.addItem(self.scatter_plot, row=0, col=2)
            layout.setRowStretchFactor(0, 1)  # a row left at stretch 0 stops at its preferred height
            layout.setColumnStretchFactor(0, 2)
            layout.setColumnStretchFactor(1, 1)
            layout.setColumnStretchFactor(2, 1)
        elif arrangement == "node":
            self.ci.addItem(self.node_plot, row=0, col=0)
            layout.setRowStretchFactor(0, 1)
            layout.setColumnStretchFactor(0, 1)
        else:
            self.ci.addItem(self.hist_plot, row=0, col=0)
            self.ci.addItem(self.scatter_plot, row=0, col=1)
            layout.setRowStretchFactor(0, 1)
            layout.setColumnStretchFactor(0, 1)
            layout.setColumnStretchFactor(1, 1)
        for plot in (self.node_plot, self.hist_plot, self.scatter_plot):
            plot.setVisible(plot.scene() is not None)  # one taken out of the layout is not drawn
        self.arrangement = arrangement
        self._apply_titles()
        self.arrangement_changed.emit(arrangement)

    def _apply_titles(self) -> None:
        short = self.arrangement != "grid"
        for name, plot in (("node", self.node_plot), ("hist", self.hist_plot), ("scatter", self.scatter_plot)):
            note = SHAPE_NOTE[1 if short else 0] if name == "node" and self._ceiling_note else ""
            _title(plot, self._titles[name][1 if short else 0] + note)
        # Short docks shorten the axis titles rather than drop them: a scatter without "original" and
        # "edited" on its axes cannot be read. The node axis needs none there: it shows node names.
        for (plot, side), (full, brief) in AXIS_LABELS.items():
            axis = plot if isinstance(plot, pg.AxisItem) else getattr(self, plot).getAxis(side)
            axis.setLabel(f"<span style='color:#444'>{brief if short else full}</span>")
            axis.showLabel(bool(brief) or not short)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        """A grid when the widget is tall enough; else a row when it is wide enough; else pages."""
        if getattr(self, "arrangement", None) is not None:  # pyqtgraph calls this during __init__ too
            w, h = self.width(), self.height()
            if h >= GRID_MIN_HEIGHT or (w <= 2.2 * h and w >= ROW_MIN_WIDTH):
                self._arrange("grid")
            elif w >= ROW_MIN_WIDTH:
                self._arrange("row")
            else:
                self._arrange(self.page)
        super().resizeEvent(event)

    # -- drawing ------------------------------------------------------------------------------

    def clear_plots(self) -> None:
        """Empty all three plots: no points, default titles, axes and ranges (as before any run)."""
        for plot in (self.node_plot, self.hist_plot, self.scatter_plot):
            plot.clear()
        self._points = None
        self._first_label = None
        self._y_span = None
        self._ceiling_note = False
        self._xy_by_id = {}
        self.report = None
        self.scatter_output = None
        self.node_axis.set_names({})
        self.error_axis.log_scale = False
        self.node_plot.setYRange(math.log10(FLOOR) - 0.3, 2.3, padding=0)
        for plot, x, y in ((self.node_plot, (0, 1), None), (self.hist_plot, (0, 1), (0, 1)),
                           (self.scatter_plot, (0, 1), (0, 1))):
            plot.setXRange(*x, padding=0.02)
            if y is not None:
                plot.setYRange(*y, padding=0.02)
        self._titles = dict(DEFAULT_TITLES)
        if self.arrangement is not None:
            self._apply_titles()

    def show_report(self, report: CompareReport, scatter_output: str | None = None) -> None:
        """Draw ``report``; the scatter shows ``scatter_output`` (default: the output that differs most)."""
        self.clear_plots()
        self.report = report
        self._draw_nodes(report)
        paths = list(report.samples)
        if scatter_output not in report.samples:
            worst = max(report.outputs, key=lambda o: o.max_abs if o.max_abs is not None else -1, default=None)
            scatter_output = worst.path if worst is not None and worst.path in report.samples else (
                paths[0] if paths else None)
        self.scatter_output = scatter_output
        self._draw_histogram(report)
        self._draw_scatter(report, scatter_output)
        for plot in (self.hist_plot, self.scatter_plot):
            plot.enableAutoRange()  # clear_plots fixed their empty ranges

    def _draw_nodes(self, report: CompareReport) -> None:
        plot = self.node_plot
        rows = [n for n in report.nodes if n.status in ("equal", "close", "diverged") and n.node_id is not None]
        finite = [n.score for n in rows if n.score is not None and math.isfinite(n.score) and n.score > 0]
        top = max(finite + [1.0]) * CEILING_FACTOR
        xs, ys, brushes, sizes, ids, symbols = [], [], [], [], [], []
        # One brush object per colour: pyqtgraph renders a symbol per distinct brush *object* (3,000
        # renders for 3,000 points took 0.15 s on the GUI thread), a handful when they are shared.
        shared_brushes = {key: pg.mkBrush(color) for key, color in COLORS.items()}
        for n in rows:
            score = n.score if n.score is not None else math.inf
            y = top if not math.isfinite(score) else max(score, FLOOR)
            first = report.first_divergence is not None and n.index == report.first_divergence.index
            xs.append(n.index)
            ys.append(y)
            brushes.append(shared_brushes["first" if first else n.status])
            sizes.append(11 if first else 7)
            symbols.append("t1" if not math.isfinite(score) else "o")  # ▲: another shape, or NaN
            ids.append(n.node_id)
            self._xy_by_id[n.node_id] = (n.index, y)
        tol = pg.InfiniteLine(pos=0.0, angle=0, pen=pg.mkPen(COLORS["tolerance"], style=Qt.PenStyle.DashLine))
        plot.addItem(tol)  # log mode: y = 0 is 10^0 = 1, the tolerance (named on the axis: ScoreAxis)
        self._ceiling_note = any(not math.isfinite(n.score if n.score is not None else math.inf) for n in rows)
        inserted = [n.index for n in report.nodes if n.status == "no_counterpart"]
        for x in inserted:
            plot.addItem(pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(QColor(120, 80, 200, 90), width=1)))
        if xs:
            # Raw items live in view coordinates, which are log10 on this log-scaled axis.
            x, y = np.array(xs, float), np.log10(np.array(ys, float))
            plot.addItem(pg.PlotCurveItem(x, y, pen=pg.mkPen(QColor(190, 195, 205))))
            by_id = {n.node_id: n for n in rows}
            self._points = pg.ScatterPlotItem(x=x, y=y, size=sizes, brush=brushes, pen=pg.mkPen(None), data=ids,
                                              symbol=symbols, hoverable=True, tip=lambda x, y, data: _tip(by_id.get(data)))
            self._points.sigClicked.connect(self._points_clicked)
            plot.addItem(self._points)
        if report.first_divergence is not None:
            fd = report.first_divergence
            x = fd.index
            plot.addItem(pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(COLORS["first"], width=1.5)))
            # In a band above the highest point kept free for it (``_fit_headroom``, in pixels), beside
            # the line on whichever side it fits (``_place_first_label``, again on every resize or scroll).
            text = pg.TextItem(f"first divergence: {fd.name}", color=COLORS["first"], anchor=(0, 0),
                               fill=pg.mkBrush(255, 255, 255, 230), border=pg.mkPen(COLORS["first"]))
            text.setFont(QFont(text.textItem.font().family(), 9, QFont.Weight.Bold))
            text.setZValue(20)
            plot.addItem(text)
            self._first_label, self._first_x = text, x
        if report.error is not None and report.error.graph == "edited":
            err = next((n for n in report.nodes if n.status == "error"), None)
            if err is not None:
                plot.addItem(pg.InfiniteLine(pos=err.index, angle=90, pen=pg.mkPen(COLORS["first"], width=2,
                                                                                  style=Qt.PenStyle.DotLine)))
                t = pg.TextItem(f"error at {err.name}", color=COLORS["first"], anchor=(1.05, 1.0))
                plot.addItem(t)
                t.setPos(err.index, math.log10(FLOOR) + 1)
        plot.addItem(self._selected_marker)
        self._y_span = (math.log10(FLOOR), math.log10(top))
        plot.setXRange(-1, max([n.index for n in report.nodes] + [1]) + 1, padding=0.02)
        self.node_axis.set_names({n.index: n.name for n in report.nodes})
        self._fit_headroom()

    def _fit_headroom(self, *_args) -> None:
        """Set the error axis so that the first-divergence label has a band of its own above the
        highest point (its height in pixels, whatever the plot's height) and the lowest points and
        the axis's ``equal`` label clear the bottom, then place the label."""
        span = getattr(self, "_y_span", None)
        view = self.node_plot.getViewBox()
        if span is None or self.report is None or view.height() <= 0:
            return
        lo, hi = span
        text = self._first_label
        # The label (and half the largest point), or just that half; half a text line at the bottom.
        band = (text.textItem.boundingRect().height() if text is not None else 0) + 8
        bottom = tick_metrics(self.score_axis).height() / 2 + 4
        per_px = (hi - lo) / max(view.height() - band - bottom, view.height() / 3)
        top = hi + band * per_px
        view.setYRange(lo - bottom * per_px, top, padding=0)
        if text is not None:
            text.setPos(text.pos().x(), top)
        self._place_first_label()

    def _place_first_label(self, *_args) -> None:
        """Right of the first-divergence line when the label fits there, else left of it."""
        text = getattr(self, "_first_label", None)
        view = self.node_plot.getViewBox()
        (x0, x1), _ = view.viewRange()
        if text is None or view.width() <= 0 or x1 <= x0:
            return
        line_x = self._first_x
        line_px = (line_x - x0) / (x1 - x0) * view.width()
        width = text.textItem.boundingRect().width() + 6
        if line_px + width <= view.width():
            left_px = line_px + 3  # right of the line
        elif line_px - width >= 0:
            left_px = line_px - width + 3  # left of it
        else:
            left_px = max(0.0, view.width() - width)  # across it, whole, at the plot's right edge
        text.setAnchor((0, 0))
        text.setPos(x0 + left_px / view.width() * (x1 - x0), text.pos().y())

    def _draw_histogram(self, report: CompareReport) -> None:
        plot = self.hist_plot
        errors = [np.abs(b - a) for a, b in report.samples.values()]
        values = np.concatenate(errors) if errors else np.zeros(0)
        values = values[np.isfinite(values)]
        exact = int((values == 0).sum())
        nonzero = values[values > 0]
        if nonzero.size:
            # Bins even in log10 on a linear axis, labelled 1-2-5 per decade: errors span decades.
            logs = np.log10(nonzero)
            lo, hi = float(logs.min()), float(logs.max())
            if hi - lo < 1e-9:
                lo, hi = lo - 0.5, hi + 0.5
            edges = np.linspace(lo, hi, 41)
            counts, _ = np.histogram(logs, bins=edges)
            plot.addItem(pg.PlotDataItem(edges, counts, stepMode="center", fillLevel=0,
                                         brush=pg.mkBrush(COLORS["bars"]), pen=pg.mkPen(COLORS["bars"].darker(130))))
            self.error_axis.log_scale = True
        else:
            self.error_axis.log_scale = False
        self.error_axis.picture = None
        self.error_axis.update()
        if not report.samples and report.error is not None:
            self._titles["hist"] = ("Output absolute errors (none: the edited graph failed)", "no outputs")
        else:
            self._titles["hist"] = (f"Output absolute errors ({values.size} values, {exact} exact)",
                                    f"|error| of {values.size} values")
        self._apply_titles()

    def _draw_scatter(self, report: CompareReport, path: str | None) -> None:
        plot = self.scatter_plot
        if path is None or path not in report.samples:
            why = "the edited graph failed" if report.error is not None else "no tensor output"
            self._titles["scatter"] = (f"Original vs edited ({why})", "Original vs edited")
            self._apply_titles()
            return
        a, b = report.samples[path]
        ok = np.isfinite(a) & np.isfinite(b)
        a, b = a[ok], b[ok]
        if a.size:
            lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
            plot.addItem(pg.PlotDataItem([lo, hi], [lo, hi], pen=pg.mkPen(COLORS["tolerance"], style=Qt.PenStyle.DashLine)))
            size = 7 if a.size <= 200 else 4  # a few values are drawn large enough to see
            plot.addItem(pg.ScatterPlotItem(a, b, size=size, pen=pg.mkPen(None), brush=pg.mkBrush(214, 96, 40, 150)))
        self._titles["scatter"] = (f"Original vs edited: {path} ({a.size} values)", f"Original vs edited: {path}")
        self._apply_titles()

    # -- interaction ----------------------------------------------------------------------------

    def _points_clicked(self, item, points, ev=None) -> None:
        if len(points):
            node_id = points[0].data()
            if node_id is not None:
                self.node_clicked.emit(int(node_id))

    def _marker_clicked(self, *_args) -> None:
        if self._marked is not None:
            self.node_clicked.emit(self._marked)

    def mark_selected(self, node_id: int | None) -> None:
        """Ring the point of ``node_id`` (the selection), or none."""
        xy = self._xy_by_id.get(node_id) if node_id is not None else None
        self._marked = node_id if xy is not None else None
        if xy is None:
            self._selected_marker.setData([], [])
        else:
            self._selected_marker.setData([xy[0]], [math.log10(xy[1])])

    def point_position(self, node_id: int) -> tuple[float, float] | None:
        """Scene position of a node's point (tests click there the way a user does)."""
        xy = self._xy_by_id.get(node_id)
        if xy is None:
            return None
        view = self.node_plot.getViewBox()
        scene = view.mapViewToScene(pg.Point(xy[0], math.log10(xy[1])))
        return scene.x(), scene.y()
