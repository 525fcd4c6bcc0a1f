"""View ▸ Fold Repeated Blocks never folds a block that differs (issue #26, defect 2): on a real
window with a 40-block model, a block whose ``mul`` constant was edited stays expanded and splits
the fold into two correctly counted cards; after a Run, the blocks that diverged are not folded;
selecting a node folded away (the Run pane's row click, its activation path, Find) unfolds its
span and shows the node."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from tests.model_files import REPEATED_BLOCKS, REPEATED_BLOCKS_BODY, write_model
from tests.qt.window_support import isolated, make_window  # noqa: F401 - fixtures

BLOCKS = REPEATED_BLOCKS
EDITED = 20   # the block whose mul constant is edited: its node is mul_20


def open_blocks(win, tmp_path, qtbot) -> Document:
    """The 40-block model in ``win``, with block 20's ``* 0.5`` edited to ``* 0.25``."""
    spec = f"{write_model(tmp_path / 'blocks.py', REPEATED_BLOCKS_BODY)}::Net"
    doc = Document(load_model(spec))
    win.set_document(doc, spec)
    settle(qtbot, win.canvas)
    doc.apply_edit({"op": "set_arg", "node": f"mul_{EDITED}", "key": 1, "value": "0.25"})
    settle(qtbot, win.canvas)
    return doc


def settle(qtbot, canvas) -> None:
    qtbot.waitUntil(lambda: not canvas.redraw_pending(), timeout=10_000)


def labels(scene) -> dict[str, str]:
    """The folded cards on the canvas: path → label."""
    return {path: card.group.label for path, card in scene.group_cards.items()}


def card_on_screen(canvas, name: str) -> bool:
    """Whether node ``name`` has a card, and its centre is inside the canvas's viewport."""
    card = canvas.canvas_scene.cards.get(name)
    return card is not None and canvas.viewport().rect().contains(canvas.mapFromScene(card.sceneBoundingRect().center()))


def test_an_edited_block_is_never_folded_and_the_counts_say_so(qtbot, make_window, tmp_path):
    win = make_window()
    doc = open_blocks(win, tmp_path, qtbot)
    canvas, scene = win.canvas, win.canvas.canvas_scene
    win.actions["fold_repeats"].trigger()
    settle(qtbot, canvas)
    assert labels(scene) == {
        "blocks.1": "blocks.1 … blocks.19 · ×19 identical Block (as blocks.0)",
        "blocks.21": "blocks.21 … blocks.39 · ×19 identical Block (as blocks.0)",
    }
    assert f"mul_{EDITED}" in scene.cards and "mul_19" not in scene.cards and "mul_21" not in scene.cards
    assert scene.frames[f"blocks.{EDITED}"].group.label == f"blocks.{EDITED} · Block · edited"
    assert "×39 identical (blocks.0 … blocks.39; blocks.20 differs)" in scene.frames["blocks.0"].group.label

    # The fold follows the edits: undone, block 20 folds with the others; redone, it is out again.
    doc.undo()
    settle(qtbot, canvas)
    assert labels(scene) == {"blocks.1": "blocks.1 … blocks.39 · ×39 identical Block (as blocks.0)"}
    doc.redo()
    settle(qtbot, canvas)
    assert set(labels(scene)) == {"blocks.1", "blocks.21"}

    # Selecting a node folded away, as the Run pane does (its row and plot clicks go through
    # _activate), unfolds that span only and brings the node on screen.
    hidden = doc.find("mul_30")
    canvas.zoom_by(1.0 / canvas.zoom())
    canvas.centerOn(scene.group_cards["blocks.1"].sceneBoundingRect().center())
    win.run_pane._activate(doc.id_of(hidden))
    settle(qtbot, canvas)
    assert labels(scene) == {"blocks.1": "blocks.1 … blocks.19 · ×19 identical Block (as blocks.0)"}
    assert card_on_screen(canvas, "mul_30") and scene.cards["mul_30"].selected
    assert win.actions["fold_repeats"].isChecked()   # one span is still folded

    # Find (Ctrl+F) matches the nodes folded away too; typing unfolds nothing, Enter goes there.
    canvas.setFocus()
    QTest.keyClick(canvas, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(canvas.search_bar.edit, "mul_5$")
    assert canvas.matches() == ["mul_5"] and "blocks.1" in scene.group_cards
    assert canvas.search_bar.count.text() == "0/1"
    QTest.keyClick(canvas.search_bar.edit, Qt.Key.Key_Return)
    settle(qtbot, canvas)
    assert not scene.group_cards and card_on_screen(canvas, "mul_5") and scene.cards["mul_5"].selected
    assert canvas.current_match() == "mul_5" and canvas.search_bar.count.text() == "1/1"
    assert not win.actions["fold_repeats"].isChecked()   # nothing is folded any more
    assert doc.edit_script()["edits"] == [{"op": "set_arg", "node": "mul_20", "key": 1, "value": "0.25"}]


def test_blocks_that_diverged_in_the_last_run_are_not_folded(qtbot, make_window, tmp_path):
    win = make_window()
    doc = open_blocks(win, tmp_path, qtbot)
    canvas, scene, pane = win.canvas, win.canvas.canvas_scene, win.run_pane
    win.docks["run"].raise_()
    with qtbot.waitSignal(pane.report_ready, timeout=60_000):
        QTest.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    assert pane.report.first_divergence.name == f"mul_{EDITED}"
    diverged = {f"blocks.{i}" for i in range(EDITED, BLOCKS)}   # the edit and everything after it
    win.actions["fold_repeats"].trigger()
    settle(qtbot, canvas)
    assert labels(scene) == {"blocks.1": "blocks.1 … blocks.19 · ×19 identical Block (as blocks.0)"}
    assert diverged <= set(scene.frames) and f"mul_{BLOCKS - 1}" in scene.cards
    assert scene.frames["blocks.33"].group.label == "blocks.33 · Block · diverged"
    assert "×20 identical (blocks.0 … blocks.39; 20 differ)" in scene.frames["blocks.0"].group.label

    # A row of the Run pane's Nodes table, clicked: the node folded away in blocks.5 is shown.
    table = pane.nodes_table
    row = next(r for r in range(table.rowCount()) if table.item(r, 1).text() == "mul_5")
    table.scrollToItem(table.item(row, 1))
    with qtbot.waitSignal(pane.node_activated):
        QTest.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                         table.visualItemRect(table.item(row, 1)).center())
    settle(qtbot, canvas)
    assert not scene.group_cards and card_on_screen(canvas, "mul_5") and scene.cards["mul_5"].selected
    assert not win.actions["fold_repeats"].isChecked()   # nothing is folded any more


def test_a_run_while_folded_unfolds_what_diverged(qtbot, make_window, tmp_path):
    win = make_window()
    open_blocks(win, tmp_path, qtbot)
    canvas, scene, pane = win.canvas, win.canvas.canvas_scene, win.run_pane
    win.actions["fold_repeats"].trigger()
    settle(qtbot, canvas)
    assert set(labels(scene)) == {"blocks.1", "blocks.21"}
    with qtbot.waitSignal(pane.report_ready, timeout=60_000):
        pane.run()
    settle(qtbot, canvas)
    assert labels(scene) == {"blocks.1": "blocks.1 … blocks.19 · ×19 identical Block (as blocks.0)"}
    assert "mul_39" in scene.cards and canvas.divergence()
