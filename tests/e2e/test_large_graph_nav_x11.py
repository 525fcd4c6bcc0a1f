"""Navigating a deep graph with real X input (issue #26, item 8): a 3,722-node chain of 620 residual blocks.

The minimap of a graph 1,700 times taller than wide is not a hairline: it scrolls with the view at
a scale where the graph is some 30 px wide, with a whole-height strip beside it; Find (Ctrl+F, a
name deep in the graph, Enter) after Fit All zooms to a scale where the match's card can be read;
clicking the strip jumps to that height of the graph and clicking or dragging the thumbnail moves
the view by what the minimap's scale says.
"""

from __future__ import annotations

import re

from fxstudio.testing.residual_mlp import write_residual_mlp

BLOCKS = 620
TARGET = "blocks_450_norm"


def _inside(rect, outer) -> bool:
    x, y, w, h = rect
    ox, oy, ow, oh = outer
    return ox <= x and oy <= y and x + w <= ox + ow and y + h <= oy + oh


def _blocks_on_screen(g) -> list[int]:
    """The block numbers of the cards whose centre is in the canvas."""
    return sorted(int(m.group(1)) for name, c in g["cards"].items()
                  if c["visible"] and (m := re.match(r"blocks_(\d+)_", name)))


def _centre(rect) -> tuple[int, int]:
    x, y, w, h = rect
    return x + w // 2, y + h // 2


def test_minimap_and_find_on_a_deep_graph(launch, tmp_path):
    model = write_residual_mlp(tmp_path, BLOCKS, name="deep.py")
    config = tmp_path / "app0" / "config"   # where ``launch`` puts the first app's settings
    config.mkdir(parents=True)
    (config / "fxstudio.ini").write_text("[hints]\ncanvas_dismissed=true\n")
    app = launch(model, open_timeout=180)
    g = app.wait_still()
    canvas = g["widgets"]["canvas"]

    # (1) The minimap: the graph drawn wide enough to see its cards, the view outlined, and the
    # strip standing for the whole height.
    mm = g["view"]["minimap"]
    assert mm is not None and mm["tall"], g["view"]
    assert _inside(mm["rect"], canvas)
    assert mm["graph_rect"][2] >= 30, mm          # the graph's drawn width (was 0.1 px)
    assert mm["view_rect"][3] >= 20, mm           # the view's outline in the thumbnail
    assert mm["track"][3] >= 200, mm              # the whole-height strip
    assert _inside(mm["graph_rect"], mm["rect"]) and _inside(mm["view_rect"], mm["rect"])
    app.shot("l1_deep_graph_opened")

    # (2) Fit All, then Find a node three quarters down: the view zooms in to it.
    app.click(canvas, dx=0.02)   # empty canvas left of the chain: the focus on it
    app.key("shift+f")
    g = app.wait_for(lambda g: g["view"]["scale"] < 0.01, what="the whole graph fitted")
    app.wait_still()
    app.shot("l2_fit_all")
    app.key("ctrl+f")
    app.type(TARGET)
    app.key("Return")
    g = app.wait_for(lambda g: g["selected"] == TARGET and TARGET in g["cards"] and g["cards"][TARGET]["visible"],
                     what=f"{TARGET} found, selected and on screen")
    g = app.wait_still()
    card = g["cards"][TARGET]
    assert _inside(card["rect"], canvas), (card, canvas)
    assert g["view"]["scale"] >= 0.6, g["view"]
    assert card["rect"][3] >= 40 and card["rect"][2] >= 100, card   # a card at a size to read
    app.shot("l3_found_deep_node")

    # (3) The minimap: the strip jumps to a height of the graph, the thumbnail moves the view.
    app.key("Escape")
    mm = g["view"]["minimap"]
    x, y, w, h = mm["track"]
    app.click_at(x + w // 2, y + h // 10)   # a tenth of the way down: around block 62
    g = app.wait_for(lambda g: _blocks_on_screen(g) and max(_blocks_on_screen(g)) < 100,
                     what="the view moved to a tenth of the graph")
    g = app.wait_still()
    assert 40 <= min(_blocks_on_screen(g)) and max(_blocks_on_screen(g)) <= 85, _blocks_on_screen(g)
    app.shot("l4_minimap_strip_click")

    mm, scale = g["view"]["minimap"], g["view"]["scale"]
    anchor = min((c for c in g["cards"].values() if c["visible"]), key=lambda c: c["center"][1])
    name = next(n for n, c in g["cards"].items() if c is anchor)
    vx, vy = _centre(mm["view_rect"])
    app.click_at(vx, vy - 50)   # 50 minimap pixels above the view's centre
    expected = 50 / mm["scale"] * scale   # canvas pixels the cards move down
    g = app.wait_for(lambda g: name in g["cards"] and g["cards"][name]["center"][1] > anchor["center"][1] + expected / 2,
                     what="the view moved up by a click in the thumbnail")
    g = app.wait_still()
    moved = g["cards"][name]["center"][1] - anchor["center"][1]
    assert abs(moved - expected) <= 0.1 * expected + 8, (moved, expected)

    # A drag in the thumbnail follows the pointer without running away (the thumbnail holds still).
    mm = g["view"]["minimap"]
    middle = canvas[1] + canvas[3] // 2
    name = min((n for n, c in g["cards"].items() if c["visible"]), key=lambda n: abs(g["cards"][n]["center"][1] - middle))
    vx, vy = _centre(mm["view_rect"])
    before = g["cards"][name]["center"][1]
    app.drag([vx, vy], [vx, vy + 40])
    g = app.wait_still()
    expected = 40 / mm["scale"] * g["view"]["scale"]
    moved = before - g["cards"][name]["center"][1] if name in g["cards"] else None
    assert moved is not None and abs(moved - expected) <= 0.1 * expected + 8, (moved, expected)
    app.shot("l5_minimap_dragged")
