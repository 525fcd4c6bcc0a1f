"""Exporting a Hugging Face GPT-2 opened from its ``.pt2`` (issue #15, defects 3 and 6): the output
structure is the model's (``CausalLMOutputWithCrossAttentions``, a dict with the same keys where
transformers is not importable), keyword inputs become positional parameters, and the exported
file's ``example_inputs()`` returns the inputs the model was opened with."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from tests.core.loading.hf_files import error_lines, fxstudio, save_gpt2, save_two_outputs, token_ids

# Runs an exported file as a user would, in a fresh interpreter; BLOCK=1 makes transformers unimportable.
RUN = textwrap.dedent("""
    import importlib.util, os, sys
    if os.environ.get("BLOCK") == "1":
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "transformers":
                    raise ImportError("transformers is not installed here")
        sys.meta_path.insert(0, Block())
    import torch
    spec = importlib.util.spec_from_file_location("exported", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inputs = module.example_inputs()
    with torch.no_grad():
        out = module.get_model()(*inputs)
    torch.save({"inputs": inputs, "type": type(out).__name__, "out": dict(out)}, sys.argv[2])
""")


def run_exported(py, tmp_path, block: bool) -> dict:
    """The exported file's example inputs, output type name and outputs, from a fresh process."""
    result = tmp_path / f"result_{int(block)}.pt"
    proc = subprocess.run([sys.executable, "-I", "-c", RUN, str(py), str(result)], cwd=tmp_path,
                          env={"BLOCK": str(int(block)), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return torch.load(result, weights_only=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``fxstudio export gpt2_kw.pt2 -o gpt2_export.py`` (keyword inputs, a ModelOutput output)."""
    folder = tmp_path_factory.mktemp("gpt2_export")
    archive = save_gpt2(folder / "gpt2_kw.pt2", keywords=True)
    out = folder / "gpt2_export.py"
    proc = fxstudio("export", str(archive), "-o", str(out), cwd=folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "verified: outputs identical to the graph in memory" in proc.stdout
    return archive, out


def test_the_export_names_the_output_class_guarded_in_its_header(exported):
    _, out = exported
    text = out.read_text()
    assert ("# Output: transformers.modeling_outputs.CausalLMOutputWithCrossAttentions when that package is "
            "importable, else a dict with the same keys (logits).") in text
    assert "    from transformers.modeling_outputs import CausalLMOutputWithCrossAttentions\nexcept ImportError:" in text
    assert "    def forward(self, input_ids, use_cache, return_dict):" in text
    assert "CausalLMOutputWithCrossAttentions(logits=" in text


def test_the_exported_file_reproduces_the_output_and_its_inputs(exported, tmp_path):
    archive, out = exported
    got = run_exported(out, tmp_path, block=False)
    ids, use_cache, return_dict = got["inputs"]
    assert torch.equal(ids, token_ids()) and use_cache is False and return_dict is True  # not random
    assert got["type"] == "CausalLMOutputWithCrossAttentions"
    program = torch.export.load(archive)
    expected = program.module()(**program.example_inputs[1])
    torch.testing.assert_close(got["out"]["logits"], expected.logits, rtol=0, atol=0)
    fallback = run_exported(out, tmp_path, block=True)
    assert fallback["type"] == "dict" and list(fallback["out"]) == ["logits"]
    torch.testing.assert_close(fallback["out"]["logits"], expected.logits, rtol=0, atol=0)


def test_compare_runs_the_archive_against_its_export(exported, tmp_path):
    archive, out = exported
    proc = fxstudio("compare", str(archive), str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "out['logits']" in proc.stdout


def test_a_dict_output_still_exports_as_a_literal(tmp_path):
    archive = save_two_outputs(tmp_path / "two.pt2")
    out = tmp_path / "two_export.py"
    proc = fxstudio("export", str(archive), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "return {'logits': " in text and "except ImportError" not in text and "# Output:" not in text


def test_an_output_class_with_non_identifier_keys_is_refused_in_one_line(tmp_path):
    from collections import OrderedDict

    class Odd(torch.nn.Module):
        def forward(self, x):
            return OrderedDict([("not a name", x + 1)])

    archive = tmp_path / "odd.pt2"
    torch.export.save(torch.export.export(Odd(), (torch.ones(2),)), archive)
    proc = fxstudio("export", str(archive), "-o", str(tmp_path / "odd_export.py"), cwd=tmp_path)
    assert proc.returncode != 0 and len(error_lines(proc)) == 1
    assert "only tuples, lists, dicts, namedtuples, dict-like classes with identifier keys" in error_lines(proc)[0]
    assert not (tmp_path / "odd_export.py").exists()
