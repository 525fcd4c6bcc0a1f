"""The broadcasting rule for elementwise calls (edits/pointwise_results.py) against torch itself:
every result it tells equals what a real run of the call gives (shape, dtype, strides), what it
cannot tell is left to the fake mode, and the commonest edit (a constant of a ``mul``) on a model
opened with a real shape run is checked without importing ``torch._dynamo``."""

from __future__ import annotations

import itertools
import operator
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from fxstudio.core.edits.pointwise_results import pointwise_result
from fxstudio.core.edits.shapes import ShapeRefresher

SHAPES = [(), (3,), (2, 3), (2, 1, 3), (1, 3), (4, 2, 1)]
DTYPES = [torch.float32, torch.float16, torch.int64, torch.int32, torch.bool]
CALLS = [("call_function", operator.add), ("call_function", operator.mul), ("call_function", operator.truediv),
         ("call_function", torch.sub), ("call_method", "mul"), ("call_method", "add")]


def _graph_with(shapes_dtypes):
    """A graph of placeholders carrying the metadata of real tensors of these shapes and dtypes."""
    graph = torch.fx.Graph()
    nodes, reals = [], []
    for i, (shape, dtype) in enumerate(shapes_dtypes):
        node = graph.placeholder(f"x{i}")
        real = (torch.rand(shape) * 4 + 1).to(dtype)
        node.meta["tensor_meta"] = _extract_tensor_metadata(real)
        nodes.append(node)
        reals.append(real)
    graph.output(nodes[0])
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    return gm, nodes, reals


def _real(op, target, args):
    with torch.no_grad():
        return target(*args) if op == "call_function" else getattr(args[0], target)(*args[1:])


@pytest.mark.parametrize("op,target", CALLS, ids=lambda v: getattr(v, "__name__", str(v)))
def test_every_told_result_is_what_a_real_run_gives(op, target):
    told_count = 0
    for (sa, da), (sb, db) in itertools.product(itertools.product(SHAPES, DTYPES), repeat=2):
        gm, nodes, reals = _graph_with([(sa, da), (sb, db)])
        refresher = ShapeRefresher(gm)
        told = pointwise_result(refresher, op, target, (nodes[0], nodes[1]), {}, {})
        try:
            real = _real(op, target, reals)
        except Exception:  # noqa: BLE001 - torch refuses: the rule must not have told a result
            assert told is None, (op, target, sa, da, sb, db)
            continue
        if told is None:
            continue
        told_count += 1
        want = _extract_tensor_metadata(real)
        got = told.meta
        assert (tuple(got.shape), got.dtype, tuple(got.stride)) == (tuple(want.shape), want.dtype, tuple(want.stride)), \
            (op, target, sa, da, sb, db)
    assert told_count > 100  # the rule tells most of them


@pytest.mark.parametrize("literal", [1.5, 2, True, -0.5])
def test_a_tensor_and_a_number(literal):
    for shape, dtype in itertools.product(SHAPES, DTYPES):
        gm, nodes, reals = _graph_with([(shape, dtype)])
        told = pointwise_result(ShapeRefresher(gm), "call_function", operator.mul, (nodes[0], literal), {}, {})
        real = reals[0] * literal
        assert told is not None
        assert (tuple(told.meta.shape), told.meta.dtype) == (tuple(real.shape), real.dtype)


def test_what_the_rule_leaves_to_the_fake_mode():
    gm, nodes, _ = _graph_with([((2, 3), torch.float32), ((4, 3), torch.float32)])
    r = ShapeRefresher(gm)
    assert pointwise_result(r, "call_function", operator.add, (nodes[0], nodes[1]), {}, {}) is None  # no broadcast
    assert pointwise_result(r, "call_function", torch.matmul, (nodes[0], nodes[0]), {}, {}) is None  # not elementwise
    assert pointwise_result(r, "call_function", F.relu, (nodes[0],), {"inplace": True}, {}) is None  # in place
    assert pointwise_result(r, "call_function", operator.mul, (nodes[0], "a"), {}, {}) is None  # not a number
    assert pointwise_result(r, "call_function", torch.add, (nodes[0], nodes[0]), {"out": 1}, {}) is None
    t = torch.empty(3, 2).t()  # a transposed operand: not contiguous
    nodes[0].meta["tensor_meta"] = _extract_tensor_metadata(t)
    assert pointwise_result(r, "call_function", operator.mul, (nodes[0], 2.0), {}, {}) is None
    gm2, n2, _ = _graph_with([((2, 3), torch.float32)])
    told = pointwise_result(ShapeRefresher(gm2), "call_function", F.gelu, (n2[0],), {"approximate": "tanh"}, {})
    assert told is not None and tuple(told.meta.shape) == (2, 3)


def test_setting_a_constant_imports_no_dynamo(tmp_path):
    """In a fresh process: open a small model from its file (shapes from one real run) and set a
    ``mul``'s constant, as ``fxstudio compare MODEL EDITS`` does. torch._dynamo stays unimported (it
    costs 1-2 s), and the shapes are as before."""
    model = tmp_path / "m.py"
    model.write_text(textwrap.dedent('''
        import torch
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 8)
            def forward(self, x):
                return torch.relu(self.fc(x) * 1.0 + 2)
        def example_inputs():
            return (torch.randn(2, 8),)
    '''))
    script = textwrap.dedent(f'''
        import sys
        from fxstudio.core.loading import load_model
        from fxstudio.core.document import Document
        doc = Document(load_model({str(model)!r}))
        doc.apply_edit({{"op": "set_arg", "node": "mul", "key": 1, "value": "1.5"}})
        doc.apply_edit({{"op": "set_arg", "node": "add", "key": 1, "value": "3"}})
        print(doc.shape_text_of(doc.find("mul")), doc.shape_text_of(doc.find("relu")), doc.verdict().status)
        print("dynamo imported:", "torch._dynamo" in sys.modules)
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "dynamo imported: False", done.stdout
    assert lines[0].startswith("2×8"), lines[0]
