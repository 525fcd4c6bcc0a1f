"""The reference a Run is measured against (issue #25), and a machine kept busy.

**The floor** is what any comparison must pay: a fresh ``python`` process that imports torch, builds
the model, traces it with ``symbolic_trace`` and runs it twice, with nothing of fxstudio. It is timed
with torch's default threads and with ``OMP_NUM_THREADS=1``, and the better of the two counts.

**Busy** runs ``os.cpu_count()`` processes that spin in a Python loop for the length of a ``with``
block: every core is kept busy by other work, as on a machine where the user also builds or trains.

The model is issue #25's: 500 blocks of Linear(16, 64), GELU, Linear(64, 16), a ``* 1.0`` and a
residual LayerNorm, 3,003 nodes, input 2×16; the edit sets the constant of block 400's ``mul``.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

MODEL_SOURCE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, w=16):
        super().__init__()
        self.fc1 = nn.Linear(w, 4 * w)
        self.fc2 = nn.Linear(4 * w, w)
        self.norm = nn.LayerNorm(w)

    def forward(self, x):
        return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))) * 1.0)


class Deep(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(500)])

    def forward(self, x):
        return self.blocks(x)


def example_inputs():
    return (torch.randn(2, 16),)
'''

EDIT_SCRIPT = '{"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "mul_400", "key": 1, "value": "1.5"}]}\n'

FLOOR_SCRIPT = '''
import sys
import torch, torch.fx
sys.path.insert(0, sys.argv[1])
import deep_mlp
model = deep_mlp.Deep()
gm = torch.fx.symbolic_trace(model)
x = deep_mlp.example_inputs()
with torch.no_grad():
    gm(*x)
    gm(*x)
'''


def write_files(folder: Path) -> tuple[Path, Path]:
    """The model file ``deep_mlp.py`` and the edit script ``edit.json`` in ``folder``."""
    model = folder / "deep_mlp.py"
    model.write_text(MODEL_SOURCE)
    edit = folder / "edit.json"
    edit.write_text(EDIT_SCRIPT)
    return model, edit


def default_env(**extra: str) -> dict[str, str]:
    """This environment without any thread setting (what a user's shell has), plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "FXSTUDIO_THREADS")}
    env.update(extra)
    return env


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one run of ``argv``; raises when it fails."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed


def floor_seconds(folder: Path, repeats: int) -> dict[str, float]:
    """The floor's median seconds with torch's default threads and with one, and the better ``floor``."""
    script = folder / "floor.py"
    script.write_text(FLOOR_SCRIPT)
    argv = [sys.executable, str(script), str(folder)]
    default = statistics.median(timed(argv, default_env(), folder) for _ in range(repeats))
    one = statistics.median(timed(argv, default_env(OMP_NUM_THREADS="1"), folder) for _ in range(repeats))
    return {"default": default, "one_thread": one, "floor": min(default, one)}


@contextlib.contextmanager
def busy_machine(processes: int | None = None) -> Iterator[int]:
    """Keep every core busy with spinning processes while the block runs; yields their count."""
    count = processes or os.cpu_count() or 1
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    time.sleep(0.5)  # let them reach the run queue
    try:
        yield count
    finally:
        for p in spinners:
            p.kill()
        for p in spinners:
            p.wait()
