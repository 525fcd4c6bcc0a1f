"""Every refusal of the edit engine: the message says why, and the graph (its code, its history)
is exactly as before. ``check_edit`` gives the same reason without applying anything."""

from __future__ import annotations

import pytest

from fxstudio.core.errors import EditRefused
from tests.core.edit_helpers import code, doc_for


def _insert(where: str, anchor: str, target: str, args: str, kind: str = "call_function", **more) -> dict:
    """An ``insert`` edit ``where`` ("before"/"after") ``anchor``; ``more`` are its optional fields."""
    return {"op": "insert", where: anchor, "kind": kind, "target": target, "args": args, **more}


CASES = [
    # (example, edit, words the message must contain)
    ("add_mul.py", {"op": "set_arg", "node": "nope", "key": 0, "value": "1"}, ["Unknown node 'nope'"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 5, "value": "1"},
     ["Index 5 is out of range", "%mul has 2 positional arguments"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": -1, "value": "1"}, ["Index -1 is out of range"]),
    ("clamp.py", {"op": "set_arg", "node": "clamp", "key": "maximum", "value": "1.0"},
     ["torch.clamp does not accept the keyword 'maximum'", "max"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 2, "value": "3"},
     ["Wrong arguments for operator.mul", "3 positional"]),
    ("relu_add.py", {"op": "set_target", "node": "add", "target": "torch.relu"},
     ["Wrong arguments for torch.relu", "2 positional"]),
    ("clamp.py", {"op": "set_arg", "node": "clamp", "key": 1, "value": "0.0"},
     ["Wrong arguments for torch.clamp", "multiple values for argument 'min'"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "10 +"}, ["Cannot parse '10 +'"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "torch.tensor([1.0, 2.0, 3.0])"},
     ["A tensor constant cannot be written into the graph's code"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 1, "value": "__import__('os')"},
     ["calling __import__() is not allowed"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": 0, "value": "%ghost"},
     ["no node named %ghost"]),
    ("sub_chain.py", {"op": "erase", "node": "sub"},
     ["Cannot erase %sub: it is used by %mul", "replace_uses_with"]),
    ("sub_chain.py", {"op": "erase", "node": "x"}, ["Cannot erase the input %x", "signature"]),
    ("sub_chain.py", {"op": "erase", "node": "output"}, ["output node cannot be erased"]),
    ("sub_chain.py", {"op": "set_arg", "node": "output", "key": 1, "value": "%add"}, ["output node has one argument"]),
    ("sub_chain.py", {"op": "set_arg", "node": "add", "key": 0, "value": "%mul"},
     ["would create a cycle: add → sub → mul → add"]),
    ("sub_chain.py", {"op": "set_arg", "node": "sub", "key": 0, "value": "%sub"}, ["cycle: sub → sub"]),
    ("sub_chain.py", {"op": "erase", "node": "add", "replace_uses_with": "mul"},
     ["Using %mul as an input of %sub would create a cycle"]),
    ("sub_chain.py", {"op": "erase", "node": "sub", "replace_uses_with": "mul"}, ["its replacement %mul uses it"]),
    ("sub_chain.py", {"op": "set_arg", "node": "x", "key": 0, "value": "1"}, ["input of the model"]),
    ("sub_chain.py", {"op": "frobnicate", "node": "sub"}, ["Unknown edit op 'frobnicate'"]),
    ("sub_chain.py", {"op": "erase", "node": "sub", "force": True}, ["Unknown field(s) 'force'"]),
    ("sub_chain.py", {"op": "set_arg", "node": "sub", "key": 1}, ["needs the field(s) 'value'"]),
    ("sub_chain.py", {"op": "set_arg", "node": "sub", "key": 1, "value": 5}, ["must be text"]),
    ("clamp.py", {"op": "del_kwarg", "node": "clamp", "key": "alpha"},
     ["%clamp has no keyword argument 'alpha'", "min, max"]),
    ("sub_chain.py", _insert("before", "add", "torch.relu", "(%sub,)"),
     ["%sub is defined after the insertion point"]),
    ("sub_chain.py", _insert("before", "x", "torch.relu", "(%x,)"), ["Cannot insert before the input %x"]),
    ("sub_chain.py", _insert("after", "output", "torch.relu", "(%x,)"), ["Cannot insert after the output"]),
    ("sub_chain.py", _insert("after", "add", "torch.relu", "%add"), ["'args' must be a tuple"]),
    ("sub_chain.py", _insert("after", "add", "torch.nosuchfn", "(%add,)"), ["torch has no attribute 'nosuchfn'"]),
    ("sub_chain.py", _insert("after", "add", "os.system", "('ls',)"), ["'os.system' is not allowed as a target"]),
    ("sub_chain.py", _insert("after", "add", "torch.nn.Dropout(p=2.0)", "(%add,)", kind="call_module"),
     ["torch.nn.Dropout(p=2.0) failed"]),
    ("sub_chain.py", _insert("after", "add", "subprocess.Popen('ls')", "(%add,)", kind="call_module"),
     ["not allowed: new submodules come from torch.nn constructors"]),
    ("sub_chain.py", _insert("after", "add", "layer9", "(%add,)", kind="call_module"), ["no submodule 'layer9'"]),
    ("sub_chain.py", _insert("after", "add", "torch.relu", "(%add,)", name="sub"),
     ["A node named 'sub' already exists"]),
    ("sub_chain.py", {"op": "rename", "node": "add", "name": "mul"}, ["A node named 'mul' already exists"]),
    ("sub_chain.py", {"op": "rename", "node": "add", "name": "2fast"}, ["not a valid node name"]),
    ("sub_chain.py", {"op": "rename", "node": "add", "name": "lambda"}, ["keyword or builtin"]),
    ("sub_chain.py", {"op": "set_target", "match": "torch.sigmoid", "target": "torch.tanh"},
     ["No node calls 'torch.sigmoid'"]),
    ("sub_chain.py", {"op": "set_target", "node": "x", "target": "torch.tanh"}, ["placeholder node", "no target"]),
    ("sub_chain.py", _insert("after", "add", "operator.getitem", "(1, 0)"), ["1[...] cannot be indexed"]),
    ("add_mul.py", {"op": "set_arg", "node": "mul", "key": "b", "value": "3"},
     ["'b' is a positional-only parameter of operator.mul", "(key 1)"]),
    ("view_reshape.py", {"op": "set_arg", "node": "view", "key": "lambda", "value": "1"},
     ["'lambda' is a Python keyword"]),
    ("view_reshape.py", {"op": "set_arg", "node": "view", "key": "\uff58", "value": "1"},
     ["read by Python as 'x'"]),
    ("sub_chain.py", _insert("after", "add", "clamp", "(%add,)", kind="call_method", kwargs="{'class': 1}"),
     ["'class' is a Python keyword"]),
    ("sub_chain.py", _insert("before", "sub", "torch.relu", "(%add,)", reroute=True),
     ["'reroute'", "needs 'after'"]),
    ("sub_chain.py", _insert("after", "add", "torch.relu", "(%add,)", reroute=1),
     ["'reroute' must be true or false"]),
    ("sub_chain.py", {"op": "set_arg", "node": "sub", "key": 1, "value": "{[1]: 2}"}, ["dict key must be hashable"]),
    ("sub_chain.py", {"op": "set_arg", "node": "sub", "key": 1, "value": "-" * 200_000 + "1"},
     ["more than the 100,000"]),
    ("sub_chain.py", {"op": "set_arg", "node": "sub", "key": 1, "value": "'\ud800'"}, ["not valid Unicode"]),
    ("sub_chain.py", {"op": ["set_arg"], "node": "sub"}, ["Unknown edit op ['set_arg']"]),
    ("view_reshape.py", {"op": "set_arg", "node": "view", "key": 0, "value": "1"},
     ["The object .view() is called on (args[0]) must be a node reference"]),
    ("view_reshape.py", {"op": "set_target", "node": "view", "target": "reshapen"},
     ["torch.Tensor has no method 'reshapen'"]),
    ("relu_add.py", {"op": "set_target", "node": "relu", "target": "relu_add.nothing"},
     ["has no attribute 'nothing'", "relu_add.py"]),
    ("sub_chain.py", {"op": "replace_uses", "node": "add", "with": "add"}, ["uses of %add with itself"]),
    ("sub_chain.py", _insert("after", "add", "exec", "('1',)"), ["'exec' is not a function target"]),
    ("sub_chain.py", _insert("after", "add", "torch.save", "(%add, 'x.pt')"),
     ["'torch.save' is not allowed as a target"]),
    ("sub_chain.py", {"op": "eliminate_dead_code"}, ["Nothing to eliminate"]),
    ("sub_chain.py", {"op": "duplicate", "node": "output"}, ["cannot be duplicated"]),
]


@pytest.mark.parametrize("example,edit,words", CASES, ids=[f"{c[1]['op']}-{i}" for i, c in enumerate(CASES)])
def test_refused_edit_says_why_and_changes_nothing(example, edit, words):
    doc = doc_for(example)
    before_code, before_nodes = code(doc), [(n.name, n.meta["fxs_id"]) for n in doc.edited.graph.nodes]
    events = []
    doc.subscribe(events.append)
    reason = doc.check_edit(edit)
    with pytest.raises(EditRefused) as info:
        doc.apply_edit(edit)
    for word in words:
        assert word in info.value.message
    assert reason == info.value.message
    assert code(doc) == before_code
    assert [(n.name, n.meta["fxs_id"]) for n in doc.edited.graph.nodes] == before_nodes
    assert doc.history == [] and not doc.dirty and events == []
    doc.edited.graph.lint()


def test_refusal_in_a_compound_edit_rolls_back_the_earlier_parts():
    doc = doc_for("conv_bn_relu.py")
    before = code(doc)
    with pytest.raises(EditRefused, match="Edit 2 of 2: Unknown node 'nope'"):
        doc.apply_edits([
            _insert("after", "conv1", "torch.nn.Dropout(p=0.1)", "(%conv1,)", kind="call_module"),
            {"op": "replace_uses", "node": "nope", "with": "dropout"},
        ])
    assert code(doc) == before and not hasattr(doc.edited, "dropout") and doc.history == []
    # the refused attempt left no trace in fx's names: the same insert still gets the plain name
    doc.apply_edit(_insert("after", "conv1", "torch.relu", "(%conv1,)"))
    assert doc.find("relu") is not None


def test_would_cycle_names_the_path():
    doc = doc_for("sub_chain.py")
    assert doc.would_cycle("add", "mul") == ["add", "sub", "mul", "add"]
    assert doc.would_cycle("mul", "add") is None
