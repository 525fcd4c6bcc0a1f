"""The layered layout on real examples and generated graphs: valid, straight, compact, deterministic."""

import functools

import pytest
import torch
import torch.fx

from fxstudio.testing import synthetic
from fxstudio.core.errors import TraceError
from fxstudio.core.layout.graph_model import to_networkx
from fxstudio.core.layout import compute_layout
from fxstudio.core.layout import count_crossings
from fxstudio.core.layout import EdgeRoute, Layout, NodeBox
from fxstudio.core.loading import load_model
from fxstudio.resources import EXAMPLES_DIR
from tests.core.layout.layout_checks import assert_valid_layout

EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.py"))


@functools.lru_cache(maxsize=None)
def loaded(name, tracer):
    return load_model(EXAMPLES_DIR / name, tracer=tracer)


def centre_x(layout, name):
    box = layout.nodes[name]
    return box.x + box.w / 2


@pytest.mark.parametrize("tracer", ["fx", "export"])
def test_every_example_is_laid_out_without_overlaps_and_with_every_edge_downward(tracer):
    done = 0
    for name in EXAMPLES:
        try:
            graph = loaded(name, tracer).graph_module.graph
        except TraceError:
            assert name == "data_branch.py"  # branches on data: not traceable without concrete args
            continue
        layout = compute_layout(graph)
        assert_valid_layout(layout, graph, check_routes=True)
        n_edges = sum(len({(i.name) for i in node.all_input_nodes}) for node in graph.nodes)
        assert len({(e.src, e.dst) for e in layout.edges}) == n_edges
        assert layout.seconds < 0.5
        done += 1
    assert done >= 10


@pytest.mark.parametrize("kind,n", [("skip_chain", 1500), ("transformer", 1200), ("exported", 1200)])
def test_generated_graphs_are_valid(kind, n):
    graph = synthetic.make_graph(kind, n)
    assert abs(len(graph.nodes) - n) < 0.15 * n
    layout = compute_layout(graph)
    assert_valid_layout(layout, graph)
    assert len(layout.edges) == sum(len(node.all_input_nodes) for node in graph.nodes)


def test_the_networkx_model_has_every_node_and_keyed_edges():
    graph = synthetic.transformer(1)
    g = to_networkx(graph)
    assert set(g.nodes) == {n.name for n in graph.nodes}
    linear = next(n for n in graph.nodes if n.target is torch.nn.functional.linear)
    x, w, b = linear.args
    assert g.edges[x.name, linear.name]["key"] == 0
    assert g.edges[w.name, linear.name]["key"] == 1 and g.edges[b.name, linear.name]["key"] == 2
    assert g.nodes[w.name]["op"] == "get_attr" and g.nodes[linear.name]["module_path"].endswith("q_proj")
    softmax = next(n for n in graph.nodes if n.target is torch.nn.functional.softmax)
    assert g.in_degree(softmax.name) == 1


@pytest.mark.parametrize("kind", ["transformer", "exported"])
def test_parameters_sit_right_above_their_consumer(kind):
    graph = synthetic.make_graph(kind, 400)
    layout = compute_layout(graph)
    params = [n for n in graph.nodes if n.op == "get_attr" or n.meta.get("fxs_hidden")]
    assert len(params) > 50
    for p in params:
        first_use = min(layout.nodes[u.name].layer for u in p.users)
        # A parameter (or its transpose) is at most two layers above its first use, never at the top.
        assert first_use - 2 <= layout.nodes[p.name].layer < first_use
    top = [n for n, b in layout.nodes.items() if b.layer == 0]
    assert "x" in top and len(top) <= 7  # the input and the first layer's parameters, not all of them


def test_chains_are_straight_and_a_residual_add_stays_under_its_main_input():
    graph = loaded("residual_cnn.py", "fx").graph_module.graph
    layout = compute_layout(graph)
    chain = ["x", "conv1", "bn1", "relu", "layer1_0_conv1", "layer1_0_bn1", "layer1_0_relu",
             "layer1_0_conv2", "layer1_0_bn2", "add", "layer1_0_relu_1"]
    assert {centre_x(layout, n) for n in chain} == {centre_x(layout, "x")}
    assert [layout.nodes[n].layer for n in chain] == list(range(len(chain)))
    skip = next(e for e in layout.edges if e.src == "relu" and e.dst == "add")
    assert len(skip.points) > 2 and all(abs(x - centre_x(layout, "x")) > 70 for x, _ in skip.points[2:-1])


