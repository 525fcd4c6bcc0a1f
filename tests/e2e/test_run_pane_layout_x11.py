"""The Run pane reads well on a laptop screen (1280×800) and a full-HD one (1920×1080), issue #26
item 6: on a 3,002-node model with one constant edited in Properties and Run clicked, the per-node
plot has a usable width, its first-divergence label and the axis's named levels keep off the
points, every column of the Output and Nodes tables shows whole (``#`` fits five digits), the
histogram's and scatter's tick labels stand apart, and nothing in the dock scrolls. Measured from
what the app reports (``run.layout``: ``fxstudio/qt/run_layout.py``'s ``describe``)."""

from __future__ import annotations

import pytest

from fxstudio.testing.residual_mlp import write_residual_mlp
from tests.e2e.test_run_and_keys import _on_screen
from tests.e2e.xsession import App, XServer, set_field

EDITED = "mul_300"   # a block in the middle: its index (1,804) has four digits
PLOT_SHARE = 0.35    # of the Run dock's width, the per-node plot's data area at least
PLOT_MIN = 360       # pixels, the same


def _overlaps(a: list[int], b: list[int], gap: int = 0) -> bool:
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw + gap and bx < ax + aw + gap and ay < by + bh and by < ay + ah


def _ticks_apart(plot: dict, where: str) -> None:
    """The plot's tick labels, axis by axis, neither overlap nor touch (4 px at least between)."""
    for side, ticks in plot["ticks"].items():
        rects = [t["rect"] for t in ticks]
        for i, a in enumerate(rects):
            for b in rects[i + 1:]:
                assert not _overlaps(a, b, gap=4), f"{where} {side} tick labels touch: {ticks}"
    assert len(plot["ticks"]["bottom"]) >= 2, f"{where}: {plot['ticks']}"


def _columns_whole(table: dict, name: str) -> None:
    """Every column as wide as its widest header and cell text with room to spare, all in view."""
    for c in table["columns"]:
        need = max(c["text"], c["header_text"]) + 8
        assert c["width"] >= need, f"{name} column {c['header']!r} is {c['width']} px, needs {need}: {table}"
    assert sum(c["width"] for c in table["columns"]) <= table["viewport"][2], table
    assert not table["hscroll"], table


@pytest.mark.parametrize("screen", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def test_the_run_pane_reads_well_at_laptop_and_full_hd_sizes(tmp_path, screen):
    x = XServer(tmp_path / "x", screen)
    app = None
    try:
        model = write_residual_mlp(tmp_path)
        config = tmp_path / "app" / "config"
        config.mkdir(parents=True)
        (config / "fxstudio.ini").write_text("[hints]\ncanvas_dismissed=true\n")
        app = App(x, tmp_path / "app", model, open_timeout=180)
        window = app.geo()["window"]
        assert window[2] <= screen[0] and window[3] <= screen[1]

        app.key("ctrl+f")   # find the node, then set its constant the way a user does
        app.type(f"{EDITED}$")
        app.key("Return")
        app.wait_for(lambda g: g["selected"] == EDITED, what=f"{EDITED} found")
        app.key("Escape")
        set_field(app, EDITED, "field:1", "1.5")

        app.click(app.rect("tab:Run"))
        g = app.wait_for(lambda g: _on_screen(app, g["widgets"].get("run:run")), what="the Run dock raised")
        app.click(g["widgets"]["run:run"])
        app.wait_for(lambda g: g["run"]["report"] and not g["run"]["busy"] and g["run"]["layout"].get("node_plot"),
                     what="the comparison's report and plots", timeout=180)
        g = app.wait_still(1.0)
        run, dock = g["run"], g["widgets"]["dock:run"]
        layout = run["layout"]
        assert run["first_divergence"] == EDITED
        size = f"{screen[0]}x{screen[1]}"
        print(f"\n{size}: window {window}, Run dock {dock}, plots {layout['arrangement']} {layout['plots']}")
        app.shot(f"run_pane_layout_{size}")

        assert not layout["scroll"], "the Run pane does not fit its dock"
        node = layout["node_plot"]
        print(f"{size}: per-node view {node['view']}, data {node['data']}, labels {node['labels']}")
        assert node["view"][2] >= max(PLOT_MIN, PLOT_SHARE * dock[2]), (node["view"], dock)
        assert node["view"][3] >= 100, node["view"]
        label = node["labels"]["first_divergence"]
        assert not _overlaps(label, node["data"]), (label, node["data"])
        view = node["view"]
        assert view[0] <= label[0] and label[0] + label[2] <= view[0] + view[2] + 1   # whole, inside the plot
        assert {"equal", "1 = tol"} <= {t["text"] for t in node["ticks"]["left"]}   # named on the axis
        _ticks_apart(node, "per-node")

        _columns_whole(layout["tables"]["metrics"], "Output")
        nodes = layout["tables"]["nodes"]
        _columns_whole(nodes, "Nodes")
        assert nodes["columns"][0]["header"] == "#"

        if layout["arrangement"] in ("node", "outputs"):   # a narrow dock: the other plots on the next page
            app.click(layout["page_tabs"]["Output errors"])
            g = app.wait_for(lambda g: g["run"]["layout"].get("arrangement") == "outputs", what="the outputs page")
            g = app.wait_still()
            layout = g["run"]["layout"]
            app.shot(f"run_pane_layout_{size}_outputs")
        for name in ("hist_plot", "scatter_plot"):
            plot = layout[name]
            print(f"{size}: {name} view {plot['view']}, ticks {[t['text'] for t in plot['ticks']['bottom']]}")
            assert plot["view"][2] >= 180, plot["view"]
            _ticks_apart(plot, name)
            assert len(plot["ticks"]["bottom"]) <= 5
    finally:
        if app is not None:
            app.close()
        x.stop()
