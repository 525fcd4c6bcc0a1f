"""Where the GUI thread was during a stall (``fxstudio.qt.stall_trace``, FXSTUDIO_STALL_TRACE): the
stall's length, its action and the function the GUI thread was in, appended to the trace file."""

from __future__ import annotations

import time

import pytest

from fxstudio.qt import stall_trace, stall_watch


@pytest.fixture
def watch(qapp, tmp_path, monkeypatch):
    monkeypatch.setattr(stall_watch, "SETTLE_MS", 50)
    installed = stall_watch.install(qapp, str(tmp_path / "stalls.log"))
    yield installed
    stall_watch.uninstall()


def _a_slow_gui_step() -> None:
    deadline = time.perf_counter() + 0.3
    while time.perf_counter() < deadline:
        time.sleep(0.005)   # the interpreter lock is let go: the sampler can look


def test_a_stall_is_traced_to_the_function_the_gui_thread_was_in(qtbot, watch, tmp_path, monkeypatch):
    trace = tmp_path / "trace.txt"
    monkeypatch.delenv(stall_trace.ENV, raising=False)
    assert stall_trace.install(watch) is None   # off without the variable
    monkeypatch.setenv(stall_trace.ENV, str(trace))
    assert stall_trace.install(watch) is not None
    qtbot.wait(50)
    stall_watch.begin("pass")
    _a_slow_gui_step()
    stall_watch.end("pass")
    qtbot.waitUntil(lambda: trace.exists() and "_a_slow_gui_step" in trace.read_text(), timeout=3000)
    head = next(line for line in trace.read_text().splitlines() if line.startswith("stall"))
    ms = float(head.split()[1])
    assert 200 <= ms <= 1500 and "'pass'" in head, head
