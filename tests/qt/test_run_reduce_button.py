"""The run pane's "Reduce to repro…" button beside the first divergence, clicked as a user does."""

import subprocess
import sys

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.selection import SelectionModel
from tests.model_files import SEEDED_BLOCKS_BODY, write_model


@pytest.fixture
def pane(qtbot, tmp_path):
    loaded = load_model(f"{write_model(tmp_path / 'blocks.py', SEEDED_BLOCKS_BODY)}::Net")
    doc = Document(loaded)
    doc.apply_edit({"op": "set_arg", "node": "mul_20", "key": 1, "value": "0.25"})
    widget = RunPane(SelectionModel())
    qtbot.addWidget(widget)
    widget.resize(1200, 560)
    widget.show()
    widget.set_document(doc)
    assert not widget.reduce_row.isVisible()  # nothing run yet: nothing to reduce
    with qtbot.waitSignal(widget.report_ready, timeout=60_000):
        qtbot.mouseClick(widget.run_button, Qt.MouseButton.LeftButton)
    return widget


def _answer(monkeypatch, path):
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: asked.append(a[2]) or (str(path), ""))
    return asked


def test_reduce_writes_a_repro_that_reproduces_and_offers_to_open_it(qtbot, pane, tmp_path, monkeypatch):
    row = pane.reduce_row
    assert row.isVisible() and row.node == "mul_20" and "first divergence at %mul_20" in row.label.text()
    asked = _answer(monkeypatch, tmp_path / "picked")  # no suffix typed: .py is added
    qtbot.mouseClick(row.button, Qt.MouseButton.LeftButton)
    assert asked == [str(tmp_path / "blocks_repro.py")]
    assert not row.button.isEnabled() and row.cancel_button.isVisible() and row.bar.isVisible()
    qtbot.waitUntil(lambda: row.task is None, timeout=120_000)
    text = row.label.text()
    assert text.startswith("Wrote picked.py: 3 of 162 nodes (1.9%), divergence reproduced in a fresh process."), text
    assert "the edited subgraph diverges from the original (max abs error " in row.label.toolTip()
    assert "href='open'" in text and "href='folder'" in text and not row.cancel_button.isVisible()
    assert row.written == tmp_path / "picked.py"
    done = subprocess.run([sys.executable, "picked.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout.startswith("%mul_20: reproduced")
    pane.grab().save(str(tmp_path / "reduce_row.png"))


def test_cancel_stops_the_reduction_and_writes_nothing(qtbot, pane, tmp_path, monkeypatch):
    row = pane.reduce_row
    _answer(monkeypatch, tmp_path / "never.py")
    qtbot.mouseClick(row.button, Qt.MouseButton.LeftButton)
    task = row.task
    qtbot.mouseClick(row.cancel_button, Qt.MouseButton.LeftButton)
    assert row.task is None and row.button.isEnabled() and "cancelled" in row.label.text()
    assert task.wait(120)  # the worker stops at its next step
    assert not list(tmp_path.glob("never*"))
