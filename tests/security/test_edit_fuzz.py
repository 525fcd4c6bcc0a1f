"""Issue #12, fuzzed through the whole edit path (not only the resolver): random edit dicts
(``insert``, ``set_target``, ``set_arg``) whose targets are dotted names reachable in ``torch``,
``operator``, ``math``, ``builtins`` and the model file (plus the names attackers use), with random
literal arguments (huge ints too), applied to a ``Document`` of ``relu_add.py`` opened from a
folder that also holds a planted module. Whatever the edit: no marker, no module imported outside
an allowlist, nothing but ``EditRefused`` escapes, and each edit returns in under 2 s.

Default profile: derandomized and fast (< 20 s). ``HYPOTHESIS_PROFILE=long`` uses the long
profile that ``tests/core/edits/test_stateful_edits.py`` registers (fresh random seeds, more examples).
"""

from __future__ import annotations

import os
import sys
import time

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tests.core.edits.test_stateful_edits  # noqa: F401 - registers the "edits-default" and "long" profiles
from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from tests.security.test_target_fuzz import POOL, ROOTS, planted_relu_add

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
PROFILE = settings(settings.get_profile("long" if LONG else "edits-default"),
                   max_examples=2000 if LONG else 800,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                          HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
EDIT_SECONDS = 2.0
NODES = ["x", "relu", "add", "output", "nope"]
# Modules an edit may leave in sys.modules: torch's own internal that FakeTensorMode imports the first
# time it runs some aten overloads (``torch.ops.aten.concat``, ``_foreach_*_``), found by the long run.
ALLOWED_NEW_MODULES = frozenset({"torch._subclasses.schema_check_mode"})


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """relu_add.py opened from a folder that also holds a planted module and a marker path."""
    return planted_relu_add(tmp_path_factory.mktemp("edit-fuzz"))


# Targets and arguments that apply, so the fuzz also explores edited graphs (not only refusals).
GOOD_FUNCTIONS = ["torch.relu", "torch.sigmoid", "torch.add", "torch.mul", "torch.nn.functional.gelu",
                  "torch.special.expit", "operator.add", "operator.mul", "operator.pow", "operator.getitem",
                  "math.factorial", "math.floor", "getattr", "len", "pow", "abs", "relu_add.my_relu"]
GOOD_METHODS = ["relu", "add", "mul", "reshape", "sum", "size", "clamp", "repeat", "expand", "view"]
GOOD_ARGS = ["(%x, )", "(%x, %relu)", "(%x, 2)", "(%relu, 1.5)", "(%x, 'shape')", "(3, 4)", "(%x, -1)",
             "(%x, 100000, 100000)", "(10, 100000000)", "(100000000, )"]
_ints = st.one_of(st.integers(-4, 4), st.integers(-10**6, 10**6), st.integers(0, 10**12), st.integers(0, 10**60),
                  st.sampled_from([10**8, 10**10, 2**64, 2**4000]))
_scalar_text = st.one_of(
    _ints.map(str),
    st.just("9" * 5000),  # past Python's int-from-text digit limit
    st.floats(allow_nan=False, width=32).map(repr),
    st.sampled_from(["None", "True", "inf", "-inf", "nan", "...", "'__globals__'", "'shape'", "'backward'",
                     "torch.float16", "torch.device('cpu')", "slice(None, 5)", "'a' * 3"]),
    st.sampled_from(NODES).map(lambda n: f"%{n}"),
    st.text(alphabet="abc_%'\"()[],.0123456789 ", max_size=12),
)
_args_text = st.one_of(
    st.sampled_from(GOOD_ARGS),
    st.lists(_scalar_text, max_size=4).map(lambda items: "(" + "".join(f"{i}, " for i in items) + ")"),
)
_target = st.one_of(
    st.sampled_from(GOOD_FUNCTIONS),
    st.builds(lambda root, parts: ".".join([root, *parts]), st.sampled_from(ROOTS),
              st.lists(st.sampled_from(POOL), max_size=3)),
)

_insert = st.builds(
    lambda where, node, kind, target, method, args: {
        "op": "insert", where: node, "kind": kind, "target": target if kind == "call_function" else method,
        "args": args},
    st.sampled_from(["after", "before"]), st.sampled_from(["x", "relu", "add"]),
    st.sampled_from(["call_function", "call_function", "call_method"]), _target,
    st.sampled_from(GOOD_METHODS + POOL), _args_text)
_set_target = st.builds(lambda node, target: {"op": "set_target", "node": node, "target": target},
                        st.sampled_from(NODES), _target)
_set_target_match = st.builds(lambda target: {"op": "set_target", "match": "torch.relu", "target": target}, _target)
_set_arg = st.builds(lambda node, key, value: {"op": "set_arg", "node": node, "key": key, "value": value},
                     st.sampled_from(NODES), st.sampled_from([0, 1, 2, "alpha", "inplace", "__globals__"]),
                     _scalar_text)
EDITS = st.lists(st.one_of(_insert, _set_target, _set_target_match, _set_arg), min_size=1, max_size=4)


def _new_modules(before: set[str]) -> list[str]:
    return sorted(set(sys.modules) - before - ALLOWED_NEW_MODULES)


@PROFILE
@given(edits=EDITS)
def test_random_edits_run_nothing_import_nothing_and_return_quickly(model, edits):
    loaded, marker = model
    doc = Document(loaded)
    before = set(sys.modules)
    for edit in edits:
        start = time.perf_counter()
        try:
            doc.apply_edit(edit)
            event(f"{edit['op']} applied")
        except EditRefused:
            event(f"{edit['op']} refused")
        took = time.perf_counter() - start
        assert not marker.exists(), edit
        assert took < EDIT_SECONDS, (round(took, 2), edit)
        assert not _new_modules(before), (edit, _new_modules(before))
    doc.module()  # whatever was applied recompiles
    assert not marker.exists()


def test_the_fuzz_reaches_applied_edits_and_refusals(model):
    """A guard against a vacuous fuzz: edits the strategies draw both apply and get refused, and
    a hostile one among them is refused without running."""
    loaded, marker = model
    doc = Document(loaded)
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.nn.functional.gelu",
                    "args": "(%relu, )"})
    doc.apply_edit({"op": "set_arg", "node": "add", "key": 1, "value": "10000000000"})
    for edit in ({"op": "insert", "after": "x", "kind": "call_function", "target": "torch.nn.functional.torch.os.system",
                  "args": f"('{sys.executable} -c \"open({str(marker)!r}, \\'w\\')\"', )"},
                 {"op": "insert", "after": "x", "kind": "call_function", "target": "math.factorial",
                  "args": "(100000000, )"},
                 {"op": "set_arg", "node": "add", "key": 1, "value": "9" * 5000}):
        with pytest.raises(EditRefused):
            doc.apply_edit(edit)
    assert len(doc.edit_script()["edits"]) == 2 and not marker.exists()
