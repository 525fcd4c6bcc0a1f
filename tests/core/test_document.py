"""The document: stable ids, events, deferred recompile, undo/redo/go_to, dirty flag, topological
moves on rewires, and the recorded edit script (save, load, replay)."""

from __future__ import annotations

import json

import pytest
import torch

from fxstudio.core.document import Document, replay
from fxstudio.core.edits.script import load_script, save_script
from fxstudio.core.errors import EditRefused, ScriptError
from fxstudio.core.loading import load_model
from tests.core.edit_helpers import code, doc_for, loaded_example, run


def ids_by_name(gm):
    return {n.name: n.meta["fxs_id"] for n in gm.graph.nodes}


def test_original_and_edited_carry_the_same_stable_ids_and_loaded_is_untouched():
    loaded = loaded_example("sub_chain.py")
    doc = Document(loaded)
    assert ids_by_name(doc.original) == ids_by_name(doc.edited)
    assert len(set(ids_by_name(doc.edited).values())) == len(doc.edited.graph.nodes)
    assert all("fxs_id" not in n.meta for n in loaded.graph_module.graph.nodes)
    sub = doc.find("sub")
    assert doc.node(doc.id_of(sub)) is sub and doc.find("%sub") is sub
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%add"})
    assert "mul = sub * 2" in doc.original.code and "mul = add * 2" in code(doc)


def test_erase_then_undo_restores_the_same_id_name_and_metadata():
    doc = doc_for("conv_bn_relu.py")
    bn = doc.find("bn1")
    bn_id, meta = doc.id_of(bn), dict(bn.meta)
    doc.apply_edit({"op": "erase", "node": "bn1", "replace_uses_with": "conv1"})
    assert doc.node(bn_id) is None
    # a new node cannot take the erased node's id, and gets a fresh one
    doc.apply_edit({"op": "duplicate", "node": "relu1", "name": "relu1_copy"})
    new_id = doc.id_of(doc.find("relu1_copy"))
    assert new_id >= len(doc.original.graph.nodes)
    doc.undo()
    doc.undo()
    restored = doc.node(bn_id)
    assert restored.name == "bn1" and restored.meta == meta
    assert code(doc) == doc.original.code
    doc.redo()
    doc.redo()
    assert doc.id_of(doc.find("relu1_copy")) == new_id


def test_rename_keeps_the_id_and_users_follow():
    doc = doc_for("sub_chain.py")
    add_id = doc.id_of(doc.find("add"))
    doc.apply_edit({"op": "rename", "node": "add", "name": "residual"})
    assert doc.id_of(doc.find("residual")) == add_id and doc.find("add") is None
    assert "residual = x + 10" in code(doc) and "residual - 5" in code(doc)
    doc.undo()
    assert doc.find("add") is not None and code(doc) == doc.original.code


def test_events_report_added_removed_and_changed_ids():
    doc = doc_for("sub_chain.py")
    events = []
    unsubscribe = doc.subscribe(events.append)
    ids = ids_by_name(doc.edited)
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%add"})
    ev = events[-1]
    assert (ev.kind, ev.label) == ("edited", "Set mul.args[0] = %add")
    assert ev.changed >= {ids["mul"], ids["add"], ids["sub"]} and not ev.added and not ev.removed
    doc.apply_edit({"op": "eliminate_dead_code"})
    assert events[-1].removed == {ids["sub"]}
    doc.undo()
    assert (events[-1].kind, events[-1].added) == ("undone", frozenset({ids["sub"]}))
    doc.redo()
    assert (events[-1].kind, events[-1].removed) == ("redone", frozenset({ids["sub"]}))
    doc.apply_edit({"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu", "args": "(%add,)"})
    assert events[-1].added == {doc.id_of(doc.find("relu"))}
    doc.mark_saved()
    assert events[-1].kind == "saved"
    unsubscribe()
    doc.undo()
    assert events[-1].kind == "saved"


