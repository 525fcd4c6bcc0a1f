"""Issue #14: the bulk forms of ``set_target`` (``match`` naming a module class, a constructor
``target``) and ``insert`` (``after_each`` / ``before_each``) are data like every other edit. The
``match`` text is compared with what the graph already calls or resolved through the trust
boundary, the constructor is a whitelisted ``torch.nn`` call with literal arguments, and a name
regex is bounded. Each vector goes through the real ``fxstudio apply`` with the marker payload: the
edit is refused (exit 1) with one line saying why, and the marker never appears."""

from __future__ import annotations

import pytest

from tests.security.refusal_rules import RULE_BUILTINS, RULE_MODEL, RULE_PACKAGE, RULE_PRIVATE, RULE_SYNTAX


def _each(h, spec: dict, target: str = "torch.clone", args: str = "(%@,)") -> list[dict]:
    return [{"op": "insert", "after_each": spec, "kind": "call_function", "target": target, "args": args}]


def _swap(match: str, target: str = "torch.nn.GELU()") -> list[dict]:
    return [{"op": "set_target", "match": match, "target": target}]


# name -> (edits for a Hostile, text the refusal line must hold)
VECTORS = {
    "match_walks_to_globals": (lambda h: _swap("torch.nn.ReLU.__init__.__globals__"), RULE_PRIVATE),
    "match_module_dunder": (lambda h: _swap("torch.nn.modules.module.Module.__init__"), RULE_PRIVATE),
    "match_os_system": (lambda h: _swap("os.system", "os.system"), RULE_PACKAGE),
    "match_builtins_eval": (lambda h: _swap("builtins.eval", "builtins.exec"), RULE_BUILTINS),
    "match_model_reexport": (lambda h: _swap("residual_cnn.torch.os.system", "torch.relu"), RULE_MODEL),
    "match_is_code": (lambda h: _swap(f"__import__('os').system({h.shell!r})"), RULE_SYNTAX),
    "constructor_is_os_system": (
        lambda h: _swap("torch.nn.ReLU", f"os.system({h.shell!r})"),
        "new submodules come from torch.nn constructors"),
    "constructor_argument_is_code": (
        lambda h: _swap("torch.nn.ReLU", f"torch.nn.ReLU(inplace=__import__('os').system({h.shell!r}))"),
        "constructor arguments must be literal values"),
    "constructor_through_globals": (
        lambda h: _swap("torch.nn.ReLU", "torch.nn.ReLU.__init__.__globals__['os'].system('x')()"),
        "new submodules come from torch.nn constructors"),
    "each_match_os_system": (lambda h: _each(h, {"match": "os.system"}, "os.system", repr((h.shell,))),
                             RULE_PACKAGE),
    "each_target_os_system": (lambda h: _each(h, {"match": "torch.nn.ReLU"}, "os.system", repr((h.shell,))),
                              RULE_PACKAGE),
    "each_match_dunder": (lambda h: _each(h, {"match": "torch.nn.ReLU.__call__"}), RULE_PRIVATE),
}

# Refused when the script file is checked, before the model opens: bad input, exit status 2.
FILE_VECTORS = {
    "each_regex_exponential": (lambda h: _each(h, {"regex": "(l+a*)+y"}), "can take exponential time"),
    "each_regex_too_long": (lambda h: _each(h, {"regex": "(layer)" * 40}), "at most 200 are allowed"),
    "each_regex_does_not_compile": (lambda h: _each(h, {"regex": "(?P<x"}), "does not compile"),
    "each_anchor_not_an_object": (lambda h: _each(h, f"__import__('os').system({h.shell!r})"),
                                  "must be an object with one field"),
}


@pytest.fixture
def model(hostile):
    """residual_cnn.py copied next to the hostile script, with a planted module beside it."""
    return hostile.model("residual_cnn.py")


@pytest.mark.parametrize("vector", sorted(VECTORS))
def test_bulk_vectors_are_refused_by_apply(hostile, model, vector):
    make, rule = VECTORS[vector]
    proc = hostile.run("apply", model, hostile.script(make(hostile)), "-o", hostile.dir / "out.py")
    hostile.assert_refused(proc, rule)


@pytest.mark.parametrize("vector", sorted(FILE_VECTORS))
def test_malformed_bulk_fields_are_bad_input(hostile, model, vector):
    make, message = FILE_VECTORS[vector]
    proc = hostile.run("apply", model, hostile.script(make(hostile)), timeout=60)  # the timeout detects a hang
    hostile.assert_clean(proc, code=2)
    assert len(proc.stderr.splitlines()) == 1 and "Edit 1 (insert)" in proc.stderr and message in proc.stderr


def test_legitimate_bulk_edits_still_apply(hostile, model):
    script = hostile.script([*_swap("torch.nn.ReLU"), *_each(hostile, {"regex": "layer1_[0-9]_conv1"})])
    proc = hostile.run("apply", model, script, "-o", hostile.dir / "out.py")
    hostile.assert_clean(proc, code=0)
    assert (hostile.dir / "out.py").exists()
