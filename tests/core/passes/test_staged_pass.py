"""A pass staged in a worker thread and committed on another (the window's way, issue #25): the
same command, event, undo and redo as ``apply_edit``; a stale or discarded stage changes nothing."""

from __future__ import annotations

import threading

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.testing.residual_mlp import write_residual_mlp

NORMALIZE = {"op": "run_pass", "name": "fxstudio.passes.normalize_args"}


def _doc(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    return Document(load_model(str(write_residual_mlp(tmp_path, blocks=20))))


def _in_thread(fn):
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(value=fn()))
    worker.start()
    worker.join()
    return box["value"]


def test_a_staged_pass_commits_as_the_same_command_as_apply_edit(tmp_path):
    staged_doc, plain_doc = _doc(tmp_path / "a"), _doc(tmp_path / "b")
    events = []
    staged_doc.subscribe(events.append)
    staged = _in_thread(lambda: staged_doc.stage_edit(NORMALIZE, staged_doc.prepare_edit(NORMALIZE)))
    assert events == [] and not staged_doc.can_undo   # staged: no command, no event yet
    result = staged_doc.commit_staged(staged)
    expected = plain_doc.apply_edit(NORMALIZE)
    assert [e.kind for e in events] == ["edited"] and result.label == expected.label
    assert (len(result.changed), len(result.added), len(result.removed)) == \
        (len(expected.changed), len(expected.added), len(expected.removed)) and result.changed
    assert staged_doc.edited.code == plain_doc.edited.code
    x = torch.randn(2, 16)
    torch.testing.assert_close(staged_doc.module()(x), plain_doc.module()(x))
    staged_doc.undo()
    assert staged_doc.module().code == plain_doc.original.code
    staged_doc.redo()
    assert staged_doc.module().code == plain_doc.edited.code


def test_a_discarded_or_stale_stage_changes_nothing(tmp_path):
    doc = _doc(tmp_path)
    before = doc.edited.code
    staged = doc.stage_edit(NORMALIZE, doc.prepare_edit(NORMALIZE))
    assert doc.edited.code != before
    doc.discard_staged(staged)   # Cancel while it was installed
    assert doc.module().code == before and not doc.can_undo
    stale = doc.prepare_edit(NORMALIZE)
    doc.apply_edit({"op": "set_arg", "node": "add", "key": 1, "value": "2.0"})
    with pytest.raises(EditRefused, match="changed while the pass ran"):
        doc.stage_edit(NORMALIZE, stale)
