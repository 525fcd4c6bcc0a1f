"""A Hugging Face GPT-2 model file through the real CLI (issue #15, defects 6 and 7): with
``use_cache=True`` both tracers fail with torch's own message plus the concrete remedy, the remedy
works, and an export's ``example_inputs()`` returns the inputs the model was opened with."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from fxstudio.core.errors import TraceError
from fxstudio.core.loading import load_model
from fxstudio.core.loading.trace_diagnostics import TraceRemedy
from tests.core.loading.hf_files import GPT2_CONFIG, error_lines, fxstudio

pytest.importorskip("transformers")

GPT2_FILE = textwrap.dedent(f"""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel


    def get_model():
        torch.manual_seed(0)
        return GPT2LMHeadModel(GPT2Config(**{GPT2_CONFIG!r})).eval()


    def example_inputs():
        return (torch.randint(0, 100, (1, 8), generator=torch.Generator().manual_seed(1)),)
""")


@pytest.fixture(scope="module")
def gpt2_file(tmp_path_factory):
    """A model file building GPT-2 with its default ``use_cache=True``."""
    path = tmp_path_factory.mktemp("gpt2_py") / "gpt2_tiny.py"
    path.write_text(GPT2_FILE)
    return path


def test_export_tracer_names_the_cache_and_the_use_cache_remedy(gpt2_file):
    proc = fxstudio("inspect", str(gpt2_file), "--tracer", "export", cwd=gpt2_file.parent)
    assert proc.returncode == 2
    [line] = error_lines(proc)
    assert "DynamicCache" in line and "in output" in line  # torch's message is kept
    assert "--concrete-arg use_cache=False" in line and "returns tensors" in line
    fixed = fxstudio("inspect", str(gpt2_file), "--tracer", "export", "--concrete-arg", "use_cache=False",
                     cwd=gpt2_file.parent)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert "traced with concrete args use_cache=False" in fixed.stdout


def test_fx_tracer_keeps_torchs_message_and_points_to_export(gpt2_file):
    proc = fxstudio("inspect", str(gpt2_file), "--tracer", "fx", cwd=gpt2_file.parent)
    assert proc.returncode == 2
    [line] = error_lines(proc)
    assert "co_varnames is too small" in line
    assert "cannot trace Hugging Face transformers models" in line
    assert "--tracer export --concrete-arg use_cache=False" in line


def test_the_remedy_as_data_opens_the_model(gpt2_file):
    from fxstudio.qt.open_flow import load_options

    with pytest.raises(TraceError) as info:
        load_model(gpt2_file, tracer="fx")
    remedy = info.value.remedy
    assert remedy == TraceRemedy("export", concrete_args=("use_cache=False",))
    loaded = load_model(gpt2_file, **load_options(remedy.options()))
    assert loaded.tracer == "export" and loaded.graph_module(*loaded.example_inputs).logits.shape == (1, 8, 100)


def test_an_exported_file_returns_the_inputs_it_was_opened_with(tmp_path):
    model = tmp_path / "int_and_float.py"
    model.write_text(textwrap.dedent("""
        import torch
        from torch import nn


        class Embed(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 4)

            def forward(self, ids, scale):
                return self.emb(ids) * scale


        def example_inputs():
            gen = torch.Generator().manual_seed(7)
            return (torch.randint(1, 10, (2, 3), generator=gen), torch.randn(2, 3, 4, generator=gen))
    """))
    out = tmp_path / "embed_export.py"
    proc = fxstudio("export", str(model), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    code = ("import importlib.util, sys, torch\n"
            "spec = importlib.util.spec_from_file_location('embed_export', sys.argv[1])\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "torch.save(m.example_inputs(), sys.argv[2])\n")
    saved = tmp_path / "inputs.pt"
    run = subprocess.run([sys.executable, "-I", "-c", code, str(out), str(saved)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    ids, scale = torch.load(saved, weights_only=True)
    gen = torch.Generator().manual_seed(7)
    assert torch.equal(ids, torch.randint(1, 10, (2, 3), generator=gen))  # the file's values, not zeros
    assert torch.equal(scale, torch.randn(2, 3, 4, generator=gen))
    # the export opens again without --input-shape, on those same inputs
    again = fxstudio("inspect", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
