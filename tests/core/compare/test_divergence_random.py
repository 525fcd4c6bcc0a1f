"""Random ops in the node-by-node run: each graph draws what it draws when run alone from the seed.

``run_divergence`` keeps one generator state per graph (``random_ops.GraphGenerators``) and swaps
it in around the nodes that may draw. Identical graphs with training-mode dropout, ``rand_like``
or ``bernoulli`` show no divergence; an edit diverges at the edited node; and the edited graph's
values are those of the edited module run alone after ``torch.manual_seed(seed)``: the output
row's error equals the error between the two modules run alone. Both engines give the same rows
(``both``).
"""

import copy

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from fxstudio.core.compare import random_ops
from fxstudio.core.compare import run_divergence
from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from tests.core.compare.test_divergence_codegen import both
from tests.model_files import model_source

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SEEDS = (0, 1, 7)


class FunctionalDropout(nn.Module):
    def forward(self, x):
        y = F.dropout(x * 2.0, 0.5, training=True)
        return torch.relu(y + 1.0) - 0.5


class ModuleDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.3)
        self.out = nn.Linear(16, 8)

    def forward(self, x):
        return self.out(self.drop(self.lin(x)).relu())


class Noise(nn.Module):
    def forward(self, x):
        y = x + torch.rand_like(x)
        z = torch.bernoulli(torch.sigmoid(y))
        return (y * z).sum(dim=1) + torch.randn_like(x).mean(dim=1)


class TwoDropouts(nn.Module):
    def forward(self, x):
        a = F.dropout(x, 0.5, training=True)
        b = a + 1.0
        return F.dropout(b, 0.5, training=True) * 3.0


MODELS = [FunctionalDropout, lambda: ModuleDropout().train(), Noise, TwoDropouts]
IDS = ["F.dropout", "nn.Dropout", "rand_like+bernoulli", "two_dropouts"]


def traced(make):
    torch.manual_seed(0)
    return torch.fx.symbolic_trace(make())


def x16():
    return (torch.randn(4, 16, generator=torch.Generator().manual_seed(3)),)


def alone(gm, args, seed):
    """``gm``'s output run on its own after ``torch.manual_seed(seed)``."""
    torch.manual_seed(seed)
    with torch.no_grad():
        return gm(*args)


def output_row(result):
    return next(r for r in result.nodes if r.op == "output")


def expected_max_abs(original, edited, args, seed):
    return (alone(original, args, seed) - alone(edited, args, seed)).abs().max().item()


def close_to(expected):
    """The output row's error, computed apart from the direct runs' (another summation order)."""
    return pytest.approx(expected, rel=1e-5, abs=1e-7)


def with_arg(gm, name, index, value):
    """A copy of ``gm`` whose node ``name`` has argument ``index`` set to ``value``."""
    edited = copy.deepcopy(gm)
    node = next(n for n in edited.graph.nodes if n.name == name)
    args = list(node.args)
    args[index] = value
    node.args = tuple(args)
    edited.recompile()
    return edited


@pytest.mark.parametrize("make", MODELS, ids=IDS)
def test_identical_graphs_with_random_ops_do_not_diverge(make):
    original = traced(make)
    edited = copy.deepcopy(original)
    args = x16()
    for seed in SEEDS:
        for share in (False, True):
            result = both(original, edited, args, match="name", seed=seed, share=share, rtol=0.0, atol=0.0)
            assert result.first is None
            assert all(r.status == "equal" for r in result.nodes)
            if share:  # the draws pair up in order: every node is shared
                assert all(r.shared for r in result.nodes)


@pytest.mark.parametrize("share", [False, True])
def test_an_edit_downstream_of_a_dropout_diverges_at_the_edited_node(share):
    original = traced(TwoDropouts)
    edited = with_arg(original, "add", 1, 1.5)  # between the two dropouts
    args = x16()
    for seed in SEEDS:
        result = both(original, edited, args, match="name", seed=seed, share=share)
        assert result.first is not None and result.first.name == "add"
        rows = {r.name: r for r in result.nodes}
        assert rows["dropout"].status == "equal" and rows["dropout"].shared == share
        # The second dropout draws as in a run alone, after the first one's draws.
        assert output_row(result).max_abs == close_to(expected_max_abs(original, edited, args, seed))


