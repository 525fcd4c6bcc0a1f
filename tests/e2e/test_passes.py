"""Edit ▸ Run Pass… with real X input: open residual_cnn.py, pick an example pass file, answer the
trust question, see the pass applied as one edit (Changes, history, the saved script), then undo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from tests.e2e.xsession import EXAMPLES, ROOT


def _menu_entry(app, menu: str, entry: str) -> list[int]:
    app.click(app.rect(f"menu:{menu}"))
    g = app.wait_for(lambda g: any(f"item:{entry}" in w["widgets"] for w in g["windows"]), what=f"the {menu} menu")
    return next(w for w in g["windows"] if f"item:{entry}" in w["widgets"])["widgets"][f"item:{entry}"]


def test_run_a_pass_file_from_the_edit_menu(launch, tmp_path):
    pass_file = tmp_path / "relu_to_gelu.py"
    shutil.copy(EXAMPLES / "passes" / "relu_to_gelu.py", pass_file)
    config = tmp_path / "app0" / "config"   # where ``launch`` puts the first app's settings
    config.mkdir(parents=True)
    (config / "fxstudio.ini").write_text("[hints]\ncanvas_dismissed=true\n")   # a clean screenshot
    app = launch(EXAMPLES / "residual_cnn.py")
    cards_before = set(app.geo()["cards"])

    app.click(_menu_entry(app, "Edit", "Run Pass…"))
    dialog = app.dialog("Run Pass")
    app.click(dialog["widgets"]["passFileEdit"])
    app.type(str(pass_file))
    app.key("Return")   # reads the file's passes (nothing runs) and moves to the list
    app.wait_for(lambda g: g["focus"].get("name") == "passList", what="the pass list focused")
    app.key("Return")   # Run: the first entry, relu_to_gelu
    question = app.dialog("Trust this pass file?")
    app.shot("h8_trust_pass")
    app.click(question["widgets"]["button:Yes"])
    g = app.wait_for(lambda g: g["edits"] == 1, what="the pass applied", timeout=60)
    assert "relu_to_gelu" in g["history"][0] and "changed" in g["history"][0]
    assert not any(w["title"] in ("Run Pass", "Trust this pass file?") for w in g["windows"])
    assert set(g["cards"]) == cards_before   # the ReLU modules were swapped in place: same nodes, new modules
    g = app.wait_still()
    shot = app.shot("h8_run_pass")
    # The README's picture (the window after the pass), refreshed on request only: tests never write
    # into the checkout unasked.
    if os.environ.get("FXSTUDIO_UPDATE_SCREENSHOTS") and shot.is_file() and shutil.which("convert"):
        x, y, w, h = g["window"]
        subprocess.run(["convert", str(shot), "-crop", f"{w}x{h}+{x}+{y}", "+repage",
                        str(ROOT / "docs" / "img" / "run_pass.png")], check=True, timeout=60)

    app.key("ctrl+s")
    app.dialog("Save edit script")
    app.key("Return")
    app.wait_for(lambda g: g["script_path"] and "saved" in g["status_edits"], what="the script saved")
    script = json.loads((app.work / "residual_cnn.edits.json").read_text())
    [edit] = script["edits"]
    assert edit["op"] == "run_pass" and edit["name"] == "relu_to_gelu" and len(edit["sha256"]) == 64
    assert edit["file"].endswith("relu_to_gelu.py")

    visible = next(name for name, card in app.geo()["cards"].items() if card["visible"])
    app.click_card(visible)
    app.key("ctrl+z")
    app.wait_for(lambda g: g["edits"] == 0, what="Ctrl+Z undoing the pass")
