"""Issue #12 in the window: a ``.pt2`` whose safe read is refused because it holds code (a pickled
weight) gets the same explicit trust question as a pickle, naming the file, default No. No loads
nothing and runs nothing; Yes loads it with ``torch.export.load``, and then the payload runs (which
proves the archive really was hostile). The real window, the real dialog's buttons clicked, real
archives on disk (``pt2_hostile``)."""

from __future__ import annotations

import pytest
from dialog_answers import Answers
from pt2_hostile import pickled, pickled_weight, rewrite, save_tiny
from test_pt2_archives import make

LOAD_TIMEOUT_MS = 60_000


class TensorPayload:
    """Unpickling this object runs ``source``, then gives a real (2, 3) weight, so a trusted load succeeds."""

    def __init__(self, source: str):
        self.source = source

    def __reduce__(self):
        return (eval, (f"({self.source}, __import__('torch').nn.Parameter(__import__('torch').ones(2, 3)))[1]", {}))


@pytest.fixture
def window(qtbot, hostile, monkeypatch):
    """A real main window with a private state and config folder."""
    monkeypatch.setenv("FXSTUDIO_STATE_DIR", str(hostile.state))
    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(hostile.dir / "config"))
    from fxstudio.qt.main_window import MainWindow

    win = MainWindow()
    win.show()
    answers: list[Answers] = []
    yield win, answers
    for a in answers:
        a.stop()
    if win.last_failure_dialog is not None:
        win.last_failure_dialog.close()
    if win.document is not None and win.document.dirty:
        win.document.mark_saved()
    win.close()
    win.deleteLater()


def _open(qtbot, win, path, answers, replies):
    answer = Answers(replies)
    answers.append(answer)
    assert win.open_path(path, origin="dialog")
    qtbot.waitUntil(lambda: len(answer.seen) >= len(replies) and not win.open_flow.busy, timeout=LOAD_TIMEOUT_MS)
    qtbot.wait(100)
    return answer


# Each archive that needs trust, and what the question says it holds.
NEEDS_TRUST = {"pickled_weight": "pickled weight", "pickled_inputs": "stored example inputs",
               "sympy": "shape expression", "guard": "input guard"}


def _assert_trust_question(answer, path, holds: str = "pickled weight") -> None:
    [box] = answer.seen
    assert box["title"] == "Trust this file?" and str(path) in box["text"], box
    assert holds in box["text"] and "torch.export.load" in box["text"], box
    assert "--trust" not in box["text"]  # the window's question, not the CLI's hint
    assert box["default"] == "No"


@pytest.mark.parametrize("kind", sorted(NEEDS_TRUST))
def test_no_loads_nothing_and_runs_nothing(qtbot, hostile, window, kind):
    win, answers = window
    path = make(kind, hostile)
    answer = _open(qtbot, win, path, answers, ["No"])
    _assert_trust_question(answer, path, NEEDS_TRUST[kind])
    hostile.assert_clean()
    assert win.document is None and not answer.unexpected
    assert win.last_failure_dialog is not None  # the refusal is reported
    assert any(m[0] == "error" and NEEDS_TRUST[kind] in m[2] for m in win.problems.messages())


def test_a_name_that_would_become_code_is_refused_without_a_question(qtbot, hostile, window):
    """Trust is not the remedy for a parameter path that is not a path: no question, just the refusal."""
    win, answers = window
    path = make("quote_name", hostile)
    answer = Answers([])
    answers.append(answer)
    assert win.open_path(path, origin="dialog")
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and not win.open_flow.busy, timeout=LOAD_TIMEOUT_MS)
    qtbot.wait(200)
    assert answer.seen == [] and win.document is None
    hostile.assert_clean()


def test_yes_loads_the_archive_and_its_payload_runs(qtbot, hostile, window):
    win, answers = window
    path = pickled_weight(save_tiny(hostile.dir / "tiny.pt2"), hostile.dir / "evil.pt2", hostile.payload)
    def edit(records):  # the same archive, with a payload that then gives a real weight
        records["data/weights/weight_evil"] = pickled(TensorPayload(hostile.payload))

    live = rewrite(path, hostile.dir / "live.pt2", edit)
    answer = _open(qtbot, win, live, answers, ["Yes"])
    _assert_trust_question(answer, live)
    qtbot.waitUntil(lambda: win.document is not None or win.last_failure_dialog is not None, timeout=LOAD_TIMEOUT_MS)
    assert win.last_failure_dialog is None, win.problems.messages()
    assert hostile.marker.exists()  # trusted: torch.export.load ran the archive's code
    assert win.document.loaded.path == live and win.options.get("trust") is True
    assert not answer.unexpected


def test_a_safe_archive_asks_nothing(qtbot, hostile, window):
    win, answers = window
    path = save_tiny(hostile.dir / "tiny.pt2")
    answer = Answers([])
    answers.append(answer)
    assert win.open_path(path, origin="dialog")
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert answer.seen == [] and win.options.get("trust") is None
    hostile.assert_clean()


class _Marker:
    """Unpickling this object creates the marker file."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_screenshot_never_waits_for_a_trust_answer(hostile):
    """``--screenshot`` has nobody to answer the question: a file that needs trust is refused in one
    line (exit 2) instead of a question nobody sees (the subprocess timeout is the hang detector)."""
    import torch

    pickle = hostile.dir / "payload.pt"
    torch.save(_Marker(hostile.marker), pickle)
    archive = pickled_weight(save_tiny(hostile.dir / "tiny.pt2"), hostile.dir / "evil.pt2", hostile.payload)
    for path in (archive, pickle):
        proc = hostile.run(path, "--screenshot", hostile.dir / "shot.png", "--input-shape", "1,3", timeout=90)
        hostile.assert_clean(proc, code=2)
        assert str(path) in proc.stderr and "--trust" in proc.stderr, proc.stderr
        assert not (hostile.dir / "shot.png").exists()
