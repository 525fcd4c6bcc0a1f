"""A Run's node-by-node progress reaches the GUI thread at most every ``PROGRESS_EVERY_S`` (issue #25):
each update repaints the bar at once, and a 3,000-node run on a loaded machine sent one every 6 ms
for half a second, which kept the event loop's timers from running. Every phase still shows
(preparation, nodes, each timed run, done), and the bar ends full."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.selection import SelectionModel
from fxstudio.qt.workers import PROGRESS_EVERY_S, PROGRESS_STEP, throttled_progress
from fxstudio.testing.residual_mlp import write_residual_mlp


def test_node_progress_is_throttled_and_every_phase_passes():
    sent: list[tuple[float, float, str]] = []
    progress = throttled_progress(lambda f, text: sent.append((time.monotonic(), f, text)))
    progress(0.0, "preparing the run of 3,002 nodes")
    progress(0.0, "copying the models to cpu")
    start, i = time.monotonic(), 0
    while time.monotonic() - start < 0.3:   # a node every millisecond, for 0.3 s
        i += 1
        progress(0.6 * i / 1000, f"comparing node add_{i}")
        time.sleep(0.001)
    progress(0.6, "timing the original run")
    progress(0.73, "timing the traced run")
    progress(0.86, "timing the edited run")
    progress(1.0, "done")
    texts = [text for _, _, text in sent]
    assert texts[:3] == ["preparing the run of 3,002 nodes", "copying the models to cpu", "comparing node add_1"]
    assert texts[-5:] == [f"comparing node add_{i}", "timing the original run", "timing the traced run",
                          "timing the edited run", "done"]   # the phase's last node, held back, comes first
    nodes = [(when, f) for when, f, text in sent if text.startswith("comparing node ")]
    steps = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(nodes[:-1], nodes[1:-1])]
    assert 4 <= len(nodes) <= 0.3 / PROGRESS_EVERY_S + 0.6 * i / 1000 / PROGRESS_STEP + 2 < i / 10, (len(nodes), i)
    assert all(dt >= PROGRESS_EVERY_S or df >= PROGRESS_STEP for dt, df in steps), steps

    # A fast phase (a hundred nodes in 20 ms) still moves the bar in steps, not all at once.
    sent.clear()
    progress = throttled_progress(lambda f, text: sent.append((time.monotonic(), f, text)))
    for k in range(1, 101):
        progress(0.6 * k / 100, f"comparing node blocks_{k}")
    progress(0.6, "timing the original run")
    fractions = [round(f, 3) for _, f, text in sent if text.startswith("comparing node ")]
    assert fractions == [0.006, 0.108, 0.21, 0.312, 0.414, 0.516, 0.6], fractions


def test_a_3000_node_run_shows_every_phase_and_ends_full(qtbot, tmp_path):
    pane = RunPane(SelectionModel())
    qtbot.addWidget(pane)
    pane.resize(1200, 560)
    pane.show()
    pane.set_document(Document(load_model(write_residual_mlp(tmp_path))))
    sent: list[tuple[float, str]] = []   # what the worker sent, as it sent it
    with qtbot.waitSignal(pane.report_ready, timeout=120_000) as blocker:
        qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
        pane._job.progress.connect(lambda f, text: sent.append((f, text)), Qt.ConnectionType.DirectConnection)
    assert len(blocker.args[0].nodes) == 3002
    texts = [text for _, text in sent]
    assert [t for t in texts if t.startswith("timing")] == ["timing the original run", "timing the traced run",
                                                           "timing the edited run"], texts
    assert any(t.startswith("comparing node ") for t in texts) and texts[-1] == "done"
    fractions = [f for f, _ in sent]
    assert fractions == sorted(fractions) and pane.progress.value() == 1000
