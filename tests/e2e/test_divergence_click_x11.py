"""Real X input: a click on the first divergence's point in the per-node plot brings its card back
on screen even when that node is selected already (the user zoomed elsewhere after selecting it)."""

from __future__ import annotations

import time

from tests.e2e.test_run_and_keys import _on_screen
from tests.e2e.xsession import set_field

CHAIN = '''import torch


class Chain(torch.nn.Module):
    """A tall chain of 40 add/relu pairs: its cards do not all fit on one screen at 100%."""

    def forward(self, x):
        for i in range(40):
            x = torch.relu(x + float(i))
        return x


def example_inputs():
    return (torch.randn(2, 3),)
'''


def _card_visible(g: dict, name: str) -> bool:
    card = g["cards"].get(name)
    return bool(card and card["visible"])


def test_clicking_the_selected_first_divergence_scrolls_back_to_it(launch, tmp_path):
    model = tmp_path / "chain.py"
    model.write_text(CHAIN)
    app = launch(model)
    app.key("ctrl+f")  # add_20 is below the first screen: Find brings it there
    app.type("add_20$")
    app.key("Return")
    app.wait_for(lambda g: g["selected"] == "add_20", what="add_20 found and selected")
    app.key("Escape")
    set_field(app, "add_20", "field:1", "99.0")  # numbers change from add_20 on
    app.click(app.rect("tab:Run"))
    g = app.wait_for(lambda g: _on_screen(app, g["widgets"].get("run:run")), what="the Run dock raised")
    app.click(g["widgets"]["run:run"])
    t0 = time.monotonic()
    g = app.wait_for(lambda g: g["run"]["report"] and not g["run"]["busy"] and "add_20" in g["run"]["points"],
                     what="the comparison's report with add_20's point", timeout=90)
    print(f"report with points after {time.monotonic() - t0:.1f} s")
    assert g["run"]["first_divergence"] == "add_20"
    app.click_at(*g["run"]["points"]["add_20"])
    g = app.wait_for(lambda g: g["selected"] == "add_20" and _card_visible(g, "add_20"),
                     what="the first divergence selected and on screen")

    # Zoom in around a point at the canvas's left edge (below the legend) until add_20's card has
    # left the screen.
    x, y, w, h = g["widgets"]["canvas"]
    app.xdo("mousemove", "--sync", x + 10, y + h // 2)
    app.xdo("click", "--repeat", 12, "--delay", 30, 4)
    g = app.wait_for(lambda g: not _card_visible(g, "add_20"), what="add_20 scrolled off screen by the zoom")
    assert g["selected"] == "add_20"

    app.click_at(*g["run"]["points"]["add_20"])  # the same node: the selection does not change
    g = app.wait_for(lambda g: _card_visible(g, "add_20"), what="the click to bring add_20 back on screen")
    assert g["selected"] == "add_20" and g["edits"] == 1
    app.shot("divergence_click_scrolls_back")