def test_recompile_is_deferred_until_the_module_is_used():
    doc = doc_for("add_mul.py")
    compiled = doc.edited.code
    for value in ("3", "4", "5"):
        doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": value})
    assert doc.stale and doc.edited.code == compiled  # no recompile per edit
    (x,) = doc.loaded.example_inputs
    torch.testing.assert_close(run(doc), (x + 5) * 5)  # module() recompiled once
    assert not doc.stale and "add * 5" in doc.edited.code


def test_go_to_history_and_dirty_flag():
    doc = doc_for("add_mul.py")
    for value in ("3", "4", "5"):
        doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": value})
    assert doc.history == ["Set mul.args[1] = 3", "Set mul.args[1] = 4", "Set mul.args[1] = 5"]
    assert doc.dirty and doc.can_undo and not doc.can_redo
    doc.mark_saved()
    assert not doc.dirty
    events = []
    doc.subscribe(events.append)
    doc.go_to(1)
    assert doc.history_index == 1 and "add * 3" in code(doc) and doc.dirty and doc.can_redo
    assert len(events) == 1 and events[0].kind == "undone"
    doc.go_to(3)
    assert not doc.dirty and "add * 5" in code(doc)
    doc.go_to(0)
    assert code(doc) == doc.original.code and not doc.can_undo
    doc.undo()  # nothing to undo: no-op
    with pytest.raises(EditRefused, match="outside 0..3"):
        doc.go_to(7)
    doc.go_to(2)
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "9"})  # drops the redo branch
    assert doc.history == ["Set mul.args[1] = 3", "Set mul.args[1] = 4", "Set mul.args[1] = 9"]
    assert doc.dirty and not doc.can_redo


def test_check_edit_leaves_no_trace_in_later_names():
    doc = doc_for("add_mul.py")
    insert = {"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu", "args": "(%add,)"}
    assert doc.check_edit(insert) is None
    assert doc.find("relu") is None and doc.history == []
    doc.apply_edit(insert)
    assert doc.find("relu") is not None


def test_rewire_to_a_later_node_moves_the_fewest_nodes(tmp_path):
    model = tmp_path / "later.py"
    model.write_text(
        "import torch\nfrom torch import nn\n\n"
        "class M(nn.Module):\n"
        "    def forward(self, x):\n"
        "        a = x + 1\n        b = a * 3\n        c = x * 2\n        d = torch.relu(c)\n        return b + d\n\n"
        "def example_inputs():\n    return (torch.linspace(-2, 2, 6),)\n"
    )
    doc = Document(load_model(model))
    (x,) = doc.loaded.example_inputs
    order = lambda: [n.name for n in doc.edited.graph.nodes]  # noqa: E731
    before = order()
    # a = c + 1: c follows a; moving c up (1 node) beats moving a, b down (2 nodes)
    doc.apply_edit({"op": "set_arg", "node": "add", "key": 0, "value": "%mul_1"})
    assert order() == ["x", "mul_1", "add", "mul", "relu", "add_1", "output"]
    doc.edited.graph.lint()
    torch.testing.assert_close(run(doc), (2 * x + 1) * 3 + torch.relu(2 * x))
    doc.undo()
    assert order() == before and code(doc) == doc.original.code
    # b = relu + 0: relu needs mul_1 too (2 nodes up), b is alone (1 node down)
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 0, "value": "%relu"})
    assert order() == ["x", "add", "mul_1", "relu", "mul", "add_1", "output"]
    doc.edited.graph.lint()
    torch.testing.assert_close(run(doc), torch.relu(2 * x) * 3 + torch.relu(2 * x))
    doc.undo()
    assert order() == before