def test_the_main_chain_of_a_generated_graph_is_mostly_straight():
    graph = synthetic.skip_chain(1200)
    # As the canvas draws it (weights are rows of their op's card). With every weight a card of its
    # own, each block's weights take a layer of their own inside the block's frame (frames never
    # overlap, frames.py), and the extra long-edge dummies bend the chain more often.
    layout = compute_layout(graph, fold_weights=True)
    relus = [n.name for n in graph.nodes if n.target is torch.nn.functional.relu]
    xs = [centre_x(layout, n) for n in relus]
    straight = sum(abs(a - b) < 1e-6 for a, b in zip(xs, xs[1:]))
    assert straight >= 0.8 * (len(xs) - 1)


def test_same_graph_same_layout():
    a = compute_layout(synthetic.skip_chain(800, seed=3))
    b = compute_layout(synthetic.skip_chain(800, seed=3))
    ja, jb = a.to_json(), b.to_json()
    ja.pop("seconds"), jb.pop("seconds")
    assert ja == jb


def test_card_sizes_come_from_the_sizes_argument_or_the_label():
    graph = loaded("two_linear.py", "fx").graph_module.graph
    names = [n.name for n in graph.nodes]
    default = compute_layout(graph)
    # two lines under the title (56), or one where the name says the op (44: the shape only)
    assert all(130 <= b.w <= 330 and b.h in (44, 56) for b in default.nodes.values())
    sized = compute_layout(graph, sizes={names[1]: (400, 90)})
    assert (sized.nodes[names[1]].w, sized.nodes[names[1]].h) == (400, 90)
    assert_valid_layout(sized, graph)
    called = compute_layout(graph, sizes=lambda name: (50, 20) if name == names[0] else None)
    assert (called.nodes[names[0]].w, called.nodes[names[0]].h) == (50, 20)
    assert called.nodes[names[-1]].w == default.nodes[names[-1]].w


def _crossed_graph():
    """Three inputs p1..p3 feeding r3, r2, r1 created in reverse order: graph order crosses all."""
    g = torch.fx.Graph()
    ps = [g.placeholder(f"p{i}") for i in (1, 2, 3)]
    rs = [g.call_function(torch.relu, (p,)) for p in reversed(ps)]
    g.output(tuple(rs))
    return g


def test_crossing_reduction_untangles_a_crossed_graph():
    graph = _crossed_graph()
    layout = compute_layout(graph)
    assert count_crossings(layout) == 0
    assert_valid_layout(layout, graph)
    # The same cards in graph order with straight edges cross three times.
    naive = Layout()
    for i, name in enumerate(["p1", "p2", "p3"]):
        naive.nodes[name] = NodeBox(name, x=200.0 * i, y=0, w=100, h=50, layer=0)
    for i, name in enumerate(["relu", "relu_1", "relu_2"]):
        naive.nodes[name] = NodeBox(name, x=200.0 * i, y=100, w=100, h=50, layer=1)
    for node in graph.nodes:
        if node.op == "call_function":
            src, dst = naive.nodes[node.args[0].name], naive.nodes[node.name]
            naive.edges.append(EdgeRoute(src.name, dst.name, 0, [(src.x + 50, 50.0), (dst.x + 50, 100.0)]))
    assert count_crossings(naive) == 3


def test_edges_sharing_an_end_do_not_count_as_crossing():
    layout = Layout()
    layout.nodes["a"] = NodeBox("a", x=100, y=0, w=100, h=50, layer=0)
    for i, name in enumerate("bcd"):
        layout.nodes[name] = NodeBox(name, x=150.0 * i, y=150, w=100, h=50, layer=2)
        layout.edges.append(EdgeRoute("a", name, 0, [(150.0, 50.0), (150.0 * i + 50, 150.0)]))
    assert count_crossings(layout) == 0
