"""The node canvas driven like a user drives it: clicks, keys, wheel, find bar, frame toggles."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QPainter, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from fxstudio.qt.canvas import style as st
from tests.qt.canvas_support import drag, empty_spot, focus, open_canvas, settle, visible_rect


def test_cards_show_name_target_shape_and_ports(qtbot):
    canvas, doc, _, _ = open_canvas(qtbot)
    cards = canvas.canvas_scene.cards
    assert set(cards) == {n.name for n in doc.edited.graph.nodes}
    conv = cards["layer1_0_conv1"].info
    assert conv.op == "call_module" and "Conv2d" in conv.target and conv.shape == "1×16×32×32 float32"
    assert [(p.label, p.src) for p in cards["add"].info.ports] == [("0", "layer1_0_bn2"), ("1", "relu")]
    assert cards["x"].info.ports == []
    # Every edge ends on its input port.
    for (src, dst, key, _), edge in canvas.canvas_scene.edges.items():
        port = cards[dst].port_pos_for(src, key)
        assert port is not None and (edge.end_point() - port).manhattanLength() < 0.5
    assert "layer1.0" in canvas.canvas_scene.frames
    # Closing the document empties the canvas.
    canvas.set_document(None)
    assert not canvas.canvas_scene.cards and not canvas.canvas_scene.edges and not canvas.minimap.isVisible()
    assert canvas.search("conv") == 0


def test_click_selects_and_selection_from_elsewhere_scrolls_to_the_node(qtbot):
    canvas, doc, selection, _ = open_canvas(qtbot)
    focus(canvas, "layer1_0_bn1")
    vp = canvas.viewport()
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, canvas.viewport_pos_of("layer1_0_bn1"))
    bn1 = doc.id_of(doc.find("layer1_0_bn1"))
    assert selection.ids() == [bn1] and canvas.canvas_scene.cards["layer1_0_bn1"].selected
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier, canvas.viewport_pos_of("layer1_0_conv1"))
    assert selection.ids() == [bn1, doc.id_of(doc.find("layer1_0_conv1"))]
    both = selection.ids()
    QTest.mouseClick(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, empty_spot(canvas))
    assert selection.ids() == both   # a click on empty canvas focuses it and keeps the selection
    QTest.keyClick(canvas, Qt.Key.Key_Escape)   # Esc clears it
    assert selection.ids() == []
    # Another view selects a node far away: the canvas scrolls to it.
    fc = canvas.canvas_scene.cards["fc"]
    assert not visible_rect(canvas).contains(fc.sceneBoundingRect())
    selection.set([fc.info.node_id])
    assert visible_rect(canvas).contains(fc.sceneBoundingRect()) and fc.selected


def test_pan_by_dragging_empty_space_and_by_arrow_keys(qtbot):
    canvas, _, selection, _ = open_canvas(qtbot)
    focus(canvas, "layer1_0_bn1")
    before = visible_rect(canvas).center()
    start = empty_spot(canvas)
    drag(canvas, start, start + QPoint(0, -150))
    moved = visible_rect(canvas).center() - before
    assert abs(moved.y() - 150) < 2 and abs(moved.x()) < 2
    c0 = visible_rect(canvas).center()
    QTest.keyClick(canvas, Qt.Key.Key_Right)
    QTest.keyClick(canvas, Qt.Key.Key_Down)
    d = visible_rect(canvas).center() - c0
    assert d.x() > 20 and d.y() > 20


def test_wheel_and_keys_zoom_around_the_cursor_and_f_fits(qtbot):
    canvas, _, _, _ = open_canvas(qtbot)
    focus(canvas, "layer1_0_bn1", zoom=0.6)
    vp = canvas.viewport()
    at = QPoint(300, 200)
    under = canvas.mapToScene(at)
    event = QWheelEvent(QPointF(at), QPointF(vp.mapToGlobal(at)), QPoint(0, 0), QPoint(0, 240),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(vp, event)
    assert canvas.zoom() > 0.6 * 1.3
    assert (canvas.mapToScene(at) - under).manhattanLength() < 3 / canvas.zoom()
    z = canvas.zoom()
    QTest.keyClick(canvas, Qt.Key.Key_Minus)
    assert abs(canvas.zoom() - z / 1.25) < 1e-6
    QTest.keyClick(canvas, Qt.Key.Key_Plus)
    assert abs(canvas.zoom() - z) < 1e-6
    QTest.keyClick(canvas, Qt.Key.Key_F, Qt.KeyboardModifier.ShiftModifier)   # Fit All
    view = visible_rect(canvas)
    assert all(view.contains(c.sceneBoundingRect()) for c in canvas.canvas_scene.cards.values())
    # Fitted this tall graph is small: the canvas draws its overview instead of detailed cards.
    assert canvas.zoom() < st.LOD_PLAIN and canvas.canvas_scene.in_overview()
    focus(canvas, "fc", zoom=1.0)
    assert not canvas.canvas_scene.in_overview()


def test_search_highlights_matches_and_cycles_with_enter_and_f3(qtbot):
    canvas, doc, selection, _ = open_canvas(qtbot)
    convs = [n.name for n in doc.edited.graph.nodes if n.name.startswith("layer1_") and n.name.endswith("conv1")]
    QTest.keyClick(canvas, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    bar = canvas.search_bar
    assert bar.isVisible()
    qtbot.waitUntil(bar.edit.hasFocus, timeout=2000)
    QTest.keyClicks(bar.edit, r"layer1_\d_conv1")
    assert canvas.matches() == convs == ["layer1_0_conv1", "layer1_1_conv1", "layer1_2_conv1"]
    cards = canvas.canvas_scene.cards
    assert canvas.current_match() == convs[0] and cards[convs[0]].match == 2 and cards[convs[1]].match == 1
    assert bar.count.text() == "1/3"
    QTest.keyClick(bar.edit, Qt.Key.Key_Return)
    assert canvas.current_match() == convs[1]
    assert selection.ids() == [doc.id_of(doc.find(convs[1]))]
    assert visible_rect(canvas).contains(cards[convs[1]].sceneBoundingRect().center())
    QTest.keyClick(bar.edit, Qt.Key.Key_F3)
    QTest.keyClick(bar.edit, Qt.Key.Key_F3)
    assert canvas.current_match() == convs[0]   # wrapped around
    QTest.keyClick(bar.edit, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert canvas.current_match() == convs[2]
    # Ops and targets match too; text that is not a regex is searched literally.
    assert canvas.search("call_function") == sum(n.op == "call_function" for n in doc.edited.graph.nodes)
    assert canvas.search("BatchNorm2d") == sum(
        n.op == "call_module" and type(doc.edited.get_submodule(n.target)).__name__ == "BatchNorm2d"
        for n in doc.edited.graph.nodes) == 14
    assert canvas.search("(") == 0 and bar.count.text().endswith("no match</span>")
    QTest.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert not bar.isVisible() and canvas.matches() == [] and all(c.match == 0 for c in cards.values())


def test_collapse_and_expand_a_module_keep_the_users_place(qtbot):
    canvas, doc, _, _ = open_canvas(qtbot)
    focus(canvas, "layer1_1_conv1", zoom=0.8)
    frame = canvas.canvas_scene.frames["layer1.1"]
    toggle = canvas.mapFromScene(frame.toggle_rect().center())
    corner = canvas.mapFromScene(frame.scenePos())
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, toggle)
    scene = canvas.canvas_scene
    assert canvas.collapsed == {"layer1.1"} and "layer1.1" in scene.group_cards
    assert not [n for n in scene.cards if n.startswith("layer1_1_")]
    group = scene.group_cards["layer1.1"]
    assert group.group.members == 7
    assert (canvas.mapFromScene(group.scenePos()) - corner).manhattanLength() <= 6
    # Edges into and out of the collapsed module attach to its card.
    assert any(dst == "layer1.1" for (_, dst, _, _) in scene.edges) and any(src == "layer1.1" for (src, _, _, _) in scene.edges)
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     canvas.mapFromScene(group.toggle_rect().center()))
    assert canvas.collapsed == set() and "layer1_1_conv1" in scene.cards and "layer1.1" in scene.frames
    assert (canvas.mapFromScene(scene.frames["layer1.1"].scenePos()) - corner).manhattanLength() <= 6
    assert doc.edit_script()["edits"] == []   # collapsing is a view change, never an edit


def test_canvas_redraws_from_edits_and_undo(qtbot):
    canvas, doc, _, _ = open_canvas(qtbot)
    scene = canvas.canvas_scene
    before = {n: (c.x(), c.y()) for n, c in scene.cards.items()}
    doc.apply_edit({"op": "insert", "after": "layer1_0_bn1", "kind": "call_function", "target": "torch.sigmoid",
                    "args": "(%layer1_0_bn1,)", "name": "gate"})
    settle(qtbot, canvas)
    assert "gate" in scene.cards and scene.cards["gate"].info.target == "torch.sigmoid"
    assert scene.cards["gate"].info.ports[0].src == "layer1_0_bn1"
    assert ("layer1_0_bn1", "gate", 0, 0) in scene.edges
    doc.apply_edit({"op": "set_target", "node": "gate", "target": "torch.tanh"})
    settle(qtbot, canvas)
    assert scene.cards["gate"].info.target == "torch.tanh"
    doc.undo()
    doc.undo()   # two events, drawn once
    assert "gate" in scene.cards and canvas.redraw_pending()
    settle(qtbot, canvas)
    assert "gate" not in scene.cards and set(scene.cards) == set(before)
    assert all((c.x(), c.y()) == (scene.layout.nodes[n].x, scene.layout.nodes[n].y) for n, c in scene.cards.items())
    # Incremental: nothing above the insertion point moved.
    upstream = [n.name for n in doc.edited.graph.nodes][:[n.name for n in doc.edited.graph.nodes].index("layer1_0_bn1") + 1]
    moved = {n: ((scene.cards[n].x(), scene.cards[n].y()), before[n]) for n in upstream
             if (scene.cards[n].x(), scene.cards[n].y()) != before[n]}
    assert not moved
    doc.redo()
    selection_target = doc.id_of(doc.find("gate"))
    canvas.selection.set([selection_target])   # another view selects the new node at once
    assert scene.by_id[selection_target].selected and not canvas.redraw_pending()


def test_minimap_click_moves_the_view(qtbot):
    canvas, _, _, _ = open_canvas(qtbot)
    focus(canvas, "x", zoom=1.0)
    mm = canvas.minimap
    assert mm.isVisible()
    target = canvas.canvas_scene.cards["fc"].sceneBoundingRect().center()
    QTest.mouseClick(mm, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, mm.from_scene(target).toPoint())
    assert (visible_rect(canvas).center() - target).manhattanLength() < 4 / mm._scale
    QTest.keyClick(canvas, Qt.Key.Key_F, Qt.KeyboardModifier.ShiftModifier)
    assert not mm.isVisible()   # the whole graph is on screen: nothing to navigate


def test_rendered_canvas_shows_cards_in_their_op_colours(qtbot, tmp_path):
    canvas, _, _, _ = open_canvas(qtbot, size=(900, 640))
    focus(canvas, "layer1_0_bn1", zoom=1.0)
    path = tmp_path / "canvas.png"
    assert canvas.grab().save(str(path))
    img = QImage(str(path))
    colours = {img.pixelColor(x, y).name() for x in range(0, img.width(), 3) for y in range(0, img.height(), 3)}
    assert st.OP_COLORS["call_module"] in colours and st.CARD_BODY in colours, sorted(colours)[:40]
    # Zoomed out the same graph is drawn as plain boxes (overview), still in op colours.
    canvas.zoom_by(0.05 / canvas.zoom())
    img = QImage(900, 640, QImage.Format.Format_ARGB32)
    p = QPainter(img)
    canvas.render(p)
    p.end()
    colours = {img.pixelColor(x, y).name() for x in range(img.width()) for y in range(0, img.height(), 2)}
    assert canvas.canvas_scene.in_overview() and st.OP_COLORS["call_module"] in colours


def test_an_edit_that_keeps_the_wiring_updates_cards_without_a_relayout(qtbot):
    canvas, doc, _, _ = open_canvas(qtbot)
    scene = canvas.canvas_scene
    layout = scene.layout
    doc.apply_edit({"op": "set_target", "node": "add", "target": "torch.add"})
    settle(qtbot, canvas)
    assert scene.cards["add"].info.target == "torch.add"
    assert scene.layout is layout   # same wiring, same lines: the cards were refreshed in place
    # A target the title does not say is a line more: a taller card, so a relayout (issue #26).
    height = scene.cards["add"].size()[1]
    doc.apply_edit({"op": "set_target", "node": "add", "target": "operator.sub"})
    settle(qtbot, canvas)
    assert scene.cards["add"].info.line == "operator.sub" and scene.cards["add"].size()[1] > height
    assert scene.layout is not layout
    layout = scene.layout
    doc.apply_edit({"op": "rename", "node": "add", "name": "residual"})
    settle(qtbot, canvas)
    assert "residual" in scene.cards and "add" not in scene.cards and scene.layout is not layout
    assert scene.cards["layer1_0_relu_1"].info.ports[0].src == "residual"


def test_a_closed_canvas_stops_following_its_document(qtbot):
    from PySide6.QtCore import QEvent

    from fxstudio.core.document import Document
    from fxstudio.qt.canvas import GraphCanvas
    from fxstudio.qt.selection import SelectionModel
    from tests.qt.canvas_support import loaded

    doc = Document(loaded("residual_cnn.py"))
    canvas = GraphCanvas(SelectionModel())
    canvas.set_document(doc)
    canvas.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    doc.apply_edit({"op": "set_target", "node": "add", "target": "operator.sub"})   # must not raise
    assert "add = layer1_0_bn2 - relu" in doc.module().code
