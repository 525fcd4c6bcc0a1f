"""Opening a torch.compile capture in the window: the chooser lists the graphs with their break
reasons; clicking one and pressing Open opens it in the editor, where it edits like any model."""

from __future__ import annotations

import runpy

import pytest
import shiboken6
import torch
import torch._dynamo
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialogButtonBox
from window_support import LOAD_TIMEOUT_MS, isolated, make_window  # noqa: F401

import fxstudio
from fxstudio.testing.capture_scripts import BRANCH_LINE, PRINT_LINE, write_script


@pytest.fixture
def capture_file(tmp_path):
    """A real capture: the breaking model compiled with the capture backend (eager) and run once."""
    torch._dynamo.reset()
    script = write_script(tmp_path)
    namespace = runpy.run_path(str(script), run_name="breaking_model")
    torch.manual_seed(0)
    backend = fxstudio.capture(tmp_path / "run.fxcap", backend="eager")
    torch.compile(namespace["Net"](), backend=backend)(torch.randn(2, 4))
    backend.close()
    torch._dynamo.reset()
    return tmp_path / "run.fxcap", script


def _click_item(qtbot, widget, row: int) -> None:
    item = widget.item(row)
    widget.scrollToItem(item)
    QTest.mouseClick(widget.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     widget.visualItemRect(item).center())


def test_the_chooser_lists_graphs_and_opens_the_one_clicked(qtbot, make_window, capture_file):
    path, script = capture_file
    win = make_window()
    assert win.open_path(path, origin="argument")
    qtbot.waitUntil(lambda: win.open_flow.capture_chooser is not None and win.open_flow.capture_chooser.isVisible(),
                    timeout=LOAD_TIMEOUT_MS)
    chooser = win.open_flow.capture_chooser
    graphs = chooser.list
    assert graphs.count() == 3 and win.document is None
    texts = [graphs.item(k).text() for k in range(3)]
    assert texts[0].startswith("graph_0 — 3 op(s)") and f"\n    {script.name}:{PRINT_LINE}: Failed to trace" in texts[0]
    assert f"{script.name}:{BRANCH_LINE}: data-dependent branch" in texts[1]
    assert graphs.item(0).toolTip().endswith(f"{script}:{PRINT_LINE}")  # the full path
    _click_item(qtbot, graphs, 1)
    assert graphs.currentRow() == 1
    assert "generic_jump" in chooser.details.toPlainText() and "Guards:" in chooser.details.toPlainText()
    QTest.mouseClick(chooser.buttons.button(QDialogButtonBox.StandardButton.Open), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    loaded = win.document.loaded
    assert loaded.kind == "capture" and loaded.entry == "graph_1"
    assert [n.name for n in loaded.graph_module.graph.nodes] == ["l_y_", "sum_1", "gt", "output"]
    assert not shiboken6.isValid(chooser) or not chooser.isVisible()  # closed (and deleted)
    # it edits like any other model
    win.document.apply_edit({"op": "set_target", "node": "gt", "target": "operator.lt"})
    assert next(n for n in win.document.module().graph.nodes if n.name == "gt").target.__name__ == "lt"


def test_a_damaged_capture_reports_one_line_and_opens_nothing(qtbot, make_window, tmp_path):
    bad = tmp_path / "bad.fxcap"
    bad.write_bytes(b"PK\x03\x04 truncated")
    win = make_window()
    assert not win.open_path(bad, origin="argument")
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None, timeout=LOAD_TIMEOUT_MS)
    assert "not a readable zip" in win.last_failure_dialog.label.text()
    assert win.document is None and win.open_flow.capture_chooser is None
