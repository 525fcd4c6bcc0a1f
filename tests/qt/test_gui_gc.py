"""The cyclic collector runs on the GUI thread only while the application's collector is installed."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading

from fxstudio.qt.gui_gc import GuiThreadCollector


class Probe:
    """Cyclic garbage that records on which thread it was finally deleted."""

    def __init__(self, where: list):
        self.where = where
        self.itself = self

    def __del__(self):
        self.where.append(threading.current_thread() is threading.main_thread())


KEPT: list = []


def churn() -> None:
    """Allocate like a loading worker: bursts of container objects past gen-0's threshold, and some
    that stay (a traced graph), so that the count is still over the threshold afterwards."""
    burst = []
    for i in range(200_000):
        burst.append([i])
        if len(burst) > 1000:
            burst.clear()
    KEPT.extend([i] for i in range(5000))


def drop_probe_then_churn_on_a_worker() -> list:
    where: list = []
    Probe(where)  # unreachable at once, but only a cyclic collection frees it
    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    return where


def test_without_the_collector_a_worker_can_be_the_thread_that_collects():
    """The hazard itself (the control for the test below): automatic collection on a worker."""
    was = gc.isenabled()
    gc.enable()
    try:
        gc.collect()
        where = drop_probe_then_churn_on_a_worker()
        assert where == [False]
    finally:
        KEPT.clear()
        if not was:
            gc.disable()


def test_with_the_collector_garbage_is_collected_by_its_timer_on_the_gui_thread(qtbot):
    collector = GuiThreadCollector(interval_ms=20)
    was = gc.isenabled()
    collector.install()
    try:
        assert not gc.isenabled()
        gc.collect()
        where = drop_probe_then_churn_on_a_worker()
        assert where == []  # the worker allocated a lot and collected nothing
        qtbot.waitUntil(lambda: where == [True], timeout=5000)
        assert collector.collections >= 1
    finally:
        collector.uninstall()
        KEPT.clear()
    assert gc.isenabled() == was


def test_the_application_installs_it(tmp_path):
    """A real start-up: ``make_app`` turns the automatic collector off and runs the timer."""
    code = ("from fxstudio.qt.launch import make_app; import gc; app = make_app(); "
            "from fxstudio.qt import gui_gc; print(gc.isenabled(), gui_gc._installed.timer.isActive())")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]


def test_workers_start_without_a_full_collection_while_the_collector_runs(qtbot, monkeypatch):
    """The collection before a worker starts is only needed while automatic collection is on."""
    from fxstudio.qt import gui_gc, workers

    calls = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or real(*a))
    collector = GuiThreadCollector(interval_ms=60_000)
    monkeypatch.setattr(gui_gc, "_installed", collector)
    collector.install()
    try:
        workers.start_worker(threading.Thread(target=lambda: None))
        assert calls == []
    finally:
        collector.uninstall()
    calls.clear()
    workers.start_worker(threading.Thread(target=lambda: None))
    assert calls == [()]


def test_old_collections_skip_what_survived_and_a_full_one_frees_cycles_among_it(qtbot, monkeypatch):
    """The oldest generation is collected without rescanning survivors (frozen after each old
    collection): garbage made since is still freed; cycles among frozen objects are freed by the
    every-``FULL_EVERY``-th collection and by ``release_memory`` (a model was replaced)."""
    from fxstudio.qt import gui_gc

    collector = GuiThreadCollector(interval_ms=60_000)
    monkeypatch.setattr(gui_gc, "_installed", collector)
    collector.install()
    try:
        old: list = []
        Probe(old)   # reachable from nothing but itself: garbage, before the first old collection
        frozen: list = []
        keep = Probe(frozen)   # alive through the first old collection: frozen with the survivors
        collector._collect_old()
        assert old == [True] and gc.get_freeze_count() > 0
        del keep   # now cyclic garbage among the frozen objects
        fresh: list = []
        Probe(fresh)
        for _ in range(gui_gc.FULL_EVERY - 2):
            collector._collect_old()
        assert fresh == [True] and frozen == []   # the new garbage went; the frozen cycle is not scanned
        collector._collect_old()   # the FULL_EVERY-th: everything scanned
        assert frozen == [True]
        again: list = []
        keep = Probe(again)
        collector._collect_old()
        del keep
        gui_gc.release_memory()
        assert again == [True] and gc.get_freeze_count() > 0
    finally:
        collector.uninstall()
    assert gc.get_freeze_count() == 0


def test_what_a_worker_left_is_frozen_and_the_full_scan_waits_for_an_idle_window(qtbot, monkeypatch):
    """``freeze_survivors`` (a background task ended) freezes what is alive, so the next young
    collection does not scan it; the full scan that frees cycles among frozen objects runs at an old
    collection only while no window of the application is active (the user works elsewhere)."""
    from PySide6.QtWidgets import QApplication, QLineEdit

    from fxstudio.qt import gui_gc

    collector = GuiThreadCollector(interval_ms=60_000)
    monkeypatch.setattr(gui_gc, "_installed", collector)
    collector.install()
    window = QLineEdit()
    qtbot.addWidget(window)
    try:
        died: list = []
        keep = Probe(died)
        gui_gc.freeze_survivors()   # e.g. a pass's result graph, left by its worker
        assert gc.get_freeze_count() > 0 and collector.full_due and gc.get_count()[0] < 50
        del keep   # cyclic garbage among the frozen objects
        window.show()
        window.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=3000)   # the user is at work
        collector._collect_old()
        assert died == [] and collector.full_due   # not scanned: that would stall a gesture
        window.close()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is None, timeout=3000)
        collector._collect_old()
        assert died == [True] and not collector.full_due
    finally:
        collector.uninstall()


def test_while_a_task_runs_only_the_youngest_generation_is_collected(qtbot, monkeypatch):
    """A worker building a 200,000-node layout fills the older generations; scanning them from the
    timer stalled the GUI thread for 0.5-2 s. While a ``BackgroundTask`` runs, the timer collects
    generation 0 only; afterwards the older ones again."""
    from fxstudio.qt import gui_gc
    from fxstudio.qt.workers import BackgroundTask

    collector = GuiThreadCollector(interval_ms=60_000)
    monkeypatch.setattr(gui_gc, "_installed", collector)
    collector.install()
    generations: list = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: generations.append(a[0] if a else 2) or real(*a))
    release = threading.Event()
    task = BackgroundTask(lambda ctx: release.wait(30), name="layout")
    try:
        task.start()
        for _ in range(3):
            churn()   # past every threshold
            collector.check()
        assert generations and set(generations) == {0}, generations
        release.set()
        qtbot.waitUntil(lambda: task.done, timeout=10_000)
        generations.clear()
        hold = []
        for _ in range(12):
            hold.append([[i] for i in range(1000)])   # gen-0 passes its threshold at each check
            collector.check()
        assert 1 in generations, generations
    finally:
        release.set()
        collector.uninstall()
