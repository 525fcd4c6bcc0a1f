"""The autosave journal: one file per window instance, locked while its writer lives, found after
the writer dies, schema-checked on read (malformed files are moved aside, never deleted)."""

import json
import os
import subprocess
import sys

import pytest

from fxstudio.core import journal
from fxstudio.core.errors import ScriptError

SCRIPT = {"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}]}
TWO = {"format": "fxstudio.edits/1", "edits": [
    {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
    {"op": "set_arg", "node": "add", "key": 1, "value": "7"},
]}


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _write_in_dead_process(model, script=SCRIPT, **kwargs) -> None:
    """A real writer process that journals ``script`` and exits without clearing it (a crash)."""
    code = (
        "import os; from fxstudio.core import journal; "
        f"journal.Journal({str(model)!r}).write({script!r}, **{kwargs!r}); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_state_dir_follows_env_then_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("FXSTUDIO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert journal.state_dir() == tmp_path / "xdg" / "fxstudio"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert journal.state_dir() == tmp_path / "home" / ".local" / "state" / "fxstudio"
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(tmp_path / "s"))
    assert journal.state_dir() == tmp_path / "s"


def test_one_journal_per_window_instance(state, tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    first, second = journal.Journal(a), journal.Journal(a)
    assert first.path != second.path and first.path.parent == state / "journals"
    assert journal.Journal(b).path.name.split("-")[:2] != first.path.name.split("-")[:2]
    assert journal.Journal(f"{a}::Net").path.name.split("-")[1] != first.path.name.split("-")[1]
    # relative and absolute spellings of one file are one model
    assert journal.Journal(str(a.parent / "." / "a.py")).model == first.model == str(a.resolve())
    first.write(SCRIPT)
    second.write(TWO)
    assert sorted(e.edit_count for e in journal.journals_of(a)) == [1, 2]
    first.clear()  # one window's save or discard leaves the other's work alone
    assert not first.path.exists() and second.path.exists()
    assert [e.path for e in journal.journals_of(a)] == [second.path]


def test_write_read_roundtrip_and_clear(state, tmp_path):
    model = tmp_path / "m.py"
    owner = journal.Journal(model)
    options = {"tracer": "fx", "leaf_modules": ["layer1.0"], "concrete_args": ["positive=True"]}
    path = owner.write(TWO, labels=["Set both (+1 more)"], groups=[2], options=options)
    assert path.exists() and not list(path.parent.glob(".*.tmp"))  # atomic: no temp left behind
    entry = journal.read_journal(path)
    assert entry.model == str(model.resolve())
    assert entry.script == TWO and entry.labels == ["Set both (+1 more)"] and entry.groups == [2]
    assert entry.options == options
    # one compound command: one edit, as History and the status bar count it
    assert entry.edit_count == 1 and "m.py: 1 unsaved edit " in entry.describe()
    [command] = entry.commands()
    assert command.label == "Set both (+1 more)" and command.edits == TWO["edits"]
    # written by this live process (it holds the lock): not abandoned, not offered, not claimable
    assert owner.held and not entry.abandoned
    assert journal.find_journals() == [] and journal.claim(entry) is None
    assert [e.path for e in journal.find_journals(abandoned_only=False)] == [path]
    owner.clear()
    assert not path.exists() and not journal.lock_path(path).exists()


def test_empty_script_removes_the_journal(state, tmp_path):
    owner = journal.Journal(tmp_path / "m.py")
    owner.write(SCRIPT)
    assert owner.write({"format": "fxstudio.edits/1", "edits": []}) is None
    assert not owner.path.exists() and not owner.held


def test_journal_of_a_dead_process_is_found_claimed_and_discarded(state, tmp_path):
    model = tmp_path / "m.py"
    _write_in_dead_process(model, labels=["Set mul.args[1] = 10"])
    [found] = journal.find_journals()
    assert found.abandoned and found.script == SCRIPT and found.model == str(model.resolve())
    owned = journal.claim(found)
    assert owned is not None and journal.claim(found) is None  # a second window cannot take it too
    assert journal.find_journals() == []  # while claimed it is live: nobody else offers it
    owned.release()
    [again] = journal.find_journals()
    assert journal.discard_journal(again)
    assert journal.find_journals() == [] and list(journal.journals_dir().iterdir()) == []


def test_writer_refuses_what_a_reader_would_refuse(state, tmp_path):
    owner = journal.Journal(tmp_path / "m.py")
    with pytest.raises(ScriptError, match="format"):
        owner.write({"format": "other", "edits": [1]})
    with pytest.raises(ScriptError, match="option"):
        owner.write(SCRIPT, options={"trust": "yes"})
    with pytest.raises(ScriptError, match="labels"):
        owner.write(TWO, labels=["only one"], groups=[1, 1])
    assert not owner.path.exists()


GOOD = {
    "format": "fxstudio.journal/1", "model": "/nonexistent/m.py", "pid": 0, "started": "",
    "written_at": 1.0, "options": {}, "labels": ["Set mul.args[1] = 10"], "script": SCRIPT,
}
MALFORMED = [
    ({"pid": "abc"}, "'pid'"),
    ({"pid": True}, "'pid'"),
    ({"pid": -3}, "'pid'"),
    ({"labels": [1]}, "'labels'"),
    ({"labels": "Set"}, "'labels'"),
    ({"labels": ["a", "b"]}, "2 labels for 1 edits"),
    ({"options": {"trust": "yes"}}, "'trust'"),
    ({"options": {"tracer": "eval"}}, "'tracer'"),
    ({"options": {"input_shapes": [[1, "a"]]}}, "'input_shapes'"),
    ({"options": {"leaf_modules": ["os; rm"]}}, "'leaf_modules'"),
    ({"options": {"import": "os"}}, "unknown option"),
    ({"options": []}, "'options'"),
    ({"written_at": "noon"}, "'written_at'"),
    ({"written_at": float("inf")}, "'written_at'"),
    ({"started": 12}, "'started'"),
    ({"model": ""}, "'model'"),
    ({"model": 5}, "'model'"),
    ({"groups": [2]}, "'groups'"),
    ({"groups": [0, 1]}, "'groups'"),
    ({"instance": "../x"}, "'instance'"),
    ({"extra": 1}, "unknown field"),
    ({"script": {"format": "fxstudio.edits/1", "edits": [{"op": "explode"}]}}, "edit script is malformed"),
    ({"script": {"format": "fxstudio.edits/1", "edits": []}}, "no edits"),
    ({"format": "fxstudio.journal/9"}, "format"),
]


@pytest.mark.parametrize("change, reason", MALFORMED, ids=[r for _c, r in MALFORMED])
def test_every_field_is_checked(state, change, reason):
    folder = journal.journals_dir()
    folder.mkdir(parents=True)
    bad = folder / "m_py-0-0.json"
    bad.write_text(json.dumps({**GOOD, **change}, allow_nan=True))
    with pytest.raises(ScriptError, match=reason):
        journal.read_journal(bad)
    good = folder / "good.json"
    good.write_text(json.dumps(GOOD))
    assert journal.read_journal(good).edit_count == 1  # the same journal without the change is fine


def test_missing_field_is_malformed(state):
    folder = journal.journals_dir()
    folder.mkdir(parents=True)
    for key in GOOD:
        path = folder / f"no-{key}.json"
        path.write_text(json.dumps({k: v for k, v in GOOD.items() if k != key}))
        with pytest.raises(ScriptError, match="malformed"):
            journal.read_journal(path)


def test_malformed_files_are_moved_aside_never_deleted(state, tmp_path):
    folder = journal.journals_dir()
    folder.mkdir(parents=True)
    (folder / "junk.json").write_text("{not json")
    (folder / "other.json").write_text(json.dumps({"format": "something/else"}))
    (folder / "pid.json").write_text(json.dumps({**GOOD, "pid": "abc"}))
    (folder / "pid.json.bad").write_text("an older one")  # taken: the next one is .bad-1
    os.mkfifo(folder / "fifo.json")  # reading a FIFO would hang the start-up
    model = tmp_path / "m.py"
    _write_in_dead_process(model)
    scan = journal.scan_journals()
    assert [e.model for e in scan.entries] == [str(model.resolve())]
    moved = {b.path.name: b.moved_to.name for b in scan.bad}
    assert moved == {"junk.json": "junk.json.bad", "other.json": "other.json.bad",
                     "pid.json": "pid.json.bad-1", "fifo.json": "fifo.json.bad"}
    reasons = {b.path.name: b.reason for b in scan.bad}
    assert "cannot be read" in reasons["junk.json"] and "'pid'" in reasons["pid.json"]
    assert "not a regular file" in reasons["fifo.json"]
    assert (folder / "pid.json.bad").read_text() == "an older one"
    assert json.loads((folder / "pid.json.bad-1").read_text())["pid"] == "abc"
    assert journal.scan_journals().bad == []  # moved once, not again


def test_a_live_writers_journal_is_never_moved(state, tmp_path):
    owner = journal.Journal(tmp_path / "m.py")
    owner.write(SCRIPT)
    owner.path.write_text("{torn")  # whatever its content, a live window's file is not ours
    assert journal.scan_journals(abandoned_only=False).bad == []
    assert owner.path.exists()
