"""Multi-selection on the canvas (Ctrl+click, Shift/Ctrl+drag rubber band, "Select all" in the find
bar) and the bulk actions on it: Insert after each…, Swap target of all…, Erase all — each one
undoable command."""

from __future__ import annotations

import operator

import torch
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from fxstudio.resources import EXAMPLES_DIR
from tests.qt.canvas_support import focus, settle
from tests.qt.window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)


def _window(qtbot, make_window, example: str = "residual_cnn.py"):
    win = make_window(autosave=False)
    doc = open_and_wait(qtbot, win, str(EXAMPLES_DIR / example), origin="example")
    win.canvas.flush()
    return win, doc


def _names(win) -> list[str]:
    doc = win.document
    return [doc.node(i).name for i in win.selection.ids()]


def _band(canvas, start: QPoint, end: QPoint, mods) -> None:
    vp = canvas.viewport()
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, mods, start)
    for i in range(1, 7):
        QTest.mouseMove(vp, (QPointF(start) + (QPointF(end) - QPointF(start)) * (i / 6)).toPoint())
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, mods, end)


def test_ctrl_click_adds_and_removes_and_the_bulk_actions_follow(qtbot, make_window):
    win, doc = _window(qtbot, make_window)
    canvas = win.canvas
    focus(canvas, "layer1_0_conv1")
    vp = canvas.viewport()
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, canvas.viewport_pos_of("layer1_0_conv1"))
    assert not win.passes.erase_all.isEnabled()      # one node: the single-node actions
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier, canvas.viewport_pos_of("layer1_0_bn1"))
    assert _names(win) == ["layer1_0_conv1", "layer1_0_bn1"]
    assert all(canvas.canvas_scene.cards[n].selected for n in _names(win))
    assert win.passes.erase_all.isEnabled() and win.passes.insert_after_each.isEnabled()
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier, canvas.viewport_pos_of("layer1_0_conv1"))
    assert _names(win) == ["layer1_0_bn1"] and not canvas.canvas_scene.cards["layer1_0_conv1"].selected


def test_shift_drag_on_empty_space_selects_the_cards_inside_and_plain_drag_still_pans(qtbot, make_window):
    win, doc = _window(qtbot, make_window)
    canvas = win.canvas
    focus(canvas, "layer1_0_bn1")
    cards = canvas.canvas_scene.cards
    area = cards["layer1_0_conv1"].sceneBoundingRect().united(cards["layer1_0_bn1"].sceneBoundingRect())
    start = canvas.mapFromScene(area.topLeft()) - QPoint(60, 6)
    end = canvas.mapFromScene(area.bottomRight()) + QPoint(4, 4)
    assert canvas.canvas_scene.card_at(canvas.mapToScene(start)) is None
    _band(canvas, start, end, Qt.KeyboardModifier.ShiftModifier)
    picked = set(_names(win))
    assert {"layer1_0_conv1", "layer1_0_bn1"} <= picked and "fc" not in picked and len(picked) <= 4
    # Ctrl+drag adds to the selection.
    far = cards["layer2_0_conv1"].sceneBoundingRect()
    focus(canvas, "layer2_0_conv1")
    _band(canvas, canvas.mapFromScene(far.topLeft()) - QPoint(60, 6), canvas.mapFromScene(far.bottomRight()) + QPoint(2, 2),
          Qt.KeyboardModifier.ControlModifier)
    assert picked | {"layer2_0_conv1"} <= set(_names(win))
    # A plain drag on empty space pans and keeps the selection.
    before = canvas.horizontalScrollBar().value(), canvas.verticalScrollBar().value()
    selected = win.selection.ids()
    p = canvas.mapFromScene(far.topLeft()) - QPoint(60, 6)
    _band(canvas, p, p + QPoint(-80, -50), Qt.KeyboardModifier.NoModifier)
    assert (canvas.horizontalScrollBar().value(), canvas.verticalScrollBar().value()) != before
    assert win.selection.ids() == selected


