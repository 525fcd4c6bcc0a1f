"""Walk-throughs that end in files, with real X input: export (Ctrl+E) and run the exported file
in a fresh process, kill -9 and recover from the journal, open a torch.export .pt2 and edit it."""

from __future__ import annotations

import json
import subprocess
import sys

import torch

from tests.e2e.xsession import EXAMPLES, set_field


def _run_exported(path) -> tuple[list, list]:
    """Import an exported file in a fresh Python and run it on its example inputs: (inputs, output)."""
    code = ("import importlib.util, json, sys\n"
            f"spec = importlib.util.spec_from_file_location('exported', {str(path)!r})\n"
            "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
            "inputs = mod.example_inputs()\n"
            "out = mod.get_model()(*inputs)\n"
            "print(json.dumps([[t.tolist() for t in inputs], out.tolist()]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_export_with_ctrl_e_and_the_file_runs(launch):
    app = launch(EXAMPLES / "add_mul.py")
    set_field(app, "mul", "field:1", "10")
    app.key("ctrl+e")
    app.dialog("Export")
    app.key("Return")  # the dialog proposes <model>_edited.py in the working folder
    g = app.wait_for(lambda g: g["export"] is not None, what="the export to finish", timeout=120)
    assert g["export"]["ok"] and g["export"]["verified"], g["export"]
    out = app.work / "add_mul_edited.py"
    assert g["export"]["path"] == str(out) and out.is_file()
    inputs, output = _run_exported(out)
    x = torch.tensor(inputs[0])
    assert torch.allclose(torch.tensor(output), (x + 5) * 10)  # the edit (* 10, was * 2) is in the file


def test_kill_9_then_recover_the_edits(launch):
    app = launch(EXAMPLES / "clamp.py")
    set_field(app, "clamp", "field:max", "2.0")
    journals = app.state / "journals"
    app.wait_for(lambda g: any(journals.glob("*.json")), what="the journal written")
    journal = json.loads(next(journals.glob("*.json")).read_text())
    assert "2.0" in json.dumps(journal)
    app.kill9()

    app.start(wait_open=False)
    app.dialog("Recover unsaved edits?")
    app.shot("10_recover_offer")
    app.key("Return")  # Recover is the default button
    g = app.wait_for(lambda g: g["edits"] == 1 and g["cards"], what="the recovered edit", timeout=60)
    assert g["history"] == ["Set clamp.max = 2.0"]
    assert g["undo_enabled"] and " *" in g["title"]


def test_open_a_pt2_and_edit_it(launch, tmp_path):
    pt2 = tmp_path / "clamp.pt2"
    code = ("import sys, torch\n"
            f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
            "from clamp import Clamp, example_inputs\n"
            f"torch.export.save(torch.export.export(Clamp(), example_inputs()), {str(pt2)!r})\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120, capture_output=True)
    app = launch(pt2)
    app.wait_for(lambda g: g.get("read_only") is False, what="the editable document (after the view-only structure)",
                 timeout=60)
    g = app.wait_still()
    clamp = next(name for name in g["cards"] if name.startswith("clamp"))
    g = set_field(app, clamp, "field:2", "1.0")  # aten clamp(x, min, max): the max, by position
    assert len(g["history"]) == 1 and "1.0" in g["history"][0]
    app.shot("11_pt2_edited")
