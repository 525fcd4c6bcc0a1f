"""A graph over 20,000 nodes opens with its modules folded, and opening one lays it out in a worker
(issue #28; ``fxstudio/qt/canvas/large_fold.py``). The real window opens a real 3,400-block model
file; the module is opened by a real click on its card's toggle."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait  # noqa: F401

import fxstudio.core.layout as layout_pkg
from fxstudio.core.layout import FOLD_ABOVE
from fxstudio.testing.residual_mlp import write_residual_mlp

BLOCKS = 3_400   # six nodes each: 20,402 nodes


def _click_toggle(canvas, path: str) -> None:
    card = canvas.canvas_scene.group_cards[path]
    canvas.centerOn(card.sceneBoundingRect().center())
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     canvas.mapFromScene(card.toggle_rect().center()))


def test_a_large_model_opens_folded_and_a_module_opens_in_a_worker(qtbot, make_window, tmp_path, monkeypatch):
    layouts: list = []   # (on the GUI thread?, collapsed) of every layout computed
    real = layout_pkg.compute_layout

    def spy(graph, **kwargs):
        layouts.append((threading.current_thread() is threading.main_thread(), frozenset(kwargs.get("collapsed", ()))))
        return real(graph, **kwargs)
    monkeypatch.setattr(layout_pkg, "compute_layout", spy)

    win = make_window()
    messages: list[str] = []
    win.statusBar().messageChanged.connect(messages.append)
    doc = open_and_wait(qtbot, win, str(write_residual_mlp(tmp_path, blocks=BLOCKS)))
    canvas, scene = win.canvas, win.canvas.canvas_scene
    assert len(doc.edited.graph.nodes) > FOLD_ABOVE
    assert canvas.collapsed == {"blocks"} and set(scene.group_cards) == {"blocks"}
    assert scene.group_cards["blocks"].group.members == 6 * BLOCKS
    assert layouts == [(False, frozenset({"blocks"}))], "the open's layout was not the worker's folded one"
    assert any("20,402 nodes, so its modules are folded" in m for m in messages), messages
    # The Code dock's text comes from its own worker, after the graph is drawn (code_aside.py).
    code = win.code
    assert code.aside.busy and code.edited.toPlainText().startswith("# Generating the code of 20,402 nodes")
    qtbot.waitUntil(lambda: not code.aside.busy, timeout=LOAD_TIMEOUT_MS)
    assert code.edited.toPlainText() == doc.module().code.lstrip("\n")
    # The Problems list's verdict too.
    problems = win.problems
    qtbot.waitUntil(lambda: not problems.aside.busy, timeout=LOAD_TIMEOUT_MS)
    assert problems.checks_message and problems.lint_message == ""
    assert problems.tree.topLevelItem(0).text(2) == "The edited graph passes graph.lint()."
    # The change list's diff against the original too: nothing changed yet.
    diff = win.run_pane.diff_view
    qtbot.waitUntil(lambda: not diff.aside.busy and diff.diff is not None, timeout=LOAD_TIMEOUT_MS)
    assert not (diff.diff.added or diff.diff.removed or diff.diff.changed)

    _click_toggle(canvas, "blocks")
    assert canvas.fold_toggles.busy and messages[-1] == "Laying out blocks…"
    assert canvas.collapsed == {"blocks"}   # the canvas stays as it was until the layout is ready
    _click_toggle(canvas, "blocks")   # a second toggle meanwhile is refused, and says so
    assert messages[-1].startswith("Still laying out blocks")
    qtbot.waitUntil(lambda: not canvas.fold_toggles.busy, timeout=LOAD_TIMEOUT_MS)
    blocks = {f"blocks.{i}" for i in range(BLOCKS)}
    assert canvas.collapsed == blocks   # 3,400 blocks are more than 3,000 cards: each is folded
    assert not scene.layout.groups["blocks"].collapsed and len(scene.group_cards) == BLOCKS
    assert layouts[1:] == [(False, frozenset(blocks))]
    assert messages[-1].startswith("Laid out blocks:")
    made = len(scene.live_folded)
    assert 0 < made < 200, made   # only the cards in view (and a margin) are made

    # A block opens without folding anything inside it; an edit meanwhile drops the toggle.
    _click_toggle(canvas, "blocks.5")
    qtbot.waitUntil(lambda: not canvas.fold_toggles.busy, timeout=LOAD_TIMEOUT_MS)
    assert canvas.collapsed == blocks - {"blocks.5"} and "blocks_5_fc1" in scene.cards
    # An insert in the opened block: the folded graph is laid out again in a worker, and drawn.
    before = len(layouts)
    doc.apply_edit({"op": "insert", "after": "mul_5", "kind": "call_function", "target": "torch.relu",
                    "args": "(%mul_5,)", "name": "probe"})
    canvas.flush()
    assert "probe" not in scene.cards and canvas.edit_layouts.aside.busy   # drawn when laid out
    qtbot.waitUntil(lambda: "probe" in scene.cards, timeout=LOAD_TIMEOUT_MS)
    assert layouts[before:] == [(False, frozenset(blocks - {"blocks.5"}))]
    doc.undo()
    qtbot.waitUntil(lambda: "probe" not in scene.cards and not canvas.edit_layouts.aside.busy, timeout=LOAD_TIMEOUT_MS)
    _click_toggle(canvas, "blocks.6")
    doc.apply_edit({"op": "set_arg", "node": "mul_5", "key": 1, "value": "2.0"})
    qtbot.waitUntil(lambda: not canvas.fold_toggles.busy, timeout=LOAD_TIMEOUT_MS)
    assert "blocks.6" in canvas.collapsed and "not toggled" in messages[-1]
    diff.flush()
    assert {doc.node(i).name for i in diff.diff.changed} == {"mul_5"}   # the edit, in the change list
    doc.undo()
    assert doc.edit_script()["edits"] == []   # folding and opening are view changes, never edits
