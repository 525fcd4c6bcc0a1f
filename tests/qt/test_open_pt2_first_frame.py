"""The first frame of a ``.pt2`` open (issue #15's speed goal): the load does not compete with the
window while it draws the archive's structure.

- torch's deserializer starts only once the view-only structure is on the window (the worker waits
  for the frame, so the two no longer share Python's lock while the graph is drawn);
- cancelling releases a load that waits for its frame, and a wait never outlasts its limit;
- while a model loads, the application's GUI-thread collector collects nothing (each collection
  scanned the load's young objects on the GUI thread), and it collects again once the load ended,
  also after a load that failed;
- the comparison kernel's warm-up, a half-second import, waits for a running load.
"""

from __future__ import annotations

import gc
import threading
import time

import pytest
import torch
from torch import nn

from tests.qt.window_support import app_collector, held_deserializer, make_window, isolated  # noqa: F401 - fixtures


class Chain(nn.Module):
    """Six residual linear blocks: a few dozen nodes, one input."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(6))

    def forward(self, x):
        for block in self.blocks:
            x = x + torch.relu(block(x))
        return x


@pytest.fixture
def chain_pt2(tmp_path):
    path = tmp_path / "chain.pt2"
    torch.manual_seed(0)
    torch.export.save(torch.export.export(Chain().eval(), (torch.randn(2, 8),)), path)
    return path


def test_the_deserializer_starts_after_the_structure_is_drawn(qtbot, make_window, chain_pt2, monkeypatch):
    from fxstudio.core.loading import pt2_weights

    seen = {}
    real = pt2_weights.payloads_as_data  # the editable open's weights read (issue #28: torch's rebuild is not run)

    def spy(*args):  # the real weights read; it records what the window showed when it started
        doc = win.document
        seen["document"] = doc
        seen["cards"] = len(win.canvas.scene().cards) if doc is not None else 0  # a dict read, no Qt call
        return real(*args)

    monkeypatch.setattr(pt2_weights, "payloads_as_data", spy)
    win = make_window()
    win.resize(1200, 800)
    assert win.open_path(str(chain_pt2), origin="argument")
    qtbot.waitUntil(lambda: win.document is not None and not win.document.read_only and not win.open_flow.busy,
                    timeout=60_000)
    preview = seen["document"]
    assert preview is not None and preview.read_only and "still loading its weights" in preview.read_only
    assert seen["cards"] > 10  # its cards were on the canvas before torch started
    assert win.document is not preview and [n.name for n in win.document.edited.graph.nodes if n.op != "call_module"] \
        == [n.name for n in preview.edited.graph.nodes if n.name != "_guards_fn"]


def test_cancel_releases_a_load_waiting_for_its_frame(qtbot):
    from fxstudio.qt.workers import BackgroundTask

    ended = threading.Event()
    waited = []

    def work(ctx):
        start = time.monotonic()
        ctx.partial("preview", wait=60)  # nobody says it was shown
        waited.append(time.monotonic() - start)
        ended.set()
        ctx.check()
        return "done"

    task = BackgroundTask(work, name="open")
    partials, results = [], []
    task.partial.connect(partials.append)
    task.succeeded.connect(results.append)
    task.start()
    qtbot.waitUntil(lambda: partials == ["preview"], timeout=10_000)
    time.sleep(0.3)
    assert not ended.is_set()  # still waiting for the frame
    task.cancel()
    assert ended.wait(5) and waited[0] < 5
    qtbot.wait(100)
    assert results == []  # a cancelled task delivers nothing


def test_a_wait_for_the_frame_ends_when_shown_or_at_its_limit(qtbot):
    from fxstudio.qt.workers import BackgroundTask

    waited = []

    def work(ctx):
        for limit in (60, 0.3):
            start = time.monotonic()
            ctx.partial(limit, wait=limit)
            waited.append(time.monotonic() - start)
        return "done"

    task = BackgroundTask(work, name="open")
    results = []

    def shown(limit):
        if limit == 60:  # the window draws the first one and says so; the second is never drawn
            task.partial_shown()
    task.partial.connect(shown)
    task.succeeded.connect(results.append)
    task.start()
    qtbot.waitUntil(lambda: results == ["done"], timeout=20_000)
    assert waited[0] < 10
    assert 0.25 <= waited[1] < 5


def test_no_timer_collections_while_a_model_loads(qtbot, make_window, chain_pt2, held_deserializer, app_collector):
    from fxstudio.qt import workers

    release = held_deserializer
    win = make_window()
    assert win.open_path(str(chain_pt2), origin="argument")
    qtbot.waitUntil(lambda: win.document is not None and bool(win.document.read_only), timeout=60_000)
    assert workers.running("open")
    garbage = [[] for _ in range(5000)]  # young objects above the collector's threshold
    del garbage
    before = app_collector.collections
    assert gc.get_count()[0] > app_collector.threshold[0]
    assert app_collector.check() == 0 and app_collector.collections == before
    qtbot.wait(1200)  # two timer ticks: nothing collected
    assert app_collector.collections == before
    release.set()
    qtbot.waitUntil(lambda: not win.open_flow.busy and not win.document.read_only, timeout=60_000)
    assert not workers.running("open") and app_collector.holds == 0
    garbage = [[] for _ in range(5000)]   # alive: what the load left was frozen (counts start afresh)
    app_collector.check()  # what the timer calls: it collects again
    del garbage
    assert app_collector.collections > before


def test_a_failed_load_gives_collections_back(qtbot, make_window, chain_pt2, monkeypatch, app_collector):
    from fxstudio.core.loading import pt2_weights

    release = threading.Event()

    def damaged(*args):  # reading the program's weights failing, once the test has looked
        assert release.wait(60)
        raise RuntimeError("a damaged program")

    monkeypatch.setattr(pt2_weights, "payloads_as_data", damaged)
    win = make_window()
    assert win.open_path(str(chain_pt2), origin="argument")
    qtbot.waitUntil(lambda: win.document is not None and bool(win.document.read_only), timeout=60_000)
    assert app_collector.holds == 1
    release.set()
    qtbot.waitUntil(lambda: not win.open_flow.busy, timeout=60_000)
    assert app_collector.holds == 0
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and win.last_failure_dialog.isVisible(), timeout=5000)
    assert "Could not open chain.pt2" in win.statusBar().currentMessage()
    win.last_failure_dialog.close()


def test_the_kernel_warm_up_waits_for_a_running_load(qtbot, monkeypatch):
    from fxstudio.qt import run_pane, workers

    started = []
    monkeypatch.setattr(run_pane, "_warming", [])
    monkeypatch.setattr(run_pane, "start_worker", lambda thread: started.append(thread.name))
    loading = threading.Event()

    def work(ctx):
        assert loading.wait(30)
        return None

    task = workers.BackgroundTask(work, name="open")
    task.start()
    run_pane._warm_comparison_kernel_soon(delay_ms=10)
    qtbot.wait(800)
    assert started == []  # the load is running: the import waits
    loading.set()
    qtbot.waitUntil(lambda: not workers.running("open"), timeout=10_000)
    qtbot.waitUntil(lambda: started == ["fxstudio-warm-kernel"], timeout=5000)


def test_cancel_loading_in_the_status_bar_keeps_the_graph_view_only(qtbot, make_window, chain_pt2, monkeypatch,
                                                                     held_deserializer):
    """The progress dialog hides once the structure is drawn; its Cancel moves to the status bar."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QPushButton

    from fxstudio.core.loading import pt2_weights

    release = held_deserializer
    win = make_window()
    win.resize(1200, 800)
    assert win.open_path(str(chain_pt2), origin="argument")
    qtbot.waitUntil(lambda: win.document is not None and bool(win.document.read_only), timeout=60_000)
    preview = win.document
    button = win.statusBar().findChild(QPushButton, "cancelLoading")
    qtbot.waitUntil(lambda: button.isVisible(), timeout=5000)
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not win.open_flow.busy, timeout=5000)
    assert win.document is preview and "was cancelled" in preview.read_only
    assert "cancelled" in win.statusBar().currentMessage()
    assert win.statusBar().findChild(QPushButton, "cancelLoading") is None or not button.isVisible()
    release.set()  # the detached load ends; what it returns is dropped
    qtbot.wait(300)
    assert win.document is preview
    monkeypatch.setattr(pt2_weights, "payloads_as_data", release.real)
    assert win.open_path(str(chain_pt2), origin="argument")
    qtbot.waitUntil(lambda: win.document is not preview and win.document is not None
                    and not win.document.read_only and not win.open_flow.busy, timeout=60_000)
