"""The first screen at 1600×1000, as it compares with Netron and Model Explorer (issue #26, items 4,
7 and 11; shared/anchors): a module of one card is named on that card, not framed; a card does not
repeat the op its title says; every line of a card keeps its full height; nested frames say their
path relative to the frame around them and sit close; the docks leave the canvas the room; the
first-run hint covers no card; a ``.pt2`` opens on the input that feeds the computation, and its
code on the computation."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import QRectF
from torch import nn

from fxstudio.resources import EXAMPLES_DIR
from tests.core.layout import real_models
from tests.qt.window_support import isolated, make_window, open_and_wait  # noqa: F401 - fixtures

HEADER_H = 22.0


def _open(qtbot, make_window, spec):
    win = make_window()
    assert (win.width(), win.height()) == (1600, 1000)   # a first launch on a desktop screen
    doc = open_and_wait(qtbot, win, str(spec))
    win.canvas.flush()
    qtbot.wait(50)
    return win, doc


def text_lines(card) -> list[tuple[str, QRectF, str]]:
    """(text, card-relative rectangle, font role) of each line a card draws under its title."""
    from fxstudio.qt.canvas.items import _Face, _metrics

    w, h = card.size()
    face = _Face(card.info, w, h)
    return [(t.text(), QRectF(p.x(), p.y(), _metrics(role).horizontalAdvance(t.text()), _metrics(role).height()), role)
            for t, p, _pen, role in face.lines]


def assert_lines_whole(card) -> None:
    """Every line inside the card's body, none over another, the shape in the body font."""
    from fxstudio.qt.canvas.card_rows import rows_height

    w, h = card.size()
    body_bottom = h - rows_height(len(card.info.rows))
    lines = text_lines(card)
    for text, rect, _ in lines:
        assert rect.top() >= HEADER_H and rect.bottom() <= body_bottom + 0.01, (card.info.name, text, rect)
    rows = sorted({(r.top(), r.bottom()) for _, r, _ in lines})
    for (_, bottom), (top, _) in zip(rows, rows[1:]):
        assert top >= bottom, (card.info.name, lines)
    if card.info.shape:
        shape = [rect for text, rect, role in lines if text == card.info.shape]
        assert shape and shape[0].height() >= 12.5, (card.info.name, lines)   # the body font's full height


def test_a_module_of_one_card_is_named_on_it_and_no_card_repeats_its_op(qtbot, make_window):
    win, doc = _open(qtbot, make_window, real_models.cnn_pt2())
    scene = win.canvas.canvas_scene
    paths = {c.info.name: doc.find(c.info.name).meta.get("fxs_module_path") or "" for c in scene.cards.values()}
    for path, frame in scene.frames.items():   # every frame holds two cards or more, or other frames
        inside = [n for n, p in paths.items() if p == path or p.startswith(path + ".")]
        assert len(inside) >= 2, (path, inside)
    assert not {"conv", "bn", "layer1.0.conv1"} & set(scene.frames)
    conv = scene.cards["conv2d"]
    assert conv.info.caption == "conv · Conv2d"
    texts = [t for t, _, _ in text_lines(conv)]
    assert texts[0] == "conv · Conv2d" and texts[-1] == conv.info.shape
    block_conv = next(c for n, c in scene.cards.items() if paths[n] == "layer1.0.conv1")
    assert block_conv.info.caption == "conv1 · Conv2d"   # relative to the frame around it: layer1.0
    for card in scene.cards.values():
        assert not any(t.startswith(("torch.ops.", "aten.")) for t, _, _ in text_lines(card)), card.info.name
        assert_lines_whole(card)
    win.grab().save(str(real_models.folder() / "first_screen_cnn.png"))


def test_a_card_with_its_target_and_constants_keeps_its_shape_line_whole(qtbot, make_window):
    win, doc = _open(qtbot, make_window, EXAMPLES_DIR / "add_mul.py")
    scene = win.canvas.canvas_scene
    assert [t for t, _, _ in text_lines(scene.cards["mul"])] == ["× 2", "2×3 float32"]   # "mul" says operator.mul
    doc.apply_edit({"op": "rename", "node": "mul", "name": "doubled"})
    win.canvas.flush()
    card = scene.cards["doubled"]
    lines = text_lines(card)
    assert [t for t, _, _ in lines] == ["operator.mul", "× 2", "2×3 float32"]
    assert card.size()[1] > scene.cards["add"].size()[1]   # a third line: a taller card
    assert_lines_whole(card)


