"""Edit ▸ Run Pass… and Edit ▸ Replace Pattern… in a real window: the menu action opens the dialog,
a file and a pass are chosen, the trust question is answered, the graph changes as one edit,
the canvas and Changes show it, and undo restores it."""

from __future__ import annotations

import shutil

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

from fxstudio.resources import EXAMPLES_DIR
from tests.qt.window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

PASSES = EXAMPLES_DIR / "passes"


def _questions(monkeypatch, answer):
    asked = []

    def warn(parent, title, text, *args, **kwargs):
        asked.append((title, text))
        return answer

    monkeypatch.setattr(QMessageBox, "warning", warn)
    return asked


def _edit_menu_action(win, text: str):
    return next(a for a in win.menus["edit"].actions() if a.text().replace("&", "") == text)


def _cnn(qtbot, make_window):
    win = make_window(autosave=False)
    doc = open_and_wait(qtbot, win, str(EXAMPLES_DIR / "residual_cnn.py"), origin="example")
    win.canvas.flush()
    return win, doc


def _module_classes(doc) -> list[str]:
    gm = doc.edited
    return [type(gm.get_submodule(n.target)).__name__ for n in gm.graph.nodes if n.op == "call_module"]


def test_run_a_pass_file_from_the_menu_asks_trust_once_then_undo_restores(qtbot, make_window, tmp_path,
                                                                           monkeypatch):
    win, doc = _cnn(qtbot, make_window)
    pass_file = tmp_path / "my_passes.py"
    shutil.copy(PASSES / "relu_to_gelu.py", pass_file)
    x = doc.loaded.example_inputs[0]
    before = doc.module()(x).detach().clone()
    relus = _module_classes(doc).count("ReLU")
    assert relus > 5

    asked = _questions(monkeypatch, QMessageBox.StandardButton.No)
    _edit_menu_action(win, "Run Pass…").trigger()
    dialog = win.passes.dialog
    assert dialog is not None and dialog.windowTitle() == "Run Pass"
    qtbot.waitExposed(dialog)
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow)
    assert "fxstudio.passes.fuse_conv_bn" in dialog.names()   # the built-ins are listed too
    QTest.mouseClick(dialog.file.lineEdit(), Qt.MouseButton.LeftButton)   # focus as a click gives it
    assert QApplication.focusWidget() is dialog.file   # the combo box (its line edit is its focus proxy target)
    QTest.keyClicks(QApplication.focusWidget(), str(pass_file))
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)   # reads the file; runs nothing
    assert asked == [] and len(doc.history) == 0
    assert dialog.names()[0] == "relu_to_gelu"                # read from the file, nothing ran
    assert QApplication.focusWidget() is dialog.passes
    assert dialog.choice() == (pass_file.resolve(), "relu_to_gelu")
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)   # the default button: Run
    assert len(asked) == 1 and str(pass_file) in asked[0][1]        # the question names the file
    assert len(doc.history) == 0 and win.passes.dialog is dialog      # No: nothing ran, the dialog stays
    assert "not trusted" in dialog.error.text()

    asked = _questions(monkeypatch, QMessageBox.StandardButton.Yes)
    dialog.try_accept()
    assert len(asked) == 1 and win.passes.dialog is None
    assert len(doc.history) == 1 and "relu_to_gelu" in doc.history[0]
    assert _module_classes(doc).count("GELU") == relus and "ReLU" not in _module_classes(doc)
    assert not torch.equal(doc.module()(x), before)
    script = doc.edit_script()["edits"]
    assert script[0]["op"] == "run_pass" and script[0]["name"] == "relu_to_gelu" and len(script[0]["sha256"]) == 64
    assert str(pass_file.resolve()) in win.passes.settings.value("recent/pass_files")

    # Changes and the canvas: the swapped nodes are outlined (changed) and listed.
    win.canvas.flush()
    diff_view = win.run_pane.diff_view
    qtbot.waitUntil(lambda: diff_view.diff is not None and len(diff_view.diff.changed) >= relus, timeout=5000)
    rings = win.canvas.diff()
    assert rings is not None and len(rings.changed) >= relus
    assert set(win.canvas.canvas_scene.cards) == {n.name for n in doc.edited.graph.nodes}

    # The same file again in this window: no second question.
    asked = _questions(monkeypatch, QMessageBox.StandardButton.No)
    doc.undo()
    assert torch.equal(doc.module()(x), before) and "GELU" not in _module_classes(doc)
    win.canvas.flush()
    assert set(win.canvas.canvas_scene.cards) == {n.name for n in doc.edited.graph.nodes}
    assert win.passes.run(pass_file, "relu_to_gelu") is None
    assert asked == [] and len(doc.history) == 1

    # The dialog opens on the pass file used last (recent pass files are in the settings).
    dialog = win.passes.open_run_pass()
    assert dialog.file.currentText() == str(pass_file.resolve()) and dialog.names()[0] == "relu_to_gelu"
    dialog.reject()


