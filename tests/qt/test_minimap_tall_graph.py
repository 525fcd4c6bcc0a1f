"""A deep chain (1,000 nodes, some 700 times taller than wide) on the canvas: the minimap scrolls
with the view at a width where the graph shows, its strip jumps along the whole height, and Find
zooms in from Fit All to a scale where the match can be read."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.qt.canvas import GraphCanvas
from fxstudio.qt.canvas.find_zoom import FIND_ZOOM
from fxstudio.qt.selection import SelectionModel
from tests.qt.canvas_support import settle, visible_rect

MODEL = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


model = nn.Sequential(*[Block() for _ in range(200)])
EXAMPLE_INPUTS = (torch.randn(2, 8),)
"""


def _canvas(qtbot, tmp_path) -> GraphCanvas:
    path = tmp_path / "deep.py"
    path.write_text(MODEL)
    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(1200, 800)
    canvas.show()
    qtbot.waitExposed(canvas)
    canvas.set_document(Document(load_model(str(path))))
    settle(qtbot, canvas)
    canvas.reset_zoom()
    return canvas


def test_the_minimap_of_a_deep_chain_scrolls_and_its_strip_jumps(qtbot, tmp_path):
    canvas = _canvas(qtbot, tmp_path)
    mm = canvas.minimap
    drawn = mm.report()
    assert mm.isVisible() and drawn["tall"] and drawn["graph_rect"][2] >= 30, drawn
    assert drawn["view_rect"][3] >= 20 and drawn["track"][3] >= 200, drawn
    # The strip: a click half-way down centres the view half-way down the graph.
    x, y, w, h = drawn["track"]
    QTest.mouseClick(mm, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(x + w // 2, y + h // 2))
    x0, y0, x1, y1 = canvas.canvas_scene.bounds
    assert abs(visible_rect(canvas).center().y() - (y0 + y1) / 2) < 0.02 * (y1 - y0)
    # The thumbnail followed: the view is outlined in it, and a click there moves the view by
    # what the minimap's scale says.
    drawn = mm.report()
    assert drawn["view_rect"] is not None
    before = visible_rect(canvas).center()
    vx, vy, vw, vh = drawn["view_rect"]
    QTest.mouseClick(mm, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(vx + vw // 2, vy + vh // 2 - 40))
    moved = before.y() - visible_rect(canvas).center().y()
    assert abs(moved - 40 / drawn["scale"]) < 3 / drawn["scale"], (moved, 40 / drawn["scale"])


def test_find_after_fit_all_zooms_to_a_readable_scale(qtbot, tmp_path):
    canvas = _canvas(qtbot, tmp_path)
    canvas.zoom_by(1.5)   # closer than 100 %: Find never zooms out
    canvas.search("norm")
    canvas.next_match()
    assert canvas.zoom() > FIND_ZOOM
    canvas.search("")
    canvas.fit()
    assert canvas.zoom() < 0.05 and not canvas.minimap.isVisible()
    QTest.keyClick(canvas, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(canvas.search_bar.edit, "norm")   # typing keeps the zoom: every match marked on the overview
    assert len(canvas.matches()) == 200 and canvas.zoom() < 0.05
    first = canvas.current_match()
    QTest.keyClick(canvas.search_bar.edit, Qt.Key.Key_Return)   # the first Enter shows the current match
    assert canvas.current_match() == first and canvas.zoom() == FIND_ZOOM
    card = canvas.canvas_scene.cards[first].sceneBoundingRect()
    assert visible_rect(canvas).contains(card) and canvas.selection.ids() == [canvas.canvas_scene.cards[first].info.node_id]
    QTest.keyClick(canvas.search_bar.edit, Qt.Key.Key_Return)   # readable now: Enter goes on
    second = canvas.current_match()
    assert second != first and canvas.zoom() == FIND_ZOOM
    assert visible_rect(canvas).contains(canvas.canvas_scene.cards[second].sceneBoundingRect().center())
    assert canvas.minimap.isVisible() and canvas.minimap.report()["view_rect"] is not None
