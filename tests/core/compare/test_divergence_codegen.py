"""The generated lockstep runner against the Interpreter one: same rows, failures, progress, cancel.

``run_divergence(engine="generated")`` runs the schedule as one generated function;
``engine="interpreter"`` steps two ``torch.fx.Interpreter`` instances (the reference). Every
observable result must be the same: rows (content and order), first divergence, removed nodes,
failures with their node, progress calls, cancellation.
"""

import copy
import functools
import math
import operator
import warnings
from collections import namedtuple

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.compare import divergence_codegen as codegen
from fxstudio.core.compare import RunCancelled, run_divergence
from fxstudio.core.document import Document
from fxstudio.core.compare import match_key
from fxstudio.core.loading import load_model
from fxstudio.core.compare.run_metrics import DiffScratch, diff_values, node_diff
from fxstudio.core.same_computation import same_computation
from fxstudio.testing.synthetic import as_graph_module, skip_chain
from fxstudio.resources import example_path

from tests.core.edit_helpers import with_huge_node

EXAMPLES = ["add_mul.py", "clamp.py", "conv_bn_relu.py", "data_branch.py", "relu_add.py", "residual_cnn.py",
            "sub_chain.py", "transformer_block.py", "two_linear.py", "view_reshape.py", "wrapped_fn.py"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@functools.lru_cache(maxsize=None)
def loaded(name, tracer=None):
    concrete = {"positive": True} if name == "data_branch.py" else None  # its forward branches on it
    return load_model(example_path(name), tracer=tracer, concrete_args=concrete)


def doc_for(name, tracer=None):
    return Document(loaded(name, tracer))


def row_key(row):
    """A row as a comparable tuple (NaN figures compare equal to each other here)."""
    def f(x):
        return "nan" if isinstance(x, float) and math.isnan(x) else x
    return (row.index, row.node_id, row.name, row.op, row.target, row.counterpart, row.status, f(row.max_abs),
            f(row.score), row.note, row.shared)


def both(original, edited, args, **kw):
    """Run both engines on fresh copies of the inputs; assert every result is the same; return it."""
    kw.setdefault("rtol", 1e-5)
    kw.setdefault("atol", 1e-6)
    gen = run_divergence(original, edited, copy.deepcopy(args), engine="generated", **kw)
    ref = run_divergence(original, edited, copy.deepcopy(args), engine="interpreter", **kw)
    assert [row_key(r) for r in gen.nodes] == [row_key(r) for r in ref.nodes]
    assert gen.removed == ref.removed
    assert (gen.first.index if gen.first else None) == (ref.first.index if ref.first else None)
    assert gen.first is None or gen.first is next(r for r in gen.nodes if r.status == "diverged")
    assert (gen.failure is None) == (ref.failure is None)
    if gen.failure is not None:
        assert vars(gen.failure) == vars(ref.failure)
    return gen


def scale_first_value(gm):
    """A copy of ``gm`` whose first float value is multiplied by 1.001 (an inserted node)."""
    graph = copy.deepcopy(gm.graph)
    first = next(n for n in graph.nodes if n.meta.get("fxs_dtype") == "float32" and n.op != "get_attr")
    with graph.inserting_after(first):
        scale = graph.call_function(torch.mul, (first, 1.001))
    first.replace_all_uses_with(scale, delete_user_cb=lambda user: user is not scale)
    return torch.fx.GraphModule(gm, graph)


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("share", [False, True])
def test_every_example_unchanged_and_scaled_gives_the_interpreters_rows(name, share):
    doc = doc_for(name)
    args = doc.loaded.example_inputs
    same = both(doc.original, doc.module(), args, share=share)
    assert same.first is None and same.failure is None and (share or not any(r.shared for r in same.nodes))
    if any(n.meta.get("fxs_dtype") == "float32" and n.op != "get_attr" for n in doc.original.graph.nodes):
        scaled = both(doc.original, scale_first_value(doc.original), args, share=share)
        assert scaled.failure is None
        assert [r.status for r in scaled.nodes].count("no_counterpart") == 1


def test_the_export_tracers_aten_graph_gives_the_interpreters_rows():
    doc = doc_for("transformer_block.py", "export")
    args = doc.loaded.example_inputs
    assert any(n.op == "get_attr" for n in doc.original.graph.nodes)
    for share in (False, True):
        assert both(doc.original, doc.module(), args, share=share).first is None
    doc.apply_edit({"op": "set_target", "match": "torch.ops.aten.gelu.default",
                    "target": "torch.ops.aten.relu.default"})
    result = both(doc.original, doc.module(), args)
    assert result.first is not None and result.first.target == "torch.ops.aten.relu.default"


WALKTHROUGH = [
    ("add_mul.py", [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}]),
    ("clamp.py", [{"op": "set_arg", "node": "clamp", "key": "max", "value": "10.0"}]),
    ("sub_chain.py", [{"op": "erase", "node": "sub", "replace_uses_with": "add"}]),
    ("sub_chain.py", [{"op": "set_target", "node": "sub", "target": "operator.add"}]),
    ("relu_add.py", [{"op": "set_target", "match": "torch.relu", "target": "relu_add.my_relu"}]),
    ("add_mul.py", [{"op": "insert", "before": "mul", "kind": "call_function", "target": "torch.relu",
                     "args": "(%add,)", "kwargs": "{}", "name": "relu"},
                    {"op": "set_arg", "node": "mul", "key": 0, "value": "%relu"}]),
    ("clamp.py", [{"op": "del_kwarg", "node": "clamp", "key": "max"}]),
    ("sub_chain.py", [{"op": "duplicate", "node": "sub", "name": "sub_copy"}]),
    ("two_linear.py", [{"op": "set_arg", "node": "add", "key": 1, "value": "%linear1"}]),
    ("conv_bn_relu.py", [{"op": "set_target", "node": "relu1", "target": "torch.nn.Sigmoid()"}]),
    ("residual_cnn.py", [{"op": "set_target", "node": "layer1_1_relu", "target": "torch.nn.GELU()"}]),
    ("view_reshape.py", [{"op": "set_target", "node": "view", "target": "reshape"}]),
]


