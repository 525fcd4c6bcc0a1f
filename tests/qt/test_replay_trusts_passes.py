"""``fxstudio MODEL --replay S.json [--trust-passes] --screenshot PNG``: a script's pass file, named
relative to the script as ``fxstudio apply`` reads it, runs only with ``--trust-passes`` (the window
asks otherwise; a screenshot cannot ask, so the replay is refused and nothing is written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PASSES = Path(__file__).resolve().parents[1] / "corpus" / "passes"


def _screenshot(tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "fxstudio", str(tmp / "quant_cnn.py"), "--replay",
                           str(tmp / "fuse.json"), "--screenshot", str(tmp / "out.png"), "--size", "800x600",
                           "--select", "conv1", *extra], capture_output=True, text=True, timeout=240, env=env,
                          cwd=tmp.parent)


@pytest.fixture
def folder(tmp_path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("quant_cnn.py", "real_passes.py"):
        shutil.copy(PASSES / name, work / name)
    script = {"format": "fxstudio.edits/1", "edits": [{"op": "run_pass", "file": "real_passes.py", "name": "fx_fuse"}]}
    (work / "fuse.json").write_text(json.dumps(script))
    return work


def test_replay_runs_a_relative_pass_file_only_when_trusted(folder):
    refused = _screenshot(folder)
    assert refused.returncode != 0 and not (folder / "out.png").exists()
    assert "trust" in refused.stderr and "real_passes.py" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    done = _screenshot(folder, "--trust-passes")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (folder / "out.png").stat().st_size > 10_000
