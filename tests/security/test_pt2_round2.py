"""Issue #23, round 2: a ``.pt2`` archive's declared sizes and expressions never make fxstudio hang
or allocate past its data budget.

Each file is a real ``torch.export.save`` archive (``pt2_hostile``) whose JSON or records were
rewritten: a symbolic shape ``9**9**9`` (sympy computes it), an input guard ``3 ** 10 ** 9 > 0``
(``ep.module()`` execs and runs it), an unbacked symbol index torch counts up to, recorded shapes
whose strides overflow int64, no stored inputs over a 16 GiB recorded shape, an empty weight record
torch would fill with zeros of a 37 GiB declared shape, a weight view repeating 4 stored bytes over
40 GB, sample inputs whose inner zip deflates to 64 MiB from 66 KB. They go through the real
``fxstudio`` command (under the 6 GiB address-space and 90 s wall limits of ``conftest``): each is
refused with exactly one ``fxstudio: `` line on stderr, exit 2, no traceback. The window's part is
``test_pt2_window_round2.py``.
"""

from __future__ import annotations

import json

import pytest
import torch

from tests.security import pt2_hostile as h

BUDGET = "budget of 2.0 GiB"
SLOW = "might never finish"


def _sympy_power(program, text="9**9**9"):
    program["graph_module"]["graph"]["tensor_values"]["x"]["sizes"][0]["as_expr"]["expr_str"] = text


def _guard_power(program):
    program["guards_code"] = ["3 ** 10 ** 9 > 0"]


def _unbacked_range(program):
    program["range_constraints"]["u99999999999"] = {"min_val": 0, "max_val": 5}


def make(kind: str, hostile):
    """The hostile archive ``kind`` (see ``FILES``) in ``hostile.dir``."""
    dynamic = kind in ("sympy_power", "sympy_power_srepr", "unbacked_range", "shape_2_70")
    base = h.save_tiny(hostile.dir / f"base_{'dyn' if dynamic else 'static'}.pt2", dynamic=dynamic)
    dst = hostile.dir / f"{kind}.pt2"
    if kind == "sympy_power":
        return h.program_edit(base, dst, _sympy_power)
    if kind == "sympy_power_srepr":
        return h.program_edit(base, dst, lambda p: _sympy_power(p, "Pow(Integer(9), Pow(Integer(9), Integer(9)))"))
    if kind == "guard_power":
        return h.program_edit(base, dst, _guard_power)
    if kind == "unbacked_range":
        return h.program_edit(base, dst, _unbacked_range)
    if kind == "no_inputs_16GiB":
        return h.without_inputs(base, dst, lambda p: h.recorded_shape(p, "x", [65536, 65536]))
    if kind == "shape_overflow":
        return h.without_inputs(base, dst, lambda p: h.recorded_shape(p, "x", [0, 2**62, 2**62], [2**62, 2**62, 1]))
    if kind == "shape_2_70":
        return h.without_inputs(base, dst, lambda p: h.recorded_shape(p, "x", [2**70, 3], [3, 1]))
    if kind == "empty_weight_37GiB":
        return h.weight_layout(base, dst, [100_000, 100_000], [100_000, 1], b"")
    if kind == "repeated_weight_40GB":
        return h.weight_layout(base, dst, [100_000, 100_000], [0, 0], torch.ones(1).numpy().tobytes())
    if kind == "inner_zip_bomb":
        return h.rewrite(base, dst, lambda r: r.update({"data/sample_inputs/model.pt": h.deflated_save(
            ((torch.zeros(1 << 24),), {}))}))
    raise AssertionError(kind)


