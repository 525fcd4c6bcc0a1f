"""Crash recovery: a real app process applies edits, is killed with SIGKILL, and the next window
offers the journal it left and restores the edits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox
from window_support import LOAD_TIMEOUT_MS, isolated, make_window, user_copy  # noqa: F401

from fxstudio.core import journal
from fxstudio.qt.launch import start_window
from fxstudio.qt.recovery import offer_recovery

EDITS = [
    {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
    {"op": "set_arg", "node": "add", "key": 1, "value": "7"},
]


def _click_when_shown(button_text: str, seen: list) -> None:
    """Click ``button_text`` in the next modal message box, as a user would."""
    def poll():
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(box.text() + "\n" + box.informativeText())
            next(b for b in box.buttons() if b.text() == button_text).click()
        else:
            QTimer.singleShot(50, poll)
    QTimer.singleShot(50, poll)


def _crash_after_edits(tmp_path, model):
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": EDITS}))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.Popen([sys.executable, "-m", "fxstudio", str(model), "--replay", str(script)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    path = journal.journal_path(model)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if path.exists() and journal.read_journal(path).edit_count == len(EDITS):
                break
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        else:
            raise AssertionError("the app never journaled its edits")
        assert proc.poll() is None  # the window is still open, edits unsaved
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return path


def test_killed_process_edits_are_recovered(qtbot, isolated, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    path = _crash_after_edits(tmp_path, model)
    [entry] = journal.find_journals()
    assert entry.abandoned and entry.script["edits"] == EDITS
    assert entry.labels and len(entry.labels) == 2

    # Start the window again the way `fxstudio MODEL` does; the offer appears and we click Recover.
    seen: list[str] = []
    _click_when_shown("Recover", seen)
    win = start_window(str(model), {})
    try:
        qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
        doc = win.document
        assert seen and "add_mul.py" in seen[0] and "2 unsaved edits" in seen[0]
        assert doc.edit_script()["edits"] == EDITS and doc.dirty and doc.history_index == 2
        code = doc.module().code
        assert "mul = add * 10" in code and "add = x + 7" in code
        assert win.windowTitle().startswith("add_mul.py") and "*" in win.windowTitle()
        # Recovered work is still unsaved: its journal now belongs to this live process.
        again = journal.read_journal(path)
        assert again.pid == os.getpid() and again.edit_count == 2 and not again.abandoned
        assert journal.find_journals() == []
    finally:
        if win.document is not None:
            win.document.mark_saved()
        win.close()
        win.deleteLater()


def test_discarded_recovery_deletes_the_journal(qtbot, make_window, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    path = journal.journal_path(model)
    # A journal left by a process that no longer exists (pid 0 is never a live writer).
    journal.write_journal(model, {"format": "fxstudio.edits/1", "edits": EDITS[:1]}, labels=["Set mul.args[1] = 10"])
    data = json.loads(path.read_text())
    data["pid"] = 0
    path.write_text(json.dumps(data))
    win = make_window()
    seen: list[str] = []
    _click_when_shown("Not Now", seen)
    assert not offer_recovery(win, None)
    assert path.exists() and seen and "Set mul.args[1] = 10" in seen[0]
    _click_when_shown("Discard", seen)
    assert not offer_recovery(win, None)
    assert not path.exists() and win.document is None
