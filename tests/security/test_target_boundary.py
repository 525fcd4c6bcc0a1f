"""Issue #12: an edit script is data and never runs code. Every vector of the security review, as a
real edit-script file next to a real model file, through the real ``fxstudio`` command: ``apply``,
``apply -o``, ``compare`` and the window's ``--replay`` (offscreen). Each carries the marker
payload; the edit must be refused (exit 1, as for any refused edit) with one line naming the
rule, and the marker must never appear. A target that would only cost time (``pow(10, 10**8)``)
must be refused at once: the subprocess timeout is the hang detector.
"""

from __future__ import annotations

import pytest

from tests.security.refusal_rules import (RULE_BUILTINS, RULE_COST, RULE_DENIED, RULE_GETATTR, RULE_MODEL,
                                          RULE_OPS, RULE_PRIVATE, RULE_SIZE, RULE_SUBMODULE)


def _insert(target: str, args: str, kind: str = "call_function", after: str = "x", name: str | None = None) -> dict:
    edit = {"op": "insert", "after": after, "kind": kind, "target": target, "args": args}
    if name:
        edit["name"] = name
    return edit


# name -> (edits for a Hostile, the rule the refusal must name)
VECTORS = {
    "functional_reexports_torch": (
        lambda h: [_insert("torch.nn.functional.torch.os.system", repr((h.shell,)))], RULE_SUBMODULE),
    "fft_reexports_torch": (
        lambda h: [_insert("torch.fft.torch.os.system", repr((h.shell,)))], RULE_SUBMODULE),
    "model_stem_reexports_torch": (
        lambda h: [_insert("relu_add.torch.os.system", repr((h.shell,)))], RULE_MODEL),
    "functional_importlib_planted_file": (
        lambda h: [_insert("torch.nn.functional.importlib.import_module", "('planted_payload',)")], RULE_SUBMODULE),
    "special_reexport_save_writes_a_file": (
        lambda h: [_insert("torch.special.torch.save", f"(%x, {str(h.marker)!r})")], RULE_SUBMODULE),
    "getattr_chain_to_exec": (
        lambda h: [
            _insert("getattr", "(%x, 'backward')", name="g1"),
            _insert("getattr", "(%g1, '__globals__')", after="g1", name="g2"),
            _insert("operator.getitem", "(%g2, '__builtins__')", after="g2", name="g3"),
            _insert("operator.getitem", "(%g3, 'exec')", after="g3", name="g4"),
            _insert("operator.call", f"(%g4, {h.payload!r})", after="g4", name="g5"),
        ], RULE_GETATTR),
    "from_file_creates_a_file": (
        lambda h: [_insert("torch.from_file", f"({str(h.marker)!r}, True, 16)")], RULE_DENIED),
    "factorial_of_a_huge_literal": (lambda h: [_insert("math.factorial", "(100000000,)")], RULE_COST),
    "pow_of_a_huge_literal": (lambda h: [_insert("pow", "(10, 100000000)")], RULE_COST),
    "batchnorm_buffers_over_budget": (
        lambda h: [_insert("torch.nn.BatchNorm1d(3000000000, affine=False)", "(%x,)", kind="call_module")], RULE_SIZE),
}

