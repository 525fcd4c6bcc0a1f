"""Layers written as their functional call in the generated lockstep run (``module_inline``).

Each inlined layer must give exactly the module call's value, random draws and errors; a module
whose call could differ (hooks, a subclass, a patched forward, its own conditions) is called as a
module. Bit-exactness is checked through the product path: an original whose module is forced to
be called as a module (a no-op hook) against an edited graph whose module is inlined, compared
with zero tolerance.
"""

import copy

import pytest
import torch
import torch.fx
from torch import nn

from fxstudio.core.compare import divergence_codegen as codegen
from fxstudio.core.compare import module_inline
from fxstudio.core.compare import run_divergence

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Wrap(nn.Module):
    """One layer between two elementwise ops, so it is a node in the middle of a graph."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x * 1.0) + 0.0


def gm_of(layer):
    return torch.fx.symbolic_trace(Wrap(layer).eval() if not layer.training else Wrap(layer))


def run(original, edited, args, **kw):
    """``run_divergence`` matching nodes by name (the graphs here are traced, not opened)."""
    return run_divergence(original, edited, args, match="name", **kw)


def programs(gm):
    sched = getattr(gm.graph, codegen._CACHE_ATTR)[0]
    return [p.source for p in sched.programs.values()]


def inlined_sources(gm):
    """The last generated program's lines that call the layer (inlined or as a module)."""
    return [line for line in programs(gm)[-1].splitlines() if "_F." in line or "_batch_norm_eval" in line
            or ".flatten(" in line]


LAYERS = [
    ("linear", lambda: nn.Linear(8, 5), lambda: torch.randn(3, 8)),
    ("linear_nobias", lambda: nn.Linear(8, 5, bias=False), lambda: torch.randn(3, 8)),
    ("layer_norm", lambda: nn.LayerNorm(8, eps=1e-3), lambda: torch.randn(3, 8)),
    ("layer_norm_noaffine", lambda: nn.LayerNorm([4, 8], elementwise_affine=False), lambda: torch.randn(2, 4, 8)),
    ("gelu_tanh", lambda: nn.GELU(approximate="tanh"), lambda: torch.randn(3, 8)),
    ("relu", nn.ReLU, lambda: torch.randn(3, 8)),
    ("dropout_eval", lambda: nn.Dropout(0.3).eval(), lambda: torch.randn(3, 8)),
    ("conv1d", lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1), lambda: torch.randn(2, 4, 11)),
    ("conv2d_groups", lambda: nn.Conv2d(4, 8, 3, padding="same", dilation=2, groups=2), lambda: torch.randn(2, 4, 9, 9)),
    ("conv3d", lambda: nn.Conv3d(2, 3, 2), lambda: torch.randn(1, 2, 4, 4, 4)),
    ("batch_norm1d", lambda: nn.BatchNorm1d(6).eval(), lambda: torch.randn(4, 6, 5)),
    ("batch_norm2d", lambda: nn.BatchNorm2d(3, momentum=None).eval(), lambda: torch.randn(2, 3, 4, 4)),
    ("batch_norm3d", lambda: nn.BatchNorm3d(2).eval(), lambda: torch.randn(1, 2, 3, 3, 3)),
    ("adaptive_avg_pool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: torch.randn(2, 3, 7, 8)),
    ("max_pool2d", lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), lambda: torch.randn(2, 3, 9, 9)),
    ("flatten", lambda: nn.Flatten(1, 2), lambda: torch.randn(2, 3, 4, 5)),
]


def with_stats(layer):
    """Give a batch norm non-trivial running statistics and affine parameters."""
    if isinstance(layer, nn.modules.batchnorm._BatchNorm):
        with torch.no_grad():
            layer.running_mean.uniform_(-1, 1)
            layer.running_var.uniform_(0.5, 2)
            layer.weight.uniform_(0.5, 1.5)
            layer.bias.uniform_(-1, 1)
    return layer


