"""`fxstudio MODEL --screenshot out.png` and headless detection, each in a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from PySide6.QtGui import QImage

from fxstudio.app import is_headless
from fxstudio.resources import EXAMPLES_DIR


def _clean_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(FXSTUDIO_CONFIG_DIR=str(tmp_path / "config"), FXSTUDIO_STATE_DIR=str(tmp_path / "state"), **extra)
    return env


def test_headless_start_says_what_to_do_and_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fxstudio", str(EXAMPLES_DIR / "add_mul.py")],
                          env=_clean_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no display" in proc.stderr and "--screenshot" in proc.stderr
    assert "QT_QPA_PLATFORM=offscreen" in proc.stderr and "xvfb-run" in proc.stderr and "fxstudio inspect" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert is_headless({}, "linux") and not is_headless({"DISPLAY": ":0"}, "linux")
    assert not is_headless({"QT_QPA_PLATFORM": "offscreen"}, "linux") and not is_headless({}, "darwin")
    # xcb needs an X server: naming the platform is not a display (Qt would abort the process)
    assert is_headless({"QT_QPA_PLATFORM": "xcb"}, "linux")


def test_screenshot_with_replayed_edits_and_selection(tmp_path):
    out = tmp_path / "window.png"
    script = tmp_path / "edits.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1",
                                  "edits": [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}]}))
    # No display variables at all: --screenshot sets the offscreen platform itself.
    proc = subprocess.run(
        [sys.executable, "-m", "fxstudio", str(EXAMPLES_DIR / "add_mul.py"), "--screenshot", str(out),
         "--size", "1280x800", "--replay", str(script), "--select", "mul"],
        env=_clean_env(tmp_path), capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    colors = {image.pixel(x, y) for x in range(0, 1280, 40) for y in range(0, 800, 40)}
    assert len(colors) > 8  # a drawn window, not a blank image
    assert not (tmp_path / "state" / "journals").exists() or not any((tmp_path / "state" / "journals").iterdir())


def test_screenshot_of_a_bad_model_fails_cleanly(tmp_path, capsys, qapp, monkeypatch):
    # In-process through the real command line (a subprocess costs a torch import per test).
    from fxstudio.cli import main

    monkeypatch.setenv("FXSTUDIO_CONFIG_DIR", str(tmp_path / "config"))
    bad = tmp_path / "broken.py"
    bad.write_text("this is not python(\n")
    assert main([str(bad), "--screenshot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fxstudio: ") and "broken.py" in err and "syntax error" in err
    assert not (tmp_path / "x.png").exists()
    assert main([str(bad), "--screenshot", str(tmp_path / "x.txt")]) == 2
    assert "--screenshot needs an image file" in capsys.readouterr().err
