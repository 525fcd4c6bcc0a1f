"""Bulk edits (issue #14): ``set_target`` with ``match`` naming an ``nn.Module`` class, the keyword
arguments a function swap drops, and ``insert`` with ``after_each`` / ``before_each``; each one edit,
one undo step, on the example models and through ``fxstudio apply``."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from fxstudio.core.document import Document, replay
from fxstudio.core.edits import load_script, new_script, save_script, validate_script
from fxstudio.core.errors import EditRefused, ScriptError
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path

from tests.core.edit_helpers import code, doc_for, loaded_example, run

RELU_TO_GELU = {"op": "set_target", "match": "torch.nn.ReLU", "target": "torch.nn.GELU()"}
CLONE_AFTER_CONVS = {"op": "insert", "after_each": {"match": "torch.nn.Conv2d"}, "kind": "call_function",
                     "target": "torch.clone", "args": "(%@,)", "reroute": True}
BLOCK_CONVS = r"layer[0-9]+_[0-9]+_conv[0-9]"

FUNCTIONAL = '''
"""F.relu recorded with inplace=False (and once with inplace=True), and a leaf module class."""
import torch
import torch.nn.functional as F
from torch import nn


class Scale(nn.Module):
    def forward(self, x):
        return x * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.scale = Scale()
        self.scale2 = Scale()

    def forward(self, x):
        y = F.relu(self.lin(x))
        return self.scale2(self.scale(y)) + F.relu(x){tail}


def observe(x):
    """An observer: passes its input on."""
    return x


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 4),)
'''


def _functional(tmp_path, inplace_true: bool = False) -> Document:
    path = tmp_path / "functional.py"
    path.write_text(FUNCTIONAL.replace("{tail}", " + F.relu(x, inplace=True)" if inplace_true else ""))
    return Document(load_model(f"{path}::Net", leaf_modules=("Scale",)))


def _modules(gm: nn.Module) -> dict[str, int]:
    return {name: id(m) for name, m in gm.named_modules()}


def _kinds(gm: nn.Module, cls: type) -> list[str]:
    return [name for name, m in gm.named_modules() if type(m) is cls]


# ------------------------------------------------------------------------- set_target on a class


def test_relu_to_gelu_is_one_edit_with_a_fresh_module_per_site_and_undo_restores_everything():
    doc = doc_for("residual_cnn.py")
    gm = doc.module()
    before_code, before_modules, before_out = code(doc), _modules(gm), run(doc)
    sites = [n.name for n in gm.graph.nodes if n.op == "call_module" and type(gm.get_submodule(n.target)) is nn.ReLU]
    assert len(sites) == 13  # the stem's relu, and two calls of each of the six blocks' shared relu

    result = doc.apply_edit(RELU_TO_GELU)
    assert doc.history == [result.label]
    assert "13 nodes" in result.label and "7 unused submodules dropped" in result.label
    assert doc.edit_script()["edits"] == [{**RELU_TO_GELU, "sites": 13}]
    gm = doc.module()
    assert _kinds(gm, nn.ReLU) == [] and len(_kinds(gm, nn.GELU)) == 13
    calls = [gm.get_submodule(doc.find(name).target) for name in sites]
    assert len({id(m) for m in calls}) == 13  # a fresh module per site, also for a module called twice
    assert {n.name for n in gm.graph.nodes} >= set(sites) and not result.added and not result.removed
    reference = copy.deepcopy(loaded_example("residual_cnn.py").module)
    for _, parent in list(reference.named_modules()):
        for key, child in list(parent.named_children()):
            if type(child) is nn.ReLU:
                setattr(parent, key, nn.GELU())
    with torch.no_grad():
        assert torch.equal(run(doc), reference(*doc.loaded.example_inputs))

    # the loaded model and the original are untouched: their blocks still hold their ReLUs
    for shared in (doc.loaded.graph_module, doc.original):
        assert len(_kinds(shared, nn.ReLU)) == 7 and not _kinds(shared, nn.GELU)

    doc.undo()
    assert code(doc) == before_code and _modules(doc.module()) == before_modules
    assert torch.equal(run(doc), before_out)
    doc.redo()
    assert _kinds(doc.module(), nn.ReLU) == [] and len(_kinds(doc.module(), nn.GELU)) == 13
    doc.undo()
    assert list(dict(doc.module().named_modules())) == list(before_modules)  # the same order, too


def test_swapping_a_class_of_the_model_file_and_keeping_a_module_still_used(tmp_path):
    doc = _functional(tmp_path)
    doc.apply_edit({"op": "insert", "after": "x", "kind": "get_attr", "target": "scale", "name": "scale_ref"})
    result = doc.apply_edit({"op": "set_target", "match": "model_file.Scale", "target": "torch.nn.Identity()"})
    assert "2 nodes" in result.label and "1 unused submodule dropped" in result.label
    gm = doc.module()
    assert hasattr(gm, "scale") and not hasattr(gm, "scale2")  # scale is still read by a get_attr node
    assert doc.edit_script()["edits"][-1] == {"op": "set_target", "match": "model_file.Scale",
                                              "target": "torch.nn.Identity()", "sites": 2}
    doc.undo()
    assert hasattr(doc.module(), "scale2")
    # the file's stem (here also the class's module) selects the same class
    result = doc.apply_edit({"op": "set_target", "match": "functional.Scale", "target": "torch.nn.Tanh()"})
    assert "2 nodes" in result.label and len(_kinds(doc.module(), nn.Tanh)) == 2


def test_a_module_class_match_selects_exact_classes_only():
    doc = doc_for("residual_cnn.py")
    # BatchNorm2d nodes are not swapped by a match on its base class's name
    with pytest.raises(EditRefused, match="No node calls a 'torch.nn.Module' submodule; nothing to swap"):
        doc.apply_edit({"op": "set_target", "match": "torch.nn.Module", "target": "torch.nn.Identity()"})
    result = doc.apply_edit({"op": "set_target", "match": "torch.nn.modules.batchnorm.BatchNorm2d",
                             "target": "torch.nn.Identity()"})
    assert "14 nodes" in result.label and not _kinds(doc.module(), nn.BatchNorm2d)


@pytest.mark.parametrize("edit, message", [
    ({"op": "set_target", "match": "torch.nn.GELU", "target": "torch.nn.ReLU()"},
     "No node calls a 'torch.nn.GELU' submodule; nothing to swap."),
    ({"op": "set_target", "match": "torch.nn.ReLU", "target": "torch.relu"},
     "Cannot swap %relu: The module has no submodule 'torch.relu'. (a module class is swapped for a constructor"),
    ({"op": "set_target", "match": "torch.nn.ReLU", "target": "torch.nn.Linear(100000, 100000)"},
     "Cannot swap %relu: 'torch.nn.Linear(100000, 100000)' is not allowed as a target (rule: new submodule size"),
    ({"op": "set_target", "match": "torch.nn.ReLU", "target": "torch.nn.GELU()", "sites": 0},
     "'sites' (recorded) must be a count of nodes"),
    ({"op": "set_target", "match": "torch.nn._Private", "target": "torch.nn.GELU()"},
     "rule: no private or dunder names"),
    ({"op": "set_target", "match": "torch.nn.ReLU()", "target": "torch.nn.GELU()"}, "rule: dotted identifier path"),
])
def test_module_class_swaps_that_are_refused_change_nothing(edit, message):
    doc = doc_for("residual_cnn.py")
    before, modules = code(doc), _modules(doc.module())
    with pytest.raises(EditRefused) as info:
        doc.apply_edit(edit)
    assert message in info.value.message and "\n" not in info.value.message
    assert code(doc) == before and _modules(doc.module()) == modules and doc.history == []


# ------------------------------------------------------------------------- dropped keywords


def test_relu_to_gelu_drops_the_recorded_default_inplace(tmp_path):
    doc = _functional(tmp_path)
    relus = [n for n in doc.module().graph.nodes if n.op == "call_function" and "relu" in n.name]
    assert [dict(n.kwargs) for n in relus] == [{"inplace": False}] * 2
    before, out = code(doc), run(doc)
    edit = {"op": "set_target", "match": "torch.nn.functional.relu", "target": "torch.nn.functional.gelu"}
    result = doc.apply_edit(edit)
    assert "2 nodes" in result.label and "dropped inplace=False" in result.label
    assert doc.edit_script()["edits"] == [{**edit, "dropped_kwargs": ["inplace"]}]
    assert "inplace" not in code(doc) and code(doc).count("gelu(") == 2
    x = doc.loaded.example_inputs[0]
    lin = doc.module().lin
    with torch.no_grad():
        assert torch.allclose(run(doc), torch.nn.functional.gelu(lin(x)) * 4 + torch.nn.functional.gelu(x))
    doc.undo()
    assert code(doc) == before and torch.equal(run(doc), out)
    # the one-node form drops it too, and the replayed record applies again
    single = doc.apply_edit({"op": "set_target", "node": "relu", "target": "torch.nn.functional.gelu"})
    assert "dropped inplace=False" in single.label
    again = replay(doc.loaded, doc.edit_script())
    assert code(again) == code(doc)


def test_a_keyword_with_another_value_is_still_refused_by_name(tmp_path):
    doc = _functional(tmp_path, inplace_true=True)
    before = code(doc)
    with pytest.raises(EditRefused, match=r"Cannot swap %relu_2: .*gelu does not accept the keyword 'inplace'"):
        doc.apply_edit({"op": "set_target", "match": "torch.nn.functional.relu", "target": "torch.nn.functional.gelu"})
    assert code(doc) == before and doc.history == []


def test_a_keyword_the_new_target_accepts_is_kept(tmp_path):
    doc = _functional(tmp_path)
    result = doc.apply_edit({"op": "set_target", "match": "torch.nn.functional.relu",
                             "target": "torch.nn.functional.relu6"})
    assert "dropped" not in result.label and code(doc).count("inplace = False") == 2
    assert "dropped_kwargs" not in doc.edit_script()["edits"][0]


# ------------------------------------------------------------------------- insert after_each


def test_an_observer_after_every_conv_is_one_edit_and_undo_restores_the_graph():
    doc = doc_for("residual_cnn.py")
    before, out = code(doc), run(doc)
    result = doc.apply_edit(CLONE_AFTER_CONVS)
    assert "(14 nodes)" in result.label and len(result.added) == 14 and doc.history == [result.label]
    gm = doc.module()
    for node in gm.graph.nodes:
        if node.op == "call_module" and type(gm.get_submodule(node.target)) is nn.Conv2d:
            (user,) = node.users  # the anchor's only user is its observer, which every old user now reads
            assert user.target is torch.clone and user.args == (node,) and user.users
    assert doc.edit_script()["edits"] == [{**CLONE_AFTER_CONVS, "kwargs": "{}", "sites": 14}]
    assert torch.equal(run(doc), out)
    doc.undo()
    assert code(doc) == before
    doc.redo()
    assert code(doc).count("torch.clone") == 14


def test_a_model_file_observer_after_each_conv_through_a_module_class_match(tmp_path):
    path = tmp_path / "observed.py"
    path.write_text(example_path("conv_bn_relu.py").read_text()
                    + "\n\ndef observe(x):\n    \"\"\"Pass the value on.\"\"\"\n    return x\n")
    doc = Document(load_model(path))
    out = run(doc)
    edit = {"op": "insert", "after_each": {"match": "torch.nn.Conv2d"}, "kind": "call_function",
            "target": "model.observe", "args": "(%@,)", "reroute": True}
    with pytest.raises(EditRefused, match="rule: allowed packages only"):
        doc.apply_edit(edit)  # the contract's "model.observe" is the model file's module name; here it is
    result = doc.apply_edit({**edit, "target": "observed.observe"})
    assert "(2 nodes)" in result.label
    assert code(doc).count("observed_observe") == 2 and torch.equal(run(doc), out)


def test_regex_anchors_and_a_module_per_site():
    doc = doc_for("residual_cnn.py")
    edit = {"op": "insert", "after_each": {"regex": BLOCK_CONVS}, "kind": "call_module",
            "target": "torch.nn.Dropout(p=0.5)", "args": "(%@,)", "reroute": True}
    result = doc.apply_edit(edit)
    assert "(12 nodes)" in result.label and f"/{BLOCK_CONVS}/" in result.label  # not conv1, not downsample
    drops = _kinds(doc.module(), nn.Dropout)
    assert len(drops) == 12 and not doc.module().training
    assert doc.edit_script()["edits"][0]["target"] == "torch.nn.Dropout(p=0.5)"
    doc.undo()
    assert not _kinds(doc.module(), nn.Dropout)


def test_before_each_and_kwargs_with_the_anchor():
    doc = doc_for("residual_cnn.py")
    result = doc.apply_edit({"op": "insert", "before_each": {"regex": "add(_[0-9])?"}, "kind": "call_function",
                             "target": "torch.relu", "args": "(%x,)"})
    assert "(6 nodes)" in result.label
    for node in doc.module().graph.nodes:
        if node.name.startswith("add"):
            assert node.prev.target is torch.relu
    doc.undo()
    result = doc.apply_edit({"op": "insert", "after_each": {"match": "operator.add"}, "kind": "call_function",
                             "target": "torch.clamp", "args": "()", "kwargs": "{'input': %@, 'min': 0.0}"})
    assert "(6 nodes)" in result.label
    clamps = [n for n in doc.module().graph.nodes if n.target is torch.clamp]
    assert [n.kwargs["input"].name for n in clamps] == ["add", "add_1", "add_2", "add_3", "add_4", "add_5"]


def test_the_anchor_reference_also_works_for_one_anchor_and_stays_text_in_strings():
    doc = doc_for("add_mul.py")
    doc.apply_edit({"op": "insert", "after": "add", "kind": "call_function", "target": "torch.neg", "args": "(%@,)"})
    neg = doc.find("neg")
    assert neg.args == (doc.find("add"),)
    doc.apply_edit({"op": "insert", "after_each": {"match": "torch.neg"}, "kind": "call_function",
                    "target": "getattr", "args": "(%@, 'shape')"})
    assert doc.edit_script()["edits"][0]["args"] == "(%@,)"


@pytest.mark.parametrize("edit, message", [
    ({"after_each": {"match": "torch.nn.GELU"}}, "No node calls a 'torch.nn.GELU' submodule; nothing to insert."),
    ({"after_each": {"match": "torch.sigmoid"}}, "No node calls 'torch.sigmoid'; nothing to insert."),
    ({"after_each": {"regex": "nothing_[0-9]+"}}, "No node name matches the regex 'nothing_[0-9]+'"),
    ({"after_each": {"regex": "conv("}}, "'after_each': the regex 'conv(' does not compile: missing ), "
                                         "unterminated subpattern at position 4."),
    ({"after_each": {"regex": "c" * 201}}, "the regex has 201 characters; at most 200 are allowed."),
    ({"after_each": {"regex": "(a+)+$"}}, "repeats a group that itself repeats"),
    ({"after_each": {"regex": "conv1", "match": "torch.nn.Conv2d"}}, "'after_each' must be an object with one field"),
    ({"after_each": "conv1"}, "'after_each' must be an object with one field"),
    ({"after_each": {"match": ""}}, "\"match\" must be non-empty text"),
    ({"after_each": {"match": "torch.nn.Conv2d"}, "name": "obs"}, "'name' names one node"),
    ({"before_each": {"match": "torch.nn.Conv2d"}, "reroute": True}, "'reroute' moves the anchor's users"),
    ({"before_each": {"match": "torch.nn.Conv2d"}}, "is defined after the insertion point (before %conv1)"),
    ({"after_each": {"regex": "output|fc"}}, "Cannot insert after the output node"),
    ({"after_each": {"match": "torch.nn.Conv2d"}, "after": "conv1"}, "insert needs exactly one of"),
    ({"after_each": {"match": "torch.nn.Conv2d"}, "args": "(%@, %nope)"},
     "Cannot parse '(%@, %nope)': there is no node named %nope in the graph."),
])
def test_bulk_inserts_that_are_refused_change_nothing(edit, message):
    doc = doc_for("residual_cnn.py")
    before = code(doc)
    full = {"op": "insert", "kind": "call_function", "target": "torch.clone", "args": "(%@,)", **edit}
    with pytest.raises(EditRefused) as info:
        doc.apply_edit(full)
    assert message in info.value.message and "\n" not in info.value.message
    assert code(doc) == before and doc.history == []


# ------------------------------------------------------------------------- scripts and the CLI


def test_scripts_check_the_new_fields_before_the_model_opens():
    base = {"op": "insert", "kind": "call_function", "target": "torch.clone", "args": "(%@,)"}
    validate_script(new_script([{**base, "after_each": {"regex": "conv[0-9]"}, "sites": 3},
                                {**RELU_TO_GELU, "sites": 13}, {**RELU_TO_GELU, "dropped_kwargs": ["inplace"]}]))
    for bad, message in [({**base, "after_each": {"regex": "("}}, "does not compile"),
                         ({**base, "before_each": ["conv1"]}, "must be an object"),
                         ({**base, "after_each": {"match": "x"}, "sites": True}, "'sites' (recorded)"),
                         ({**RELU_TO_GELU, "dropped_kwargs": "inplace"}, "'dropped_kwargs' (recorded)"),
                         ({**RELU_TO_GELU, "dropped_kwargs": ["lambda"]}, "Python keyword"),
                         ({**RELU_TO_GELU, "sites": "13"}, "'sites' (recorded)")]:
        with pytest.raises(ScriptError, match=r"Edit 1 \((insert|set_target)\): ") as info:
            validate_script(new_script([bad]))
        assert message in info.value.message


def test_a_recorded_bulk_session_saves_and_replays_to_the_same_code(tmp_path):
    doc = doc_for("residual_cnn.py")
    doc.apply_edit(RELU_TO_GELU)
    doc.apply_edit(CLONE_AFTER_CONVS)
    doc.apply_edit({"op": "insert", "before_each": {"regex": "fc"}, "kind": "call_function", "target": "torch.neg",
                    "args": "(%flatten,)"})
    path = tmp_path / "session.json"
    save_script(path, doc.edit_script())
    again = replay(doc.loaded, load_script(path))
    assert code(again) == code(doc) and again.history == doc.history


def _apply(tmp_path, model, edits, *extra):
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": edits}))
    return subprocess.run([sys.executable, "-m", "fxstudio", "apply", str(model), str(script), *extra],
                          capture_output=True, text=True, timeout=240)


def test_fxstudio_apply_replays_each_bulk_form_and_exports(tmp_path):
    edits = [RELU_TO_GELU, CLONE_AFTER_CONVS,
             {"op": "insert", "after_each": {"regex": BLOCK_CONVS}, "kind": "call_module",
              "target": "torch.nn.Identity()", "args": "(%@,)"},
             {"op": "insert", "before_each": {"match": "torch.flatten"}, "kind": "call_function",
              "target": "torch.neg", "args": "(%avgpool,)"}]
    out = tmp_path / "out.py"
    proc = _apply(tmp_path, example_path("residual_cnn.py"), edits, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("applied 4 edit(s)")
    text = out.read_text()
    assert "nn.ReLU(" not in text and text.count("= nn.GELU()") == 13 and text.count("torch.clone(") == 14


def test_fxstudio_apply_swaps_f_relu_for_gelu_and_refuses_a_non_default_keyword(tmp_path):
    path = tmp_path / "functional.py"
    path.write_text(FUNCTIONAL.replace("{tail}", ""))
    edit = {"op": "set_target", "match": "torch.nn.functional.relu", "target": "torch.nn.functional.gelu"}
    proc = _apply(tmp_path, f"{path}::Net", [edit], "--json")
    assert proc.returncode == 0, proc.stderr
    nodes = {n["name"]: n for n in json.loads(proc.stdout)["nodes"]}
    assert nodes["relu"]["target"] == "torch.nn.functional.gelu"
    path.write_text(FUNCTIONAL.replace("{tail}", " + F.relu(x, inplace=True)"))
    proc = _apply(tmp_path, f"{path}::Net", [edit])
    assert proc.returncode == 1 and "does not accept the keyword 'inplace'" in proc.stderr
    assert "Traceback" not in proc.stderr
