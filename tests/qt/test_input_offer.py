"""Issue #15 defect 5 in the window: a model without example inputs opens at once, its shapes unknown (no card or
Properties shape, a status line and a load note say so), and File ▸ Give Input Shapes… / the status-bar button
reopens it with shapes, keeping the edits."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog, QLabel
from window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait  # noqa: F401

from fxstudio.qt.input_offer import STATUS_TEXT
from tests.model_files import LINEAR_RELU_BODY, write_model

BODY = LINEAR_RELU_BODY


def _shape_labels(win):
    return [w.text() for w in win.properties.findChildren(QLabel) if w.objectName() == "fxsShape"]


def test_a_model_without_inputs_opens_and_offers_to_give_them(qtbot, make_window, tmp_path, monkeypatch):
    model = write_model(tmp_path / "no_inputs.py", BODY)
    asked = []
    monkeypatch.setattr(QInputDialog, "getText", lambda parent, title, label, *a: (asked.append(label), ("2,4", True))[1])
    win = make_window()
    doc = open_and_wait(qtbot, win, model)  # no dialog before the graph is shown
    assert not asked and doc.loaded.example_inputs == ()
    assert win.statusBar().currentMessage() == STATUS_TEXT
    assert any(m[2].startswith("shapes unknown") for m in win.problems.messages())
    cards = win.canvas.canvas_scene.cards
    assert {"lin", "relu", "mul"} <= set(cards) and all(not c.info.shape for c in cards.values())
    win.selection.set([doc.id_of(doc.find("relu"))])
    assert _shape_labels(win) == []
    doc.apply_edit({"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.sigmoid",
                    "args": "(%relu,)", "name": "gate", "reroute": True})

    button = win.input_offer.button
    assert button.isVisible() and win.input_offer.action.isEnabled()
    assert win.input_offer.action in win.menus["file"].actions()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: win.document is not None and win.document is not doc, timeout=LOAD_TIMEOUT_MS)
    assert asked and "its inputs are x" in asked[0]
    new = win.document
    assert win.options["input_shapes"] == [(2, 4)] and tuple(new.loaded.example_inputs[0].shape) == (2, 4)
    assert new.find("gate") is not None and new.history_index == 1  # the edit was replayed
    assert not button.isVisible()
    assert win.canvas.canvas_scene.cards["gate"].info.shape.startswith("2×3")
    win.selection.set([new.id_of(new.find("relu"))])
    assert "2×3 float32" in _shape_labels(win)


def test_a_model_with_inputs_gets_no_offer(qtbot, make_window, examples_dir):
    win = make_window()
    open_and_wait(qtbot, win, examples_dir / "add_mul.py", origin="example")
    assert not win.input_offer.button.isVisible()
