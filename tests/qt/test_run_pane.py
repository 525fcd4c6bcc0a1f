"""The run pane driven as a user does: edit, Run, read the tables, click a plotted node, cancel."""

import functools

import pytest
import torch
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.selection import SelectionModel
from fxstudio.resources import example_path


@pytest.fixture
def pane(qtbot):
    selection = SelectionModel()
    widget = RunPane(selection)
    qtbot.addWidget(widget)
    widget.resize(1200, 560)
    widget.show()
    return widget


@functools.lru_cache(maxsize=None)
def loaded(name):
    """Each example is loaded once per process: a Document copies the graph and never changes it."""
    return load_model(example_path(name))


def open_doc(name, *edits):
    doc = Document(loaded(name))
    for edit in edits:
        doc.apply_edit(edit)
    return doc


def run_and_wait(qtbot, pane, timeout=60_000):
    with qtbot.waitSignal(pane.report_ready, timeout=timeout) as blocker:
        qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def cell(table, row, col):
    return table.item(row, col).text()


def test_run_after_an_edit_fills_summary_tables_and_plots(qtbot, pane):
    doc = open_doc("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    pane.set_document(doc)
    assert pane.inputs_editor.example_label.text() == "2×3 float32"
    report = run_and_wait(qtbot, pane)
    assert report.first_divergence.name == "mul"
    assert "First divergence: mul" in pane.status.text() and "tracing changed nothing" in pane.status.text()
    assert pane.metrics.rowCount() == 1 and cell(pane.metrics, 0, 0) == "out" and cell(pane.metrics, 0, 1) == "2×3"
    assert cell(pane.metrics, 0, 5) == "NO" and float(cell(pane.metrics, 0, 3)) == pytest.approx(4.0)
    # x and add lie upstream of the edit: computed once, "unchanged"; mul is where it starts.
    assert [cell(pane.nodes_table, r, 2) for r in range(4)] == ["unchanged", "unchanged", "DIVERGED", "DIVERGED"]
    assert len(pane.plots._xy_by_id) == 4 and "out" in report.samples
    assert not pane.running and pane.run_button.isEnabled() and not pane.cancel_button.isEnabled()
    # The Changes tab lists the edited node; clicking it selects it.
    diff = pane.diff_view
    group = diff.tree.topLevelItem(0)
    assert group.text(0) == "Changed (1)" and group.child(0).text(0) == "mul"
    rect = diff.tree.visualItemRect(group.child(0))
    qtbot.mouseClick(diff.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert pane.selection.current() == doc.id_of(doc.find("mul"))
    # A later edit marks the report stale.
    doc.apply_edit({"op": "set_arg", "node": "add", "key": 1, "value": "6"})
    assert pane.stale and "Run again" in pane.status.text()


def test_clicking_a_plotted_node_selects_it(qtbot, pane):
    doc = open_doc("sub_chain.py", {"op": "set_target", "node": "sub", "target": "operator.add"})
    pane.set_document(doc)
    report = run_and_wait(qtbot, pane)
    sub_id = doc.id_of(doc.find("sub"))
    assert report.first_divergence.node_id == sub_id
    qtbot.waitUntil(lambda: pane.plots.node_plot.getViewBox().width() > 50)
    x, y = pane.plots.point_position(sub_id)
    viewport_pos = pane.plots.mapFromScene(x, y)
    with qtbot.waitSignal(pane.node_activated) as blocker:
        QTest.mouseClick(pane.plots.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                         QPoint(int(viewport_pos.x()), int(viewport_pos.y())))
    assert blocker.args == [sub_id] and pane.selection.current() == sub_id
    # The selection, from any view, rings the point and selects the table row.
    add_id = doc.id_of(doc.find("add"))
    pane.selection.set([add_id])
    assert list(pane.plots._selected_marker.getData()[0]) == [pane.plots._xy_by_id[add_id][0]]
    assert pane.nodes_table.selectedItems()[1].text() == "add"
    # Clicking a row of the Nodes table selects its node too.
    mul_row = next(r for r in range(pane.nodes_table.rowCount()) if cell(pane.nodes_table, r, 1) == "mul")
    rect = pane.nodes_table.visualItemRect(pane.nodes_table.item(mul_row, 1))
    with qtbot.waitSignal(pane.node_activated) as blocker:
        qtbot.mouseClick(pane.nodes_table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == [doc.id_of(doc.find("mul"))] and pane.selection.current() == blocker.args[0]


def test_shape_breaking_edit_shows_the_node_that_raised(qtbot, pane):
    doc = open_doc("add_mul.py",
                   {"op": "insert", "after": "add", "kind": "call_method", "target": "reshape",
                    "args": "(%add, 4, -1)", "name": "bad_view"},
                   {"op": "set_arg", "node": "mul", "key": 0, "value": "%bad_view"})
    pane.set_document(doc)
    report = run_and_wait(qtbot, pane)
    assert report.error.node_name == "bad_view"
    assert "raised an error at node bad_view" in pane.status.text()
    assert pane.metrics.rowCount() == 0
    statuses = [cell(pane.nodes_table, r, 2) for r in range(pane.nodes_table.rowCount())]
    assert statuses[-1] == "ERROR" and "inserted" not in statuses  # it raised before any later node


def test_random_inputs_dtype_and_bad_settings(qtbot, pane):
    doc = open_doc("add_mul.py")
    pane.set_document(doc)
    pane.inputs_editor.source.setCurrentIndex(1)
    assert pane.inputs_editor.specs.text() == "2,3:float32"
    pane.inputs_editor.specs.setText("oops")
    qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    assert not pane.running and "Cannot read the input shape" in pane.status.text()
    pane.inputs_editor.specs.setText("5,7")
    pane.inputs_editor.seed.setValue(3)
    pane.dtype.setCurrentText("float16")
    report = run_and_wait(qtbot, pane)
    assert report.outputs[0].shape == (5, 7) and report.outputs[0].dtype == "float16"
    assert report.first_divergence is None and "No node diverges" in pane.status.text()
    pane.rtol.setText("-1")
    qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    assert not pane.running and "non-negative" in pane.status.text()


def test_inputs_file(qtbot, pane, tmp_path):
    path = tmp_path / "inputs.pt"
    torch.save({"x": torch.ones(1, 4)}, path)
    pane.set_document(open_doc("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "3"}))
    pane.inputs_editor.source.setCurrentIndex(2)
    pane.inputs_editor.path.setText(str(path))
    report = run_and_wait(qtbot, pane)
    assert report.outputs[0].shape == (1, 4) and report.outputs[0].max_abs == pytest.approx(6.0)


def test_cancel_stops_a_running_comparison(qtbot, pane):
    pane.set_document(open_doc("residual_cnn.py"))
    pane.inputs_editor.source.setCurrentIndex(1)
    pane.inputs_editor.specs.setText("48,3,32,32")
    pane.progress.valueChanged.connect(lambda v: v > 0 and pane.cancel())
    reports = []
    pane.report_ready.connect(reports.append)
    qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    assert pane.running and not pane.run_button.isEnabled() and pane.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
    assert pane.status.text() == "Run cancelled." and reports == []
    assert pane.run_button.isEnabled()


def test_divergence_colours_follow_the_tolerance_score():
    from fxstudio.qt.divergence_colors import divergence_color

    assert divergence_color(None) is None
    grey, green = divergence_color(0.0), divergence_color(0.5)
    amber, red, inf = divergence_color(10.0), divergence_color(1e6), divergence_color(float("inf"))
    assert grey.saturation() < 60 and green.green() > green.red()
    assert amber.green() > red.green() and red == inf and red.red() > 190


def test_hovering_a_point_names_the_node(qtbot, pane):
    doc = open_doc("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    pane.set_document(doc)
    run_and_wait(qtbot, pane)
    mul_id = doc.id_of(doc.find("mul"))
    spot = next(p for p in pane.plots._points.points() if p.data() == mul_id)
    tip = pane.plots._points.opts["tip"](x=spot.pos().x(), y=spot.pos().y(), data=spot.data())
    assert tip.startswith("mul (call_function operator.mul)\ndiverged, max abs 80, ")


def test_editing_during_a_run_compares_the_graph_as_it_was(qtbot, pane):
    doc = open_doc("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    pane.set_document(doc)
    with qtbot.waitSignal(pane.report_ready, timeout=60_000) as blocker:
        pane.run()
        doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "2"})  # back to the original
    report = blocker.args[0]
    assert report.first_divergence.name == "mul"  # the snapshot taken when Run was pressed
    assert pane.stale and "Run again" in pane.status.text()
    assert run_and_wait(qtbot, pane).first_divergence is None and not pane.stale


def test_closing_the_document_during_a_run_drops_its_result(qtbot, pane):
    pane.set_document(open_doc("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"}))
    reports = []
    pane.report_ready.connect(reports.append)
    pane.run()
    pane.set_document(None)
    qtbot.waitUntil(lambda: not pane.running, timeout=60_000)
    assert reports == [] and pane.report is None and not pane.run_button.isEnabled()
    assert pane.plots.report is None and pane.metrics.rowCount() == 0


def test_readme_screenshot_renders_after_a_real_edit(qtbot, tmp_path):
    from PySide6.QtGui import QImage

    from fxstudio.qt.run_pane import render_screenshot

    path = tmp_path / "run_pane.png"
    render_screenshot(str(path))
    image = QImage(str(path))
    assert (image.width(), image.height()) == (1400, 600)
    # Drawn content, not a blank pane: some line across it crosses plots and table cells in many colours.
    assert max(len({image.pixel(x, y) for x in range(0, 1400, 7)}) for y in (150, 300, 450)) > 10


def test_the_comparison_kernel_is_loaded_in_the_background_when_a_run_will_use_it(qtbot, pane, monkeypatch):
    """The first Run does not wait for numba: showing the pane with a model whose tensors are large
    enough for the kernel warms it on a worker, once per process. A model of small tensors (numpy
    compares those) does not: importing numba would only stall the window (issue #25)."""
    from fxstudio.core import threads
    from fxstudio.core.compare import fused_diff
    from fxstudio.qt import run_pane

    monkeypatch.setattr(run_pane, "_warming", [])
    pane.set_document(open_doc("add_mul.py"))   # 2×3 tensors
    qtbot.wait(50)
    assert run_pane._warming == []
    monkeypatch.setattr(threads, "SMALL_TENSOR_ELEMENTS", 1)   # every tensor now counts as large
    pane.set_document(open_doc("add_mul.py"))
    assert len(run_pane._warming) == 1
    second = RunPane(SelectionModel())
    qtbot.addWidget(second)
    second.set_document(open_doc("add_mul.py"))
    second.show()
    assert len(run_pane._warming) == 1
    thread = run_pane._warming[0]
    qtbot.waitUntil(lambda: thread.ident is not None and not thread.is_alive(), timeout=60_000)
    if fused_diff.AVAILABLE:
        assert fused_diff._kernel is not None