# More of the same family, through ``apply`` only (the paths share one edit engine, checked above).
MORE_VECTORS = {
    "ops_from_file": (lambda h: [_insert("torch.ops.aten.from_file.default", f"({str(h.marker)!r}, True, 16)")],
                      RULE_DENIED),
    "ops_load_library": (lambda h: [_insert("torch.ops.load_library", f"({str(h.marker)!r},)")], RULE_OPS),
    "ops_import_module": (lambda h: [_insert("torch.ops.import_module", "('planted_payload',)")], RULE_OPS),
    "operator_call": (lambda h: [_insert("operator.call", f"(%x, {h.payload!r})")], RULE_DENIED),
    "bare_exec": (lambda h: [_insert("exec", f"({h.payload!r},)")], RULE_BUILTINS),
    "builtins_eval": (lambda h: [_insert("builtins.eval", f"({h.payload!r},)")], RULE_BUILTINS),
    "os_system": (lambda h: [_insert("os.system", repr((h.shell,)))], "rule: allowed packages only"),
    "torch_private_module": (lambda h: [_insert("torch._dynamo.reset", "()")], RULE_PRIVATE),
    "torch_hub_load": (lambda h: [_insert("torch.hub.load", "('planted_payload', 'x')")], "rule: allowed packages only"),
    "attrgetter": (lambda h: [_insert("operator.attrgetter", "('__globals__',)")], RULE_DENIED),
    "set_target_to_reexport": (lambda h: [{"op": "set_target", "node": "relu",
                                           "target": "torch.fft.torch.os.system"}], RULE_SUBMODULE),
    "set_target_match_to_reexport": (lambda h: [{"op": "set_target", "match": "torch.relu",
                                                 "target": "relu_add.torch.os.system"}], RULE_MODEL),
    "set_arg_renames_getattr_to_dunder": (
        lambda h: [_insert("getattr", "(%x, 'shape')", name="g"),
                   {"op": "set_arg", "node": "g", "key": 1, "value": "'__class__'"}], RULE_GETATTR),
    "getattr_name_from_a_node": (
        lambda h: [_insert("operator.add", "('__glo', 'bals__')", name="n"),
                   _insert("getattr", "(%relu, %n)", after="relu")], RULE_GETATTR),
    "dunder_method": (lambda h: [_insert("__getattribute__", "(%x, '__class__')", kind="call_method")], RULE_PRIVATE),
    "tensor_apply_method": (lambda h: [_insert("apply_", "(%x, 1)", kind="call_method")], RULE_DENIED),
    "get_attr_dunder": (lambda h: [_insert("__class__", "()", kind="get_attr")], RULE_PRIVATE),
    "string_repeat": (lambda h: [_insert("operator.mul", "('a', 10000000000)")], RULE_COST),
    "string_format_width": (lambda h: [_insert("operator.mod", "('%*d', (1000000000, 1))")], RULE_COST),
    "shift_by_a_huge_literal": (lambda h: [_insert("operator.lshift", "(1, 10000000000)")], RULE_COST),
    "pow_of_a_shape_value": (
        lambda h: [_insert("getattr", "(%x, 'shape')", name="s"),
                   _insert("operator.getitem", "(%s, 0)", after="s", name="n"),
                   _insert("operator.pow", "(%n, 100000000)", after="n")], RULE_COST),
    "zeros_of_a_huge_literal": (lambda h: [_insert("torch.zeros", "(10000000000,)")], "rule: bounded result size"),
    "repeat_to_a_huge_tensor": (lambda h: [_insert("repeat", "(%x, 100000, 100000)", kind="call_method")],
                                "rule: bounded result size"),
    "rnn_with_a_billion_layers": (
        lambda h: [_insert("torch.nn.RNN(4, 4, 1000000000)", "(%x,)", kind="call_module")], RULE_SIZE),
}

PATHS = ("apply", "apply-o", "compare", "replay")


@pytest.fixture
def model(hostile):
    """relu_add.py copied next to the hostile script, with a planted module beside it."""
    return hostile.model("relu_add.py")


def _run(hostile, model, script, path: str):
    if path == "apply":
        return hostile.run("apply", model, script)
    if path == "apply-o":
        return hostile.run("apply", model, script, "-o", hostile.dir / "out.py")
    if path == "compare":
        return hostile.run("compare", model, script)
    return hostile.run(model, "--screenshot", hostile.dir / "shot.png", "--replay", script)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("vector", sorted(VECTORS))
def test_review_vectors_are_refused_on_every_path(hostile, model, vector, path):
    make, rule = VECTORS[vector]
    script = hostile.script(make(hostile))
    proc = _run(hostile, model, script, path)
    hostile.assert_refused(proc, rule)


@pytest.mark.parametrize("vector", sorted(MORE_VECTORS))
def test_more_vectors_are_refused_by_apply(hostile, model, vector):
    make, rule = MORE_VECTORS[vector]
    script = hostile.script(make(hostile))
    proc = _run(hostile, model, script, "apply")
    hostile.assert_refused(proc, rule)


def test_legitimate_targets_still_apply_export_and_compare(hostile, model):
    """The boundary keeps what users write: torch functions, torch.ops overloads, operator
    arithmetic on shapes, the model file's own function, a public getattr, a new submodule."""
    script = hostile.script([
        _insert("torch.nn.functional.gelu", "(%x,)", name="g"),
        _insert("torch.ops.aten.mul.Tensor", "(%g, %g)", after="g", name="m"),
        _insert("getattr", "(%x, 'shape')", after="m", name="s"),
        _insert("operator.getitem", "(%s, 0)", after="s", name="n"),
        _insert("operator.pow", "(%n, 2)", after="n", name="n2"),
        _insert("torch.nn.Dropout(p=0.1)", "(%m,)", kind="call_module", after="n2", name="drop"),
        {"op": "set_target", "match": "torch.relu", "target": "relu_add.my_relu"},
    ])
    out = hostile.dir / "out.py"
    proc = hostile.run("apply", model, script, "-o", out)
    hostile.assert_clean(proc, code=0)
    assert out.exists()
    compare = hostile.run("compare", model, script)
    hostile.assert_clean(compare, code=0)
