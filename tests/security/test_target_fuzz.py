"""Issue #12, fuzzed in process: random dotted targets built from names reachable in ``torch``,
``operator``, ``math``, ``builtins`` and the model file (plus the names attackers use) go through
the real resolver of the edit engine. Whatever the text, resolution imports nothing, runs
nothing (no marker), raises nothing but ``EditRefused``, and what it returns is a callable the
boundary allows. The cost bounds are fuzzed by calling what they let through, under a deadline.
"""

from __future__ import annotations

import builtins
import importlib
import math
import operator
import shutil
import sys
import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fxstudio.core import trust
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.core.targets import parse_target
from fxstudio.resources import example_path

ATTACK_NAMES = [
    "os", "system", "sys", "subprocess", "importlib", "import_module", "save", "load", "from_file", "hub",
    "jit", "utils", "package", "compile", "ops", "aten", "prims", "load_library", "import_module", "default",
    "Tensor", "nn", "functional", "fft", "special", "linalg", "init", "torch", "math", "operator",
    "__globals__", "__builtins__", "__class__", "__dict__", "__import__", "exec", "eval", "open",
    "getattr", "call", "attrgetter", "methodcaller", "_dynamo", "_C", "_ops", "apply_", "storage",
    "my_relu", "ReluAdd", "example_inputs", "nn", "planted_payload", "forward", "relu", "add", "Tensor",
]


def planted_relu_add(folder):
    """``(loaded relu_add.py, marker path)``: the example opened from ``folder``, which also holds a
    planted module that would create the marker if anything imported it."""
    shutil.copy(example_path("relu_add.py"), folder / "relu_add.py")
    marker = folder / "PWNED_MARKER"
    (folder / "planted_payload.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    return load_model(folder / "relu_add.py"), marker


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """relu_add.py, opened from a folder that also holds a planted module and a marker path."""
    return planted_relu_add(tmp_path_factory.mktemp("fuzz"))


def _names(obj) -> list[str]:
    return sorted(n for n in dir(obj) if n.isidentifier())


POOL = sorted(set(ATTACK_NAMES) | set(_names(torch)[::7]) | set(_names(torch.nn.functional)[::5])
              | set(_names(operator)) | set(_names(math)) | set(_names(builtins)[::3]))
ROOTS = ["torch", "operator", "math", "builtins", "relu_add", "model_file", "_operator", "os", "importlib",
         "torch.ops", "torch.ops.aten", "torch.nn", "torch.nn.functional", "torch.Tensor", "torch.fft"]
# Modules a resolution may leave in sys.modules (none today: resolution imports nothing).
ALLOWED_NEW_MODULES: frozenset[str] = frozenset()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(root=st.sampled_from(ROOTS), parts=st.lists(st.sampled_from(POOL), min_size=0, max_size=4),
       op=st.sampled_from(["call_function", "call_function", "call_method"]))
def test_random_dotted_targets_resolve_only_to_allowed_callables(loaded, root, parts, op):
    model, marker = loaded
    text = ".".join([root, *parts]) if op == "call_function" else (parts[0] if parts else root)
    modules_before = set(sys.modules)
    try:
        result = parse_target(op, text, model.graph_module, model.user_module)
    except EditRefused:
        result = None
    assert not marker.exists()
    new = set(sys.modules) - modules_before - ALLOWED_NEW_MODULES
    assert not new, f"{text!r} imported {sorted(new)}"
    if result is None:
        return
    if op == "call_method":
        assert not result.startswith("_") and result not in trust.TENSOR_METHODS_DENIED
        return
    assert callable(result)
    # what came back is an allowed object: evaluable under the boundary, and none of the dangerous
    dangerous = {builtins.exec, builtins.eval, builtins.open, builtins.compile, builtins.__import__,
                 operator.call, operator.attrgetter, operator.methodcaller, torch.save, torch.load,
                 torch.from_file, importlib.import_module}
    assert all(result is not d for d in dangerous), text
    assert getattr(result, "__name__", None) not in {"load_library", "import_module", "system", "exec"}, text
    known = {n.target for n in model.graph_module.graph.nodes if n.op == "call_function"}
    assert trust.evaluable(result) or result in known or \
        getattr(result, "__module__", None) == model.user_module.__name__, text


def test_fuzz_pool_reaches_the_attack_paths(loaded):
    """The fuzz can build the review's vectors; they are refused here too (a guard that the
    property above is not vacuous)."""
    model, _ = loaded
    for text in ("torch.nn.functional.torch.os.system", "torch.fft.torch.os.system", "relu_add.torch.os.system",
                 "torch.nn.functional.importlib.import_module", "torch.ops.load_library", "builtins.exec"):
        with pytest.raises(EditRefused):
            parse_target("call_function", text, model.graph_module, model.user_module)
    assert parse_target("call_function", "torch.nn.functional.gelu", model.graph_module, model.user_module) \
        is torch.nn.functional.gelu


COSTLY = [builtins.pow, operator.pow, operator.mul, operator.lshift, operator.add, math.factorial,
          math.comb, math.perm, math.prod, builtins.round, operator.mod]


class _Huge:
    """Stands for 2**70000 in drawn examples: Python refuses to print an int that long, so a
    failing example holding one could not be reported."""

    def __repr__(self) -> str:
        return "2**70000"


HUGE = _Huge()
_ints = st.one_of(st.integers(-4, 4), st.integers(-10**6, 10**6), st.integers(0, 10**12),
                  st.integers(0, 10**60), st.just(HUGE))
_values = st.one_of(_ints, st.text(max_size=8), st.lists(st.integers(0, 10**30), max_size=6).map(tuple),
                    st.floats(allow_nan=False, width=32))


@settings(max_examples=200, deadline=None)
@given(fn=st.sampled_from(COSTLY), args=st.lists(_values, min_size=1, max_size=3))
def test_what_the_cost_bound_lets_through_finishes_quickly(fn, args):
    args = tuple(2**70000 if a is HUGE else a for a in args)
    try:
        trust.check_cost(fn, args, {})
    except EditRefused as exc:
        assert "bounded cost" in exc.message
        return
    start = time.perf_counter()
    try:
        fn(*args)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError, MemoryError):
        pass
    # Unbounded work (10**8-digit results) takes minutes; 5 s leaves room for a loaded 2-core machine.
    assert time.perf_counter() - start < 5.0, (fn, [a if not isinstance(a, int) else a.bit_length() for a in args])


def test_known_targets_match_by_their_name_never_by_a_walk(loaded):
    """The traced graph calls torch.relu; that makes the name allowed, not every path to it."""
    model, _ = loaded
    gm, user = model.graph_module, model.user_module
    assert any(n.target is torch.relu for n in gm.graph.nodes)
    assert parse_target("call_function", "torch.relu", gm, user) is torch.relu
    for text in ("torch.nn.functional.torch.relu", "relu_add.torch.relu", "torch.fft.torch.relu"):
        with pytest.raises(EditRefused, match="rule: (real submodule paths|definitions of the model file)"):
            parse_target("call_function", text, gm, user)
