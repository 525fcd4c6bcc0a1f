"""The canvas driven as a person drives it in the window (issue #13): a readable fit, the minimap's
translucency and toggles, discoverable rewiring, informative cards, arrow-key navigation, F2 into
Properties, Delete and Ctrl+I from the canvas, and Help ▸ Keyboard Shortcuts.

Focus is given the way a click gives it (a mouse click on the canvas viewport) and keys go to
``QApplication.focusWidget()``, never to an inner widget."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.view import CANVAS_KEYS, MIN_READABLE_ZOOM, PORT_HINT
from fxstudio.qt.properties.arg_editor import ValueField
from fxstudio.resources import EXAMPLES_DIR
from tests.qt.canvas_support import synthetic_canvas
from tests.qt.canvas_support import empty_spot, visible_rect


def _open(qtbot, make_window, example="residual_cnn.py", **kwargs):
    win = make_window(**kwargs)
    win.resize(1400, 900)
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / example)
    win.canvas.flush()
    return win, doc


def _click_empty(win) -> None:
    """Focus the canvas as a click on empty space does (the selection stays)."""
    QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     empty_spot(win.canvas))


def _click_card(win, name: str) -> None:
    QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     win.canvas.viewport_pos_of(name))


def _key(key, mods=Qt.KeyboardModifier.NoModifier) -> None:
    widget = QApplication.focusWidget()
    assert widget is not None
    QTest.keyClick(widget, key, mods)


def _selected_name(win) -> str:
    return win.document.node(win.selection.current()).name


def test_fit_is_readable_with_the_inputs_in_view_and_shift_f_fits_all(qtbot, make_window):
    win, _ = _open(qtbot, make_window)
    canvas, cards = win.canvas, win.canvas.canvas_scene.cards
    canvas.zoom_by(0.2)   # somewhere unreadable first
    _click_empty(win)
    _key(Qt.Key.Key_F)
    z = canvas.zoom()
    assert MIN_READABLE_ZOOM - 1e-9 <= z <= 1.0
    view = visible_rect(canvas)
    assert view.contains(cards["x"].sceneBoundingRect())   # the input, at the top
    x0, _, x1, _ = canvas.canvas_scene.bounds
    assert view.left() <= x0 and view.right() >= x1         # the whole width of this narrow ResNet
    assert not canvas.canvas_scene.in_overview()             # cards, with their names, not boxes
    _key(Qt.Key.Key_F, Qt.KeyboardModifier.ShiftModifier)    # Fit All
    assert canvas.zoom() < z
    view = visible_rect(canvas)
    assert all(view.contains(c.sceneBoundingRect()) for c in cards.values())


def test_view_menu_zoom_actions_by_their_shortcuts(qtbot, make_window):
    win, _ = _open(qtbot, make_window)
    view_menu = {a.text().replace("&", ""): a for a in win.menus["view"].actions()}
    for text, keys in (("Zoom In", QKeySequence.StandardKey.ZoomIn), ("Zoom Out", QKeySequence.StandardKey.ZoomOut),
                       ("Reset Zoom (100%)", "Ctrl+0"), ("Fit All", "Shift+F"), ("Fit Graph", "F")):
        assert QKeySequence(keys) in view_menu[text].shortcuts()
    _click_empty(win)
    canvas = win.canvas
    _key(Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert abs(canvas.zoom() - 1.0) < 1e-9
    _key(Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert abs(canvas.zoom() - 0.8) < 1e-9
    _key(Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)
    assert abs(canvas.zoom() - 1.0) < 1e-9


def test_minimap_is_translucent_collapsible_and_remembered(qtbot, make_window):
    win, _ = _open(qtbot, make_window)
    canvas, mm = win.canvas, win.canvas.minimap
    assert mm.isVisible() and mm.expanded
    # A card under the minimap shows through it: a pixel of the minimap where its thumbnail is
    # empty changes colour when a card header is moved under it.
    spot = next(QPoint(x, y) for y in range(20, mm.height() - 20, 7) for x in range(8, 60, 5)
                if mm._image.pixelColor(x, y).alpha() == 0)
    at = mm.geometry().topLeft() + spot                       # in canvas coordinates
    scene_at = canvas.mapToScene(at - canvas.viewport().geometry().topLeft())
    card = canvas.canvas_scene.cards["layer1_0_conv1"]
    header = card.mapToScene(QPointF(card.size()[0] / 2, st.HEADER_H / 2))
    centre = canvas.mapToScene(canvas.viewport().rect().center())
    canvas.centerOn(centre + (header - scene_at))
    over_card = canvas.grab().toImage().pixelColor(at)
    canvas.centerOn(centre + QPointF(5000, 0))                # empty canvas under the minimap
    over_nothing = canvas.grab().toImage().pixelColor(at)
    assert max(abs(over_card.red() - over_nothing.red()), abs(over_card.green() - over_nothing.green()),
               abs(over_card.blue() - over_nothing.blue())) > 30, (over_card.name(), over_nothing.name())
    action = next(a for a in win.menus["view"].actions() if a.objectName() == "action_minimap")
    assert action.isCheckable() and action.isChecked()
    # The minimap's own toggle collapses it to the toggle alone; View ▸ Minimap follows.
    QTest.mouseClick(mm.toggle, Qt.MouseButton.LeftButton)
    assert not mm.expanded and mm.width() <= mm.toggle.width() and not action.isChecked()
    action.trigger()   # and View ▸ Minimap brings it back
    assert mm.expanded and mm.width() > 100
    action.trigger()
    assert not mm.expanded
    win.settings.sync()


def test_minimap_choice_survives_a_restart(qtbot, make_window):
    win, _ = _open(qtbot, make_window, "add_mul.py")
    action = next(a for a in win.menus["view"].actions() if a.objectName() == "action_minimap")
    action.trigger()
    assert not action.isChecked()
    win.settings.sync()
    again = make_window()
    action2 = next(a for a in again.menus["view"].actions() if a.objectName() == "action_minimap")
    assert not action2.isChecked() and not again.canvas.minimap.expanded


def test_a_port_says_how_to_rewire_and_a_click_on_it_selects_its_card(qtbot, make_window):
    win, _ = _open(qtbot, make_window)
    canvas = win.canvas
    canvas.reset_zoom()
    canvas.centerOn(canvas.canvas_scene.cards["layer1_0_bn1"].sceneBoundingRect().center())
    port = canvas.viewport_pos_of("layer1_0_bn1", "port:0")
    near = port + QPoint(8, -7)   # off the 4.5 px circle, inside the larger hit area
    assert canvas.port_under(near) is not None
    QTest.mouseMove(canvas.viewport(), near)
    assert canvas.viewport().cursor().shape() == Qt.CursorShape.OpenHandCursor
    assert win.statusBar().currentMessage() == PORT_HINT
    QTest.mouseMove(canvas.viewport(), empty_spot(canvas))
    assert canvas.viewport().cursor().shape() != Qt.CursorShape.OpenHandCursor
    QTest.mousePress(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, near)
    assert canvas.viewport().cursor().shape() == Qt.CursorShape.ClosedHandCursor   # dragging
    QTest.mouseRelease(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, near)
    assert _selected_name(win) == "layer1_0_bn1" and not win.document.dirty
    # The first-run hint says it too, and closing it is remembered.
    assert canvas.hint.isVisible() and "drag an input port" in canvas.hint.label.text()
    QTest.mouseClick(canvas.hint.close_button, Qt.MouseButton.LeftButton)
    assert not canvas.hint.isVisible() and win.prefs.canvas_hint_dismissed()


def test_cards_show_constants_drop_a_lone_port_index_and_mark_unused_nodes(qtbot, make_window):
    win, doc = _open(qtbot, make_window, "add_mul.py")
    cards = win.canvas.canvas_scene.cards
    assert cards["add"].info.consts == "+ 5" and cards["mul"].info.consts == "× 2"
    face_texts = lambda card: [t.text() for t, *_ in card._face.lines]  # noqa: E731
    win.canvas.reset_zoom()
    win.canvas.grab()   # paint, so the faces are laid out
    assert "× 2" in face_texts(cards["mul"]) and cards["mul"]._face.port_labels == []
    assert not cards["add"].info.dead
    # Feed the output from ``add``: ``mul`` is used by nothing any more.
    doc.apply_edit({"op": "set_arg", "node": "output", "key": 0, "value": "%add"})
    win.canvas.flush()
    assert cards_now(win)["mul"].info.dead and "unused" in cards_now(win)["mul"].toolTip()
    doc.undo()
    win.canvas.flush()
    assert not cards_now(win)["mul"].info.dead


def cards_now(win):
    return win.canvas.canvas_scene.cards


def test_clamp_card_shows_its_keywords(qtbot, make_window):
    win, _ = _open(qtbot, make_window, "clamp.py")
    assert win.canvas.canvas_scene.cards["clamp"].info.consts == "min=-5.0, max=5.0"


def test_arrow_keys_walk_the_edges_and_keep_the_card_in_view(qtbot, make_window):
    win, doc = _open(qtbot, make_window)
    canvas = win.canvas
    _click_card(win, "relu")
    assert _selected_name(win) == "relu" and QApplication.focusWidget() is canvas
    _key(Qt.Key.Key_Down)
    assert _selected_name(win) == "layer1_0_conv1"   # the main path, not the skip connection
    _key(Qt.Key.Key_Up)
    assert _selected_name(win) == "relu"
    _key(Qt.Key.Key_Up)
    assert _selected_name(win) == "bn1"
    # ``add`` has two inputs side by side: Left/Right walk its layer, Up follows its first input.
    win.selection.set([doc.id_of(doc.find("add"))])
    _click_card(win, "add")
    _key(Qt.Key.Key_Up)
    first = _selected_name(win)
    assert first == canvas.canvas_scene.cards["add"].info.ports[0].src
    # Walk down to the end of the graph: each step's card is in view.
    for _ in range(60):
        before = _selected_name(win)
        _key(Qt.Key.Key_Down)
        card = canvas.canvas_scene.cards[_selected_name(win)]
        assert visible_rect(canvas).contains(card.sceneBoundingRect())
        if _selected_name(win) == before:
            break
    assert _selected_name(win) == "output"


def test_left_and_right_move_within_a_layer(qtbot, make_window):
    win, doc = _open(qtbot, make_window, "transformer_block.py")
    layout = win.canvas.canvas_scene.layout
    _click_card(win, "getattr_1")
    row = sorted((b.x, n) for n, b in layout.nodes.items() if b.layer == layout.nodes["getattr_1"].layer)
    names = [n for _, n in row]
    i = names.index("getattr_1")
    _key(Qt.Key.Key_Right)
    assert _selected_name(win) == names[i + 1]
    _key(Qt.Key.Key_Left)
    _key(Qt.Key.Key_Left)
    assert _selected_name(win) == names[i - 1]


def test_f2_and_enter_focus_the_first_argument_field(qtbot, make_window):
    win, _ = _open(qtbot, make_window, "add_mul.py")
    _click_card(win, "mul")
    _key(Qt.Key.Key_F2)
    focused = QApplication.focusWidget()
    field = focused if isinstance(focused, ValueField) else focused.parent()
    assert isinstance(field, ValueField) and field is win.properties.fields[0]
    _click_card(win, "add")
    assert QApplication.focusWidget() is win.canvas
    _key(Qt.Key.Key_Return)
    focused = QApplication.focusWidget()
    field = focused if isinstance(focused, ValueField) else focused.parent()
    assert field is win.properties.fields[0] and win.properties.node_id == win.selection.current()


def test_delete_and_ctrl_i_work_with_the_focus_on_the_canvas(qtbot, make_window):
    from fxstudio.qt.actions.insert_dialog import InsertDialog

    win, doc = _open(qtbot, make_window, "add_mul.py")
    doc.apply_edit({"op": "set_arg", "node": "output", "key": 0, "value": "%add"})   # mul: unused
    win.canvas.flush()
    n = len(doc.edited.graph.nodes)
    _click_card(win, "mul")
    assert QApplication.focusWidget() is win.canvas
    _key(Qt.Key.Key_Delete)   # an unused node is erased at once (no question about its users)
    qtbot.waitUntil(lambda: doc.find("mul") is None, timeout=5000)
    assert len(doc.edited.graph.nodes) == n - 1
    win.canvas.flush()
    _click_card(win, "add")
    _key(Qt.Key.Key_I, Qt.KeyboardModifier.ControlModifier)
    dialog = win.structure.dialog
    assert isinstance(dialog, InsertDialog) and dialog.isVisible()
    dialog.reject()


def test_help_lists_every_shortcut_from_the_actions(qtbot, make_window):
    win, _ = _open(qtbot, make_window, "add_mul.py")
    _click_empty(win)
    _key(Qt.Key.Key_F1)
    dialog = win.last_shortcuts_dialog
    qtbot.waitExposed(dialog)
    listed = {(dialog.table.item(r, 0).text(), dialog.table.item(r, 1).text()) for r in range(dialog.table.rowCount())}
    for action in win.findChildren(QAction):
        for sc in action.shortcuts():
            assert any(sc.toString(QKeySequence.SequenceFormat.NativeText) in keys for keys, _ in listed), action.text()
    assert {k for k, _ in CANVAS_KEYS} <= {k for k, _ in listed}
    assert any(what.startswith("Zoom In") for _, what in listed)
    dialog.close()


def test_cards_name_every_node_in_full_and_show_constant_operands(qtbot):
    from tests.qt.canvas_support import open_canvas

    for example, consts in (("transformer_block.py", {}), ("sub_chain.py", {"add": "+ 10", "sub": "− 5"}),
                            ("view_reshape.py", {"view": "-1, 1"})):
        canvas, doc, _, _ = open_canvas(qtbot, example)
        canvas.reset_zoom()
        canvas.grab()
        cards = canvas.canvas_scene.cards
        for card in cards.values():
            if card._face is None:   # off screen: not painted yet
                continue
            assert card._face.title.text() == card.info.name
        for name, text in consts.items():
            assert cards[name].info.consts == text
            assert text in [t.text() for t, *_ in cards[name]._face.lines]
        canvas.close()


def test_a_long_name_takes_the_narrow_title_font_before_it_is_elided_in_the_middle(qtbot):
    from PySide6.QtGui import QImage, QPainter

    from fxstudio.core.layout import MAX_W
    from fxstudio.core.layout import NodeBox
    from fxstudio.qt.canvas.items import CardInfo, NodeCard

    def painted(name: str) -> str:
        card = NodeCard(CardInfo(name, 1, "call_module", "x", ""), NodeBox(name, 0, 0, MAX_W, 56, 0))
        image = QImage(400, 100, QImage.Format.Format_ARGB32_Premultiplied)
        painter = QPainter(image)
        painter.translate(20, 20)
        card.paint(painter, None)
        painter.end()
        return card._face.title.text()

    fits_narrow = "encoder_layers_11_self_attention_out_proj_x"   # too wide for the bold title font
    assert painted(fits_narrow) == fits_narrow
    too_long = "encoder_layers_11_self_attention_out_projection_dropout_residual_1"
    shown = painted(too_long)
    assert shown != too_long and shown.startswith("encoder") and shown.endswith("residual_1") and "…" in shown


def test_fit_of_a_graph_too_wide_to_read_whole_keeps_names_legible_and_shows_the_inputs(qtbot):
    canvas, gm = synthetic_canvas(qtbot, "skip_chain", 1500, size=(1000, 700))
    scene = canvas.canvas_scene
    x0, _, x1, _ = scene.bounds
    assert (x1 - x0) * MIN_READABLE_ZOOM > canvas.viewport().width()   # too wide to read whole
    canvas.fit()
    assert canvas.zoom() < MIN_READABLE_ZOOM
    canvas.fit_readable()
    assert abs(canvas.zoom() - MIN_READABLE_ZOOM) < 1e-9 and not scene.in_overview()
    inputs = [c for c in scene.cards.values() if c.info.op == "placeholder"]
    assert inputs and all(visible_rect(canvas).contains(c.sceneBoundingRect()) for c in inputs)


def test_an_exported_graph_names_its_constant_arguments_and_hides_defaults(qtbot, tmp_path):
    import torch
    from torch import nn

    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model
    from fxstudio.qt.canvas import GraphCanvas
    from fxstudio.qt.selection import SelectionModel

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)

        def forward(self, x):
            return torch.clamp(self.conv(x), max=5.0).flatten(1) * 2

    path = tmp_path / "model.pt2"
    torch.export.save(torch.export.export(Model(), (torch.randn(1, 3, 8, 8),)), str(path))
    doc = Document(load_model(path))
    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(900, 700)
    canvas.show()
    canvas.set_document(doc)
    consts = {c.info.name: c.info.consts for c in canvas.canvas_scene.cards.values()}
    assert consts["conv2d"] == "stride=[2, 2], padding=[1, 1]"   # dilation, groups: defaults
    assert consts["clamp"] == "max=5.0" and consts["mul"] == "× 2"