def test_select_all_matches_then_erase_all_is_one_undoable_edit(qtbot, make_window):
    win, doc = _window(qtbot, make_window)
    canvas = win.canvas
    x = doc.loaded.example_inputs[0]
    nodes_before = [n.name for n in doc.edited.graph.nodes]
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow)
    vp = canvas.viewport()
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(5, vp.height() - 5))
    assert QApplication.focusWidget() is canvas   # a click on empty canvas gives it the focus
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)  # the find bar
    qtbot.waitUntil(lambda: QApplication.focusWidget() is canvas.search_bar.edit)
    QTest.keyClicks(QApplication.focusWidget(), "_bn2$")
    count = len(canvas.matches())
    assert count >= 6
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return, Qt.KeyboardModifier.AltModifier)
    assert sorted(_names(win)) == sorted(canvas.matches())
    win.passes.erase_all.trigger()
    settle(qtbot, canvas)
    assert len(doc.history) == 1 and not any(n.name.endswith("_bn2") for n in doc.edited.graph.nodes)
    assert doc.module()(x).shape[-1] == 10   # the model still runs
    assert set(canvas.canvas_scene.cards) == {n.name for n in doc.edited.graph.nodes}
    assert win.selection.ids() == []
    doc.undo()
    settle(qtbot, canvas)
    assert [n.name for n in doc.edited.graph.nodes] == nodes_before


def test_insert_after_each_and_swap_target_of_all(qtbot, make_window):
    win, doc = _window(qtbot, make_window)
    adds = [n for n in doc.edited.graph.nodes if n.target is operator.add]
    assert len(adds) >= 3
    x = doc.loaded.example_inputs[0]
    win.selection.set([doc.id_of(n) for n in adds])
    names = [n.name for n in adds]

    dialog = win.passes.open_insert_after_each()
    assert dialog is win.passes.dialog and dialog.windowTitle() == f"Insert after each of {len(adds)} nodes"
    dialog.target.setText("torch.sigmoid")
    dialog.try_accept()
    assert win.passes.dialog is None and len(doc.history) == 1
    for name in names:
        users = list(doc.find(name).users)
        assert len(users) == 1 and users[0].target is torch.sigmoid   # rerouted through the new node
    assert len(win.selection.ids()) == len(adds)                   # the new nodes are selected
    script = doc.edit_script()["edits"]
    assert [e["after"] for e in script] == names and all(e["op"] == "insert" for e in script)
    doc.undo()
    assert not any(n.target is torch.sigmoid for n in doc.edited.graph.nodes)

    win.selection.set([doc.id_of(doc.find(n)) for n in names[:2]])
    dialog = win.passes.open_swap_all()
    assert dialog.windowTitle() == "Swap target of 2 nodes"
    assert dialog.textValue() == "operator.add"   # the current target, as a target is typed
    dialog.setTextValue("operator.mul")
    dialog.accept()
    assert len(doc.history) == 1 and doc.history[0].startswith("Swap target of 2 nodes")
    assert [doc.find(n).target for n in names[:2]] == [operator.mul, operator.mul]
    assert doc.find(names[2]).target is operator.add                  # not selected: not swapped
    doc.module()(x)
    doc.undo()
    assert all(doc.find(n).target is operator.add for n in names)


def test_swap_target_of_modules_offers_a_typable_target(qtbot, make_window):
    """On submodule cards the dialog starts from the target as typed (``layer1.0.relu``), not the
    card's "path · Class" line, so pressing OK on it is a valid edit."""
    win, doc = _window(qtbot, make_window)
    relus = [n for n in doc.edited.graph.nodes if n.op == "call_module" and n.target.endswith("relu")][:2]
    win.selection.set([doc.id_of(n) for n in relus])
    dialog = win.passes.open_swap_all()
    assert dialog.textValue() == str(relus[0].target) and "·" not in dialog.textValue()
    dialog.reject()
