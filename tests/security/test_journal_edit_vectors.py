"""Issue #12: a journal is data, and so are the edits in it. A journal left by a crashed window
(a real file in ``$FXSTUDIO_STATE_DIR``) whose edits carry the review's target vectors
(``tests/security/test_target_boundary.py``) goes through the real window's recovery path, the
real Recover button clicked: the marker never appears, nothing hangs, the window opens the model
with the harmless edit applied, Problems names each refused edit and its rule, no traceback."""

from __future__ import annotations

import json
import shutil
import sys
import time

import pytest
from dialog_answers import Answers

from fxstudio.core import journal
from fxstudio.resources import example_path

LOAD_TIMEOUT_MS = 90_000
HARMLESS = {"op": "set_arg", "node": "add", "key": 1, "value": "10"}


def _insert(target: str, args: str, after: str = "x", name: str | None = None) -> dict:
    edit = {"op": "insert", "after": after, "kind": "call_function", "target": target, "args": args}
    if name:
        edit["name"] = name
    return edit


def _vectors(hostile) -> list[tuple[str, dict]]:
    """(the rule its refusal names, the edit) for each hostile edit, in journal order."""
    shell = f'{sys.executable} -c "{hostile.payload}"'
    return [
        ("rule: real submodule paths", _insert("torch.nn.functional.torch.os.system", repr((shell,)))),
        ("rule: getattr with a constant public attribute name",
         _insert("getattr", "(%x, '__globals__')", name="g2")),
        ("rule: bounded cost", _insert("math.factorial", "(100000000,)")),
        ("rule: no I/O, imports, process control or code execution",
         _insert("torch.from_file", f"({str(hostile.marker)!r}, True, 16)")),
        ("rule: definitions of the model file only",
         {"op": "set_target", "match": "torch.relu", "target": "relu_add.torch.os.system"}),
        ("rule: no I/O, imports, process control or code execution",
         _insert("operator.call", f"(%x, {hostile.payload!r})")),
    ]


@pytest.fixture
def model(hostile, monkeypatch):
    """A user copy of relu_add.py with a planted module beside it; private state and config folders."""
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(hostile.state))
    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(hostile.dir / "config"))
    folder = hostile.dir / "models"
    folder.mkdir()
    path = folder / "relu_add.py"
    shutil.copy(example_path("relu_add.py"), path)
    (folder / "planted_payload.py").write_text(hostile.payload + "\n")
    return path


def _crashed_journal(model, edits: list[dict]) -> journal.JournalEntry:
    """A journal as a window killed mid-session (pid 0) leaves it: one History row per edit."""
    key = journal.model_key(model)
    data = {"format": journal.JOURNAL_FORMAT, "model": key, "pid": 0, "started": "", "written_at": time.time(),
            "options": {}, "labels": [f"edit {i + 1}" for i in range(len(edits))],
            "script": {"format": "fxstudio.edits/1", "edits": edits}}
    folder = journal.journals_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{journal._model_prefix(key)}-0-0.json"
    path.write_text(json.dumps(data))
    [entry] = journal.find_journals()
    assert entry.path == path and entry.edit_count == len(edits)
    return entry


def test_recovered_hostile_edits_are_refused_named_and_run_nothing(qtbot, hostile, model, capfd):
    from fxstudio.qt.launch import start_window

    vectors = _vectors(hostile)
    edits = [vectors[0][1], HARMLESS, *[edit for _rule, edit in vectors[1:]]]
    entry = _crashed_journal(model, edits)
    answers = Answers(["Recover", "Yes"])  # the recovery offer, then "run code from relu_add.py?"
    start = time.monotonic()
    win = start_window(str(model), {})  # what `fxstudio MODEL` does: the recovery offer first
    try:
        qtbot.waitUntil(lambda: win.document is not None or win.last_failure_dialog is not None,
                        timeout=LOAD_TIMEOUT_MS)
        took = time.monotonic() - start
        assert win.last_failure_dialog is None, win.problems.messages()
        assert [s["title"] for s in answers.seen] == ["Recover unsaved edits?", "Run code from this file?"]
        assert not answers.unexpected
        hostile.assert_clean()
        assert "planted_payload" not in sys.modules
        # The window opened the model with the one harmless edit replayed.
        assert win.document.loaded.path == model and win.document.edit_script()["edits"] == [HARMLESS]
        refusals = [m[2] for m in win.problems.messages() if "was refused" in m[2]]
        expected = [(i + 1, rule) for i, (rule, _edit) in zip([0, 2, 3, 4, 5, 6], vectors)]
        assert len(refusals) == len(expected), refusals
        for number, rule in expected:  # Problems lists the newest first: find each by its number
            [message] = [m for m in refusals if m.startswith(f"Edit {number} of the recovery script was refused")]
            assert rule in message, message
        # The journal is kept (edits were refused) and the window says so.
        assert entry.path.exists()
        assert any(m[1] == "journal" and "refused" in m[2] and str(entry.path) in m[2] for m in win.problems.messages())
        assert took < 60, took  # no vector costs time: math.factorial(10**8) is refused, not computed
    finally:
        _close(win, answers)
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    hostile.assert_clean()


def _close(win, answers) -> None:
    """Stop answering dialogs and close the window without a discard question."""
    answers.stop()
    if win.document is not None and win.document.dirty:
        win.document.mark_saved()
    win.close()
    win.deleteLater()


def test_a_getattr_chain_in_a_journal_stops_at_its_first_link(qtbot, hostile, model):
    """The review's chain to ``exec`` as five recovered edits, each its own History row: the
    dunder link is refused, every later link then names a node that does not exist."""
    from fxstudio.qt.launch import start_window

    chain = [
        _insert("getattr", "(%x, 'backward')", name="g1"),
        _insert("getattr", "(%g1, '__globals__')", after="g1", name="g2"),
        _insert("operator.getitem", "(%g2, '__builtins__')", after="g2", name="g3"),
        _insert("operator.getitem", "(%g3, 'exec')", after="g3", name="g4"),
        _insert("operator.call", f"(%g4, {hostile.payload!r})", after="g4", name="g5"),
    ]
    _crashed_journal(model, chain)
    answers = Answers(["Recover", "Yes"])
    win = start_window(str(model), {})
    try:
        qtbot.waitUntil(lambda: win.document is not None or win.last_failure_dialog is not None,
                        timeout=LOAD_TIMEOUT_MS)
        assert win.last_failure_dialog is None, win.problems.messages()
        hostile.assert_clean()
        names = {n.name for n in win.document.module().graph.nodes}
        assert not names & {"g2", "g3", "g4", "g5"}, names
        refusals = [m[2] for m in win.problems.messages() if "was refused" in m[2]]
        assert any("rule: getattr with a constant public attribute name" in r for r in refusals), refusals
        assert len(refusals) >= 4 and not answers.unexpected
    finally:
        _close(win, answers)
    hostile.assert_clean()