# kind: what the one line says
FILES = {
    "sympy_power": ("shape expression", SLOW),
    "sympy_power_srepr": ("shape expression", SLOW),
    "guard_power": ("input guard", SLOW),
    "unbacked_range": ("u99999999999", "counts up to it"),
    "no_inputs_16GiB": ("input 'x'", BUDGET),
    "shape_overflow": ("no tensor can have", "overflow"),
    "shape_2_70": ("no tensor can have", "2**70"),
    "empty_weight_37GiB": ("'lin.weight'", BUDGET),
    "repeated_weight_40GB": ("'lin.weight'", BUDGET),
    "inner_zip_bomb": ("stored example inputs", "zip bomb"),
}


def assert_one_line(hostile, proc, path, *words):
    """Exit 2, no traceback, exactly one ``fxstudio: `` line naming ``path`` and ``words``."""
    hostile.assert_clean(proc, code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: "), proc.stderr
    assert str(path) in lines[0] or path.name in lines[0], proc.stderr
    for word in words:
        assert word in lines[0], proc.stderr


@pytest.mark.parametrize("kind", sorted(FILES))
def test_inspect_refuses_in_one_line(hostile, kind):
    path = make(kind, hostile)
    proc = hostile.run("inspect", path, timeout=90)
    assert_one_line(hostile, proc, path, *FILES[kind])


@pytest.mark.parametrize("kind", ["sympy_power", "guard_power", "no_inputs_16GiB", "empty_weight_37GiB"])
def test_export_and_compare_refuse_in_one_line(hostile, kind):
    """The commands that run the program (the guard runs in ``ep.module()``'s forward)."""
    path = make(kind, hostile)
    out = hostile.dir / "out.py"
    for argv in (("export", path, "-o", out), ("compare", path, hostile.script([]))):
        proc = hostile.run(*argv, timeout=90)
        assert_one_line(hostile, proc, path, *FILES[kind])
        assert not out.exists()


def test_input_shape_past_the_budget_is_refused(hostile):
    """``--input-shape`` over a dynamic size: 2.2 GiB of float32 asked for, refused before torch allocates."""
    path = h.save_tiny(hostile.dir / "dyn.pt2", dynamic=True)
    proc = hostile.run("inspect", path, "--input-shape", "200000000,3", timeout=90)
    assert_one_line(hostile, proc, path, "--input-shape", BUDGET)


def test_input_shape_of_a_python_model_past_the_budget_is_refused(hostile):
    model = hostile.model("relu_add.py")
    proc = hostile.run("inspect", model, "--input-shape", "65536,65536", timeout=90)  # 16 GiB
    hostile.assert_clean(proc, code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: --input-shape: ") and BUDGET in lines[0], proc.stderr


def test_compare_random_input_spec_past_the_budget_is_refused(hostile):
    path = h.save_tiny(hostile.dir / "tiny.pt2")
    proc = hostile.run("compare", path, hostile.script([]), "--input-spec", "65536,65536:float16", timeout=90)
    hostile.assert_clean(proc, code=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fxstudio: random inputs: ") and BUDGET in lines[0], proc.stderr


def test_a_legacy_format_payload_needs_trust(tmp_path):
    """A pickled payload in torch.save's legacy format (which allocates each storage at the size its
    pickle declares) is refused as needing --trust, as any payload torch would fully unpickle."""
    from fxstudio.core.errors import LoadError
    from fxstudio.core.loading import load_model

    base = h.save_tiny(tmp_path / "base.pt2")
    path = h.rewrite(base, tmp_path / "legacy.pt2",
                     lambda r: r.update({"data/sample_inputs/model.pt": h.legacy_save(((torch.ones(4, 3),), {}))}))
    with pytest.raises(LoadError) as caught:
        load_model(path)
    assert caught.value.needs_trust and "legacy" in str(caught.value) and "--trust" in str(caught.value)


def test_genuine_archives_still_open(tmp_path):
    """What the checks must let through: a dynamic archive with relations between sizes, guards,
    a floor division, a product of symbols, and an archive without stored inputs."""
    from fxstudio.core.loading import load_model

    class Model(torch.nn.Module):
        def forward(self, x, y):
            if x.shape[0] > 4:
                return x[:, :3] + y.view(-1)[: x.shape[0] * 3].view(x.shape[0], 3) + (x.shape[0] // 3)
            return x

    auto = torch.export.Dim.AUTO
    ep = torch.export.export(Model(), (torch.randn(8, 5), torch.randn(40)), dynamic_shapes=({0: auto, 1: auto}, {0: auto}))
    assert ep._guards_code
    torch.export.save(ep, tmp_path / "guards.pt2")
    loaded = load_model(tmp_path / "guards.pt2")
    assert {"floordiv", "mul"} <= {n.name for n in loaded.graph_module.graph.nodes}
    bare = h.without_inputs(h.save_tiny(tmp_path / "tiny.pt2", dynamic=True), tmp_path / "bare.pt2")
    loaded = load_model(bare)
    assert loaded.example_inputs[0].shape == (4, 3)
    assert any("random values" in note for note in loaded.notes)


@pytest.mark.parametrize("text", [
    "Symbol('s77', positive=True, integer=True)",
    "Mul(Integer(3), Symbol('s77', positive=True, integer=True))",
    "FloorDiv(Symbol('s77', positive=True, integer=True), Integer(3))",
    "Mul(" + ", ".join(f"Symbol('s{i}', positive=True, integer=True)" for i in range(8)) + ")",
    "Pow(Symbol('s0', positive=True, integer=True), Integer(3))",
    "Max(Integer(1), Add(Symbol('s0', integer=True), Integer(-1)))",
    "Rational(1, 3)**10",
])
def test_size_expressions_torch_writes_are_bounded(text):
    from fxstudio.core.expr_bounds import expression_problem

    assert expression_problem(text, "sympy") is None


@pytest.mark.parametrize("text, dialect", [
    ("9**9**9", "sympy"), ("Pow(Integer(9), Pow(Integer(9), Integer(9)))", "sympy"), ("2^3^4", "sympy"),
    ("Pow(Symbol('s0'), Symbol('s1'))", "sympy"), ("LShift(1, 10**6)", "sympy"), ("Rational(1, 3)**1000", "sympy"),
    ("floor(1/1e-400)", "sympy"), ("Float(1, 100000)", "sympy"), ("Tuple(1, 2)*10**9", "sympy"),
    ("OpaqueUnaryFn_exp(Integer(10)**50)", "sympy"), ("s0 # comment", "sympy"), ("1" + "+1" * 5000, "sympy"),
    ("3 ** 10 ** 9 > 0", "guard"), ("1 << 10**9 > 0", "guard"), ("int(1e308) ** 4 > 0", "guard"),
    ("L['x'].size() * 10**9 == 0", "guard"), ("L['s'] * 10**9 == 0", "guard"),
])
def test_unbounded_expressions_are_refused(text, dialect):
    from fxstudio.core.expr_bounds import expression_problem

    assert expression_problem(text, dialect)


def test_the_digit_limit_is_the_shared_budget():
    from fxstudio.core import budgets
    from fxstudio.core.expr_bounds import expression_problem

    assert expression_problem("10**200", "sympy") is None
    assert "300 digits" in expression_problem("10**350", "sympy")
    assert budgets.MAX_INT_DIGITS == 300


def test_a_structure_preview_of_inputs_past_the_budget_is_skipped(tmp_path):
    """The window's preview makes zeros of the recorded input shapes: past the budget it is skipped
    (the full open then refuses the file, naming the input)."""
    from fxstudio.core.loading.pt2_structure import structure_model

    path = h.without_inputs(h.save_tiny(tmp_path / "tiny.pt2"), tmp_path / "big.pt2",
                            lambda p: h.recorded_shape(p, "x", [65536, 65536]))
    import zipfile

    with zipfile.ZipFile(path) as zf:
        program = json.loads(zf.read(next(n for n in zf.namelist() if n.endswith("models/model.json"))))
    assert structure_model(path, program) is None