@pytest.mark.parametrize("name, edits", WALKTHROUGH)
def test_walkthrough_edits_give_the_interpreters_rows(name, edits):
    doc = doc_for(name)
    for edit in edits:
        doc.apply_edit(edit)
    for share in (False, True):
        both(doc.original, doc.module(), doc.loaded.example_inputs, share=share)
    # by name too, as for an exported file
    both(doc.original, doc.module(), doc.loaded.example_inputs, match="name")


def test_a_failing_edited_node_is_named_and_the_rows_stop_there():
    doc = doc_for("residual_cnn.py")
    doc.apply_edit({"op": "insert", "after": "flatten", "kind": "call_method", "target": "reshape",
                    "args": "(%flatten, -1, 7)", "name": "bad_reshape"})
    doc.apply_edit({"op": "set_arg", "node": "fc", "key": 0, "value": "%bad_reshape"})
    result = both(doc.original, doc.module(), doc.loaded.example_inputs)
    assert result.failure.graph == "edited" and result.failure.node_name == "bad_reshape"
    assert result.nodes[-1].name == "bad_reshape" and result.nodes[-1].status == "error"
    assert result.failure.node_id == doc.id_of(doc.find("bad_reshape"))


def test_a_failing_original_node_is_reported_as_the_originals():
    doc = doc_for("two_linear.py")
    wrong = (torch.randn(2, 1000),)  # not what the first Linear takes
    result = both(doc.original, doc.module(), wrong)
    assert result.failure.graph == "original" and result.nodes and result.nodes[-1].status != "error"


def test_out_of_memory_in_a_generated_run_is_reported_not_raised():
    doc = doc_for("add_mul.py")
    result = run_divergence(doc.original, with_huge_node(doc.module()), doc.loaded.example_inputs, rtol=1e-5,
                            atol=1e-6, engine="generated")
    assert result.failure.out_of_memory and result.failure.node_name == "huge"


