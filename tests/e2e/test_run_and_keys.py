"""Walk-throughs with real X input: run the comparison and click the first divergence in the per-node
plot, walk the graph with the arrow keys and edit with F2 / Enter (Rename on Shift+F2), open a
model that needs options from the trace-failure dialog and from the Examples menu, and Help ▸
Keyboard Shortcuts (F1)."""

from __future__ import annotations

import json
import subprocess

from tests.e2e.xsession import EXAMPLES, FXSTUDIO, set_field


def _on_screen(app, rect) -> bool:
    """True when ``rect`` lies inside the app's window (a hidden dock tab reports a far-off rect)."""
    if not rect:
        return False
    wx, wy, ww, wh = app.geo()["window"]
    x, y, w, h = rect
    return w > 0 and h > 0 and wx <= x and wy <= y and x + w <= wx + ww and y + h <= wy + wh


def _window(g: dict, title: str) -> dict | None:
    return next((w for w in g["windows"] if w["title"] == title), None)


def test_run_then_click_the_first_divergence_in_the_plot(launch):
    app = launch(EXAMPLES / "sub_chain.py")  # x -> add(+10) -> sub(-5) -> mul(*2) -> output
    set_field(app, "sub", "field:1", "7")  # numbers change from sub on
    app.click(app.rect("tab:Run"))
    g = app.wait_for(lambda g: _on_screen(app, g["widgets"].get("run:run")), what="the Run dock raised")
    app.click(g["widgets"]["run:run"])
    g = app.wait_for(lambda g: g["run"]["report"] and not g["run"]["busy"] and g["run"]["points"],
                     what="the comparison's report and plot", timeout=90)
    assert g["run"]["first_divergence"] == "sub"
    assert {"x", "add", "sub", "mul"} <= set(g["run"]["points"])
    app.click_card("add")  # select something else, so the click below has to move the selection
    g = app.wait_still()
    assert g["selected"] == "add"
    app.click_at(*g["run"]["points"]["sub"])
    g = app.wait_for(lambda g: g["selected"] == "sub", what="the plot click to select the first divergence")
    assert g["edits"] == 1  # a click on the plot selects, it does not edit
    app.click_at(*g["run"]["points"]["mul"])  # and another point selects its own node
    app.wait_for(lambda g: g["selected"] == "mul", what="the plot click on mul's point")
    app.click_at(*app.wait_still()["run"]["points"]["sub"])
    app.wait_for(lambda g: g["selected"] == "sub", what="the first divergence selected again")
    app.wait_still()
    app.shot("h1_run_first_divergence")


def test_arrows_walk_the_edges_and_f2_enter_edit_the_first_argument(launch):
    app = launch(EXAMPLES / "sub_chain.py")
    app.click_card("add")
    walk = []
    for key in ("Down", "Down", "Up", "Up", "Up", "Down"):
        before = app.geo()["selected"]
        app.key(key)
        g = app.wait_for(lambda g: g["selected"] != before, what=f"{key} to move the selection from {before}")
        walk.append(g["selected"])
    assert walk == ["sub", "mul", "sub", "add", "x", "add"]
    assert g["focus"]["class"] == "GraphCanvas" and g["edits"] == 0

    app.key("Down")
    app.wait_for(lambda g: g["selected"] == "sub", what="Down to sub")
    app.key("F2")
    g = app.wait_for(lambda g: g["focus"].get("field") == "field:0", what="F2 to focus sub's first argument")
    assert g["focus"]["text"] == "%add" and not _window(g, "Rename sub")  # F2 is not Rename
    app.type("%x")  # F2 selected the text: typing replaces it
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 1, what="Enter to apply the typed argument")
    assert g["history"] == ["Set sub.args[0] = %x"]
    assert [p["src"] for p in g["cards"]["sub"]["ports"]] == ["x"]

    app.click_card("mul")
    app.key("Return")  # Enter on a selected card: the same as F2
    g = app.wait_for(lambda g: g["focus"].get("field") == "field:0", what="Enter to focus mul's first argument")
    assert g["focus"]["text"] == "%sub" and g["edits"] == 1

    app.click_card("mul")
    app.key("shift+F2")  # Rename moved off F2
    app.dialog("Rename mul")
    app.key("ctrl+a")
    app.type("doubled")
    app.key("Return")
    g = app.wait_for(lambda g: g["edits"] == 2 and "doubled" in g["cards"], what="Shift+F2 to rename mul")
    assert g["history"][-1] == "Rename mul to doubled"
    app.wait_still()
    app.shot("h2_keyboard_edits")