@pytest.mark.parametrize("make", MODELS, ids=IDS)
def test_the_edited_graph_draws_what_it_draws_run_alone(make):
    original = traced(make)
    edited = copy.deepcopy(original)
    last = [n for n in edited.graph.nodes if n.op != "output"][-1]
    with edited.graph.inserting_after(last):
        scaled = edited.graph.call_function(torch.mul, (last, 1.25))
    last.replace_all_uses_with(scaled, delete_user_cb=lambda user: user is not scaled)
    edited.recompile()
    args = x16()
    for seed in SEEDS:
        for share in (False, True):
            result = both(original, edited, args, match="name", seed=seed, share=share)
            assert result.first is not None
            assert output_row(result).max_abs == close_to(expected_max_abs(original, edited, args, seed))


def test_a_new_random_node_before_a_dropout_shifts_the_edited_graphs_later_draws():
    """As running the edited graph alone would: its dropout sees the numbers after the new draw,
    so it diverges from the original's although the node itself is unchanged."""
    original = traced(FunctionalDropout)
    edited = copy.deepcopy(original)
    mul = next(n for n in edited.graph.nodes if n.name == "mul")
    with edited.graph.inserting_after(mul):
        noise = edited.graph.call_function(torch.rand_like, (mul,))
    with edited.graph.inserting_after(noise):
        zero = edited.graph.call_function(torch.mul, (noise, 0.0))
    with edited.graph.inserting_after(zero):
        same = edited.graph.call_function(torch.add, (mul, zero))  # the same values as mul
    mul.replace_all_uses_with(same, delete_user_cb=lambda user: user not in (noise, same))
    edited.recompile()
    args = x16()
    for seed in SEEDS:
        for share in (False, True):
            result = both(original, edited, args, match="name", seed=seed, share=share)
            assert result.first is not None and result.first.name == "dropout"
            assert output_row(result).max_abs == close_to(expected_max_abs(original, edited, args, seed))


def test_a_dropout_only_the_edited_graph_has_draws_from_the_seed():
    original = torch.fx.symbolic_trace(nn.Sequential(nn.Linear(16, 16), nn.ReLU()))
    edited = copy.deepcopy(original)
    relu = next(n for n in edited.graph.nodes if n.op == "call_module" and n.target == "1")
    with edited.graph.inserting_after(relu):
        drop = edited.graph.call_function(F.dropout, (relu, 0.5, True))
    relu.replace_all_uses_with(drop, delete_user_cb=lambda user: user is not drop)
    edited.recompile()
    args = x16()
    for seed in SEEDS:
        result = both(original, edited, args, match="name", seed=seed)
        assert output_row(result).max_abs == close_to(expected_max_abs(original, edited, args, seed))


class Export(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        y = self.drop(self.lin(x))
        return y * torch.bernoulli(torch.sigmoid(y))


def test_an_exported_graph_with_aten_dropout_and_bernoulli():
    torch.manual_seed(0)
    args = x16()
    original = torch.export.export(Export().train(), args).module()
    targets = {n.target for n in original.graph.nodes}
    assert torch.ops.aten.dropout.default in targets and torch.ops.aten.bernoulli.default in targets
    edited = copy.deepcopy(original)
    for seed in SEEDS:
        for share in (False, True):
            result = both(original, edited, args, match="name", seed=seed, share=share, rtol=0.0, atol=0.0)
            assert result.first is None and all(r.status == "equal" for r in result.nodes)
    changed = with_arg(original, "dropout", 1, 0.5)
    for seed in SEEDS:
        result = both(original, changed, args, match="name", seed=seed)
        assert result.first is not None and result.first.name == "dropout"
        assert output_row(result).max_abs == close_to(expected_max_abs(original, changed, args, seed))


class UserNoise(nn.Module):
    """A user's leaf module: its forward draws, and nothing in the graph says so."""

    def forward(self, x):
        return x + torch.rand_like(x)


class LeafNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.noise = UserNoise()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return self.lin(self.noise(x)).relu()


class LeafTracer(torch.fx.Tracer):
    def is_leaf_module(self, m, qualname):
        return isinstance(m, UserNoise) or super().is_leaf_module(m, qualname)


def test_a_user_leaf_module_is_assumed_to_draw():
    root = LeafNet()
    original = torch.fx.GraphModule(root, LeafTracer().trace(root))
    assert any(n.op == "call_module" and n.target == "noise" for n in original.graph.nodes)
    edited = copy.deepcopy(original)
    args = x16()
    for seed in SEEDS:
        result = both(original, edited, args, match="name", seed=seed, share=False, rtol=0.0, atol=0.0)
        assert result.first is None


def programs(gm):
    from fxstudio.core.compare import divergence_codegen as codegen

    return [p.source for sched in getattr(gm.graph, codegen._CACHE_ATTR) for p in sched.programs.values()]


@pytest.mark.parametrize("make", [lambda: nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5), nn.GELU()).eval(),
                                  lambda: nn.Sequential(nn.Linear(16, 16), nn.ReLU())],
                         ids=["eval_dropout", "no_dropout"])
