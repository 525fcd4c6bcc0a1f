"""Crash recovery: a real app process applies edits, is killed with SIGKILL, and the next window
offers the journal it left and restores the edits; the offer, History, the status bar and refusal
messages count edits the same way (History's 1-based numbers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait, user_copy  # noqa: F401

from fxstudio.core import journal
from fxstudio.qt.launch import start_window
from fxstudio.qt.recovery import offer_recovery
from tests.security.dialog_answers import click_through, stop_answering

EDITS = [
    {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
    {"op": "set_arg", "node": "add", "key": 1, "value": "7"},
]


@pytest.fixture(autouse=True)
def _stop_answering():
    """No dialog answerer outlives its test (it would click the next test's dialogs)."""
    yield
    stop_answering()


def dead_journal(model, edits, *, labels=None, groups=None, options=None, name="m_py-0-dead.json", **fields):
    """A journal file as a crashed writer leaves it (pid 0 is never a live writer), written by hand."""
    folder = journal.journals_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data = {"format": "fxstudio.journal/1", "model": journal.model_key(model), "pid": 0, "started": "",
            "written_at": time.time(), "options": options or {}, "labels": labels or [],
            "script": {"format": "fxstudio.edits/1", "edits": edits}}
    if groups is not None:
        data["groups"] = groups
    data.update(fields)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def _crash_after_edits(tmp_path, model):
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": EDITS}))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.Popen([sys.executable, "-m", "fxstudio", str(model), "--replay", str(script)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            found = journal.journals_of(model)
            if found and found[0].edit_count == len(EDITS):
                break
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        else:
            raise AssertionError("the app never journaled its edits")
        assert proc.poll() is None  # the window is still open, edits unsaved
        assert journal.find_journals() == []  # its writer lives: nothing to offer
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return found[0].path


def test_killed_process_edits_are_recovered(qtbot, isolated, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    path = _crash_after_edits(tmp_path, model)
    [entry] = journal.find_journals()
    assert entry.path == path and entry.abandoned and entry.script["edits"] == EDITS
    assert entry.labels and len(entry.labels) == 2

    # Start the window again the way `fxstudio MODEL` does; the offer appears and we click Recover.
    seen: list[str] = []
    click_through(["Recover"], seen)
    win = start_window(str(model), {})
    try:
        qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
        doc = win.document
        assert seen and "add_mul.py" in seen[0] and "2 unsaved edits" in seen[0]
        assert doc.edit_script()["edits"] == EDITS and doc.dirty and doc.history_index == 2
        code = doc.module().code
        assert "mul = add * 10" in code and "add = x + 7" in code
        assert win.windowTitle().startswith("add_mul.py") and "*" in win.windowTitle()
        # Recovered work is still unsaved: this live window journals it, the crashed one's is gone.
        qtbot.waitUntil(lambda: not path.exists(), timeout=5000)
        [again] = journal.journals_of(model)
        assert again.path == win.journal.path and again.pid == os.getpid() and not again.abandoned
        assert again.edit_count == 2 and journal.find_journals() == []
    finally:
        if win.document is not None:
            win.document.mark_saved()
        win.close()
        win.deleteLater()


def test_one_numbering_in_offer_history_and_status(qtbot, make_window, tmp_path):
    """Three commands, one of them compound (two edits): every count says 3, the labels match."""
    model = user_copy(tmp_path, "add_mul.py")
    win = make_window()
    doc = open_and_wait(qtbot, win, model)
    doc.apply_edit(EDITS[0])
    doc.apply_edits([{"op": "set_arg", "node": "add", "key": 1, "value": "7"},
                     {"op": "set_arg", "node": "mul", "key": 1, "value": "3"}])
    doc.apply_edit({"op": "rename", "node": "mul", "name": "scaled"})
    labels = list(doc.history)
    assert win.status_edits.text().startswith("3 edits")
    [written] = journal.journals_of(model)
    assert written.edit_count == 3 and written.groups == [1, 2, 1] and len(written.script["edits"]) == 4
    doc.mark_saved()
    win.close()
    # The same journal as a crashed writer leaves it, offered to a new window.
    path = dead_journal(model, written.script["edits"], labels=written.labels, groups=written.groups)
    other = make_window()
    seen: list[str] = []
    click_through(["Recover"], seen)
    assert offer_recovery(other, str(model)), (seen, journal.scan_journals(abandoned_only=False))
    qtbot.waitUntil(lambda: other.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert "3 unsaved edits" in seen[0] and all(label in seen[0] for label in labels)
    again = other.document
    assert again.history == labels and again.history_index == 3
    assert other.status_edits.text().startswith("3 edits")
    other.history.lazy.flush()
    rows = [other.history.list.item(i).text() for i in range(other.history.list.count())]
    assert len(rows) == 4 and rows[3].split()[0] == "3" and rows[3].endswith(labels[2])
    qtbot.waitUntil(lambda: not path.exists(), timeout=5000)


def test_refused_recovered_edit_is_numbered_as_in_history_and_journal_kept(qtbot, make_window, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    bad = [EDITS[0], {"op": "set_arg", "node": "nonexistent", "key": 0, "value": "1"}, EDITS[1]]
    path = dead_journal(model, bad, labels=["Set mul", "Set nonexistent", "Set add"])
    win = make_window()
    seen: list[str] = []
    click_through(["Recover", "Yes"], seen)  # Yes: the run-code question of a user .py file
    assert offer_recovery(win, str(model))
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    errors = [m for m in win.problems.messages() if m[0] == "error"]
    assert any(m[2].startswith("Edit 2 of the recovery script was refused") for m in errors), errors
    assert win.document.history == ["Set mul", "Set add"]
    # The refused edit is not lost: the crashed journal stays for the next start, and says so.
    assert path.exists() and any("is kept" in m[2] and m[1] == "journal" for m in win.problems.messages())
    assert [e.path for e in journal.find_journals()] == [path]
    assert len(seen) == 2 and "Run code" in seen[1]


def test_not_now_keeps_and_discard_deletes_the_journal(qtbot, make_window, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    path = dead_journal(model, EDITS[:1], labels=["Set mul.args[1] = 10"])
    win = make_window()
    seen: list[str] = []
    click_through(["Not Now"], seen)
    assert not offer_recovery(win, None)
    assert path.exists() and seen and "Set mul.args[1] = 10" in seen[0]
    click_through(["Discard"], seen)
    assert not offer_recovery(win, None)
    assert not path.exists() and win.document is None


def test_several_journals_of_one_model_are_offered_in_turn(qtbot, make_window, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    older = dead_journal(model, EDITS[:1], labels=["Set mul"], name="a.json", written_at=time.time() - 60)
    newer = dead_journal(model, EDITS, labels=["Set mul", "Set add"], name="b.json")
    win = make_window()
    seen: list[str] = []
    click_through(["Not Now", "Recover", "Yes"], seen)
    assert offer_recovery(win, str(model))
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert "Journal 1 of 2" in seen[0] and "2 unsaved edits" in seen[0]
    assert "Journal 2 of 2" in seen[1] and "1 unsaved edit " in seen[1]
    assert win.document.edit_script()["edits"] == EDITS[:1]
    qtbot.waitUntil(lambda: not older.exists(), timeout=5000)
    assert newer.exists()  # Not Now: kept for the next start
    assert "UNEXPECTED" not in seen


def test_a_live_windows_journal_is_not_offered(qtbot, make_window, tmp_path):
    model = user_copy(tmp_path, "add_mul.py")
    first = make_window()
    doc = open_and_wait(qtbot, first, model)
    doc.apply_edit(EDITS[0])
    second = make_window()
    assert not offer_recovery(second, str(model))  # no dialog: nothing abandoned
    open_and_wait(qtbot, second, model)
    second.document.apply_edit(EDITS[1])
    assert sorted(e.path for e in journal.journals_of(model)) == sorted([first.journal.path, second.journal.path])
    second.document.mark_saved()  # the second window saves: only its journal goes
    assert [e.path for e in journal.journals_of(model)] == [first.journal.path]
