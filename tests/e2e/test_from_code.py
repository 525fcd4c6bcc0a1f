"""``fxstudio.edit(model, x)`` from a plain Python script, run as its own process on the X server and
driven only with X input (xdotool): click a card, type into a Properties field, Enter, then close
the window (Ctrl+Q, or the window manager's close button); the script prints the edited module's
output and exits 0. Where things are comes from ``FXSTUDIO_TEST_GEOMETRY`` (the API's
``--test-geometry``)."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from tests.api.api_models import Net, example_input, plain_fx_set_arg
from tests.e2e.xsession import ROOT, App, set_field

SCRIPT = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
import torch, fxstudio
from tests.api.api_models import Net, example_input

model, x = Net(), example_input()
edited = fxstudio.edit(model, x)          # blocks until the window is closed
print("RESULT " + json.dumps({{"type": type(edited).__name__, "is_graph_module": isinstance(edited, torch.fx.GraphModule),
                             "out": edited(x).tolist(), "original": model(x).tolist()}}), flush=True)
"""


class ScriptApp(App):
    """A Python script that calls ``fxstudio.edit`` instead of the ``fxstudio`` command."""

    def __init__(self, x, folder, script):
        self.script = script
        super().__init__(x, folder, "<memory>::Net")

    def start(self, *, wait_open: bool = True) -> None:
        """Start the script with the geometry file named in the environment."""
        self.geometry.unlink(missing_ok=True)
        env = {**self.x.env, "FXSTUDIO_STATE_DIR": str(self.state), "FXSTUDIO_CONFIG_DIR": str(self.config),
               "OMP_NUM_THREADS": "1", "FXSTUDIO_TEST_GEOMETRY": str(self.geometry)}
        self.log = open(self.folder / "app.log", "ab")
        self.out = self.folder / "stdout.txt"
        self.proc = subprocess.Popen([sys.executable, str(self.script)], cwd=self.work, env=env,
                                     stdout=open(self.out, "wb"), stderr=self.log)
        if wait_open:
            self.wait_for(lambda g: g["cards"] and g["active"] and g["model"] == self.model,
                          what="the window open on the in-memory model", timeout=90)
            self.wait_still()

    def finish(self, timeout: float = 60) -> dict:
        """Wait for the script to exit 0 and return what it printed after RESULT."""
        rc = self.proc.wait(timeout)
        text = self.out.read_text(encoding="utf-8")
        assert rc == 0, f"exit {rc}; stdout {text[-1000:]}; log {self.log_tail()}"
        line = next(line for line in text.splitlines() if line.startswith("RESULT "))
        return json.loads(line.removeprefix("RESULT "))


def _start(xserver, tmp_path) -> ScriptApp:
    script = tmp_path / "edit_from_code.py"
    script.write_text(SCRIPT, encoding="utf-8")
    return ScriptApp(xserver, tmp_path / "app", script)


def _check(result: dict, value) -> None:
    x = example_input()
    assert result["is_graph_module"]
    assert torch.equal(torch.tensor(result["out"]), plain_fx_set_arg(Net(), "mul", 1, value)(x).detach())
    assert torch.equal(torch.tensor(result["original"]), Net()(x).detach())   # the script's model unchanged


def test_edit_from_a_script_then_ctrl_q(xserver, tmp_path):
    app = _start(xserver, tmp_path)
    try:
        g = app.geo()
        assert g["title"].startswith("<memory>::Net") and "close the window" in g["status_message"]
        app.shot("api_01_edit_from_code")
        set_field(app, "mul", "field:1", "10")
        app.shot("api_02_edited")
        app.key("ctrl+q")                      # no Save/Discard question: the edits go back to the script
        _check(app.finish(), 10)
    finally:
        app.close()


def test_edit_from_a_script_then_the_close_button(xserver, tmp_path):
    app = _start(xserver, tmp_path)
    try:
        set_field(app, "mul", "field:1", "7")
        x, y, w, _ = app.geo()["window"]
        # openbox draws the title bar above the client area, its close button at the right end
        app.xdo("mousemove", "--sync", x + w - 12, y - 10)
        app.shot("api_03_close_button")
        app.xdo("click", 1)
        _check(app.finish(), 7)
    finally:
        app.close()
