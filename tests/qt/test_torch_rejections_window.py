"""Issue #26 defect 1 in the window: an edit made in the real Properties editor that torch's own
checks reject (``mul``'s second argument set to ``'hello'``) shows at once: the card turns red with
torch's message in its tooltip, Properties says it, Problems lists it (a click selects the node), the
status bar names it in place of the stale message, the lint field does not say ok; Ctrl+Z clears it
all. A drag-rewire paints a legal source whose shape does not fit amber before the drop."""

from __future__ import annotations


from PySide6.QtCore import QPoint, QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

from fxstudio.qt.canvas import style as st
from fxstudio.resources import EXAMPLES_DIR
from tests.qt.canvas_support import focus, open_canvas, settle
from tests.torch_messages import mul_hello_message




def _body_share(canvas, name: str, colour: str) -> float:
    """The share of the card body's pixels (below its header, inside its border) painted ``colour``,
    read from the canvas as drawn."""
    card = canvas.canvas_scene.cards[name]
    w, h = card.size()
    body = QRectF(card.pos() + QPointF(4, st.HEADER_H + 2), QSizeF(w - 8, h - st.HEADER_H - 6))
    box = canvas.mapFromScene(body).boundingRect()
    image = canvas.viewport().grab().toImage()
    want = QColor(colour)
    hits = total = 0
    for y in range(box.top(), box.bottom(), 2):
        for x in range(box.left(), box.right(), 2):
            total += 1
            hits += image.pixelColor(x, y).rgb() == want.rgb()
    return hits / max(total, 1)


def test_a_bad_constant_typed_in_properties_turns_the_card_red_and_is_said_everywhere(qtbot, make_window):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py")
    message = mul_hello_message()
    canvas, problems = win.canvas, win.problems
    settle(qtbot, canvas)
    focus(canvas, "mul", zoom=1.2)
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     canvas.viewport_pos_of("mul"))
    mul_id = doc.id_of(doc.find("mul"))
    assert win.selection.current() == mul_id
    assert _body_share(canvas, "mul", st.CARD_BODY) > 0.5  # white before
    win.statusBar().showMessage("Opened add_mul.py (a stale message)")

    # The real editor: click the field, select all, type into the focus widget, Enter.
    field = win.properties.fields[1]
    target = field.lineEdit() if field.lineEdit() else field
    QTest.mouseClick(target, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, target.rect().center())
    qtbot.waitUntil(lambda: QApplication.focusWidget() in (field, target), timeout=3000)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(QApplication.focusWidget(), "'hello'")
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)
    assert doc.history == ["Set mul.args[1] = 'hello'"]

    # Status bar: right after the edit, naming the node and torch's message.
    assert win.statusBar().currentMessage() == f"torch rejects %mul: {message}"
    settle(qtbot, canvas)
    card = canvas.canvas_scene.cards["mul"]
    assert card.info.error == f"torch rejects this node: {message}"
    assert message in card.toolTip()
    qtbot.waitUntil(lambda: _body_share(canvas, "mul", st.REJECTED_BODY) > 0.5, timeout=5000)  # drawn red
    assert canvas.canvas_scene.cards["output"].info.shape == "unknown"
    # Properties: the shape row and torch's message.
    labels = [(w.objectName(), w.text()) for w in win.properties.scroll.widget().findChildren(type(win.properties.name_error))]
    assert next(t for n, t in labels if n == "fxsShape") == "rejected by torch"  # the output row (then the links')
    assert any(n == "fxsRejected" and message in t for n, t in labels)
    # The lint field is not "ok", at once, though Problems is a tab behind another dock.
    assert "torch rejects %mul" in win.status_lint.text() and "ok" not in win.status_lint.text()
    assert message in win.status_lint.toolTip()
    # Problems: one row, source torch, naming mul (drawn once the dock is shown).
    win.docks["problems"].show()
    win.docks["problems"].raise_()
    qtbot.waitUntil(lambda: any(m[1] == "torch" for m in problems.messages()), timeout=5000)
    rows = [m for m in problems.messages() if m[1] == "torch"]
    assert rows == [("error", "torch", f"torch rejects this node: {message} (a run would fail here)")]
    # A click on the row selects the node.
    win.selection.set([doc.id_of(doc.find("add"))])
    tree = problems.tree
    item = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount()) if tree.topLevelItem(i).text(1) == "torch")
    assert item.text(3) == "mul"
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     tree.visualItemRect(item).center())
    assert win.selection.current() == mul_id

    # Undo clears all of it.
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    QTest.keyClick(win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert doc.history_index == 0 and doc.problems() == []
    assert "torch rejects" not in win.statusBar().currentMessage()
    settle(qtbot, canvas)
    assert canvas.canvas_scene.cards["mul"].info.error == "" and canvas.canvas_scene.cards["mul"].info.shape == "2×3 float32"
    assert "ok" in win.status_lint.text()
    qtbot.waitUntil(lambda: not any(m[1] == "torch" for m in problems.messages()), timeout=5000)
    qtbot.waitUntil(lambda: _body_share(canvas, "mul", st.CARD_BODY) > 0.5, timeout=5000)


def test_a_drag_rewire_shows_a_legal_source_whose_shape_does_not_fit_in_amber_before_the_drop(qtbot):
    canvas, doc, _, refusals = open_canvas(qtbot, "two_linear.py")
    cards = canvas.canvas_scene.cards
    focus(canvas, "linear2", zoom=1.0)
    vp = canvas.viewport()
    start = canvas.viewport_pos_of("linear2", "port:0")
    QTest.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    # From the press, before any hover: x (2×4) fits Linear(4→3), linear1 (2×3) is legal but torch
    # rejects it: amber.
    qtbot.waitUntil(lambda: cards["linear1"].drag_state == "misfit", timeout=15000)
    assert cards["x"].drag_state == "legal"
    assert cards["add"].drag_state == "" and cards["output"].drag_state == ""
    target = canvas.viewport_pos_of("linear1")
    QTest.mouseMove(vp, (start + target) / 2)
    QTest.mouseMove(vp, target)
    assert cards["linear1"].drag_state == "mismatch"
    fit = doc.input_fit("linear2", 0, (), "linear1")
    assert fit.status == "rejected" and fit.message in cards["linear1"].toolTip()
    band = next(i for i in canvas.canvas_scene.items() if type(i).__name__ == "RubberBand")
    assert band.state == "mismatch"
    QTest.mouseMove(vp, canvas.viewport_pos_of("x") + QPoint(0, 2))
    assert cards["linear1"].drag_state == "misfit" and cards["x"].drag_state == "hover"
    QTest.mouseMove(vp, target)
    # The drop applies the legal edit; the fed node is then rejected with the same message.
    QTest.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, target)
    assert refusals == [] and doc.edit_script()["edits"] == [
        {"op": "set_arg", "node": "linear2", "key": 0, "value": "%linear1"}]
    assert [p.detail for p in doc.problems()] == [fit.message]
    settle(qtbot, canvas)
    assert cards["linear2"].info.error.endswith(fit.message)
    assert all(c.drag_state == "" for c in cards.values())
