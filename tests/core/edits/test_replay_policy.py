"""One replay policy in the core (issue #16 item 3) and what ``apply_edit`` returns (item 2):
``replay_into(doc, edits, policy)`` with "stop", "keep" and "skip", and ``EditResult``."""

from __future__ import annotations

import pytest

from fxstudio.core.document import DocumentEvent, EditResult, replay, replay_into
from fxstudio.core.errors import EditRefused
from fxstudio.core.journal import JournalCommand
from tests.core.edit_helpers import code, doc_for, loaded_example

GOOD = {"op": "set_arg", "node": "mul", "key": 1, "value": "10"}
BAD = {"op": "erase", "node": "add"}  # add has users: refused
GOOD_TOO = {"op": "rename", "node": "mul", "name": "times"}


def test_apply_edit_returns_the_sets_of_its_edited_event():
    doc = doc_for("add_mul.py")
    events: list[DocumentEvent] = []
    doc.subscribe(events.append)
    result = doc.apply_edit({"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu",
                             "args": "(%add,)", "name": "r"})
    assert isinstance(result, EditResult)
    event = events[-1]
    assert (result.label, result.added, result.removed, result.changed) == \
        (event.label, event.added, event.removed, event.changed)
    assert result.added == {doc.id_of(doc.find("r"))}
    erased = doc.apply_edits([{"op": "erase", "node": "r"}], label="Erase r")
    assert erased.label == "Erase r" and erased.removed == result.added and not erased.added
    with pytest.raises(AttributeError):
        erased.label = "x"  # frozen


def test_stop_undoes_what_it_applied_and_raises_numbered():
    doc = doc_for("add_mul.py")
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "3"})
    before = code(doc)
    with pytest.raises(EditRefused) as info:
        replay_into(doc, [GOOD, BAD, GOOD], "stop")
    assert info.value.index == 1 and not info.value.internal
    assert info.value.message.startswith("Edit 2 (erase) of 3 was refused: Cannot erase %add")
    assert code(doc) == before and doc.history_index == 1 and not doc.can_redo


def test_keep_stops_at_the_first_refusal_and_keeps_the_edits_before_it():
    doc = doc_for("add_mul.py")
    report = replay_into(doc, [GOOD, BAD, GOOD_TOO], "keep")
    assert (report.total, report.applied, not report.complete) == (3, 1, True)
    [refusal] = report.refusals
    assert (refusal.number, refusal.op) == (2, "erase") and "Cannot erase %add" in refusal.error.message
    assert doc.history_index == 1 and doc.find("times") is None


def test_skip_applies_what_applies_and_reports_every_refusal():
    doc = doc_for("add_mul.py")
    calls: list[int] = []
    report = replay_into(doc, [BAD, GOOD, BAD, JournalCommand("Renamed", [GOOD_TOO])], "skip",
                         before_each=calls.append)
    assert calls == [0, 1, 2, 3]
    assert [(r.number, r.op) for r in report.refusals] == [(1, "erase"), (3, "erase")]
    assert report.applied == 2 and doc.history == [doc.history[0], "Renamed"]
    assert doc.find("times") is not None


def test_a_complete_replay_and_a_bad_policy():
    doc = doc_for("add_mul.py")
    assert replay_into(doc, [GOOD, GOOD_TOO], "keep").complete
    with pytest.raises(ValueError):
        replay_into(doc, [GOOD], "ignore")


def test_replay_is_the_stop_policy_on_a_new_document():
    with pytest.raises(EditRefused) as info:
        replay(loaded_example("add_mul.py"), {"format": "fxstudio.edits/1", "edits": [GOOD, BAD]})
    assert info.value.index == 1 and info.value.message.startswith("Edit 2 (erase) of 2 was refused")


def test_edit_refused_declares_internal_and_index():
    exc = EditRefused("no")
    assert exc.internal is False and exc.index is None
    assert EditRefused("no", internal=True, index=3).index == 3
