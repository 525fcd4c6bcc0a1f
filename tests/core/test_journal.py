"""The autosave journal: written atomically per model, found after the writer dies, cleared on save."""

import json
import subprocess
import sys

import pytest

from fxstudio.core import journal
from fxstudio.core.errors import ScriptError

SCRIPT = {"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}]}


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def test_state_dir_follows_env_then_xdg(tmp_path, monkeypatch):
    monkeypatch.delenv("FXSTUDIO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert journal.state_dir() == tmp_path / "xdg" / "fxstudio"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert journal.state_dir() == tmp_path / "home" / ".local" / "state" / "fxstudio"
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(tmp_path / "s"))
    assert journal.state_dir() == tmp_path / "s"


def test_one_journal_per_model_spec(state, tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    assert journal.journal_path(a) != journal.journal_path(b)
    assert journal.journal_path(f"{a}::Net") != journal.journal_path(a)
    # relative and absolute spellings of one file share a journal
    assert journal.journal_path(a) == journal.journal_path(str(a.parent / "." / "a.py"))
    assert journal.journal_path(a).parent == state / "journals"


def test_write_read_roundtrip_and_clear(state, tmp_path):
    model = tmp_path / "m.py"
    path = journal.write_journal(model, SCRIPT, labels=["Set mul.args[1] = 10"], options={"tracer": "fx"})
    assert path.exists() and not list(path.parent.glob(".*.tmp"))  # atomic: no temp left behind
    entry = journal.read_journal(path)
    assert entry.model == str(model.resolve())
    assert entry.script == SCRIPT and entry.labels == ["Set mul.args[1] = 10"]
    assert entry.options == {"tracer": "fx"} and entry.edit_count == 1
    assert "m.py: 1 unsaved edit" in entry.describe()
    # written by this live process: not abandoned, so not offered
    assert not entry.abandoned
    assert journal.find_journals() == []
    assert [e.path for e in journal.find_journals(abandoned_only=False)] == [path]
    journal.clear_journal(model)
    assert not path.exists()


def test_empty_script_removes_the_journal(state, tmp_path):
    model = tmp_path / "m.py"
    journal.write_journal(model, SCRIPT)
    assert journal.write_journal(model, {"format": "fxstudio.edits/1", "edits": []}) is None
    assert not journal.journal_path(model).exists()


def test_journal_of_a_dead_process_is_found(state, tmp_path):
    model = tmp_path / "m.py"
    code = (
        "import sys; from fxstudio.core import journal; "
        f"journal.write_journal({str(model)!r}, {SCRIPT!r})"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    found = journal.find_journals()
    assert len(found) == 1 and found[0].abandoned
    assert found[0].script == SCRIPT and found[0].model == str(model.resolve())
    journal.discard_journal(found[0])
    assert journal.find_journals() == []


def test_bad_files_are_refused_or_skipped(state, tmp_path):
    with pytest.raises(ScriptError, match="format"):
        journal.write_journal(tmp_path / "m.py", {"format": "other", "edits": [1]})
    folder = journal.journals_dir()
    folder.mkdir(parents=True)
    (folder / "junk.json").write_text("{not json")
    (folder / "other.json").write_text(json.dumps({"format": "something/else"}))
    with pytest.raises(ScriptError, match="cannot be read"):
        journal.read_journal(folder / "junk.json")
    with pytest.raises(ScriptError, match="not an fxstudio autosave journal"):
        journal.read_journal(folder / "other.json")
    assert journal.find_journals(abandoned_only=False) == []
