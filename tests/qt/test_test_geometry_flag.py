"""``fxstudio MODEL --test-geometry FILE`` as a separate process (offscreen, so it runs without an
X server): the file names the cards, their ports and the Properties fields, follows the state, and
SIGUSR1 asks for a fresh copy; a bad path is one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fxstudio.resources import example_path

FXSTUDIO = Path(sys.executable).with_name("fxstudio")


def _env(tmp_path: Path) -> dict:
    return {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": str(tmp_path / "state"),
            "FXSTUDIO_CONFIG_DIR": str(tmp_path / "config"), "OMP_NUM_THREADS": "1"}


def _wait(path: Path, check, proc, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            data = json.loads(path.read_text())
            if check(data):
                return data
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"no geometry matching the check in {timeout} s")


def test_geometry_file_names_cards_ports_and_fields(tmp_path):
    out = tmp_path / "geometry.json"
    proc = subprocess.Popen([str(FXSTUDIO), str(example_path("add_mul.py")), "--select", "mul",
                             "--test-geometry", str(out)], env=_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        g = _wait(out, lambda g: g["selected"] == "mul" and "field:1" in g["widgets"], proc)
        assert set(g["cards"]) == {"x", "add", "mul", "output"}
        assert [p["src"] for p in g["cards"]["mul"]["ports"]] == ["add"]
        x, y, w, h = g["cards"]["mul"]["rect"]
        px, py = g["cards"]["mul"]["ports"][0]["at"]
        assert x <= px <= x + w and abs(py - y) <= 2  # the port sits on the card's top edge
        cx, cy, cw, ch = g["widgets"]["canvas"]
        assert cx <= g["cards"]["mul"]["center"][0] <= cx + cw
        assert g["edits"] == 0 and g["status_edits"] == "0 edits" and g["undo_enabled"] is False
        assert g["title"].startswith("add_mul.py") and g["widgets"]["field:1:state"] == ""
        assert "toolbar:undo" in g["widgets"] and "menu:Edit" in g["widgets"]
        seq = g["seq"]
        proc.send_signal(signal.SIGUSR1)
        assert _wait(out, lambda g: g["seq"] > seq, proc, timeout=10)["selected"] == "mul"
    finally:
        proc.kill()
        proc.wait(10)


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([str(FXSTUDIO), str(example_path("add_mul.py")), "--test-geometry",
                           str(tmp_path / "no" / "such" / "geometry.json")],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "--test-geometry" in proc.stderr and "does not exist" in proc.stderr
