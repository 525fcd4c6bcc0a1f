"""Autosave journals are data (docs/CONTRACTS.md "Trust boundary"): hostile or broken journal files in the state folder
never crash or block the window, never run code, never raise trust, and two windows on one model
never lose each other's work. Real journal files on disk, the real ``fxstudio`` command in
subprocesses, and the real window with its real dialogs clicked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from fxstudio.core import journal
from fxstudio.resources import EXAMPLES_DIR
from tests.security.dialog_answers import click_through, stop_answering

FXSTUDIO = Path(sys.executable).parent / "fxstudio"

LOAD_TIMEOUT_MS = 60_000
SET_MUL = {"op": "set_arg", "node": "mul", "key": 1, "value": "10"}
SET_ADD = {"op": "set_arg", "node": "add", "key": 1, "value": "7"}


class MarkerPayload:
    """Unpickling this object opens (creates) the marker file: code running from a pickle."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture
def env(hostile, monkeypatch):
    """This process and its children share the hostile state folder and a private config."""
    config = hostile.dir / "config"
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(hostile.state))
    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(config))
    return {"FXSTUDIO_CONFIG_DIR": str(config)}


def model_copy(hostile) -> Path:
    """A user copy of the add_mul example (user code, so it counts as a model file a user chose)."""
    target = hostile.dir / "models" / "add_mul.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES_DIR / "add_mul.py", target)
    return target


def journal_file(name: str, **fields) -> Path:
    """A journal file in the state folder as a crashed writer (pid 0) would leave it, with ``fields`` changed."""
    data = {"format": "fxstudio.journal/1", "model": "/nowhere/m.py", "pid": 0, "started": "",
            "written_at": time.time(), "options": {}, "labels": ["Set mul.args[1] = 10"],
            "script": {"format": "fxstudio.edits/1", "edits": [SET_MUL]}}
    data.update(fields)
    folder = journal.journals_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


HOSTILE_FIELDS = {
    "pid.json": {"pid": "abc"},
    "labels.json": {"labels": [{"x": 1}]},
    "options.json": {"options": {"tracer": ["fx"], "trust": "yes"}},
    "written.json": {"written_at": "yesterday"},
    "edits.json": {"script": {"format": "fxstudio.edits/1", "edits": [{"op": "run_pass", "file": 3}]}},
}


def _hostile_journals(model: Path) -> list[Path]:
    paths = [journal_file(name, model=str(model), **fields) for name, fields in HOSTILE_FIELDS.items()]
    (journal.journals_dir() / "garbage.json").write_bytes(b"\xff\xfe{not json")
    return [*paths, journal.journals_dir() / "garbage.json"]


def test_malformed_journals_are_moved_aside_and_named_headless(hostile, env):
    model = model_copy(hostile)
    bad = _hostile_journals(model)
    taken = bad[0].with_name(bad[0].name + ".bad")
    taken.write_text("an earlier bad journal")  # its name is taken: the next goes to .bad-1
    out = hostile.dir / "out.png"
    proc = hostile.run(model, "--screenshot", out, env=env)
    hostile.assert_clean(proc, code=0)
    assert out.stat().st_size > 0  # the window opened and rendered the model
    for path in bad:
        assert not path.exists(), path
        moved = path.with_name(path.name + (".bad-1" if path == bad[0] else ".bad"))
        assert moved.exists(), sorted(p.name for p in path.parent.iterdir())
        assert path.name in proc.stderr and moved.name in proc.stderr  # one line each, naming it
    assert taken.read_text() == "an earlier bad journal"
    # The next start finds nothing left to complain about.
    again = hostile.run(model, "--screenshot", out, env=env)
    hostile.assert_clean(again, code=0)
    assert "journal" not in again.stderr


@pytest.fixture(autouse=True)
def _stop_answering():
    """No dialog answerer outlives its test (it would click the next test's dialogs)."""
    yield
    stop_answering()


def _close(win) -> None:
    if win.document is not None and win.document.dirty:
        win.document.mark_saved()
    win.close()
    win.deleteLater()


def test_malformed_journal_never_blocks_the_window(qtbot, hostile, env):
    from fxstudio.qt.launch import start_window

    model = model_copy(hostile)
    bad = _hostile_journals(model)
    win = start_window(str(model), {})  # what `fxstudio MODEL` does: recovery check, then open
    try:
        qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
        assert win.document.loaded.path == model
        rows = [m for m in win.problems.messages() if m[1] == "journal"]
        for path in bad:
            assert not path.exists()
            assert any(path.name in m[2] and f"{path.name}.bad" in m[2] and m[0] == "warning" for m in rows), rows
        hostile.assert_clean()
    finally:
        _close(win)