def big_graphs():
    gm = as_graph_module(skip_chain(320))
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    return gm, copy.deepcopy(gm), (torch.randn(2, 8, generator=torch.Generator().manual_seed(0)),)


def test_progress_calls_are_the_interpreters_and_cancel_is_checked_every_percent():
    gm, ed, args = big_graphs()
    total = len(ed.graph.nodes)
    assert total >= 300
    calls = {}
    for engine in ("generated", "interpreter"):
        seen = calls[engine] = []
        run_divergence(gm, ed, args, rtol=1e-5, atol=1e-6, share=False, engine=engine,
                       progress=lambda f, name, seen=seen: seen.append((f, name)))
    assert calls["generated"] == calls["interpreter"]
    checkpoints = math.ceil(total / (total // 100))
    assert calls["generated"][-1][0] == 1.0 and len(calls["generated"]) <= checkpoints + 1

    checks = []
    result = run_divergence(gm, ed, args, rtol=1e-5, atol=1e-6, engine="generated",
                            cancel=lambda: checks.append(1) and False)
    assert result.failure is None and len(checks) == checkpoints  # every total // 100 nodes, not every node

    def cancel_on_third():
        checks.append(1)
        return len(checks) >= 3

    for engine in ("generated", "interpreter"):
        checks.clear()
        with pytest.raises(RunCancelled):
            run_divergence(gm, ed, args, rtol=1e-5, atol=1e-6, engine=engine, cancel=cancel_on_third)
        assert len(checks) == 3


def test_a_callback_that_raises_is_not_taken_for_a_failing_node():
    gm, ed, args = big_graphs()

    def progress(fraction, name):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):
        run_divergence(gm, ed, args, rtol=1e-5, atol=1e-6, engine="generated", progress=progress)


def test_shared_nodes_alias_the_originals_value_and_match_same_computation():
    doc = doc_for("residual_cnn.py")
    doc.apply_edit({"op": "set_target", "node": "layer1_1_relu", "target": "torch.nn.GELU()"})
    edited = doc.module()
    result = both(doc.original, edited, doc.loaded.example_inputs, share=True)
    shared = {r.name for r in result.nodes if r.shared}
    assert shared == {n.name for n in same_computation(doc.original, edited, match_key("id"))}
    assert "layer1_0_conv1" in shared and "layer1_1_relu" not in shared and "fc" not in shared
    assert result.first.name == "layer1_1_relu"


class Containers(nn.Module):
    """Arguments that are containers holding nodes, slices, kwargs, a namedtuple, non-literal constants."""

    Pair = namedtuple("Pair", "a b")

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.full((4,), 0.5))

    def forward(self, x, y):
        a = self.fc(x)
        c = torch.cat([a, y], dim=0)                 # a list of nodes
        n = x.size(0)
        e = c[:n]                                    # a slice holding a node
        d = torch.add(a, other=y)                    # a node as keyword argument
        f = torch.clamp(d, min=-1.0, max=float("inf"))  # a constant that is not a literal
        g = e.to(torch.float64).to(dtype=torch.float32) * self.scale + f
        h = torch.stack((g, d), dim=0).sum(dim=(0,))   # a tuple of nodes, a tuple constant
        p = self.Pair(h, g)
        return {"h": p.a, "pair": p, "parts": [n, e]}


def test_container_arguments_and_a_changed_literal_are_seen():
    gm = torch.fx.symbolic_trace(Containers().eval())
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    ed = copy.deepcopy(gm)
    gen = torch.Generator().manual_seed(1)
    args = (torch.randn(3, 4, generator=gen), torch.randn(3, 4, generator=gen))
    assert both(gm, ed, args, share=False).first is None
    assert all(both(gm, ed, args, share=share).first is None for share in (False, True))
    # 2 and 2.0 are equal but not the same argument: a cached program must not keep the old literal
    size = next(n for n in ed.graph.nodes if n.op == "call_method" and n.target == "size")
    with ed.graph.inserting_after(size):
        once = ed.graph.call_function(operator.mul, (size, 1))
    size.replace_all_uses_with(once, delete_user_cb=lambda u: u is not once)
    ed.recompile()
    first = both(gm, ed, args)
    once.args = (size, 1.0)  # (size, 1) == (size, 1.0), but c[:3.0] is a TypeError
    ed.recompile()
    second = both(gm, ed, args)
    assert first.failure is None and second.failure is not None and second.failure.node_name == "getitem"
    assert "TypeError" in second.failure.message


