"""How the Run pane fits its dock: the tables' side of the splitter as wide as their columns need,
the Output table as high as its rows, the plots' page tabs while the plots take turns (a short,
narrow dock: ``RunPlots.paged``), and ``describe``, what ``--test-geometry`` reports of it all.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QAbstractItemView, QSplitter, QTabBar, QTableWidget, QVBoxLayout, QWidget

from fxstudio.qt.run_plots import PAGES, RunPlots

CELL_MARGIN = 12
"""Padding each side of a cell's text, as the style draws it (a little over Fusion's)."""
TABLES_SHARE = 0.55
"""The most of the pane's width the tables' side takes to show its columns whole."""
METRICS_ROWS = 4
"""The Output table is as high as its rows, up to this many; the Nodes tabs get the rest."""
PAGE_TITLES = {"node": "Per-node error", "outputs": "Output errors"}


class PlotsArea(QWidget):
    """``RunPlots`` under a tab bar that picks the page while the plots take turns (hidden otherwise)."""

    def __init__(self, plots: RunPlots, parent: QWidget | None = None):
        super().__init__(parent)
        self.plots = plots
        self.pages = QTabBar()
        self.pages.setObjectName("runPlotPages")
        self.pages.setDrawBase(False)
        self.pages.setExpanding(False)
        for page in PAGES:
            self.pages.addTab(PAGE_TITLES[page])
        self.pages.currentChanged.connect(lambda i: plots.set_page(PAGES[i]))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.pages)
        layout.addWidget(plots, 1)
        self.pages.hide()
        plots.arrangement_changed.connect(self._arranged)

    def _arranged(self, arrangement: str) -> None:
        self.pages.setVisible(arrangement in PAGES)
        if arrangement in PAGES:
            self.pages.setCurrentIndex(PAGES.index(arrangement))


def content_width(table: QTableWidget) -> int:
    """The width ``table`` needs to show every column whole, with its frame and a vertical scroll bar."""
    return sum(column_needs(table)) + 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width() + 8


def column_needs(table: QTableWidget) -> list[int]:
    """Per column, the width its widest text (cells and header) needs with ``CELL_MARGIN`` each side."""
    header, metrics = table.horizontalHeader(), table.fontMetrics()
    rows = range(min(table.rowCount(), 2000))  # the view's own hint measures only the rows in sight
    out = []
    for c in range(table.columnCount()):
        texts = [table.item(r, c).text() for r in rows if table.item(r, c) is not None]
        cells = max((metrics.horizontalAdvance(t) for t in texts), default=0) + 2 * CELL_MARGIN
        out.append(max(cells, table.sizeHintForColumn(c), header.sectionSizeHint(c)))
    return out


def metrics_height(table: QTableWidget) -> int:
    """The height that shows the header and up to ``METRICS_ROWS`` rows of ``table`` without a scroll bar."""
    rows = max(1, min(table.rowCount(), METRICS_ROWS))
    return (table.horizontalHeader().sizeHint().height() + rows * table.verticalHeader().defaultSectionSize()
            + 2 * table.frameWidth() + 2)


def fit_tables(splitter: QSplitter, metrics: QTableWidget, nodes, tabs: QWidget) -> None:
    """Widen the tables' side of ``splitter`` so that every column shows whole, up to ``TABLES_SHARE``
    of it (the plots keep the rest), and give the Output table the height of its rows."""
    needed = max(content_width(metrics), nodes.content_width(CELL_MARGIN))
    sizes = splitter.sizes()
    total = sum(sizes)
    if total > 0 and sizes[0] != needed:
        left = min(needed, int(total * TABLES_SHARE))
        splitter.setSizes([left, total - left])
    column = metrics.parentWidget()
    if isinstance(column, QSplitter):
        height = sum(column.sizes())
        if height > 0:
            top = min(metrics_height(metrics), height - tabs.minimumSizeHint().height())
            column.setSizes([top, height - top])


# -- what --test-geometry reports ------------------------------------------------------------------

def _global(widget: QWidget, rect) -> list[int]:
    r = rect.toAlignedRect() if isinstance(rect, QRectF) else rect
    top_left = widget.mapToGlobal(r.topLeft())
    return [top_left.x(), top_left.y(), r.width(), r.height()]


def _scene_rect(plots: RunPlots, rect: QRectF) -> list[int]:
    box = plots.mapFromScene(rect).boundingRect()
    return _global(plots.viewport(), box)


def _tick_labels(plots: RunPlots, axis) -> list[dict]:
    image = QImage(4, 4, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        painter.setFont(axis.style["tickFont"] or axis.font())
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if not specs:
        return []
    return [{"text": text, "rect": _scene_rect(plots, axis.mapRectToScene(rect))} for rect, _flags, text in specs[2]]


def _plot(plots: RunPlots, plot) -> dict | None:
    if plot.scene() is None or not plot.isVisible():
        return None
    view = plot.getViewBox()
    return {"view": _scene_rect(plots, view.sceneBoundingRect()),
            "ticks": {side: _tick_labels(plots, plot.getAxis(side)) for side in ("left", "bottom")}}


def _node_plot(plots: RunPlots) -> dict | None:
    out = _plot(plots, plots.node_plot)
    if out is None:
        return None
    view = plots.node_plot.getViewBox()
    (x0, x1), (y0, y1) = view.viewRange()
    xys = [xy for xy in plots._xy_by_id.values() if x0 <= xy[0] <= x1]
    if xys:
        ys = [min(max(math.log10(y), y0), y1) for _, y in xys]
        corner_a = view.mapViewToScene(pg.Point(min(x for x, _ in xys), max(ys)))
        corner_b = view.mapViewToScene(pg.Point(max(x for x, _ in xys), min(ys)))
        pad = 6  # the largest point's radius
        data = QRectF(corner_a, corner_b).normalized().adjusted(-pad, -pad, pad, pad)
        out["data"] = _scene_rect(plots, data)
    label = plots._first_label
    out["labels"] = {}
    if label is not None and label.scene() is not None:
        out["labels"]["first_divergence"] = _scene_rect(plots, label.sceneBoundingRect())
    return out


def _table(table: QAbstractItemView, texts: list[list[str]]) -> dict:
    header = table.horizontalHeader()
    cell_metrics, head_metrics = table.fontMetrics(), header.fontMetrics()
    model = table.model()
    columns = []
    for c in range(model.columnCount()):
        title = str(model.headerData(c, Qt.Orientation.Horizontal) or "")
        widest = max((cell_metrics.horizontalAdvance(t) for t in texts[c]), default=0)
        columns.append({"header": title, "width": table.columnWidth(c),
                        "header_text": head_metrics.horizontalAdvance(title), "text": widest})
    return {"viewport": _global(table.viewport(), table.viewport().rect()), "columns": columns,
            "hscroll": table.horizontalScrollBar().isVisible(), "vscroll": table.verticalScrollBar().isVisible()}


def describe(pane) -> dict:
    """The Run pane's layout on screen: the plots' arrangement, each shown plot's view box and tick
    labels, the per-node plot's data area and first-divergence label, and each table's columns
    (width, and the width of its widest header and cell text)."""
    plots = pane.plots
    if not plots.isVisible():
        return {}
    metrics = pane.metrics
    metric_texts = [[metrics.item(r, c).text() for r in range(metrics.rowCount()) if metrics.item(r, c)]
                    for c in range(metrics.columnCount())]
    nodes = pane.nodes_table
    node_texts = [nodes.column_texts(c) for c in range(nodes.columnCount())]
    return {
        "arrangement": plots.arrangement,
        "plots": _global(plots, plots.rect()),
        "page_tabs": _page_tabs(pane.plots_area.pages),
        "node_plot": _node_plot(plots),
        "hist_plot": _plot(plots, plots.hist_plot),
        "scatter_plot": _plot(plots, plots.scatter_plot),
        "tables": {"metrics": _table(metrics, metric_texts) if metrics.isVisible() else None,
                   "nodes": _table(nodes, node_texts) if nodes.isVisible() else None},
        "scroll": pane.parentWidget() is not None and _scrolls(pane),
    }


def _page_tabs(bar: QTabBar) -> dict:
    """Each plot page's tab (title → rectangle) while the plots take turns, else nothing."""
    if not bar.isVisible():
        return {}
    return {bar.tabText(i): _global(bar, bar.tabRect(i)) for i in range(bar.count())}


def _scrolls(pane) -> bool:
    """Whether the dock's scroll area shows a scroll bar: the pane does not fit the dock."""
    widget = pane.parentWidget()
    while widget is not None and not hasattr(widget, "horizontalScrollBar"):
        widget = widget.parentWidget()
    return bool(widget) and (widget.horizontalScrollBar().isVisible() or widget.verticalScrollBar().isVisible())


__all__ = ["PlotsArea", "content_width", "column_needs", "describe", "fit_tables", "metrics_height"]