def _inspect_names(*argv: str) -> set[str]:
    """The node names ``fxstudio inspect --json`` lists: the oracle of what the window should open."""
    proc = subprocess.run([str(FXSTUDIO), "inspect", *argv, "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1000:]
    return {n["name"] for n in json.loads(proc.stdout)["nodes"]}


def test_a_trace_failure_offers_open_with_options_and_the_examples_menu_opens_it(launch):
    expected = _inspect_names(str(EXAMPLES / "data_branch.py"), "--concrete-arg", "positive=True")
    assert "mul" in expected
    app = launch(EXAMPLES / "data_branch.py", wait_open=False)
    failure = app.dialog("Tracing failed")
    app.shot("h3_trace_failed")
    app.click(failure["widgets"]["openWithOptions"])
    options = app.dialog("Open with options")
    assert options["texts"]["optionsConcreteArgs"].strip() == "positive=True"
    assert options["texts"]["optionsModel"].endswith("data_branch.py")
    assert not _window(app.geo(), "Tracing failed")
    app.click(options["widgets"]["optionsOpen"])
    g = app.wait_for(lambda g: g["cards"] and g["model"], what="data_branch opened with the options", timeout=60)
    g = app.wait_still()
    assert set(g["cards"]) == expected
    assert g["title"].startswith("data_branch.py")
    app.close()

    # The Examples menu knows the option: no failure on the way.
    app = launch(EXAMPLES / "add_mul.py")
    app.click(app.rect("menu:File"))
    menu = app.wait_for(lambda g: any("item:Examples" in w["widgets"] for w in g["windows"]), what="the File menu")
    entry = next(w for w in menu["windows"] if "item:Examples" in w["widgets"])["widgets"]["item:Examples"]
    app.click(entry)
    g = app.wait_for(lambda g: any("item:data branch" in w["widgets"] for w in g["windows"]),
                     what="the Examples submenu")
    app.shot("h3_examples_menu")
    app.click(next(w for w in g["windows"] if "item:data branch" in w["widgets"])["widgets"]["item:data branch"])
    g = app.wait_for(lambda g: g["title"].startswith("data_branch.py") and set(g["cards"]) == expected,
                     what="data branch opened from the Examples menu", timeout=60)
    assert not _window(g, "Tracing failed")
    app.wait_still()
    app.shot("h3_example_opened")


def test_f1_lists_the_keyboard_shortcuts(launch):
    app = launch(EXAMPLES / "add_mul.py")
    app.click_card("add")
    app.key("F1")
    dialog = app.dialog("Keyboard Shortcuts — fxstudio")
    rows = [tuple(r) for r in dialog["texts"]["shortcutsTable"]]
    assert ("F2 / Enter", "Edit the selected node's first argument in Properties", "canvas") in rows
    assert ("Shift+F2", "Rename", "window") in rows
    assert ("Ctrl+Z", "Undo", "window") in rows
    assert ("F1", "Keyboard Shortcuts", "window") in rows
    # Each key does one thing: no key is listed twice, except Fit / Find Next, which the window's
    # actions and the canvas share on purpose (they do the same).
    keys = [k for r in rows for k in r[0].split(" / ")]
    assert {k for k in keys if keys.count(k) > 1} <= {"F", "F3", "Shift+F"}
    assert keys.count("F2") == 1
    app.shot("h4_shortcuts")
    app.key("Escape")
    app.wait_for(lambda g: not _window(g, "Keyboard Shortcuts — fxstudio"), what="Escape to close the dialog")
