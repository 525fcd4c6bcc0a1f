"""A pass replayed right after a model opens, while the window warms torch's fake-tensor machinery
on a worker thread (importing ``torch._dynamo``), still runs: ``prepare_fx`` imports the same package,
and two threads importing it at once found it partially initialized ("Edit 1 of --replay was refused:
… partially initialized module 'torch._dynamo' has no attribute 'utils'"), every time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch.ao.quantization.quantize_fx")

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "passes"


def test_a_replayed_quantization_pass_runs_while_the_window_warms_up(tmp_path):
    for name in ("quant_cnn.py", "real_passes.py"):
        shutil.copy(CORPUS / name, tmp_path / name)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": str(tmp_path / "state"),
           "FXSTUDIO_CONFIG_DIR": str(tmp_path / "config")}
    script = subprocess.run([sys.executable, "-m", "fxstudio", "pass", "quant_cnn.py", "real_passes.py::fx_prepare",
                             "--arg", "backend='x86'", "--save-script", "prep.json"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert script.returncode == 0, script.stderr
    shot = subprocess.run([sys.executable, "-m", "fxstudio", "quant_cnn.py", "--replay", "prep.json", "--trust-passes",
                           "--screenshot", "shot.png"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert shot.returncode == 0, shot.stderr
    assert "refused" not in shot.stderr and "partially initialized" not in shot.stderr, shot.stderr
    assert (tmp_path / "shot.png").stat().st_size > 10_000
