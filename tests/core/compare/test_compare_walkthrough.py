"""The classic walk-through edits on the bundled examples, made through the Document as the GUI does:
the first divergent node is the edited one (or nothing diverges for an equivalent rewrite)."""

import functools

import pytest

from fxstudio.core.compare import compare_models
from fxstudio.core.document import Document
from fxstudio.core.compare import graph_diff
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path

from tests.core.edit_helpers import with_huge_node


def run(doc, **kw):
    kw.setdefault("repeats", 1)
    return compare_models(doc.loaded.module, doc.original, doc.module(), doc.loaded.example_inputs, **kw)


@functools.lru_cache(maxsize=None)
def loaded(name):
    """Each example is loaded once per process: a Document copies the graph and never changes it."""
    return load_model(example_path(name))


def open_doc(name):
    return Document(loaded(name))


@pytest.mark.parametrize("example, edits, first", [
    ("add_mul.py", [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}], "mul"),
    ("clamp.py", [{"op": "set_arg", "node": "clamp", "key": "max", "value": "10.0"}], "clamp"),
    ("sub_chain.py", [{"op": "erase", "node": "sub", "replace_uses_with": "add"}], "mul"),
    ("sub_chain.py", [{"op": "set_target", "node": "sub", "target": "operator.add"}], "sub"),
    ("relu_add.py", [{"op": "set_target", "match": "torch.relu", "target": "relu_add.my_relu"}], "relu"),
    ("add_mul.py", [{"op": "insert", "before": "mul", "kind": "call_function", "target": "torch.relu",
                     "args": "(%add,)", "kwargs": "{}", "name": "relu"},
                    {"op": "set_arg", "node": "mul", "key": 0, "value": "%relu"}], None),
    ("clamp.py", [{"op": "del_kwarg", "node": "clamp", "key": "max"}], "clamp"),
    ("sub_chain.py", [{"op": "replace_uses", "node": "sub", "with": "add"}], "mul"),
    ("two_linear.py", [{"op": "set_arg", "node": "add", "key": 1, "value": "%linear1"}], "add"),
    ("conv_bn_relu.py", [{"op": "set_target", "node": "relu1", "target": "torch.nn.Sigmoid()"}], "relu1"),
])
def test_first_divergence_is_the_edited_node(example, edits, first):
    doc = open_doc(example)
    for edit in edits:
        doc.apply_edit(edit)
    report = run(doc)
    assert report.error is None
    edited_ids = graph_diff(doc.original, doc.edited).changed
    if first is None:
        # relu of x + 5 with x >= 0 changes nothing: the inserted node has no counterpart, nothing diverges
        assert report.first_divergence is None and report.all_close
        assert [n.name for n in report.nodes if n.status == "no_counterpart"] == ["relu"]
        return
    assert report.first_divergence.name == first
    assert report.first_divergence.node_id in edited_ids  # the node whose op or arguments the edit changed
    assert not report.all_close
    before = [n for n in report.nodes if n.index < report.first_divergence.index]
    assert all(n.status in ("equal", "no_counterpart") for n in before)


@pytest.mark.parametrize("example, edits", [
    ("sub_chain.py", [{"op": "rename", "node": "add", "name": "residual"}]),
    ("sub_chain.py", [{"op": "duplicate", "node": "sub", "name": "sub_copy"}]),
    ("sub_chain.py", [{"op": "duplicate", "node": "sub", "name": "sub_copy"}, {"op": "eliminate_dead_code"}]),
])
def test_edits_that_change_no_value_diverge_nowhere(example, edits):
    doc = open_doc(example)
    for edit in edits:
        doc.apply_edit(edit)
    report = run(doc)
    assert report.first_divergence is None and report.all_close and report.error is None
    assert all(n.shared or n.status == "no_counterpart" for n in report.nodes)
    inserted = [n.name for n in report.nodes if n.status == "no_counterpart"]
    assert inserted == (["sub_copy"] if len(edits) == 1 and edits[0]["op"] == "duplicate" else [])


def test_equivalent_rewrite_view_to_reshape_diverges_nowhere():
    doc = open_doc("view_reshape.py")
    doc.apply_edit({"op": "set_target", "node": "view", "target": "reshape"})
    report = run(doc)
    assert graph_diff(doc.original, doc.edited).changed == {doc.id_of(doc.find("view"))}
    assert report.first_divergence is None and report.all_close
    assert all(o.max_abs == 0.0 for o in report.outputs)


def test_shape_breaking_edit_names_the_node():
    doc = open_doc("residual_cnn.py")
    doc.apply_edit({"op": "insert", "after": "flatten", "kind": "call_method", "target": "reshape",
                    "args": "(%flatten, -1, 7)", "name": "bad_reshape"})
    doc.apply_edit({"op": "set_arg", "node": "fc", "key": 0, "value": "%bad_reshape"})
    report = run(doc)
    assert report.error is not None and report.error.node_name == "bad_reshape"
    assert report.error.node_id == doc.id_of(doc.find("bad_reshape"))
    assert "RuntimeError" in report.error.message
    assert "edited graph raised an error at node bad_reshape" in report.error.describe()


def test_identical_transformer_in_half_precision_has_no_divergence():
    doc = open_doc("transformer_block.py")
    report = run(doc, dtype="float16")
    assert report.first_divergence is None and report.error is None
    assert all(o.max_abs == 0.0 and o.dtype == "float16" for o in report.outputs)
    assert len(report.divergence_by_id) == len(doc.original.graph.nodes)


def test_out_of_memory_in_an_inserted_node_is_reported_not_raised():
    doc = open_doc("add_mul.py")
    report = compare_models(doc.loaded.module, doc.original, with_huge_node(doc.module()), doc.loaded.example_inputs)
    assert report.error.out_of_memory and report.error.node_name == "huge"
    assert "ran out of memory at node huge" in report.error.describe()


def test_graph_diff_names_added_removed_changed_and_renamed_nodes():
    doc = open_doc("sub_chain.py")
    ids = {n.name: doc.id_of(n) for n in doc.original.graph.nodes}
    assert graph_diff(doc.original, doc.edited).empty
    doc.apply_edit({"op": "rename", "node": "add", "name": "residual"})
    diff = graph_diff(doc.original, doc.edited)
    assert diff.empty and diff.renamed == {ids["add"]}
    doc.apply_edit({"op": "erase", "node": "sub", "replace_uses_with": "residual"})
    doc.apply_edit({"op": "insert", "after": "mul", "kind": "call_function", "target": "torch.neg",
                    "args": "(%mul,)", "name": "neg"})
    diff = graph_diff(doc.original, doc.edited)
    assert diff.removed == {ids["sub"]} and diff.changed == {ids["mul"]}
    assert diff.added == {doc.id_of(doc.find("neg"))}
    assert diff.to_json()["removed"] == [ids["sub"]]
    doc.undo()
    doc.undo()
    assert graph_diff(doc.original, doc.edited).changed == frozenset()
