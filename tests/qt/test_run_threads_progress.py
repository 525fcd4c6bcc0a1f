"""The Run pane's Threads box, and a run of a 3,000-node model as a user sees it (issue #25): the
progress bar moves and names the node it is on, Cancel stops the run within a second, and a second
Run without an edit reuses the copy of the edited graph."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.core.threads import cores
from fxstudio.qt import run_controls
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.selection import SelectionModel
from fxstudio.resources import example_path
from fxstudio.testing.residual_mlp import write_residual_mlp

CANCEL_S = 1.0
PROGRESS_GAP_S = 0.5
"""The target: the bar moves at least this often. Asserted with ``LOADED_FACTOR`` of slack: a
shared CI machine runs this test next to others."""
LOADED_FACTOR = 4


@pytest.fixture
def pane(qtbot):
    """A shown Run pane, as the window's dock holds it."""
    widget = RunPane(SelectionModel())
    qtbot.addWidget(widget)
    widget.resize(1200, 560)
    widget.show()
    return widget


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    """The 3,000-node residual MLP, loaded once for the module (a Document never changes it)."""
    return load_model(write_residual_mlp(tmp_path_factory.mktemp("mlp")))


def run_and_wait(qtbot, pane, timeout=120_000):
    """Click Run; the report once the pane has shown it."""
    with qtbot.waitSignal(pane.report_ready, timeout=timeout) as blocker:
        qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def test_the_threads_box_sets_the_runs_threads_and_the_summary_says_so(qtbot, pane):
    box = pane.threads
    assert [box.itemText(i) for i in range(box.count())] == ["auto", *map(str, range(1, cores() + 1))]
    assert box.threads() is None and "auto" in box.currentText()
    pane.set_document(Document(load_model(example_path("add_mul.py"))))
    report = run_and_wait(qtbot, pane)
    assert run_controls.thread_note(report) == "ran on 1 torch thread (small tensors)"   # the policy
    assert "ran on 1 torch thread (small tensors)" in pane.status.text()
    box.set_threads(cores())
    assert box.threads() == cores()
    report = run_and_wait(qtbot, pane)
    threads = "thread" if cores() == 1 else "threads"
    assert run_controls.thread_note(report) == f"ran on {cores()} torch {threads} (as set)"
    assert f"{cores()} torch {threads} (as set)" in pane.status.text()
    assert not box.isEnabled() or not pane.running   # the box is locked only while a run goes on


def test_a_3000_node_run_shows_progress_by_node_and_reuses_its_snapshot(qtbot, pane, big_model):
    doc = Document(big_model)
    pane.set_document(doc)
    seen: list[tuple[float, int, str]] = []
    pane.progress.valueChanged.connect(lambda v: seen.append((time.perf_counter(), v, pane.status.text())))
    with qtbot.waitSignal(pane.report_ready, timeout=120_000) as blocker:
        qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
        start = time.perf_counter()
        # While it prepares (copy, compile, schedule: no fraction to report) the bar is a busy one,
        # animated; it gets its range with the first compared node.
        assert pane.progress.maximum() == 0 and "Running on cpu" in pane.status.text()
    end = time.perf_counter()
    report = blocker.args[0]
    assert len(report.nodes) == 3002 and report.first_divergence is None
    assert pane.progress.maximum() == 1000 and pane.progress.value() == 1000
    texts = [t for _, _, t in seen]
    assert any("comparing node blocks_" in t for t in texts), texts[:5]   # which node it is on
    assert any("timing the original run" in t for t in texts)
    values = [v for _, v, _ in seen]
    assert values == sorted(values) and values[-1] == 1000
    stamps = [t for t, _, _ in seen]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    worst = max(range(len(gaps)), key=gaps.__getitem__)
    print(f"\nrun {end - start:.2f} s: busy (preparing) {stamps[0] - start:.2f} s, then {len(seen)} updates; "
          f"longest gap {gaps[worst]:.2f} s, after: {texts[worst]}")
    assert gaps[worst] < PROGRESS_GAP_S * LOADED_FACTOR, f"no progress for {gaps[worst]:.2f} s after: {texts[worst]}"

    first = pane._snapshot
    again = run_and_wait(qtbot, pane)   # no edit in between: the same copy of the edited graph
    assert pane._snapshot is first and again is not report
    doc.apply_edit({"op": "set_arg", "node": "mul_7", "key": 1, "value": "2.0"})
    assert pane._snapshot is None and pane.stale
    report = run_and_wait(qtbot, pane)
    assert report.first_divergence.name == "mul_7"


@pytest.mark.parametrize("phase", ["comparing node", "timing the"])
def test_cancel_stops_a_3000_node_run_within_a_second(qtbot, pane, big_model, phase):
    pane.set_document(Document(big_model))
    qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: phase in pane.status.text(), timeout=120_000)
    clicked = time.perf_counter()
    qtbot.mouseClick(pane.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not pane.running, timeout=10_000)
    took = time.perf_counter() - clicked
    print(f"\ncancel during '{phase}': stopped after {took:.2f} s")
    assert took < CANCEL_S, f"the run went on for {took:.2f} s after Cancel"
    assert pane.status.text() == "Run cancelled." and pane.report is None and pane.run_button.isEnabled()
