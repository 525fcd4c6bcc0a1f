"""View ▸ Fold Repeated Blocks on a real window (issue #15): an exported tiny 6-layer GPT-2 folds
to its first block plus one "×5 identical GPT2Block" card, edits and undo keep working while
folded, and expanding the card (a real click on its toggle) or unchecking the action restores it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from tests.core.layout import real_models
from tests.qt.window_support import make_window, isolated  # noqa: F401 - fixtures


def _settle(qtbot, canvas):
    qtbot.waitUntil(lambda: not canvas.redraw_pending(), timeout=10000)


def test_fold_repeated_blocks_shows_the_count_and_unfolds(qtbot, make_window):
    win = make_window()
    # The fully loaded document, given to the window as its open flow does once the weights are in.
    spec = str(real_models.gpt2_pt2(6))
    doc = Document(load_model(spec))
    win.set_document(doc, spec)
    canvas, scene = win.canvas, win.canvas.canvas_scene
    _settle(qtbot, canvas)
    cards_before = set(scene.cards)
    assert {"m.h.0", "m.h.5"} <= set(scene.frames) and not scene.group_cards
    action = win.actions["fold_repeats"]
    assert action.isCheckable() and not action.isChecked()
    action.trigger()
    _settle(qtbot, canvas)
    # The first block stays expanded with the count; the five others are one card.
    assert set(scene.group_cards) == {"m.h.1"}
    card = scene.group_cards["m.h.1"]
    assert card.group.label == "m.h.1 … m.h.5 · ×5 identical GPT2Block (as m.h.0)"
    assert "m.h.0" in scene.frames and "×6 identical (m.h.0 … m.h.5)" in scene.frames["m.h.0"].group.label
    assert not {p for p in scene.frames if p.startswith(("m.h.1", "m.h.2", "m.h.5"))}
    inside = {n for n in cards_before if n not in scene.cards}
    assert len(inside) == card.group.members > 100
    folded_cards = set(scene.cards)
    # Every edge into or out of the folded blocks ends on the one card.
    assert any(dst == "m.h.1" for (_, dst, _, _) in scene.edges) and any(src == "m.h.1" for (src, _, _, _) in scene.edges)
    assert not [k for k in scene.edges if k[0] in inside or k[1] in inside]

    # An edit in the representative block, and its undo, while folded: the edited block is drawn
    # as it is (nothing inside it folds), the next block represents the others (issue #26).
    target = next(n for n in doc.edited.graph.nodes
                  if n.meta.get("fxs_module_path") == "m.h.0.mlp.act" and n.op == "call_function")
    doc.apply_edit({"op": "insert", "after": target.name, "kind": "call_function", "target": "torch.sigmoid",
                    "args": f"(%{target.name},)", "name": "gate"})
    _settle(qtbot, canvas)
    assert "gate" in scene.cards and set(scene.group_cards) == {"m.h.2"}
    assert scene.group_cards["m.h.2"].group.label == "m.h.2 … m.h.5 · ×4 identical GPT2Block (as m.h.1)"
    assert {"m.h.0", "m.h.0.mlp", "m.h.1"} <= set(scene.frames)   # (ln_2, one card, has no frame: issue #26)
    doc.undo()
    _settle(qtbot, canvas)
    assert "gate" not in scene.cards and set(scene.cards) == folded_cards and set(scene.group_cards) == {"m.h.1"}

    # Expanding the card unfolds the run: every card is back, no collapsed module is left.
    canvas.centerOn(card.sceneBoundingRect().center())
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     canvas.mapFromScene(card.toggle_rect().center()))
    _settle(qtbot, canvas)
    assert not scene.group_cards and canvas.collapsed == set() and set(scene.cards) == cards_before
    assert "×6" not in scene.frames["m.h.0"].group.label and "m.h.3" in scene.frames
    assert not action.isChecked()   # nothing is folded any more

    # The View action folds again and, unchecked, unfolds everything.
    action.trigger()
    _settle(qtbot, canvas)
    assert set(scene.group_cards) == {"m.h.1"}
    action.trigger()
    _settle(qtbot, canvas)
    assert not scene.group_cards and set(scene.cards) == cards_before
    assert doc.edit_script()["edits"] == []   # folding is a view change, never an edit
