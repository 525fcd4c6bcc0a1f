"""The numeric overlay chosen by a real click in the canvas legend: measured off the GUI thread, cards
and minimap coloured by the scale, the legend's range, frame totals; node data loaded from a file,
and a hostile file refused in the legend."""

import json
from pathlib import Path

import pytest
from PySide6.QtGui import QColor

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.core.overlays import format_value
from fxstudio.qt.canvas.overlay_scale import metric_tints, pale
from tests.qt.properties_support import pick_from_dropdown
from tests.qt.window_support import isolated, make_window  # noqa: F401 - fixtures

QUANT_CNN = Path(__file__).resolve().parents[1] / "corpus" / "passes" / "quant_cnn.py"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def window(make_window, qtbot):
    win = make_window(autosave=False, persist=False)
    win.resize(1300, 860)
    doc = Document(load_model(str(QUANT_CNN)))
    doc.apply_edit({"op": "set_target", "node": "relu_1", "target": "torch.sigmoid"})
    win.set_document(doc)
    doc.mark_saved()
    qtbot.waitUntil(lambda: bool(win.canvas.canvas_scene.live_cards), timeout=10_000)
    return win


def _pick(qtbot, combo, text: str) -> None:
    """Open the combo box's drop-down and click the item ``text`` in it."""
    pick_from_dropdown(qtbot, combo, text)
    qtbot.waitUntil(lambda: not combo.view().isVisible(), timeout=3000)


def _card_tints(win) -> dict[str, str]:
    return {name: card.tint.name() for name, card in win.canvas.canvas_scene.live_cards.items() if card.tint is not None}


def test_isolated_error_chosen_by_a_click_colours_cards_minimap_and_legend(window, qtbot):
    chooser = window.overlay_choice
    legend = chooser.legend
    assert legend.isVisible() and legend.combo.currentText() == "Divergence (last run)"
    _pick(qtbot, legend.combo, "Isolated error")
    assert chooser.key == "isolated" and window.findChild(object, "action_overlay_isolated").isChecked()
    qtbot.waitUntil(lambda: chooser.task is None and chooser.measured is not None, timeout=60_000)
    values = chooser.measured.values["isolated"]
    # only the edited node adds error of its own: it alone is tinted, the worst colour of the scale
    assert values["relu_1"] > 0 and all(v == 0 for n, v in values.items() if n != "relu_1")
    expected = {n: c.name() for n, c in metric_tints(chooser.measured, "isolated").items()}
    assert _card_tints(window) == expected == {"relu_1": "#c81e1e"}
    assert window.canvas._minimap_tints.keys() == {"relu_1"}
    assert legend.bar.isVisible() and legend.high.text() == format_value(values["relu_1"], "")
    assert "isolated error" in window.canvas.canvas_scene.live_cards["relu_1"].toolTip().lower()
    # the Run pane's graph-diff list gives the changed node's value in a column of the overlay's colour
    diff_view = window.run_pane.diff_view
    diff_view.flush()
    changed = diff_view.tree.topLevelItem(0).child(0)
    assert diff_view.tree.headerItem().text(3) == "Isolated error"
    assert changed.text(0) == "relu_1" and changed.text(3) == format_value(values["relu_1"], "")
    assert changed.background(3).color().name() == pale(QColor("#c81e1e")).name()

    # Time was measured in the same run: choosing it only recolours, and frames show totals
    _pick(qtbot, legend.combo, "Time")
    assert chooser.task is None
    times = chooser.measured.values["time"]
    expected = {n: c.name() for n, c in metric_tints(chooser.measured, "time").items()}
    assert _card_tints(window) == expected and len(expected) == len(times)
    slowest = max(times, key=times.get)
    assert expected[slowest] == "#c81e1e"
    assert legend.high.text() == format_value(times[slowest], "ms")

    _pick(qtbot, legend.combo, "Divergence (last run)")
    assert _card_tints(window) == {} and not legend.bar.isVisible()
    assert diff_view.tree.columnCount() == 3


def test_loaded_node_data_and_a_hostile_file(window, qtbot, tmp_path):
    chooser = window.overlay_choice
    good = tmp_path / "me.json"
    good.write_text(json.dumps({"results": {"conv1": {"value": 2}, "fc": {"value": 9}},
                                "thresholds": [{"value": 5, "bgColor": "#00ff00"}, {"value": 10, "bgColor": "#0000ff"}]}))
    assert chooser.load_from(str(good))
    assert chooser.legend.combo.currentText() == "Loaded node data"
    assert _card_tints(window) == {"conv1": "#00ff00", "fc": "#0000ff"}
    saved = tmp_path / "again.json"
    assert chooser.save_to(str(saved))
    assert json.loads(saved.read_text())["results"] == {"conv1": {"value": 2.0}, "fc": {"value": 9.0}}

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": {"os.system": {"value": 1}}}))
    assert not chooser.load_from(str(bad))
    assert "does not have" in chooser.legend.status.text()
    assert _card_tints(window) == {"conv1": "#00ff00", "fc": "#0000ff"}   # what was shown stays


def test_module_frames_show_their_totals(make_window, qtbot, tmp_path, examples_dir):
    win = make_window(autosave=False, persist=False)
    win.resize(1300, 860)
    win.set_document(Document(load_model(str(examples_dir / "residual_cnn.py"))))
    qtbot.waitUntil(lambda: bool(win.canvas.canvas_scene.frames), timeout=10_000)
    data = tmp_path / "frames.json"
    data.write_text(json.dumps({"results": {"layer1_0_conv1": {"value": 1}, "layer1_0_conv2": {"value": 2},
                                            "add": {"value": 4}, "layer1_1_conv1": {"value": 8}}}))
    assert win.overlay_choice.load_from(str(data))
    frames = win.canvas.canvas_scene.frames
    assert frames["layer1.0"].toolTip().endswith("Loaded node data (total inside): 7")
    assert frames["layer1"].toolTip().endswith("Loaded node data (total inside): 15")
    win.overlay_choice.choose("divergence")
    assert "total inside" not in frames["layer1"].toolTip()


def test_cards_made_later_get_the_overlay(make_window, qtbot, tmp_path):
    from fxstudio.testing.residual_mlp import write_residual_mlp

    win = make_window(autosave=False, persist=False)
    win.resize(1000, 700)
    doc = Document(load_model(str(write_residual_mlp(tmp_path, blocks=60))))
    win.set_document(doc)
    qtbot.waitUntil(lambda: bool(win.canvas.canvas_scene.live_cards), timeout=20_000)
    names = [n.name for n in doc.edited.graph.nodes]
    data = tmp_path / "all.json"
    data.write_text(json.dumps({"results": {name: {"value": i + 1} for i, name in enumerate(names)}}))
    assert win.overlay_choice.load_from(str(data))
    scene = win.canvas.canvas_scene
    far = [n for n in reversed(names) if n not in scene.live_cards and scene.layout.nodes.get(n) is not None]
    assert far, "the graph should be taller than the view"
    target = far[0]
    win.canvas.center_on_node(doc.id_of(doc.find(target)))
    qtbot.waitUntil(lambda: target in scene.live_cards, timeout=10_000)
    expected = metric_tints(win.overlay_choice.loaded, "data")[target]
    assert scene.live_cards[target].tint.name() == expected.name()
    assert f"Loaded node data: {format_value(names.index(target) + 1, '')}" in scene.live_cards[target].toolTip()
