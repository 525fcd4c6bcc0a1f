"""Shared set-up for the window tests: a MainWindow with its settings and journals in tmp_path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fxstudio.resources import EXAMPLES_DIR

LOAD_TIMEOUT_MS = 60_000


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Settings and autosave journals under tmp_path (never the user's)."""
    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


@pytest.fixture
def make_window(qtbot, isolated):
    """Factory of shown MainWindows; each is closed at the end without prompting."""
    from fxstudio.qt.main_window import MainWindow

    made = []

    def make(**kwargs):
        win = MainWindow(**kwargs)
        win.show()
        qtbot.waitExposed(win)
        made.append(win)
        return win

    yield make
    # Not qtbot.addWidget: pytest-qt closes those before this teardown, and a dirty window would
    # then block on the unsaved-edits question.
    for win in made:
        if win.document is not None and win.document.dirty:
            win.document.mark_saved()
        win.close()
        win.deleteLater()


def user_copy(tmp_path: Path, example: str) -> Path:
    """A copy of a built-in example outside the examples folder (so it counts as user code)."""
    target = tmp_path / "models" / example
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES_DIR / example, target)
    return target


def open_and_wait(qtbot, win, spec, origin: str = "argument", **kwargs):
    """Open ``spec`` through the window's open flow and wait for its (editable) document: a ``.pt2``
    shows a view-only structure first (``open_flow.structure_document``), while the load goes on."""
    before = win.document
    assert win.open_path(spec, origin=origin, **kwargs)
    qtbot.waitUntil(lambda: win.document is not None and win.document is not before and not win.open_flow.busy,
                    timeout=LOAD_TIMEOUT_MS)
    return win.document


@pytest.fixture
def app_collector(qapp):
    """The application's GUI-thread garbage collector, installed as ``make_app`` installs it."""
    from fxstudio.qt import gui_gc

    collector = gui_gc.install_gui_thread_collector(qapp)
    yield collector
    gui_gc.uninstall_gui_thread_collector()


@pytest.fixture
def held_deserializer(monkeypatch):
    """A ``.pt2``'s weights read (``pt2_weights.payloads_as_data``, the editable open's first step
    after the structure, issue #28) held until the test sets the returned event (the real one
    runs then): the window shows the view-only structure meanwhile."""
    import threading

    from fxstudio.core.loading import pt2_weights

    release = threading.Event()
    real = pt2_weights.payloads_as_data

    def held(*args):
        assert release.wait(60)
        return real(*args)

    monkeypatch.setattr(pt2_weights, "payloads_as_data", held)
    release.real = real
    return release
