"""Issue #23, round 2, in the window: each hostile archive of ``test_pt2_round2`` opened by a real
``MainWindow`` (offscreen, pytest-qt) is refused with its message in the failure dialog, without a
trust question (trust would not help: torch would hang or allocate the same), nothing opened (a
failure found after the structure preview was drawn leaves that graph on screen, view-only). A
hang is a failure: ``faulthandler``'s watchdog (a C thread, which a computation holding the GIL
does not stop) ends the process past the wall limit. And through the real app process
(``fxstudio FILE --screenshot OUT.png``) under the CLI's limits: one line, exit 2, no image.
"""

from __future__ import annotations

import faulthandler
import html
import sys

import pytest
from dialog_answers import Answers
from test_pt2_round2 import FILES, make

LOAD_TIMEOUT_MS = 60_000
WALL_LIMIT_S = 150


@pytest.fixture
def window(qtbot, hostile, monkeypatch):
    """A real main window with a private state and config folder, under the wall-limit watchdog."""
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(hostile.state))
    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(hostile.dir / "config"))
    from fxstudio.qt.main_window import MainWindow

    faulthandler.dump_traceback_later(WALL_LIMIT_S, exit=True, file=sys.stderr)
    win = MainWindow()
    win.show()
    answers: list[Answers] = []
    yield win, answers
    faulthandler.cancel_dump_traceback_later()
    for a in answers:
        a.stop()
    if win.last_failure_dialog is not None:
        win.last_failure_dialog.close()
    win.close()
    win.deleteLater()


@pytest.mark.parametrize("kind", sorted(FILES))
def test_the_window_refuses_the_archive(qtbot, hostile, window, kind):
    win, answers = window
    path = make(kind, hostile)
    answer = Answers([])  # no question expected: a box would be rejected and recorded
    answers.append(answer)
    assert win.open_path(path, origin="dialog")
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and not win.open_flow.busy, timeout=LOAD_TIMEOUT_MS)
    qtbot.wait(100)
    text = html.unescape(win.last_failure_dialog.label.text())
    assert path.name in text, text
    for word in FILES[kind]:
        assert word in text, text
    assert answer.seen == []
    # Nothing opened: at most the graph drawn from the checked JSON (weights never read) stays, view-only.
    assert win.document is None or "could not be opened" in (win.document.read_only or ""), win.document
    hostile.assert_clean()


@pytest.mark.parametrize("kind", ["sympy_power", "guard_power", "no_inputs_16GiB", "repeated_weight_40GB"])
def test_the_app_process_refuses_the_archive(hostile, kind):
    path = make(kind, hostile)
    shot = hostile.dir / "shot.png"
    proc = hostile.run(path, "--screenshot", shot, timeout=90)
    hostile.assert_clean(proc, code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: ") and path.name in lines[0], proc.stderr
    for word in FILES[kind]:
        assert word in lines[0], proc.stderr
    assert not shot.exists()
