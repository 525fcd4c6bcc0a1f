"""The Dynamo privates of ``core/fx_compat_dynamo.py`` and their fallbacks ("not recorded")."""

import torch
import torch.fx

from fxstudio.core import fx_compat_dynamo


def _plain_graph_module():
    return torch.fx.symbolic_trace(torch.nn.ReLU())


def test_a_graph_dynamo_did_not_make_has_no_reason_and_no_sources():
    gm = _plain_graph_module()
    assert fx_compat_dynamo.compile_reason(gm) is None
    placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder")
    assert fx_compat_dynamo.graph_input_source(placeholder) is None
    assert fx_compat_dynamo.current_compile_id() is None  # outside a compile


def test_backends_are_looked_up_by_name():
    assert callable(fx_compat_dynamo.dynamo_backend("eager"))
    assert callable(fx_compat_dynamo.dynamo_backend("inductor"))
