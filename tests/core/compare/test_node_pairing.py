"""Structural node pairing (``node_pairing``) on real traced graphs: an exported file reopened renames
nodes (an inserted ``neutral`` comes back as ``mul``, the old ``mul`` as ``mul_1``) and fx drops
unused attribute reads; the pairing must still pair each node with what computes the same thing, and
the node-by-node run must compare paired nodes only (no false divergence)."""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.compare import compare_models, graph_diff, pair_graphs, pair_items, run_divergence


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        return y * 0.5 + y.mean(dim=-1, keepdim=True)


def traced():
    return torch.fx.symbolic_trace(Block().eval())


def reopened_with_insert(factor: float, *, name: str = "mul"):
    """The graph as tracing an exported edit gives it back: ``torch.mul(relu, factor)`` spliced in
    after ``relu`` under the name tracing picks (``mul``), the old ``mul`` renamed ``mul_1``."""
    gm = traced()
    g = gm.graph
    relu = next(n for n in g.nodes if n.name == "relu")
    old_mul = next(n for n in g.nodes if n.name == "mul")
    old_mul.name = "mul_1"
    with g.inserting_after(relu):
        new = g.call_function(torch.mul, (relu, factor))
    relu.replace_all_uses_with(new, delete_user_cb=lambda user: user is not new)
    new.name = name
    gm.recompile()
    return gm


def x():
    return (torch.randn(3, 4, generator=torch.Generator().manual_seed(1)),)


def test_an_inserted_node_taking_an_old_name_pairs_by_what_nodes_compute():
    original, edited = traced(), reopened_with_insert(1.0)
    pairing = pair_graphs(original, edited)
    partner = {e.name: o.name for e, o in pairing.pairs.items()}
    assert partner["mul_1"] == "mul"  # the old mul, renamed by the reopen
    assert partner["mean"] == "mean" and partner["add"] == "add" and partner["output"] == "output"
    assert pairing.added == ["mul"] and pairing.removed == []
    assert "1 only in the edited graph (mul)" in pairing.describe()


def test_by_name_the_neutral_insert_diverges_by_structure_nothing_does():
    original, edited = traced(), reopened_with_insert(1.0)
    by_name = compare_models(original, original, edited, x(), match="name", repeats=1)
    assert by_name.first_divergence is not None and by_name.all_close  # the bug: a false divergence
    report = compare_models(original, original, edited, x(), match="structure", repeats=1)
    assert report.first_divergence is None and report.all_close
    rows = {n.name: n for n in report.nodes}
    assert rows["mul"].status == "no_counterpart"
    assert rows["mul_1"].counterpart == "mul" and rows["mul_1"].status == "equal"
    assert any("nodes matched by structure" in note for note in report.notes)


@pytest.mark.parametrize("engine", ["generated", "interpreter"])
def test_a_real_insert_diverges_at_the_first_user_of_the_inserted_node(engine):
    original, edited = traced(), reopened_with_insert(2.0)
    pair_graphs(original, edited).stamp()
    result = run_divergence(original, edited, x(), rtol=1e-5, atol=1e-6, match="structure", engine=engine)
    assert result.first is not None
    assert (result.first.name, result.first.counterpart) == ("mul_1", "mul")


def test_an_edited_constant_pairs_with_the_node_it_replaced():
    original = traced()
    edited = traced()
    mul = next(n for n in edited.graph.nodes if n.name == "mul")
    mul.args = (mul.args[0], 3.0)
    edited.recompile()
    pairing = pair_graphs(original, edited)
    assert {e.name: o.name for e, o in pairing.pairs.items()}["mul"] == "mul"
    assert pairing.added == [] and pairing.removed == []
    report = compare_models(original, original, edited, x(), match="structure", repeats=1)
    assert report.first_divergence.name == "mul"


def test_a_rewired_node_pairs_by_name_and_its_users_follow():
    original = traced()
    edited = traced()
    add = next(n for n in edited.graph.nodes if n.name == "add")
    relu = next(n for n in edited.graph.nodes if n.name == "relu")
    add.args = (relu, add.args[1])  # relu + mean instead of mul + mean
    edited.graph.eliminate_dead_code()
    edited.recompile()
    pairing = pair_graphs(original, edited)
    partner = {e.name: o.name for e, o in pairing.pairs.items()}
    assert partner["add"] == "add" and partner["output"] == "output"
    assert pairing.removed == ["mul"]


def test_a_dropped_unused_attribute_read_stays_unpaired_and_shifts_nothing():
    class Checked(nn.Module):
        def forward(self, x):
            torch._assert(x.ndim == 2, f"expected 2 dims, got {x.ndim}")
            return torch.relu(x) * 2

    original = torch.fx.symbolic_trace(Checked())
    edited = torch.fx.symbolic_trace(Checked())
    unused = [n for n in edited.graph.nodes if n.op == "call_function" and n.target is getattr and not n.users]
    assert len(unused) == 1
    edited.graph.erase_node(unused[0])
    for n in edited.graph.nodes:  # the reopen numbers what follows again
        if n.name == "getattr_1":
            n.name = "getattr_0"
    edited.recompile()
    pairing = pair_graphs(original, edited)
    assert pairing.removed == [unused[0].name] and pairing.added == []
    report = compare_models(original, original, edited, x()[:1], match="structure", repeats=1)
    assert report.first_divergence is None and report.removed == [unused[0].name]


def test_tied_weights_read_under_either_name_pair():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Parameter(torch.randn(4, 4, generator=torch.Generator().manual_seed(2)))
            self.b = self.a

    def graph(first: str, second: str):
        g = torch.fx.Graph()
        x = g.placeholder("x")
        w1, w2 = g.get_attr(first), g.get_attr(second)
        y = g.call_function(torch.matmul, (x, w1))
        z = g.call_function(torch.matmul, (y, w2))
        g.output(z)
        gm = torch.fx.GraphModule(Tied(), g)
        assert gm.a is gm.b
        return gm

    original, edited = graph("a", "b"), graph("b", "a")  # the round trip swapped the names read
    pairing = pair_graphs(original, edited)
    partner = {e.name: o.name for e, o in pairing.pairs.items()}
    assert partner["matmul"] == "matmul" and partner["matmul_1"] == "matmul_1"
    assert not pairing.added and not pairing.removed
    report = compare_models(original, original, edited, x(), match="structure", repeats=1)
    assert report.first_divergence is None and report.all_close


def test_graph_diff_by_structure_after_stamping():
    original, edited = traced(), reopened_with_insert(1.0)
    pair_graphs(original, edited).stamp()
    diff = graph_diff(original, edited, match="structure")
    assert diff.added == {"+mul"} and not diff.removed
    assert diff.changed == {"mul", "mean"}  # both read the inserted node now


def test_pair_items_takes_plain_tuples_and_prefers_equal_names_then_the_nearest():
    # two identical source nodes: names decide; without names, positions do
    a = [("p", 0, (), (("p",),)), ("u", 1, (0,), (("f",),)), ("v", 2, (0,), (("f",),))]
    b = [("p", 0, (), (("p",),)), ("v", 1, (0,), (("f",),)), ("w", 2, (0,), (("f",),))]
    assert pair_items(a, b, [("only", True)]) == {0: 0, 1: 2, 2: 1}
    b = [("p", 0, (), (("p",),)), ("x", 1, (0,), (("f",),)), ("y", 2, (0,), (("f",),))]
    assert pair_items(a, b, [("only", True)]) == {0: 0, 1: 1, 2: 2}