def test_edit_script_save_load_and_replay_give_identical_code(tmp_path):
    loaded = loaded_example("conv_bn_relu.py")
    doc = Document(loaded)
    doc.apply_edit({"op": "erase", "node": "bn1", "replace_uses_with": "conv1"})
    doc.apply_edits([
        {"op": "insert", "after": "relu2", "kind": "call_module", "target": "torch.nn.Dropout(p=0.1)",
         "args": "(%relu2,)"},
        {"op": "set_arg", "node": "output", "key": 0, "value": "%dropout"},
    ])
    doc.apply_edit({"op": "rename", "node": "conv2", "name": "second_conv"})
    doc.apply_edit({"op": "insert", "before": "output", "kind": "call_function", "target": "torch.relu",
                    "args": "(%second_conv,)"})
    doc.undo()  # undone edits are not recorded
    script = doc.edit_script()
    assert [e["op"] for e in script["edits"]] == ["erase", "insert", "set_arg", "rename"]
    path = tmp_path / "edits.json"
    save_script(path, script)
    assert load_script(path) == json.loads(path.read_text()) == script
    again = replay(loaded_example("conv_bn_relu.py"), load_script(path))
    assert code(again) == code(doc)
    assert again.edit_script() == script and len(again.history) == 4  # the compound edit replays as two
    torch.testing.assert_close(run(again), run(doc))


def test_replay_names_the_refused_edit():
    script = {"format": "fxstudio.edits/1", "edits": [
        {"op": "set_arg", "node": "mul", "key": 1, "value": "10"},
        {"op": "erase", "node": "add"},
    ]}
    with pytest.raises(EditRefused) as info:
        replay(loaded_example("add_mul.py"), script)
    assert info.value.index == 1
    assert info.value.message.startswith("Edit 2 (erase) of 2 was refused: Cannot erase %add")


@pytest.mark.parametrize("content,reason", [
    ('{"format": "fxstudio.edits/2", "edits": []}', "Unsupported edit script format 'fxstudio.edits/2'"),
    ('{"edits": []}', "Unsupported edit script format None"),
    ('{"format": "fxstudio.edits/1", "edits": [{"op": "explode"}]}', "Edit 1: Unknown edit op 'explode'"),
    ('{"format": "fxstudio.edits/1", "edits": [{"op": "erase", "node": "a", "colour": 1}]}',
     "Edit 1: Unknown field(s) 'colour'"),
    ('{"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "a", "key": 1.5, "value": "1"}]}',
     "'key' must be an int"),
    ('{"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "a", "key": 1, "value": 1}]}',
     "field 'value' must be a string"),
    ('{"format": "fxstudio.edits/1", "edits": {}}', "must be a list"),
    ('{"format": "fxstudio.edits/1", "edits": [], "extra": 1}', "Unknown top-level field(s) in the edit script: 'extra'"),
    ('{"format": "fxstudio.edits/1", "edits": [', "is not valid JSON"),
])
def test_load_script_is_strict(tmp_path, content, reason):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ScriptError) as info:
        load_script(path)
    assert reason in info.value.message
    assert info.value.exit_code == 2


def test_load_script_missing_file(tmp_path):
    with pytest.raises(ScriptError, match="Cannot read the edit script"):
        load_script(tmp_path / "none.json")


def test_shapes_follow_edits_and_undo():
    doc = doc_for("view_reshape.py")
    view, out = doc.find("view"), doc.find("output")
    view_id, out_id = doc.id_of(view), doc.id_of(out)
    events = []
    doc.subscribe(events.append)
    assert view.meta["fxs_shape"] == (6, 1)
    doc.apply_edit({"op": "set_arg", "node": "view", "key": 2, "value": "2"})
    assert view.meta["fxs_shape"] == (3, 2) and out.meta["fxs_shape"] == (3, 2)
    assert {view_id, out_id} <= events[-1].changed
    doc.undo()
    assert view.meta["fxs_shape"] == (6, 1) and out.meta["fxs_shape"] == (6, 1)
    # an impossible shape: no stale shape is shown, and the reason is kept for the Problems dock
    doc.apply_edit({"op": "set_arg", "node": "view", "key": 1, "value": "4"})
    assert "fxs_shape" not in view.meta and "fxs_shape" not in out.meta
    assert "invalid for input of size 6" in view.meta["fxs_shape_error"]
    doc.undo()
    assert view.meta["fxs_shape"] == (6, 1) and "fxs_shape_error" not in view.meta