def test_programs_are_cached_on_the_edited_graph_and_an_edit_replaces_them():
    doc = doc_for("add_mul.py")
    edited = doc.module()
    args = doc.loaded.example_inputs
    run_divergence(doc.original, edited, args, rtol=1e-5, atol=1e-6)
    cache = getattr(edited.graph, codegen._CACHE_ATTR)
    sched = cache[0]
    run_divergence(doc.original, edited, args, rtol=1e-5, atol=1e-6)
    assert getattr(edited.graph, codegen._CACHE_ATTR)[0] is sched and len(sched.programs) == 1
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    edited = doc.module()
    result = both(doc.original, edited, args)
    assert result.first.name == "mul"
    assert getattr(edited.graph, codegen._CACHE_ATTR)[0] is not sched


def test_placeholder_defaults_and_missing_inputs():
    class Defaults(nn.Module):
        def forward(self, x, k=3):
            return x * k

    gm = torch.fx.symbolic_trace(Defaults(), concrete_args=None)
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    ed = copy.deepcopy(gm)
    both(gm, ed, (torch.ones(2),))
    missing = both(gm, ed, ())
    assert missing.failure is not None and missing.failure.node_name == "x"


VALUES = [
    torch.tensor([1.0, -2.0, 0.0, -0.0, 3.5]),
    torch.tensor([float("nan"), 1.0, float("inf"), -float("inf"), 0.0]),
    torch.tensor([1e-40, -1e-45, 1e38, -3e38, 1e-30]),
    torch.tensor(2.5),
    torch.zeros(0, 3),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("tol", [(1e-5, 1e-6), (0.0, 1e-3), (1e-2, 0.0), (0.0, 0.0)])
def test_node_diff_gives_diff_values_figures(dtype, tol):
    """Same figures as diff_values on ordinary, special (NaN, inf, -0, subnormal) and large values,
    without numpy warnings for the infinities (torch computes them silently)."""
    rtol, atol = tol
    gen = torch.Generator().manual_seed(0)
    cases = []
    for v in VALUES:
        v = v.to(dtype)
        cases += [(v, v.clone()), (v, v * 1.001), (v, -v), (v, v + 1), (v, torch.flip(v, [-1]) if v.dim() else v)]
    big = torch.randn(3, 40_000, generator=gen).to(dtype)   # more than one slice of the CPU pass
    bumped = big.clone()
    bumped[2, -1] += 1
    with_nan = big.clone()
    with_nan[1, 5] = float("nan")
    cases += [(big, big.clone()), (big, bumped), (big, big * 1.01), (big, with_nan), (with_nan, with_nan.clone()),
              (big.t(), big.t().contiguous()), (big[:, ::3], bumped[:, ::3]), (big, big.expand(3, 40_000))]
    other_dtype = torch.float32 if dtype == torch.float64 else torch.float64
    cases += [(torch.ones(3, dtype=dtype), torch.ones(3, dtype=dtype).expand(3)),
              (torch.ones(3, dtype=dtype), torch.ones(4, dtype=dtype)),
              (torch.ones(3, dtype=dtype), torch.ones(3, dtype=other_dtype)),
              (torch.arange(5), torch.arange(5) + (torch.arange(5) == 4)), (3, 3), (3, 4), ((1, 2), (1, 2)),
              (torch.Size([2, 3]), torch.Size([2, 3])), (torch.Size([2, 3]), torch.Size([2, 4])), (3, 3.0)]
    scratch = DiffScratch()
    for ref, new in cases:
        expected = diff_values(ref, new, rtol=rtol, atol=atol, with_rel=False, with_cosine=False)
        for expect_equal, work in ((True, None), (False, None), (True, scratch), (False, scratch)):
            with warnings.catch_warnings(record=True) as shown:  # the filters as configured
                if work is None:
                    got = node_diff(ref, new, rtol=rtol, atol=atol, expect_equal=expect_equal)
                else:
                    with work:
                        got = node_diff(ref, new, rtol=rtol, atol=atol, expect_equal=expect_equal, scratch=work)
            assert not shown, [(str(w.message), w.filename, w.lineno) for w in shown]
            if expected is None or expected.equal:
                assert got is None
            else:
                assert got is not None
                assert (row_figures(got) == row_figures(expected)), (ref, new, got, expected)


def row_figures(d):
    def f(x):
        return "nan" if isinstance(x, float) and math.isnan(x) else x
    return f(d.max_abs), f(d.score), d.allclose, d.note


def test_peak_memory_is_no_more_than_the_interpreters():
    from bench.bench_compare import peak_bytes

    doc = doc_for("residual_cnn.py")
    args = doc.loaded.example_inputs
    scaled = scale_first_value(doc.original)
    for edited in (doc.module(), scaled):
        gen = peak_bytes(lambda: run_divergence(doc.original, edited, args, rtol=1e-5, atol=1e-6, share=False,
                                                engine="generated"))
        ref = peak_bytes(lambda: run_divergence(doc.original, edited, args, rtol=1e-5, atol=1e-6, share=False,
                                                engine="interpreter"))
        assert gen <= ref


class Rearrange(nn.Module):
    """Nodes that only rearrange their input's elements, and some that look alike but do not."""

    def forward(self, x):
        a = torch.log(x)                          # NaN where x < 0
        b = a.transpose(0, 1)                     # by constant dimensions
        c = b.reshape(-1)                         # by shape
        n = x.size(1)
        d = a.permute(1, 0).reshape(n, -1)        # a shape from a node
        e = a.view(torch.int32)                   # reinterpreted bits: not a rearrangement
        f = torch.flatten(b)
        g = a[:, :2].contiguous()                 # a slice keeps only some elements
        return c, d, e, f, g


def test_rearranging_nodes_repeat_their_inputs_comparison_exactly():
    gm = torch.fx.symbolic_trace(Rearrange())
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    x = torch.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    same = both(gm, copy.deepcopy(gm), (x,), share=False)
    assert same.first is not None and same.first.name == "log"  # NaN is never equal to NaN
    assert getattr(copy.deepcopy(gm).graph, codegen._CACHE_ATTR, None) is None  # copies do not carry the cache
    for target in (torch.log1p, torch.exp):
        ed = copy.deepcopy(gm)
        log = next(n for n in ed.graph.nodes if n.name == "log")
        log.target = target
        ed.recompile()
        rows = {r.name: r for r in both(gm, ed, (x,), share=False).nodes}
        assert row_key(rows["transpose"])[6:10] == row_key(rows["log"])[6:10]
        source = next(iter(getattr(ed.graph, codegen._CACHE_ATTR)[0].programs.values())).source
        assert "_re(" in source
    ed = copy.deepcopy(gm)
    transpose = next(n for n in ed.graph.nodes if n.name == "transpose")
    transpose.args = (transpose.args[0], 1, 0)  # the same rearrangement written otherwise: not reused
    ed.recompile()
    both(gm, ed, (x,), share=False)
    both(gm, ed, (x.abs() + 1,), share=False)
    both(gm, ed, (x.abs() + 1,), share=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_cuda_runs_give_the_interpreters_rows():
    doc = doc_for("residual_cnn.py")
    original = copy.deepcopy(doc.original).cuda()
    args = tuple(a.cuda() for a in doc.loaded.example_inputs)
    for edited in (copy.deepcopy(doc.original), copy.deepcopy(scale_first_value(doc.original))):
        edited = edited.cuda()
        for share in (False, True):
            result = both(original, edited, args, share=share)
            assert result.failure is None
