"""Trace failures name the user's file and line and suggest the remedy that fits."""

import torch

from fxstudio.core.loading import load_model
from tests.core.loading.trace_helpers import HELPER_LEN, fails
from tests.model_files import write_model as write


def test_untraceable_helper_suggests_fx_wrap_and_autowrap_fixes_it(tmp_path):
    f = write(tmp_path / "helper_len.py", HELPER_LEN)
    msg = str(fails(f))
    assert f"{f}:6 in per_row (`return x / len(x)`)" in msg
    assert "torch.fx.wrap('per_row')" in msg and "--autowrap per_row" in msg
    loaded = load_model(f, autowrap_functions=["per_row"])
    calls = [n for n in loaded.graph_module.graph.nodes if n.op == "call_function"]
    assert calls[0].target.__name__ == "per_row" and calls[0].meta["fxs_shape"] == (4, 2)
    torch.testing.assert_close(loaded.graph_module(torch.ones(4, 2)), torch.full((4, 2), 1.25))


def test_failure_inside_an_imported_helper_suggests_wrapping_it(tmp_path):
    (tmp_path / "sib_helpers.py").write_text("def normalize(x):\n    return x / len(x)\n")
    f = write(tmp_path / "uses_helper.py", """
    from sib_helpers import normalize

    class Net(nn.Module):
        def forward(self, x):
            return normalize(x) * 2

    EXAMPLE_INPUTS = (torch.ones(2, 3),)
    """)
    msg = str(fails(f))
    assert f"{f}:9 in forward (`return normalize(x) * 2`)" in msg
    assert "torch.fx.wrap('normalize')" in msg and "--autowrap normalize" in msg
    loaded = load_model(f, autowrap_functions=["normalize"])
    torch.testing.assert_close(loaded.graph_module(torch.ones(2, 3)), torch.ones(2, 3))


def test_branch_inside_a_submodule_suggests_that_leaf_module(tmp_path):
    f = write(tmp_path / "gated.py", """
    class Gate(nn.Module):
        def forward(self, x):
            if x.mean() > 0:
                return x
            return -x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Gate()
        def forward(self, x):
            return self.gate(x) * 2

    EXAMPLE_INPUTS = (torch.ones(3),)
    """)
    msg = str(fails(f"{f}::Net"))
    assert f"{f}:7 in forward (`if x.mean() > 0:`)" in msg
    assert "--leaf-module gate" in msg and "Gate" in msg
    loaded = load_model(f"{f}::Net", leaf_modules=["gate"])
    gate = next(n for n in loaded.graph_module.graph.nodes if n.op == "call_module")
    assert gate.target == "gate" and gate.meta["fxs_shape"] == (3,)