def test_a_builtin_pass_needs_no_trust_and_a_full_swap_redraws_the_canvas(qtbot, make_window, monkeypatch):
    win, doc = _cnn(qtbot, make_window)
    asked = _questions(monkeypatch, QMessageBox.StandardButton.No)
    names_before = set(win.canvas.canvas_scene.cards)
    assert any(n.startswith("layer1_0_bn1") or "bn" in n for n in names_before)
    x = doc.loaded.example_inputs[0]
    before = doc.module()(x).detach().clone()
    _edit_menu_action(win, "Run Pass…").trigger()
    dialog = win.passes.dialog
    assert dialog.select("fxstudio.passes.fuse_conv_bn")
    dialog.try_accept()
    assert asked == [] and win.passes.dialog is None and len(doc.history) == 1
    assert "BatchNorm2d" not in _module_classes(doc)
    assert torch.allclose(doc.module()(x), before, atol=1e-5)
    win.canvas.flush()
    cards = win.canvas.canvas_scene.cards
    assert set(cards) == {n.name for n in doc.edited.graph.nodes}   # fused batch norms have no card left
    assert all(cards[n.name].info.node_id == doc.id_of(n) for n in doc.edited.graph.nodes)
    assert "Run pass" in win.statusBar().currentMessage()
    doc.undo()
    win.canvas.flush()
    assert set(win.canvas.canvas_scene.cards) == names_before
    doc.redo()
    win.canvas.flush()
    assert set(win.canvas.canvas_scene.cards) == {n.name for n in doc.edited.graph.nodes}


def test_a_failing_pass_is_reported_with_its_line_and_changes_nothing(qtbot, make_window, tmp_path, monkeypatch):
    win, doc = _cnn(qtbot, make_window)
    bad = tmp_path / "bad_pass.py"
    bad.write_text("def explode(gm):\n    x = 1\n    raise ValueError('no good')\n")
    _questions(monkeypatch, QMessageBox.StandardButton.Yes)
    win.passes.open_run_pass()
    dialog = win.passes.dialog
    assert dialog.load_file(str(bad)) and dialog.select("explode")
    dialog.try_accept()
    assert len(doc.history) == 0 and win.passes.dialog is dialog
    assert "bad_pass.py:3" in dialog.error.text()
    assert any("bad_pass.py:3" in message for *_rest, message in win.problems.messages())   # Problems too
    assert "Refused" in win.statusBar().currentMessage()


def test_replace_pattern_reports_the_matches_in_the_status_bar(qtbot, make_window, monkeypatch):
    win = make_window(autosave=False)
    doc = open_and_wait(qtbot, win, str(EXAMPLES_DIR / "relu_add.py"), origin="example")
    _questions(monkeypatch, QMessageBox.StandardButton.Yes)
    relus = sum(1 for n in doc.edited.graph.nodes if n.target is torch.relu)
    assert relus >= 1
    _edit_menu_action(win, "Replace Pattern…").trigger()
    dialog = win.passes.dialog
    assert dialog.load_file(str(PASSES / "relu_pattern.py"))
    assert (dialog.pattern.currentText(), dialog.replacement.currentText()) == ("pattern", "replacement")
    dialog.try_accept()
    assert win.passes.dialog is None and len(doc.history) == 1
    assert not any(n.target is torch.relu for n in doc.edited.graph.nodes)
    assert win.statusBar().currentMessage().startswith(f"Replaced {relus} match")
    doc.undo()
    assert sum(1 for n in doc.edited.graph.nodes if n.target is torch.relu) == relus


@pytest.mark.parametrize("answer", [QMessageBox.StandardButton.No])
def test_replace_pattern_untrusted_changes_nothing(qtbot, make_window, monkeypatch, answer):
    win = make_window(autosave=False)
    doc = open_and_wait(qtbot, win, str(EXAMPLES_DIR / "relu_add.py"), origin="example")
    asked = _questions(monkeypatch, answer)
    win.passes.open_replace_pattern()
    dialog = win.passes.dialog
    assert dialog.load_file(str(PASSES / "relu_pattern.py"))
    dialog.try_accept()
    assert len(asked) == 1 and len(doc.history) == 0 and "not trusted" in dialog.error.text()


def test_a_slow_pass_runs_in_a_worker_and_cancel_changes_nothing(qtbot, make_window, tmp_path, monkeypatch):
    """The pass runs off the GUI thread behind a modal progress dialog; Cancel (clicked, as a user
    would) returns at once, drops the copy, and the graph, history and code stay as they were."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QProgressDialog, QPushButton

    win, doc = _cnn(qtbot, make_window)
    slow = tmp_path / "slow_pass.py"
    release = tmp_path / "release"
    slow.write_text("import time, pathlib\n\n\ndef slow(gm):\n"
                    f"    while not pathlib.Path({str(release)!r}).exists():\n        time.sleep(0.05)\n"
                    "    return gm\n")
    _questions(monkeypatch, QMessageBox.StandardButton.Yes)
    code_before = doc.module().code
    seen = {}

    def click_cancel():
        progress = win.findChild(QProgressDialog, "passProgress")
        if progress is None or not progress.isVisible():
            QTimer.singleShot(100, click_cancel)
            return
        seen["progress"] = True
        button = progress.findChild(QPushButton)
        QTest.mouseClick(button, Qt.MouseButton.LeftButton)

    QTimer.singleShot(100, click_cancel)
    reason = win.passes.run(slow, "slow")
    assert seen.get("progress") and "cancelled" in reason
    assert len(doc.history) == 0 and doc.module().code == code_before
    release.write_text("go")   # the detached worker ends; its result is dropped
    task_ended = win.passes.running is None
    assert task_ended
    assert win.passes.run(slow, "slow") is not None   # returns gm unchanged: refused, nothing changed
    assert len(doc.history) == 0