def test_a_graph_without_drawing_nodes_gets_the_program_it_got_before(make):
    original = traced(make)
    edited = copy.deepcopy(original)
    run_divergence(original, edited, x16(), rtol=0.0, atol=0.0, match="name", share=False)
    (source,) = programs(edited)
    assert source.startswith("def _lockstep(_oin, _ein, _T, _cmp, _dif, _cmpt, _dift, _re, _cancel, _progress):\n")
    assert "_rng" not in source


def test_swaps_come_only_where_the_drawing_graph_changes():
    original = traced(TwoDropouts)
    edited = copy.deepcopy(original)
    run_divergence(original, edited, x16(), rtol=0.0, atol=0.0, match="name", share=False)
    (source,) = programs(edited)
    lines = [line.strip() for line in source.splitlines()]
    # original dropout, edited dropout, original dropout_1, edited dropout_1: one enter each.
    assert [line for line in lines if line.startswith("_rng")] == [
        "_rng.enter('original')", "_rng.enter('edited')", "_rng.enter('original')", "_rng.enter('edited')"]
    run_divergence(original, edited, x16(), rtol=0.0, atol=0.0, match="name", share=True)
    shared = [p for p in programs(edited) if p != source]
    assert len(shared) == 1 and "_rng.enter('edited')" not in shared[0]  # every draw shared


def test_which_nodes_may_draw():
    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.train_drop = nn.Dropout()
            self.eval_drop = nn.Dropout().eval()
            self.lin = nn.Linear(4, 4)
            self.block = nn.Sequential(nn.Linear(4, 4), nn.Dropout())
            self.act = nn.RReLU()

        def forward(self, x):
            q = x[None]
            return (F.dropout(x, 0.5, True), F.dropout(x, 0.5, False), F.dropout(x, 0.5, training=False),
                    F.dropout(x), F.rrelu(x), F.rrelu(x, training=True), x.uniform_(), x.bernoulli(),
                    torch.multinomial(x.abs(), 1), torch.normal(x, 1.0), F.gumbel_softmax(x),
                    torch.dropout(x, 0.1, False),
                    F.scaled_dot_product_attention(q, q, q), F.scaled_dot_product_attention(q, q, q, dropout_p=0.1),
                    self.train_drop(x), self.eval_drop(x), self.lin(x), self.block(x), self.act(x),
                    torch.relu(x) + x.size(0), F.dropout2d(x, 0.1, False), F.alpha_dropout(x, 0.2, True))

    gm = torch.fx.symbolic_trace(Probe())
    modules = dict(gm.named_modules())
    draws = {n.name for n in gm.graph.nodes if n.op != "output" and random_ops.node_may_draw(n, modules)}
    assert draws == {"dropout", "dropout_3", "rrelu_1", "uniform_", "bernoulli", "multinomial", "normal",
                     "gumbel_softmax", "scaled_dot_product_attention_1", "train_drop", "block_1", "act",
                     "alpha_dropout"}
    assert random_ops.module_may_draw(nn.TransformerEncoderLayer(8, 2, 16))
    assert not random_ops.module_may_draw(nn.TransformerEncoderLayer(8, 2, 16).eval())
    assert random_ops.module_may_draw(nn.MultiheadAttention(8, 2, dropout=0.1))
    assert not random_ops.module_may_draw(nn.MultiheadAttention(8, 2))
    assert random_ops.module_may_draw(UserNoise())


