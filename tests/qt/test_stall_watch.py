"""The GUI stall watchdog (``fxstudio.qt.stall_watch``): off without FXSTUDIO_STALL_LOG, else one
``ACTION longest_ms`` line per action, with the longest time the event loop did not turn."""

from __future__ import annotations

import time

import pytest

from fxstudio.qt import stall_watch
from fxstudio.qt.workers import BackgroundTask


@pytest.fixture
def watch(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(stall_watch, "SETTLE_MS", 50)
    log = tmp_path / "stalls.log"
    installed = stall_watch.install(qapp, str(log))
    yield installed, log
    stall_watch.uninstall()


def _lines(log) -> list[tuple[str, float]]:
    return [(name, float(ms)) for name, _, ms in
            (line.rpartition(" ") for line in log.read_text(encoding="utf-8").splitlines())]


def test_nothing_is_installed_without_the_variable(qapp, monkeypatch):
    monkeypatch.delenv(stall_watch.ENV, raising=False)
    assert stall_watch.install(qapp) is None and stall_watch.active() is None
    stall_watch.begin("run")   # no-ops
    stall_watch.end("run")
    with stall_watch.excluded():
        pass


def test_the_longest_stall_of_each_action_is_logged_once_it_settles(qtbot, watch):
    installed, log = watch
    stall_watch.begin("run")
    qtbot.wait(50)
    time.sleep(0.25)   # the GUI thread busy: a stall of ~250 ms
    qtbot.wait(30)
    stall_watch.begin("export")   # overlapping actions keep their own figures
    qtbot.wait(30)
    stall_watch.end("run")
    time.sleep(0.05)
    qtbot.wait(30)
    stall_watch.end("export")
    qtbot.waitUntil(lambda: log.exists() and len(_lines(log)) == 2, timeout=5000)
    got = dict(_lines(log))
    assert 200 <= got["run"] <= 1000 and 30 <= got["export"] < 200, got
    assert installed.written == list(got.items()) and not installed.actions


def test_nested_actions_end_with_the_outer_end_and_excluded_work_does_not_count(qtbot, watch):
    installed, log = watch
    stall_watch.begin("pass")
    stall_watch.begin("pass")   # the pass's worker task inside the pass action
    qtbot.wait(30)
    stall_watch.end("pass")
    with stall_watch.excluded():
        time.sleep(0.3)   # the test harness's own work
    qtbot.wait(100)
    assert not log.exists() and "pass" in installed.actions
    stall_watch.end("pass")
    qtbot.waitUntil(lambda: log.exists(), timeout=5000)
    [(name, ms)] = _lines(log)
    assert name == "pass" and ms < 150, ms


def test_a_background_task_is_an_action_named_after_it(qtbot, watch):
    _installed, log = watch
    task = BackgroundTask(lambda ctx: 42, name="export")
    with qtbot.waitSignal(task.succeeded, timeout=10_000):
        task.start()
    qtbot.waitUntil(lambda: log.exists(), timeout=5000)
    assert [name for name, _ in _lines(log)] == ["export"]
