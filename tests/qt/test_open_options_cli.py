"""`fxstudio MODEL` takes the subcommands' loading flags (--concrete-arg, --leaf-module, --autowrap):
each case in a real offscreen subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

from PySide6.QtGui import QImage

from fxstudio.resources import EXAMPLES_DIR

DATA_BRANCH = str(EXAMPLES_DIR / "data_branch.py")


def fxstudio(tmp_path, *argv):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(QT_QPA_PLATFORM="offscreen", FXSTUDIO_CONFIG_DIR=str(tmp_path / "config"),
               FXSTUDIO_STATE_DIR=str(tmp_path / "state"))
    return subprocess.run([sys.executable, "-m", "fxstudio", *argv], env=env, capture_output=True, text=True,
                          timeout=180)


def test_concrete_arg_opens_data_branch_in_the_window(tmp_path):
    out = tmp_path / "branch.png"
    proc = fxstudio(tmp_path, DATA_BRANCH, "--concrete-arg", "positive=True", "--select", "mul",
                    "--screenshot", str(out))
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1600, 1000)


def test_without_the_flag_the_failure_names_it(tmp_path):
    out = tmp_path / "none.png"
    proc = fxstudio(tmp_path, DATA_BRANCH, "--screenshot", str(out))
    assert proc.returncode == 2 and not out.exists()
    assert "--concrete-arg positive=" in proc.stderr and "data_branch.py:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_loading_flags_are_one_line_and_exit_2(tmp_path):
    out = tmp_path / "bad.png"
    for argv, says in (
        (["--concrete-arg", "positive"], "expected NAME=VALUE"),
        (["--concrete-arg", "positive=__import__('os')"], "--concrete-arg positive="),
        (["--concrete-arg", "nope=True"], "forward() has no argument"),
        (["--concrete-arg", "positive=True", "--leaf-module", "missing"], "--leaf-module missing"),
        (["--concrete-arg", "positive=True", "--autowrap", "os.nothing_here"], "--autowrap os.nothing_here"),
    ):
        proc = fxstudio(tmp_path, DATA_BRANCH, *argv, "--screenshot", str(out))
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2, (argv, proc.stderr)
        assert len(lines) == 1 and says in lines[0], (argv, proc.stderr)
        assert "Traceback" not in proc.stderr and not out.exists()