TRAIN_MODEL = model_source('''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        y = self.drop(torch.relu(self.fc1(x)))
        return self.fc2(y) + torch.rand_like(self.fc2.bias)


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(3, 8),)
''')


def test_a_document_in_training_mode_matches_by_id(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(TRAIN_MODEL)
    doc = Document(load_model(path))
    args = doc.loaded.example_inputs
    for share in (False, True):
        assert both(doc.original, doc.module(), args, share=share).first is None
    doc.apply_edit({"op": "set_target", "match": "torch.relu", "target": "torch.sigmoid"})
    for seed in SEEDS:
        result = both(doc.original, doc.module(), args, seed=seed)
        assert result.first is not None and result.first.name == "relu"
        rows = {r.name: r for r in result.nodes}
        expected = expected_max_abs(doc.original, doc.module(), args, seed)
        assert rows["output"].max_abs == close_to(expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_dropout_on_cuda_draws_per_graph():
    torch.manual_seed(0)
    original = torch.fx.symbolic_trace(ModuleDropout().train()).cuda()
    edited = copy.deepcopy(original)
    args = tuple(a.cuda() for a in x16())
    for seed in SEEDS:
        assert both(original, edited, args, match="name", seed=seed, rtol=0.0, atol=0.0, share=False).first is None
    changed = copy.deepcopy(original)
    with torch.no_grad():
        changed.out.bias += 1.0
    for seed in SEEDS:
        result = both(original, changed, args, match="name", seed=seed, share=False)
        assert output_row(result).max_abs == close_to(expected_max_abs(original, changed, args, seed))


class DrawThenDropout(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.5, training=True) * 2.0


def test_a_dropout_after_a_new_draw_is_not_shared():
    """The dropout's inputs are unchanged (same_computation would share it), but the edited graph
    draws other numbers before it: it runs itself, from its own state."""
    original = traced(DrawThenDropout)
    edited = copy.deepcopy(original)
    x = next(n for n in edited.graph.nodes if n.op == "placeholder")
    out = next(n for n in edited.graph.nodes if n.op == "output")
    with edited.graph.inserting_after(x):
        noise = edited.graph.call_function(torch.rand_like, (x,))
    with edited.graph.inserting_before(out):
        zero = edited.graph.call_function(torch.mul, (noise, 0.0))
        total = edited.graph.call_function(torch.add, (out.args[0], zero))
    out.args = (total,)
    edited.recompile()
    args = x16()
    for seed in SEEDS:
        result = both(original, edited, args, match="name", seed=seed, share=True)
        rows = {r.name: r for r in result.nodes}
        assert not rows["dropout"].shared and rows["dropout"].status == "diverged"
        assert rows["x"].shared
        assert output_row(result).max_abs == close_to(expected_max_abs(original, edited, args, seed))


class InPlaceDraws(nn.Module):
    def forward(self, x):
        noise = x.clone().uniform_(-1.0, 1.0)
        return F.dropout(x + noise, 0.5, True, inplace=True) * 2.0


def test_in_place_random_ops_in_the_interpreter_engine():
    """In-place ops send the run to the Interpreter engine; it keeps one state per graph too."""
    original = traced(InPlaceDraws)
    edited = copy.deepcopy(original)
    args = x16()
    for seed in SEEDS:
        result = run_divergence(original, edited, args, rtol=0.0, atol=0.0, match="name", seed=seed)
        assert result.first is None and all(r.status == "equal" for r in result.nodes)
        changed = with_arg(original, "mul", 1, 3.0)
        result = run_divergence(original, changed, args, rtol=1e-5, atol=1e-6, match="name", seed=seed)
        assert result.first is not None and result.first.name == "mul"
        assert output_row(result).max_abs == close_to(expected_max_abs(original, changed, args, seed))
