"""The run pane read at the size the window gives it (the bottom dock of a 1600x1000 window): every
plot's axes carry labels, the first-divergence label and the table columns show whole, and opening
another model clears what the last one left."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.run_plots import DEFAULT_TITLES, MIN_TICKS
from fxstudio.qt.selection import SelectionModel
from fxstudio.resources import example_path

DOCK_SIZE = (1212, 275)
"""The Run dock's size in a 1600x1000 window with the default layout."""


@pytest.fixture
def pane(qtbot):
    widget = RunPane(SelectionModel())
    qtbot.addWidget(widget)
    widget.resize(*DOCK_SIZE)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def open_doc(name, *edits):
    doc = Document(load_model(example_path(name)))
    for edit in edits:
        doc.apply_edit(edit)
    return doc


def run(qtbot, pane, doc):
    pane.set_document(doc)
    with qtbot.waitSignal(pane.report_ready, timeout=60_000) as blocker:
        qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    qtbot.wait(200)  # the layout settles
    return blocker.args[0]


def drawn_ticks(axis: pg.AxisItem) -> list[str]:
    """The tick labels the axis draws now (pyqtgraph's own draw specs, after it drops crowded ones)."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        return [spec[2] for spec in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def axis_title(plot: pg.PlotItem, side: str) -> str:
    axis = plot.getAxis(side)
    return axis.label.toPlainText().strip() if axis.label.isVisible() else ""


@pytest.mark.parametrize("model, edit", [
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"}),
    ("residual_cnn.py", {"op": "set_target", "node": "layer1_1_relu", "target": "torch.nn.GELU()"}),
])
def test_every_plot_is_readable_in_the_default_dock(qtbot, pane, model, edit):
    doc = open_doc(model, edit)
    report = run(qtbot, pane, doc)
    plots = pane.plots
    assert plots.arrangement == "row"  # the short, wide dock: three plots side by side
    # The per-node plot's x axis names nodes, in graph order.
    names = [n.name for n in report.nodes]
    node_ticks = drawn_ticks(plots.node_axis)
    assert len(node_ticks) >= 2 and all(t in names for t in node_ticks)
    assert [names.index(t) for t in node_ticks] == sorted(names.index(t) for t in node_ticks)
    # The histogram's error axis has several labelled values, not one.
    assert len(drawn_ticks(plots.error_axis)) >= MIN_TICKS
    # The scatter says which axis is which; the others keep a short title too.
    assert axis_title(plots.scatter_plot, "bottom") == "original"
    assert axis_title(plots.scatter_plot, "left") == "edited"
    assert axis_title(plots.hist_plot, "bottom") and axis_title(plots.node_plot, "left")
    # The first-divergence label lies wholly inside the plot, next to its line.
    label = plots._first_label
    assert label is not None and report.first_divergence.name in label.toPlainText()
    view = plots.node_plot.getViewBox().sceneBoundingRect()
    box = label.sceneBoundingRect()
    assert view.contains(box), (view, box)
    # Every column of both tables shows whole: allclose (the last metrics column) included.
    for table in (pane.metrics, pane.nodes_table):
        assert not table.horizontalScrollBar().isVisible()
        widths = sum(table.columnWidth(c) for c in range(table.columnCount()))
        assert widths <= table.viewport().width()
    allclose = pane.metrics.item(0, 5).text()
    assert allclose == "NO"
    assert pane.metrics.fontMetrics().horizontalAdvance("allclose") <= pane.metrics.columnWidth(5)


def test_opening_another_model_clears_the_pane(qtbot, pane):
    run(qtbot, pane, open_doc("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"}))
    plots = pane.plots
    assert plots.node_plot.listDataItems() and pane.metrics.rowCount() == 1 and pane.progress.value() == 1000
    assert plots.scatter_plot.titleLabel.text != ""
    pane.set_document(open_doc("two_linear.py"))  # what the window does on opening another model
    for plot in (plots.node_plot, plots.hist_plot, plots.scatter_plot):
        assert plot.listDataItems() == []
    assert plots._first_label is None and drawn_ticks(plots.node_axis) != ["x", "add", "mul", "output"]
    assert not any(t in ("x", "add", "mul", "output") for t in drawn_ticks(plots.node_axis))
    short = {key: value[1] for key, value in DEFAULT_TITLES.items()}
    assert short["hist"] in plots.hist_plot.titleLabel.text and short["scatter"] in plots.scatter_plot.titleLabel.text
    assert "of 6 values" not in plots.hist_plot.titleLabel.text
    assert pane.metrics.rowCount() == 0 and pane.nodes_table.rowCount() == 0 and pane.progress.value() == 0
    assert "two_linear" in pane.status.text()
