"""A torch.compile capture opened with real X input: ``fxstudio run.fxcap`` shows the chooser of
its graphs; a click on the list, the Down key and Return open graph 1 in the editor."""

from __future__ import annotations

import subprocess
import sys

from fxstudio.testing.capture_scripts import write_script


def test_open_a_capture_choose_a_graph_with_the_keyboard(launch, tmp_path):
    script = write_script(tmp_path)
    made = subprocess.run([sys.executable, "-m", "fxstudio", "capture", str(script), "-o", str(tmp_path / "run.fxcap"),
                           "--backend", "eager"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    app = launch(tmp_path / "run.fxcap", wait_open=False)
    chooser = app.dialog("Open a graph of run.fxcap")
    x, y, w, h = chooser["widgets"]["captureGraphs"]
    app.click_at(x + w // 3, y + 12)  # the first graph's first line
    app.shot("30_capture_chooser")
    app.key("Down")
    app.key("Return")
    g = app.wait_for(lambda g: g["model"] and g["cards"], what="graph 1 open", timeout=60)
    assert g["model"].endswith("run.fxcap::1")
    assert set(g["cards"]) >= {"l_y_", "sum_1", "gt"}
    assert not any(w["title"].startswith("Open a graph of") for w in g["windows"])