def _pickle_model(hostile) -> Path:
    payload = hostile.dir / "payload.pt"
    torch.save(MarkerPayload(hostile.marker), payload)
    return payload


def test_trust_in_a_journal_never_skips_the_trust_question(qtbot, hostile, env):
    from fxstudio.qt.main_window import MainWindow
    from fxstudio.qt.recovery import offer_recovery

    payload = _pickle_model(hostile)
    path = journal_file("payload_pt-0-0.json", model=str(payload),
                        options={"trust": True, "input_shapes": [[1, 3]]})
    win = MainWindow()
    win.show()
    try:
        seen: list[str] = []
        click_through(["Recover", "No"], seen)
        assert offer_recovery(win, str(payload))
        qtbot.waitUntil(lambda: len(seen) >= 2 and not win.open_flow.busy, timeout=LOAD_TIMEOUT_MS)
        qtbot.wait(200)
        assert "payload.pt" in seen[0]
        title, text = seen[1].split("\n", 1)
        assert title == "Trust this file?" and str(payload) in text  # the question names the file
        hostile.assert_clean()  # answered No: nothing was unpickled
        assert win.document is None and path.exists()  # nothing recovered, nothing lost
        # The question is the only gate: Yes unpickles (the payload really is live).
        click_through(["Recover", "Yes"], seen)
        assert offer_recovery(win, str(payload))
        qtbot.waitUntil(lambda: hostile.marker.exists(), timeout=LOAD_TIMEOUT_MS)
        assert "UNEXPECTED" not in seen
    finally:
        _close(win)


def test_screenshot_never_replays_a_trusting_journal(hostile, env):
    payload = _pickle_model(hostile)
    path = journal_file("payload_pt-0-0.json", model=str(payload), options={"trust": True})
    before = path.read_text()
    out = hostile.dir / "out.png"
    proc = hostile.run(model_copy(hostile), "--screenshot", out, env=env)
    hostile.assert_clean(proc, code=0)
    assert path.read_text() == before  # a valid journal of another model: untouched, still offered later


def _start_editing(hostile, env, model, edits, name):
    script = hostile.script(edits, name=name)
    full_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": str(hostile.state),
                "OMP_NUM_THREADS": "1", **env}
    return subprocess.Popen([str(FXSTUDIO), str(model), "--replay", str(script)], env=full_env,
                            cwd=hostile.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_two_window_processes_keep_two_journals_and_a_killed_one_is_recoverable(qtbot, hostile, env):
    from fxstudio.qt.launch import start_window

    model = model_copy(hostile)
    first = _start_editing(hostile, env, model, [SET_MUL], "first.json")
    second = _start_editing(hostile, env, model, [SET_ADD, {**SET_MUL, "value": "3"}], "second.json")
    procs = [first, second]
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            counts = sorted(e.edit_count for e in journal.journals_of(model))
            if counts == [1, 2]:
                break
            for p in procs:
                assert p.poll() is None, p.stderr.read()[-2000:]
            time.sleep(0.3)
        else:
            raise AssertionError(f"the two windows never journaled their edits: {counts}")
        by_pid = {e.pid: e for e in journal.journals_of(model)}
        assert set(by_pid) == {first.pid, second.pid}  # one journal each, neither overwritten
        assert journal.find_journals() == []  # both writers live: nothing is offered
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        # The killed window's journal is abandoned; the live one's is untouched and not offered.
        [orphan] = journal.find_journals()
        assert orphan.pid == first.pid and orphan.script["edits"] == [SET_MUL]
        live = by_pid[second.pid].path
        live_text = live.read_text()
        seen: list[str] = []
        click_through(["Recover"], seen)
        win = start_window(str(model), {})
        try:
            qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
            assert win.document.edit_script()["edits"] == [SET_MUL] and win.document.dirty
            assert "1 unsaved edit" in seen[0]
            qtbot.waitUntil(lambda: not orphan.path.exists(), timeout=5000)
            assert live.read_text() == live_text and second.poll() is None
            assert sorted(e.pid for e in journal.journals_of(model)) == sorted([second.pid, os.getpid()])
        finally:
            _close(win)
        hostile.assert_clean()
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=30)
