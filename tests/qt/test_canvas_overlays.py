"""Canvas overlays driven as in the window: a real edit, the real run pane's Run and diff, the
canvas tinted by divergence and the edited nodes ringed, through relayouts, undo and a new document."""

import pytest
from PySide6.QtGui import QColor, QImage, QPainter

from fxstudio.core.compare import compare_models
from fxstudio.core.document import Document
from fxstudio.core.compare import graph_diff
from fxstudio.qt.canvas import style as st
from fxstudio.qt.canvas.overlays import connect_run_pane
from fxstudio.qt.divergence_colors import diff_color, divergence_color
from fxstudio.qt.run_pane import RunPane
from tests.qt.canvas_support import focus, loaded, open_canvas, settle

GELU = {"op": "set_target", "node": "layer1_1_relu", "target": "torch.nn.GELU()"}
GATE = {"op": "insert", "after": "layer1_0_bn1", "kind": "call_function", "target": "torch.sigmoid",
        "args": "(%layer1_0_bn1,)", "name": "gate"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def body_pixel(canvas, name: str) -> QColor:
    """The colour of a card's body near its right edge (no text there), as rendered."""
    focus(canvas, name, zoom=1.0)
    img = canvas.grab().toImage()
    rect = canvas.canvas_scene.cards[name].sceneBoundingRect().adjusted(4, 14, -4, -4)   # the card itself
    p = canvas.mapFromScene(rect.right() - 5, rect.bottom() - 6)
    return img.pixelColor(p.x(), p.y())


def close_to(a: QColor, b: QColor, tol: int = 4) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))


def ringed(canvas) -> dict[str, str]:
    return {n: c.diff_kind for n, c in canvas.canvas_scene.cards.items() if c.diff_color is not None}


def test_a_run_tints_from_the_edit_down_and_the_diff_rings_edited_nodes(qtbot):
    canvas, doc, selection, _ = open_canvas(qtbot)
    pane = RunPane(selection)
    qtbot.addWidget(pane)
    pane.set_document(doc)
    connect_run_pane(canvas, pane)
    scene = canvas.canvas_scene

    doc.apply_edit(GELU)
    settle(qtbot, canvas)
    assert ringed(canvas) == {"layer1_1_relu": "changed"}
    assert scene.cards["layer1_1_relu"].diff_color == diff_color("changed")
    assert not canvas.legend.isHidden() and "1 changed" in canvas.legend.changes_label.text()

    with qtbot.waitSignal(pane.report_ready, timeout=60_000):
        pane.run()
    scores = pane.report.divergence_by_id
    relu_id = doc.id_of(doc.find("layer1_1_relu"))
    assert scores[relu_id] > 1 and scene.cards["layer1_1_relu"].tint == divergence_color(scores[relu_id])
    names = [n.name for n in doc.edited.graph.nodes]
    upstream = names[:names.index("layer1_1_relu")]
    assert all(scene.cards[n].tint is None for n in upstream)            # equal values stay white
    assert all(scene.cards[n].tint is not None for n in names[names.index("layer1_1_relu"):])
    assert "error/tolerance" in scene.cards["layer1_1_relu"].toolTip()
    # As drawn: the edited card's body is the pale tint, an upstream card's is white.
    assert close_to(body_pixel(canvas, "layer1_1_relu"), st.tint_brush(scene.cards["layer1_1_relu"].tint.rgb()).color())
    assert close_to(body_pixel(canvas, "layer1_1_bn1"), QColor(st.CARD_BODY))

    # An insertion relays out: new card ringed as added, the tints and the old ring survive.
    doc.apply_edit(GATE)
    settle(qtbot, canvas)
    assert ringed(canvas) == {"layer1_1_relu": "changed", "gate": "added"}
    assert scene.cards["gate"].tint is None and scene.cards["layer1_1_relu"].tint == divergence_color(scores[relu_id])
    # Undo: the pane recomputes the diff and the canvas follows; the (stale) run's tints stay.
    doc.undo()
    settle(qtbot, canvas)
    assert ringed(canvas) == {"layer1_1_relu": "changed"} and "gate" not in scene.cards
    doc.undo()
    settle(qtbot, canvas)
    assert ringed(canvas) == {} and canvas.legend.changes_label.isHidden()
    assert scene.cards["layer1_1_relu"].tint is not None
    doc.redo()
    settle(qtbot, canvas)
    assert ringed(canvas) == {"layer1_1_relu": "changed"}

    # The legend's boxes (and the methods) hide either overlay without forgetting it.
    canvas.legend.changes_box.click()
    assert not canvas.changes_shown() and ringed(canvas) == {}
    canvas.show_changes(True)
    assert canvas.legend.changes_box.isChecked() and ringed(canvas) == {"layer1_1_relu": "changed"}
    canvas.show_divergence(False)
    assert all(c.tint is None for c in scene.cards.values()) and not canvas.legend.divergence_box.isChecked()
    canvas.show_divergence(True)
    assert scene.cards["layer1_1_relu"].tint is not None

    # Another document: nothing of the old one's overlays is left.
    canvas.set_document(None)
    pane.set_document(None)
    assert canvas.divergence() == {} and canvas.diff() is None and canvas.legend.isHidden()
    doc2 = Document(loaded("residual_cnn.py"))
    canvas.set_document(doc2)
    pane.set_document(doc2)
    assert all(c.tint is None and c.diff_color is None for c in scene.cards.values())
    assert canvas.legend.isHidden()


