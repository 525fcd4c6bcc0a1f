"""The running cost of an edited graph (``edits/ledger.py``): kept up to date per edit, it always
equals a count of the graph from scratch, through edits, refusals, undo, redo, a budgeted refresh
and a pass; and the shape results cache answers a repeated call without changing what is computed."""

from __future__ import annotations

import pytest

from fxstudio.core.document import Document
from fxstudio.core.edits.ledger import Ledger, attach
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path


def _doc(example: str) -> Document:
    return Document(load_model(example_path(example)))


def _assert_counted(doc: Document) -> None:
    ledger = attach(doc.edited)
    fresh = Ledger(doc.edited.graph, doc.edited)
    assert (ledger.total_bytes, ledger.total_work) == (fresh.total_bytes, fresh.total_work)
    assert ledger.entries == fresh.entries


def test_the_ledger_follows_edits_undo_and_redo():
    doc = _doc("residual_cnn.py")
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_module",
                    "target": "torch.nn.Conv2d(16, 16, 1, stride=2)", "args": "(%relu,)", "name": "down"})
    ledger = attach(doc.edited)
    base = ledger.base_bytes
    _assert_counted(doc)
    doc.apply_edit({"op": "replace_uses", "node": "relu", "with": "down"})  # every shape below shrinks
    _assert_counted(doc)
    assert ledger.total_bytes < base
    doc.undo()
    _assert_counted(doc)
    doc.redo()
    _assert_counted(doc)
    doc.apply_edit({"op": "erase", "node": "down", "replace_uses_with": "relu"})
    _assert_counted(doc)
    doc.undo()
    doc.undo()
    doc.undo()
    _assert_counted(doc)
    assert (ledger.total_bytes, ledger.total_work) == (ledger.base_bytes, ledger.base_work)


def test_shapes_a_budgeted_refresh_left_unknown_are_settled_by_the_next_edit():
    doc = _doc("residual_cnn.py")
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_module",
                    "target": "torch.nn.Conv2d(16, 16, 1, stride=2)", "args": "(%relu,)", "name": "down"})
    doc.apply_edit({"op": "replace_uses", "node": "relu", "with": "down"})
    doc.undo()
    doc._shapes.budget = 5  # the redo recomputes 5 nodes and leaves the rest unknown
    doc.redo()
    assert not doc.shapes_complete and "fxs_shape" not in doc.find("output").meta
    assert attach(doc.edited).stale
    doc.apply_edit({"op": "insert", "after": "fc", "kind": "call_function", "target": "torch.neg",
                    "args": "(%fc,)", "name": "late"})
    assert doc.find("output").meta["fxs_shape"] == (1, 10) and not attach(doc.edited).stale
    _assert_counted(doc)


def test_a_refused_or_checked_edit_leaves_shapes_ledger_and_names_as_they_were(monkeypatch):
    doc = _doc("relu_add.py")
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.neg",
                    "args": "(%relu,)"})
    ledger = attach(doc.edited)
    before = (dict(ledger.entries), ledger.total_bytes, ledger.total_work)
    metas = {n.name: dict(n.meta) for n in doc.edited.graph.nodes}
    edit = {"op": "insert", "after": "relu", "kind": "call_method", "target": "repeat",
            "args": "(%relu, 1000, 1000)", "reroute": True}
    monkeypatch.setenv("FXSTUDIO_EDIT_BUDGET", "1M")  # 48 MB: refused by the per-node budget
    with pytest.raises(EditRefused, match="rule: bounded result size"):
        doc.apply_edit(edit)
    monkeypatch.setenv("FXSTUDIO_EDIT_BUDGET", "60M")  # the node passes; the graph (+96 MB) does not
    with pytest.raises(EditRefused, match="rule: edit budget"):
        doc.apply_edit(edit)
    monkeypatch.delenv("FXSTUDIO_EDIT_BUDGET")
    assert doc.check_edit(edit) is None
    assert (dict(ledger.entries), ledger.total_bytes, ledger.total_work) == before
    assert {n.name: dict(n.meta) for n in doc.edited.graph.nodes} == metas
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.neg",
                    "args": "(%relu,)"})
    assert doc.find("neg_1") is not None  # the refused and checked edits used up no names
    doc.apply_edit(edit)
    assert doc.find("add").meta["fxs_shape"] == (3000, 4000)  # the reroute's wave, counted
    _assert_counted(doc)


def test_a_pass_is_counted_and_its_undo_too():
    doc = _doc("conv_bn_relu.py")
    doc.edited.eval()
    doc.apply_edit({"op": "run_pass", "name": "fxstudio.passes.fuse_conv_bn"})
    _assert_counted(doc)
    doc.undo()
    _assert_counted(doc)


def test_a_pass_over_3000_nodes_counts_only_what_it_changed_and_undo_redo_evaluate_nothing(tmp_path, monkeypatch):
    """A pass installs a new graph: its unchanged nodes keep their entries, and undo and redo put
    back each graph's counts as it was left, with its own (untouched) shape metadata: no node is
    evaluated again (undo of normalize_args on 3,000 nodes took 1.2 s of fake evaluation)."""
    from fxstudio.core.edits import work
    from fxstudio.testing.residual_mlp import write_residual_mlp

    doc = Document(load_model(write_residual_mlp(tmp_path)))
    edit = {"op": "run_pass", "name": "fxstudio.passes.normalize_args"}
    prepared = doc.prepare_edit(edit)   # (in the window, a worker: it also counts the baseline)
    counted: list = []
    real_cost = work.node_cost
    monkeypatch.setattr("fxstudio.core.edits.ledger.node_cost", lambda *a: counted.append(a[0]) or real_cost(*a))
    result = doc.apply_edit(edit, prepared=prepared)
    assert len(result.changed) >= 2000 and len(counted) <= 2 * len(result.changed) + len(result.added)
    _assert_counted(doc)
    for step in (doc.undo, doc.redo, doc.undo):
        counted.clear()
        step()
        assert doc._shapes.evaluated == [] and counted == []
        _assert_counted(doc)


def test_the_results_cache_gives_what_an_evaluation_gives():
    doc = _doc("relu_add.py")
    for _ in range(3):  # the second and third are answered from the cache
        doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_method", "target": "view",
                        "args": "(%relu, 4, 3)"})
    shapes = [n.meta["fxs_shape"] for n in doc.edited.graph.nodes if n.name.startswith("view")]
    assert shapes == [(4, 3)] * 3
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_method", "target": "view",
                    "args": "(%relu, 2, 6)", "name": "other"})
    assert doc.find("other").meta["fxs_shape"] == (2, 6)  # other literals: another key
