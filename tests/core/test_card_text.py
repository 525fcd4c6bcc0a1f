"""What a card says under its title (issue #26, items 4 and 7): the target led by its op and only
when the title does not say it, the constants, the module of a card that has no frame of its own,
and how many lines that makes (the layout makes a card taller for a third line)."""

from __future__ import annotations

import operator

import torch
import torch.fx
from torch import nn

from fxstudio.core.card_text import (
    card_lines, card_target_line, constants_text, module_caption, short_target, single_card_paths, title_says_target,
)


def _node(graph: torch.fx.Graph, name: str) -> torch.fx.Node:
    return next(n for n in graph.nodes if n.name == name)


def _exported():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            y = torch.relu(self.conv1(x)).mean((2, 3))
            return torch.unflatten(self.fc(y), 1, (1, 2))

    return torch.export.export(Net().eval(), (torch.randn(1, 3, 8, 8),)).module().graph


def test_the_target_leads_with_the_op_and_never_loses_its_name():
    assert short_target("torch.ops.aten.linear.default") == "aten.linear"
    assert short_target("torch.ops.aten.unflatten.int") == "aten.unflatten.int"   # another overload says more
    assert short_target("torch.nn.functional.linear") == "F.linear"
    assert short_target("torch.ops.quantized_decomposed.quantize_per_tensor.default") == \
        "quantized_decomposed.quantize_per_tensor"
    for same in ("torch.relu", "operator.add", "layer1.0.conv1", "my_model.helper"):
        assert short_target(same) == same


def test_an_exported_graphs_cards_do_not_repeat_the_op_their_title_says():
    g = _exported()
    calls = [n for n in g.nodes if n.op == "call_function"]
    assert {n.name for n in calls} >= {"conv2d", "relu", "mean", "linear", "unflatten"}
    assert all(title_says_target(n) and card_target_line(n) == "" for n in calls)
    # A node whose name does not say its op (renamed by an edit) shows the op, short.
    unflatten = _node(g, "unflatten")
    unflatten.name = "split_heads"
    assert card_target_line(unflatten) == "aten.unflatten.int"
    linear = _node(g, "linear")
    linear.name = "proj_3"
    assert card_target_line(linear) == "aten.linear"
    x = next(n for n in g.nodes if n.op == "placeholder" and n.users and not n.name.startswith("p_"))
    assert card_target_line(x) == "input"


def test_a_traced_graph_names_functions_short_and_submodules_by_class():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4)])

        def forward(self, x):
            y = nn.functional.linear(x, torch.ones(4, 4))
            return self.blocks[0](y) * 2

    gm = torch.fx.symbolic_trace(Net())
    linear, call, mul = (_node(gm.graph, n) for n in ("linear", "blocks_0", "mul"))
    assert card_target_line(linear, gm) == ""           # "linear" says F.linear
    linear.name = "project"
    assert card_target_line(linear, gm) == "F.linear"
    assert card_target_line(call, gm) == "Linear"       # the title spells blocks.0
    call.name = "head"
    assert card_target_line(call, gm) == "blocks.0 · Linear"
    assert card_target_line(mul, gm) == "" and constants_text(mul) == "× 2"
    assert mul.target is operator.mul


def test_constants_skip_schema_defaults_and_count_as_a_line():
    g = _exported()
    conv, relu, mean = (_node(g, n) for n in ("conv2d", "relu", "mean"))
    assert constants_text(conv) == "stride=[2, 2], padding=[1, 1]"
    assert constants_text(relu) == ""
    assert constants_text(mean) == "dim=[2, 3]"
    assert card_lines(relu) == 1                   # the shape only: the title says relu
    assert card_lines(conv) == 2                   # constants, shape
    assert card_lines(conv, caption=True) == 3     # and the module it was traced in: a taller card
    x = next(n for n in g.nodes if n.op == "placeholder" and n.users and not n.name.startswith("p_"))
    assert card_lines(x) == 2                      # "input", shape


def test_the_module_of_a_card_without_a_frame_reads_relative_to_the_frame_around_it():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    conv = g.call_function(torch.relu, (x,))
    conv.meta["fxs_module_path"] = "layer1.0.conv1"
    conv.meta["fxs_module_stack"] = [("layer1", "Sequential"), ("layer1.0", "BasicBlock"),
                                     ("layer1.0.conv1", "torch.nn.modules.conv.Conv2d")]
    g.output(conv)
    single = single_card_paths(["layer1.0.conv1", "layer1.0.bn1", ""])
    assert "layer1.0.conv1" in single and "layer1.0" not in single and "layer1" not in single
    assert module_caption(conv, {"layer1", "layer1.0"}, single) == "conv1 · Conv2d"
    assert module_caption(conv, {"layer1"}, single) == "0.conv1 · Conv2d"
    assert module_caption(conv, set(), single) == "layer1.0.conv1 · Conv2d"
    assert module_caption(conv, {"layer1", "layer1.0", "layer1.0.conv1"}, single) == ""   # its frame says it
    assert module_caption(conv, {"layer1"}, {"layer1.0.bn1"}) == ""   # a module of several cards: not named on each
    assert module_caption(x, set(), {""}) == ""
