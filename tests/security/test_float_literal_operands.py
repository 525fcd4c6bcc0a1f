"""The edit-time cost check skips an operand's value for ``x * 1.5``, ``x + 0.5``, ``x ** 2.0`` and
``x << 1.0`` (issue #25: that value needs a fake-tensor mode, ~1 s to make). An attacker's script
that feeds such a call a huge int or a format string built by earlier edits must still end in one
clean line, quickly, under the address-space limit, and never run the marker payload; ``%`` with a
float still has its operand checked (a node's string could format a float into gigabytes)."""

from __future__ import annotations

import time

import pytest

from tests.security.test_edit_budgets import RULE_RESULT, _insert, relu_add  # noqa: F401 - fixture

RULE_COST = "rule: bounded cost"


def _timed(hostile, *argv, limit: float = 60):
    started = time.monotonic()
    proc = hostile.run(*argv, timeout=90)
    assert time.monotonic() - started < limit, "it took too long"
    return proc


def test_a_format_string_node_modulo_a_float_is_refused(hostile, relu_add):
    script = hostile.script([
        _insert("operator.add", "('%999999999', 'f')", after="relu", name="fmt"),
        _insert("operator.mod", "(%fmt, 1.5)", after="fmt", name="big"),
    ])
    proc = _timed(hostile, "apply", relu_add, script, "-o", hostile.dir / "out.py")
    hostile.assert_refused(proc, RULE_COST)
    assert "Edit 2 (insert)" in proc.stderr


@pytest.mark.parametrize("target,args", [
    ("operator.mul", "(%huge, 1.5)"),        # int * float: a float (or OverflowError), never a bigger int
    ("operator.pow", "(1.5, %huge)"),        # float ** huge int: OverflowError at once
    ("operator.pow", "(%huge, 2.0)"),
    ("operator.lshift", "(%huge, 1.0)"),     # TypeError
    ("operator.add", "(%huge, 0.5)"),
    ("operator.mul", "(%text, 1e300)"),      # a string times a float: TypeError, no repetition
])
def test_a_huge_operand_with_a_float_literal_ends_quickly_and_runs_nothing(hostile, relu_add, target, args):
    script = hostile.script([
        _insert("operator.pow", "(10, 4000)", after="relu", name="huge"),
        _insert("operator.mul", "('ab', 1000)", after="huge", name="text"),
        _insert(target, args, after="text", name="probe"),
    ])
    applied = _timed(hostile, "apply", relu_add, script)
    hostile.assert_clean(applied)
    assert applied.returncode in (0, 1) and len(applied.stderr.strip().splitlines()) <= 2, applied.stderr
    compared = _timed(hostile, "compare", relu_add, script, "--no-per-node")
    hostile.assert_clean(compared)
    assert compared.returncode in (0, 1), compared.stderr


def test_a_payload_in_place_of_the_float_is_never_evaluated(hostile, relu_add):
    payload = f"__import__('builtins').exec({hostile.payload!r}) or 1.5"
    script = hostile.script([_insert("operator.mul", f"(%relu, {payload})", after="relu", name="probe")])
    proc = _timed(hostile, "apply", relu_add, script, "-o", hostile.dir / "out.py")
    hostile.assert_clean(proc, code=1)  # a refused edit: the argument syntax evaluates nothing
    assert len(proc.stderr.strip().splitlines()) == 1 and "refused" in proc.stderr
    assert not (hostile.dir / "out.py").exists()
