"""Without a display, ``fxstudio.edit`` / ``show`` raise ``NoDisplayError`` saying what to do, in a
real subprocess whose environment has no DISPLAY and asks for the xcb platform (where Qt itself
would abort the process), and ``fxstudio.apply`` still works there."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fxstudio.api import has_display

SCRIPT = """
import sys, torch, fxstudio
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        return x * 2

x = torch.ones(2)
script = {"format": "fxstudio.edits/1", "edits": [{"op": "set_arg", "node": "mul", "key": 1, "value": "3"}]}
print("apply:", fxstudio.apply(Net(), script, x)(x).tolist(), flush=True)
getattr(fxstudio, sys.argv[1])(Net(), x)
print("unreachable")
"""


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(extra)
    return env


@pytest.mark.parametrize("what", ["edit", "show"])
def test_no_display_raises_a_clear_error(tmp_path, what):
    script = tmp_path / "uses_api.py"
    script.write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script), what], capture_output=True, text=True, timeout=120,
                          env=_env(QT_QPA_PLATFORM="xcb"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "apply: [3.0, 3.0]" in proc.stdout and "unreachable" not in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"fxstudio.core.errors.NoDisplayError: fxstudio.{what}: no display found"), proc.stderr
    assert "xvfb-run" in last and "QT_QPA_PLATFORM=offscreen" in last and "fxstudio.apply" in last
    assert "could not connect to display" not in proc.stderr  # Qt never started


def test_has_display_follows_the_environment():
    linux = "linux"
    assert not has_display({}, linux)
    assert not has_display({"QT_QPA_PLATFORM": "xcb"}, linux)
    assert not has_display({"QT_QPA_PLATFORM": "wayland", "DISPLAY": ":0"}, linux)
    assert has_display({"QT_QPA_PLATFORM": "offscreen"}, linux)
    assert has_display({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ":1"}, linux)
    assert has_display({"QT_QPA_PLATFORM": "wayland", "WAYLAND_DISPLAY": "wayland-0"}, linux)
    assert has_display({"DISPLAY": ":0"}, linux) and has_display({"WAYLAND_DISPLAY": "wayland-0"}, linux)
    assert has_display({}, "darwin") and has_display({}, "win32")