class Encoder(nn.Module):
    """Two transformer encoder layers: frames four deep (enc, its layers, a layer, its attention)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 2,
                                         enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


def test_nested_frames_say_their_path_relative_to_the_frame_around_them_and_sit_close(qtbot, make_window, tmp_path):
    from fxstudio.core.layout.groups import INNER_PAD

    torch.manual_seed(0)
    path = tmp_path / "enc.pt2"
    torch.export.save(torch.export.export(Encoder().eval(), (torch.randn(1, 5, 16),)), str(path))
    win, _ = _open(qtbot, make_window, path)
    frames = win.canvas.canvas_scene.frames
    titles = {p: f.title() for p, f in frames.items()}
    assert titles["enc"] == "enc · TransformerEncoder" and titles["enc.layers"] == "layers"
    assert titles["enc.layers.0"] == "0 · TransformerEncoderLayer"
    assert titles["enc.layers.0.self_attn"] == "self_attn · MultiheadAttention"
    assert frames["enc.layers.0.self_attn"].toolTip() == "enc.layers.0.self_attn · MultiheadAttention"
    # Each nested frame starts under its parent's title band, INNER_PAD below it (not a card's pad).
    chain = ["enc", "enc.layers", "enc.layers.0", "enc.layers.0.self_attn"]
    for outer, inner in zip(chain, chain[1:]):
        gap = frames[inner].group.y - frames[outer].group.y
        assert gap <= 22 + INNER_PAD + 0.01, (outer, inner, gap)
        left = frames[inner].group.x - frames[outer].group.x
        assert 0 < left <= INNER_PAD + 0.01, (outer, inner, left)


def test_the_canvas_has_the_room_and_the_hint_covers_no_card(qtbot, make_window):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    win, _ = _open(qtbot, make_window, EXAMPLES_DIR / "residual_cnn.py")
    canvas = win.canvas
    bottom = win.docks["code"].height()
    assert bottom <= 0.22 * win.height()            # the Code dock on a first launch: low
    assert canvas.height() >= 0.6 * win.height()    # most of the height for the graph
    hint, viewport = canvas.hint, canvas.viewport()
    assert hint.isVisible() and hint.width() >= 600
    assert not hint.geometry().intersects(viewport.geometry())   # a band of its own: no card under it
    assert hint.geometry().top() >= viewport.geometry().bottom()
    QTest.mouseClick(hint.close_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: canvas.viewportMargins().bottom() == 0)
    assert viewport.height() >= canvas.height() - 2   # the band went with it
    # The Run tab, raised the first time, gets the height its plots need.
    win.docks["run"].raise_()
    qtbot.waitUntil(lambda: win.docks["run"].height() >= 0.28 * win.height(), timeout=3000)
    assert win.docks["run"].height() >= win.views["run"].minimumSizeHint().height()   # no scrolling needed


def test_a_pt2_opens_on_the_input_that_feeds_the_computation_and_its_code_on_the_first_op(qtbot, make_window,
                                                                                       tmp_path):
    pytest.importorskip("transformers")
    from tests.core.loading.hf_files import save_gpt2

    path = save_gpt2(tmp_path / "gpt2.pt2", keywords=False)   # export(m, (ids,), {"use_cache": False})
    win, doc = _open(qtbot, make_window, path)
    canvas = win.canvas
    visible = canvas.mapToScene(canvas.viewport().rect()).boundingRect()
    cards = canvas.canvas_scene.cards
    assert "use_cache" in cards
    embedding = next(n.name for n in doc.edited.graph.nodes if n.name.startswith("embedding")
                     and any(a.name == "input_ids" or "input_ids" in {i.name for i in a.all_input_nodes}
                             for a in n.all_input_nodes))
    for name in ("input_ids", embedding):
        assert visible.contains(cards[name].sceneBoundingRect()), (name, visible)
    # The Code dock starts at the computation, not at the hundreds of parameter reads before it.
    code = win.code
    code.lazy.flush()
    first = code.first_op_line()
    assert first > 10
    assert code.edited.verticalScrollBar().value() == first - 1
    assert code.edited.document().findBlockByNumber(first - 1).text().lstrip().split(" = ")[0] in cards


def test_a_modules_second_card_brings_its_frame_and_takes_the_name_off_the_card(qtbot):
    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model
    from fxstudio.qt.canvas import GraphCanvas
    from fxstudio.qt.selection import SelectionModel

    canvas = GraphCanvas(SelectionModel())
    qtbot.addWidget(canvas)
    canvas.resize(1200, 800)
    canvas.show()
    doc = Document(load_model(str(real_models.cnn_pt2())))
    canvas.set_document(doc)
    scene = canvas.canvas_scene
    tall = scene.cards["conv2d"].size()[1]
    assert "conv" not in scene.frames and scene.cards["conv2d"].info.caption == "conv · Conv2d"
    doc.apply_edit({"op": "insert", "after": "conv2d", "kind": "call_function", "target": "torch.sigmoid",
                    "args": "(%conv2d,)", "name": "gate"})
    canvas.flush()
    assert doc.find("gate").meta.get("fxs_module_path") == "conv"
    assert "conv" in scene.frames and scene.frames["conv"].title() == "conv · Conv2d"
    assert scene.cards["conv2d"].info.caption == "" and scene.cards["conv2d"].size()[1] < tall   # a line less
    assert_lines_whole(scene.cards["conv2d"])
    doc.undo()
    canvas.flush()
    assert "conv" not in scene.frames and scene.cards["conv2d"].info.caption == "conv · Conv2d"
    assert scene.cards["conv2d"].size()[1] == tall
    canvas.close()
