"""The window keeps answering while it works on a 3,000-node model (issue #25), with real X input:
open it, run a built-in pass from Edit ▸ Run Pass…, Run in the Run pane, export with verification.

The app runs with ``FXSTUDIO_STALL_LOG`` (``fxstudio/qt/stall_watch.py``): for each action it logs
the longest time its event loop did not turn. The figures are printed (``pytest -s``) and put in the
assertion message; the bound asserted is a hang detector (``HANG_MS``). The 100 ms target is
reported by ``bench/bench_window.py``, not asserted.
"""

from __future__ import annotations

import time

from fxstudio.testing.residual_mlp import write_residual_mlp
from tests.e2e.test_passes import _menu_entry
from tests.e2e.test_run_and_keys import _on_screen

HANG_MS = 500.0
"""A hang detector, not the goal: CI machines are loaded. The GUI thread's own work per action is
under 100 ms since the layout, code, diff and a pass's install moved to the workers that made the
graph (``fxstudio/qt/views_ahead.py``); what is left over 100 ms on a busy 2-core machine is the
scheduler's. ``FXSTUDIO_STALL_TRACE=FILE`` names where the GUI thread was in each stall."""
ACTIONS = ("open", "pass", "run", "export")
BUILTIN = "fxstudio.passes.normalize_args"   # rewrites the arguments of 2,000 of the 3,000 nodes


def _stalls(log, wanted, timeout: float = 30) -> dict[str, float]:
    """The longest stall per action in the watchdog's log (waits until every ``wanted`` one is there)."""
    deadline = time.monotonic() + timeout
    found: dict[str, float] = {}
    while time.monotonic() < deadline:
        found = {}
        if log.exists():
            for line in log.read_text(encoding="utf-8").splitlines():
                name, _, ms = line.rpartition(" ")
                found[name] = max(found.get(name, 0.0), float(ms))
        if all(a in found for a in wanted):
            break
        time.sleep(0.1)
    return found


def test_open_pass_run_and_export_of_3000_nodes_never_hang_the_window(launch, tmp_path):
    model = write_residual_mlp(tmp_path)
    log = tmp_path / "stalls.log"
    config = tmp_path / "app0" / "config"
    config.mkdir(parents=True)
    (config / "fxstudio.ini").write_text("[hints]\ncanvas_dismissed=true\n")
    app = launch(model, env={"FXSTUDIO_STALL_LOG": str(log)}, open_timeout=180)
    assert app.geo()["status_edits"] == "0 edits"

    # Edit ▸ Run Pass…: the built-ins follow the (no) file passes; pick normalize_args with the keys.
    app.click(_menu_entry(app, "Edit", "Run Pass…"))
    dialog = app.dialog("Run Pass")
    app.click(dialog["widgets"]["passList"])
    app.key("Home")
    for _ in range(3):   # fuse_conv_bn, remove_dropout, fold_constants, normalize_args (BUILTIN)
        app.key("Down")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1, what="the pass applied", timeout=180)
    assert BUILTIN.rsplit(".", 1)[1] in g["history"][0], g["history"]
    app.wait_still()

    app.click(app.rect("tab:Run"))
    g = app.wait_for(lambda g: _on_screen(app, g["widgets"].get("run:run")), what="the Run dock raised")
    app.click(g["widgets"]["run:run"])
    g = app.wait_for(lambda g: g["run"]["report"] and not g["run"]["busy"], what="the comparison's report",
                     timeout=180)
    status = g["run"]["status"]
    assert "No node diverges" in status and "torch thread" in status, status
    app.wait_still()

    app.key("ctrl+e")
    app.wait_for(lambda g: any(w["title"].startswith("Export") and w["active"] for w in g["windows"]),
                 what="the Export dialog")
    app.key("Return")   # the dialog proposes <model>_edited.py in the working folder
    g = app.wait_for(lambda g: g["export"] is not None, what="the export to finish", timeout=300)
    assert g["export"]["ok"] and g["export"]["verified"], g["export"]

    stalls = _stalls(log, ACTIONS)
    report = ", ".join(f"{a} {stalls[a]:.0f} ms" if a in stalls else f"{a} (not logged)" for a in ACTIONS)
    print(f"\nlongest GUI stall per action on a 3,000-node model: {report}")
    assert all(a in stalls for a in ACTIONS), f"actions missing from {log}: {report}"
    slow = {a: ms for a, ms in stalls.items() if a in ACTIONS and ms >= HANG_MS}
    assert not slow, f"the window stopped answering for over {HANG_MS:.0f} ms: {report}"