@pytest.mark.parametrize("name, make, inputs", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_an_inlined_layer_gives_the_module_calls_value_bit_for_bit(name, make, inputs):
    torch.manual_seed(0)
    layer = with_stats(make())
    edited = gm_of(layer)
    original = copy.deepcopy(edited)
    original.layer.register_forward_hook(lambda *a: None)  # called as a module, through __call__
    x = inputs()
    result = run(original, edited, (x,), rtol=0.0, atol=0.0, share=False, engine="generated")
    assert result.failure is None
    assert [r.status for r in result.nodes] == ["equal"] * len(result.nodes), [(r.name, r.status) for r in result.nodes]
    calls = inlined_sources(edited)
    assert len(calls) == 1, programs(edited)[-1]  # the edited layer is inlined, the hooked original is not
    # and the graph's own forward (module calls) gives the same value
    assert torch.equal(edited(x), layer(x * 1.0) + 0.0)


def test_an_inlined_dropout_draws_the_random_numbers_a_module_call_draws():
    """Each graph draws from its own generator state (so two training-mode dropouts agree); an
    inlined and a module-called dropout draw the same numbers."""
    x = torch.ones(64, 64)
    edited = gm_of(nn.Dropout(0.5).train())
    original = gm_of(nn.Dropout(0.5).train())
    for seed in (0, 1, 7):
        inlined = run(original, edited, (x,), rtol=0.0, atol=0.0, share=False, seed=seed)
        assert len(inlined_sources(edited)) == 2
        handle = edited.layer.register_forward_pre_hook(lambda *a: None)
        try:
            called = run(original, edited, (x,), rtol=0.0, atol=0.0, share=False, seed=seed)
            assert len(inlined_sources(edited)) == 1
        finally:
            handle.remove()
        interpreted = run(original, edited, (x,), rtol=0.0, atol=0.0, share=False, seed=seed, engine="interpreter")
        figures = [[(r.name, r.status, r.max_abs) for r in res.nodes] for res in (inlined, called, interpreted)]
        assert figures[0] == figures[1] == figures[2]
        assert inlined.first is None and all(r.status == "equal" for r in inlined.nodes)


def hook_counter(register):
    calls = []
    handle = register(lambda *a: calls.append(1))
    return calls, handle


def test_hooks_keep_a_module_call_and_a_removed_hook_lets_it_inline_again():
    edited = gm_of(nn.Linear(4, 4))
    original = copy.deepcopy(edited)
    x = torch.randn(2, 4)
    run(original, edited, (x,), rtol=0.0, atol=0.0, share=False)
    assert len(inlined_sources(edited)) == 2  # both graphs' layers
    calls, handle = hook_counter(edited.layer.register_forward_hook)
    result = run(original, edited, (x,), rtol=0.0, atol=0.0, share=False)
    assert calls == [1] and result.first is None and len(inlined_sources(edited)) == 1
    handle.remove()
    run(original, edited, (x,), rtol=0.0, atol=0.0, share=False)
    assert calls == [1] and len(inlined_sources(edited)) == 2


@pytest.mark.parametrize("register", [nn.modules.module.register_module_forward_hook,
                                      nn.modules.module.register_module_forward_pre_hook])
def test_a_global_module_hook_turns_inlining_off(register):
    edited = gm_of(nn.Linear(4, 4))
    original = copy.deepcopy(edited)
    calls, handle = hook_counter(register)
    try:
        run(original, edited, (torch.randn(2, 4),), rtol=0.0, atol=0.0, share=False)
    finally:
        handle.remove()
    assert len(calls) == 2 and inlined_sources(edited) == []


class ScaledLinear(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


def test_subclasses_patched_classes_and_instance_forwards_are_called_as_modules(monkeypatch):
    x = torch.randn(2, 4)
    sub = gm_of(ScaledLinear(4, 4))
    result = run(copy.deepcopy(sub), sub, (x,), rtol=0.0, atol=0.0)
    assert result.first is None and inlined_sources(sub) == []
    plain = nn.Linear(4, 4)
    original = gm_of(copy.deepcopy(plain))
    own = gm_of(plain)
    own.layer.forward = lambda inp: torch.zeros(2, 4)  # an instance's own forward
    out = run(original, own, (x,), rtol=0.0, atol=0.0)
    assert out.first is not None and out.first.name == "layer"
    assert len(inlined_sources(own)) == 1  # the original's layer only
    monkeypatch.setattr(nn.GELU, "forward", lambda self, inp: inp * 3)
    patched = gm_of(nn.GELU())
    twin = copy.deepcopy(patched)
    res = run(patched, twin, (x,), rtol=0.0, atol=0.0, share=False)
    assert res.first is None and inlined_sources(twin) == []
    assert torch.equal(patched(x), (x * 1.0) * 3 + 0.0)


@pytest.mark.parametrize("make", [lambda: nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect"),
                                  lambda: nn.BatchNorm2d(2, track_running_stats=False).eval(),
                                  lambda: nn.Embedding(10, 3, max_norm=1.0)],
                         ids=["reflect_padding", "batch_norm_without_stats", "embedding_max_norm"])
def test_layers_outside_their_recipe_are_called_as_modules(make):
    layer = make()
    assert module_inline.inline_values({("edited", 0): layer}) == {}


def test_batch_norm_in_training_mode_is_not_inlined_and_its_statistics_move_as_a_module_call_moves_them():
    layer = nn.BatchNorm2d(2).train()
    assert module_inline.inline_values({("edited", 0): layer}) == {}
    layer.eval()
    (recipe, values), = module_inline.inline_values({("edited", 0): layer}).values()
    assert recipe.name == "BatchNorm2d" and values[1] is layer.running_mean


def test_an_inlined_layers_error_names_its_node_with_the_modules_message():
    edited = gm_of(nn.BatchNorm2d(3).eval())
    result = run(copy.deepcopy(edited), edited, (torch.randn(2, 3, 4),), rtol=0.0, atol=0.0)
    assert result.failure is not None and result.failure.node_name == "layer"
    assert "expected 4D input (got 3D input)" in result.failure.message
    lin = gm_of(nn.Linear(4, 3))
    bad = run(copy.deepcopy(lin), lin, (torch.randn(2, 5),), rtol=0.0, atol=0.0)
    assert bad.failure is not None and bad.failure.node_name == "layer" and bad.failure.graph == "original"
    with pytest.raises(RuntimeError) as module_error:
        nn.Linear(4, 3)(torch.randn(2, 5))
    assert str(module_error.value).splitlines()[0] in bad.failure.message


def test_a_replaced_parameter_is_read_at_the_next_run():
    edited = gm_of(nn.Linear(4, 4))
    original = copy.deepcopy(edited)
    x = torch.randn(2, 4)
    assert run(original, edited, (x,), rtol=0.0, atol=0.0).first is None
    edited.layer.weight = nn.Parameter(edited.layer.weight * 2)
    result = run(original, edited, (x,), rtol=0.0, atol=0.0)
    assert result.first is not None and result.first.name == "layer"