def test_removed_nodes_are_counted_and_the_overview_shows_tints(qtbot):
    canvas, doc, _, _ = open_canvas(qtbot)
    doc.apply_edit({"op": "erase", "node": "layer1_1_relu", "replace_uses_with": "layer1_1_bn1"})
    settle(qtbot, canvas)
    lm = doc.loaded
    report = compare_models(lm.module, doc.original, doc.module(), lm.example_inputs, repeats=1)
    canvas.set_divergence(report.divergence_by_id)
    canvas.set_diff(graph_diff(doc.original, doc.edited))
    assert ringed(canvas) == {"layer1_1_conv2": "changed"}   # it now reads bn1
    assert "1 removed" in canvas.legend.changes_label.text()
    assert "layer1_1_relu" in canvas.legend.changes_label.toolTip()
    tinted = {c.tint.name() for c in canvas.canvas_scene.cards.values() if c.tint is not None}
    assert tinted

    # Zoomed out, the overview fills tinted cards in their colour and rings the changed one.
    canvas.zoom_by(0.05 / canvas.zoom())
    canvas.centerOn(canvas.canvas_scene.cards["layer1_1_conv2"].sceneBoundingRect().center())
    assert canvas.canvas_scene.in_overview()
    img = QImage(canvas.viewport().size(), QImage.Format.Format_ARGB32)
    p = QPainter(img)
    canvas.render(p)
    p.end()
    colours = {img.pixelColor(x, y).name() for x in range(img.width()) for y in range(0, img.height(), 2)}
    assert tinted & colours and diff_color("changed").name() in colours

    # A relayout (collapsing a module) keeps the overlays; a new document drops them.
    canvas.zoom_by(1 / canvas.zoom())
    canvas.toggle_group("layer2")
    assert canvas.canvas_scene.cards["layer1_1_conv2"].diff_kind == "changed"
    assert canvas.canvas_scene.cards["layer1_1_conv2"].tint is not None
    canvas.set_document(Document(loaded("residual_cnn.py")))
    assert ringed(canvas) == {} and all(c.tint is None for c in canvas.canvas_scene.cards.values())
    assert canvas.canvas_scene.overview.childItems()[0]._tints == {}


def test_the_minimap_shows_where_a_run_diverges(qtbot):
    canvas, doc, _, _ = open_canvas(qtbot)
    settle(qtbot, canvas)
    mm = canvas.minimap
    card = canvas.canvas_scene.cards["layer2_0_conv1"]
    rect = card.sceneBoundingRect()
    at = mm.from_scene(rect.center()).toPoint()
    before = mm._image.pixelColor(at)
    score = 1e6
    canvas.set_divergence({card.info.node_id: score})
    tint = canvas._tints[card.info.node_id]
    assert close_to(mm._image.pixelColor(at), tint, tol=8) and not close_to(before, tint, tol=8)
    # Hiding the tints, or a new document, repaints the thumbnail without them.
    canvas.show_divergence(False)
    assert close_to(mm._image.pixelColor(at), before, tol=8)
    canvas.show_divergence(True)
    assert close_to(mm._image.pixelColor(at), tint, tol=8)
    canvas.clear_overlays()
    assert close_to(mm._image.pixelColor(at), before, tol=8)
