"""``export_pt2`` in process. A torchao PT2E-quantized graph saved as ``.pt2``: its
``quantized_decomposed`` operators are registered by ``torch.ao.quantization.fx._decomposed``, which
plain ``import torch`` does not load; the verifying process imports it, and the result names that
import for the user. A cancel while verifying leaves the old file as it was."""

from __future__ import annotations

import pytest
import torch

from fxstudio.core.export import export_pt2
from fxstudio.core.model import LoadedModel


class Small(torch.nn.Module):
    """Conv, relu, linear: what the X86 Inductor quantizer annotates."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.lin = torch.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        return self.lin(torch.relu(self.conv(x)).flatten(1))


def test_a_pt2e_converted_graph_exports_verifies_and_names_the_import(tmp_path):
    pytest.importorskip("torchao")
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 8, 8),)
    graph = torch.export.export(Small().eval(), inputs).module()
    prepared = prepare_pt2e(graph, X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config()))
    prepared(*inputs)
    converted = convert_pt2e(prepared)
    assert any("quantized_decomposed" in str(n.target) for n in converted.graph.nodes)
    loaded = LoadedModel(path=None, kind="memory", module=converted, graph_module=converted,
                         example_inputs=inputs, tracer="export")
    result = export_pt2(loaded, tmp_path / "quantized.pt2")
    assert result.verified and result.verdict.startswith("verified: torch.export.load gives outputs")
    assert result.imports == ["torch.ao.quantization.fx._decomposed"]
    assert "quantized_decomposed operators" in result.requirements[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quantized.pt2"]


def test_cancel_while_verifying_writes_nothing_and_keeps_the_old_file(tmp_path):
    from fxstudio.core.export import ExportCancelled
    from fxstudio.core.loading import load_model
    from fxstudio.resources import EXAMPLES_DIR

    out = tmp_path / "out.pt2"
    out.write_bytes(b"old")
    steps = []
    with pytest.raises(ExportCancelled):
        export_pt2(load_model(EXAMPLES_DIR / "add_mul.py"), out, cancel=lambda: True,
                   progress=lambda message, fraction: steps.append(message))
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.pt2"]
    assert steps[0] == "Running torch.export" and steps[-1] == "Loading it in a fresh Python process"
