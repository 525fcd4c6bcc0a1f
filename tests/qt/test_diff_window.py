"""The diff window (File ▸ Diff Against Original, File ▸ Diff With…) on real documents, offscreen."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from fxstudio.core.diff import DiffGraph, diff_graphs
from fxstudio.core.loading import load_model
from fxstudio.qt.diff import DiffWindow
from tests.qt.canvas_support import visible_rect
from tests.qt.window_support import isolated, make_window, open_and_wait, user_copy  # noqa: F401 (fixtures)


def _open_diff(qtbot, win, trigger):
    opened = []
    win.diff_actions.opened.connect(opened.append)
    trigger()
    qtbot.waitUntil(lambda: bool(opened), timeout=30_000)
    diff_window = opened[0]
    qtbot.waitExposed(diff_window)
    return diff_window


def _file_menu_action(win, text: str):
    file_menu = win.menuBar().actions()[0].menu()
    return next(a for a in file_menu.actions() if a.text().replace("&", "") == text)


def _selected_names(pane) -> list[str]:
    return [pane.document.node(i).name for i in pane.selection.ids()]


def test_diff_against_original_from_the_file_menu(qtbot, make_window, tmp_path):
    win = make_window()
    doc = open_and_wait(qtbot, win, str(user_copy(tmp_path, "residual_cnn.py")))
    mul = next(n for n in doc.edited.graph.nodes if n.op == "call_function" and n.name.startswith("add"))
    doc.apply_edit({"op": "insert", "after": mul.name, "kind": "call_function", "target": "torch.relu",
                    "args": f"(%{mul.name},)", "kwargs": "{}", "name": "extra_relu", "reroute": True})
    dw = _open_diff(qtbot, win, _file_menu_action(win, "Diff Against Original").trigger)
    try:
        assert len(dw.panes) == 2
        assert "0 removed" in dw.summary.text() and "1 added" in dw.summary.text()
        assert "only in this graph (1)" in dw.legend.text()
        # the added node is ringed in the edited pane, and the original pane has no such card
        edited = dw.panes[1]
        relu_id = edited.document.find("extra_relu").meta["fxs_id"]
        assert edited.canvas.diff().added == frozenset({relu_id})
        assert dw.panes[0].document.find("extra_relu") is None
        # a row of the list selects the node in its pane
        rows = [dw.list.topLevelItem(0).child(k) for k in range(dw.list.topLevelItem(0).childCount())]
        row = next(r for r in rows if r.text(0) == "extra_relu")
        dw.list.itemClicked.emit(row, 0)
        assert _selected_names(edited) == ["extra_relu"]
        assert dw.panes[0].selection.ids() == []   # no partner: nothing selected there
    finally:
        dw.close()


def test_clicking_a_card_selects_and_centres_its_match_in_every_pane(qtbot, tmp_path):
    """Three panes: fx graph, export graph, fx graph again; a click in the export pane."""
    path = user_copy(tmp_path, "residual_cnn.py")
    fx, ex = load_model(path, tracer="fx"), load_model(path, tracer="export")
    diff = diff_graphs([DiffGraph("A", fx.graph_module, "fx"), DiffGraph("B", ex.graph_module, "export"),
                        DiffGraph("C", load_model(path, tracer="fx").graph_module, "fx again")])
    dw = DiffWindow(diff)
    qtbot.addWidget(dw)
    dw.resize(1500, 800)
    dw.show()
    qtbot.waitExposed(dw)
    a, b, c = dw.panes
    target = next(n for n in ex.graph_module.graph.nodes if n.op == "call_function" and "conv2d" in str(n.target))
    partner_a = diff.partners(1, target)[0]
    b_id = b.id_of(target)
    b.canvas.center_on_node(b_id)
    QTest.mouseClick(b.canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     b.canvas.viewport_pos_of(target.name))
    assert _selected_names(b) == [target.name]
    assert _selected_names(a) == [partner_a.name] and _selected_names(c) == [partner_a.name]
    card = a.canvas.canvas_scene.by_id[a.id_of(partner_a)]
    assert visible_rect(a.canvas).contains(card.sceneBoundingRect().center())
    # zooming one pane zooms the others
    a.canvas.zoom_by(0.5)
    assert abs(b.canvas.zoom() - a.canvas.zoom()) < 1e-6 and abs(c.canvas.zoom() - a.canvas.zoom()) < 1e-6
    # panning one pane moves the others to the same relative place
    a.selection.clear()
    before = visible_rect(b.canvas).center().y()
    a.canvas.verticalScrollBar().setValue(a.canvas.verticalScrollBar().maximum())
    assert visible_rect(b.canvas).center().y() > before
    assert "changed" in dw.legend.text() and dw.list.topLevelItemCount() == 2
    dw.grab().save(str(tmp_path / "diff_window.png"))


def test_diff_with_another_file(qtbot, make_window, tmp_path):
    win = make_window()
    path = user_copy(tmp_path, "add_mul.py")
    open_and_wait(qtbot, win, str(path))
    other = tmp_path / "add_mul_3.py"
    other.write_text(path.read_text().replace("return y * 2", "return y * 3"))
    dw = _open_diff(qtbot, win, lambda: win.diff_actions.diff_with_file(other))
    try:
        assert [p.title.text().split(":")[0] for p in dw.panes] == ["A", "B"]
        assert "1 changed" in dw.summary.text()
        row = dw.list.topLevelItem(0).child(0)
        assert (row.text(0), row.text(1), row.text(2)) == ("mul", "changed", "args[1]: 2 -> 3")
    finally:
        dw.close()


def test_the_main_windows_overlay_colours_the_edited_pane(qtbot, make_window, tmp_path):
    """Numeric overlays in the diff view: the Time overlay measured in the main window tints the
    edited graph's pane by node name, with its tooltip lines, and the legend says so."""
    win = make_window()
    doc = open_and_wait(qtbot, win, str(user_copy(tmp_path, "residual_cnn.py")))
    doc.apply_edit({"op": "insert", "after": "add", "kind": "call_function", "target": "torch.relu",
                    "args": "(%add,)", "kwargs": "{}", "name": "extra_relu", "reroute": True})
    choice = win.overlay_choice
    choice.choose("time")
    qtbot.waitUntil(lambda: choice.task is None and choice.measured is not None, timeout=60_000)
    dw = _open_diff(qtbot, win, _file_menu_action(win, "Diff Against Original").trigger)
    try:
        edited, original = dw.panes[1], dw.panes[0]
        tints = edited.canvas.metric_overlay()
        names = {edited.document.node(i).name for i in tints}
        main = {win.document.node(i).name for i in win.canvas.metric_overlay()}
        assert names == main and "extra_relu" in names and len(names) > 20
        assert original.canvas.metric_overlay() is None   # the original graph was not measured
        assert "overlay on Edited: Time" in dw.legend.text()
    finally:
        dw.close()
