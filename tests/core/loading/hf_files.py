"""Real Hugging Face models for the loading/export tests (issue #15, defects 2-4, 6, 7): a tiny
GPT-2 from a config (random weights, no download), saved as ``torch.export`` archives the way
users save them, and a small dict-returning model whose archive the hostile tests rewrite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

GPT2_CONFIG = dict(n_layer=2, n_head=2, n_embd=64, vocab_size=100, n_positions=32)
ROOT = Path(__file__).resolve().parents[3]


def gpt2() -> torch.nn.Module:
    """A two-layer GPT-2 language model with seeded random weights."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(**GPT2_CONFIG)).eval()


def token_ids() -> torch.Tensor:
    """Eight token ids (seeded) for the tiny GPT-2."""
    return torch.randint(0, GPT2_CONFIG["vocab_size"], (1, 8), generator=torch.Generator().manual_seed(1))


def save_gpt2(path: Path, *, keywords: bool) -> Path:
    """GPT-2 exported as users do: ``export(m, (ids,), {"use_cache": False})`` (a ``ModelOutput``
    output), or with every input a keyword (``input_ids=``, ``use_cache=False``, ``return_dict=True``)."""
    model, ids = gpt2(), token_ids()
    if keywords:
        ep = torch.export.export(model, (), {"input_ids": ids, "use_cache": False, "return_dict": True})
    else:
        ep = torch.export.export(model, (ids,), {"use_cache": False})
    torch.export.save(ep, path)
    return path


class TwoOutputs(torch.nn.Module):
    """A linear layer returning a dict of two tensors (the archive's out_spec is a dict)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)

    def forward(self, x):
        y = self.lin(x)
        return {"logits": y, "hidden": torch.relu(y)}


def save_two_outputs(path: Path) -> Path:
    """A genuine archive of ``TwoOutputs`` on a (2, 3) input."""
    torch.manual_seed(0)
    torch.export.save(torch.export.export(TwoOutputs(), (torch.randn(2, 3),)), path)
    return path


def with_output_type(src: Path, dst: Path, type_name: str, context: str | None = None) -> Path:
    """``src`` rewritten so that its root out_spec names ``type_name`` (and ``context``)."""
    from tests.security.pt2_hostile import rewrite

    def edit(records):
        program = json.loads(records["models/model.json"])
        for entry in program["graph_module"]["module_call_graph"]:
            signature = entry.get("signature")
            if signature and signature.get("out_spec"):
                protocol, schema = json.loads(signature["out_spec"])
                schema["type"] = type_name
                if context is not None:
                    schema["context"] = context
                signature["out_spec"] = json.dumps([protocol, schema])
        records["models/model.json"] = json.dumps(program).encode()

    return rewrite(src, dst, edit)


def marker_module(folder: Path, name: str, marker: Path) -> Path:
    """A module ``name``.py in ``folder`` that creates ``marker`` when it is imported."""
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(f"""
        from pathlib import Path
        Path({str(marker)!r}).write_text("imported")
        class Out(dict):
            pass
        X = Out
    """))
    return path


def fxstudio(*argv: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m fxstudio ARGV`` in a fresh process, run in ``cwd`` (fxstudio from this checkout)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "-m", "fxstudio", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """fxstudio's own lines on stderr (not transformers' or torch's warnings)."""
    return [line for line in proc.stderr.splitlines() if line.startswith("fxstudio:")]