def test_inserted_module_gets_its_shape_and_a_large_wave_is_budgeted():
    doc = doc_for("residual_cnn.py")
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_module",
                    "target": "torch.nn.Conv2d(16, 16, 1, stride=2)", "args": "(%relu,)", "name": "down"})
    assert doc.find("down").meta["fxs_shape"] == (1, 16, 16, 16)
    assert doc.find("down").meta["fxs_dtype"] == "float32"
    assert doc.shapes_complete
    # feeding the downsampled map into layer1 changes every shape below it
    doc.apply_edit({"op": "replace_uses", "node": "relu", "with": "down"})
    assert doc.find("output").meta["fxs_shape"] == (1, 10)
    assert doc.find("layer1_0_conv1").meta["fxs_shape"] == (1, 16, 16, 16)
    assert doc.find("layer2_2_relu_1").meta["fxs_shape"] == (1, 32, 8, 8)
    assert doc.shapes_complete
    doc.undo()
    assert doc.find("layer2_2_relu_1").meta["fxs_shape"] == (1, 32, 16, 16)
    doc._shapes.budget = 5  # a tiny per-edit budget: the end of the wave is left unknown, not stale
    doc.redo()
    assert not doc.shapes_complete and "fxs_shape" not in doc.find("output").meta
    doc.refresh_shapes()
    assert doc.find("output").meta["fxs_shape"] == (1, 10)
    assert doc.shapes_complete and doc.find("layer2_2_relu_1").meta["fxs_shape"] == (1, 32, 8, 8)


def test_export_traced_graph_edits_replay_and_undo():
    loaded = load_model(loaded_example("add_mul.py").path, tracer="export")
    doc = Document(loaded)
    (x,) = loaded.example_inputs
    doc.apply_edit({"op": "set_target", "node": "mul", "target": "torch.ops.aten.sub.Tensor"})
    doc.apply_edit({"op": "insert", "after": "mul", "kind": "call_function", "target": "torch.ops.aten.neg.default",
                    "args": "(%mul,)"})
    assert doc.history[-1] == "Insert neg_default after mul"
    doc.apply_edit({"op": "replace_uses", "node": "mul", "with": "neg_default"})
    torch.testing.assert_close(run(doc), -((x + 5) - 2))
    assert doc.find("neg_default").meta["fxs_shape"] == (2, 3)
    assert code(replay(loaded, doc.edit_script())) == code(doc)
    doc.go_to(0)
    assert code(doc) == doc.original.code


def test_an_inserted_node_joins_the_module_its_anchor_runs_in():
    doc = doc_for("residual_cnn.py")
    # Next to a call of a leaf submodule: in that submodule's parent block, not inside the BatchNorm.
    doc.apply_edit({"op": "insert", "after": "layer1_0_bn2", "kind": "call_function",
                    "target": "torch.nn.functional.gelu", "args": "(%layer1_0_bn2,)", "name": "g"})
    g = doc.find("g")
    assert g.meta["fxs_module_path"] == "layer1.0"
    assert g.meta["fxs_module_stack"] == [("layer1", "Sequential"), ("layer1.0", "BasicBlock")]
    # Next to a function call inside a block: in that block.
    doc.apply_edit({"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu",
                    "args": "(%add,)", "name": "r"})
    assert doc.find("r").meta["fxs_module_path"] == "layer1.0"
    # Next to a top-level leaf module call: top level.
    doc.apply_edit({"op": "insert", "after": "fc", "kind": "call_function", "target": "torch.relu",
                    "args": "(%fc,)", "name": "top"})
    assert doc.find("top").meta["fxs_module_path"] == "" and doc.find("top").meta["fxs_module_stack"] == []
