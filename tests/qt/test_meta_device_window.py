"""The meta device in the window (issue #28): Open with Options' "Build on the meta device (no
weights)" choice opens the graph without weights (Run then says it needs them), and a model whose
parameters exceed the memory available is offered that choice on open (the real question box,
answered with a click)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox
from test_open_options import click, shown_dialog, type_into, wait_document
from window_support import isolated, make_window  # noqa: F401 - fixtures

from fxstudio.core.loading import has_meta_weights
from tests.core.loading.meta_files import MLP_SOURCE, write


def test_open_with_options_builds_on_the_meta_device(qtbot, make_window, tmp_path):
    path = write(tmp_path, "mlp_dialog.py", MLP_SOURCE)
    win = make_window()
    win.prefs.trust_py(path)  # asked once per file: not what this test is about
    {a.objectName(): a for a in win.menus["file"].actions()}["action_openwithoptions"].trigger()
    dialog = shown_dialog(qtbot, win)
    assert not dialog.meta.isChecked() and not dialog.weights.isEnabled()
    type_into(qtbot, dialog.model, str(path))
    click(dialog.meta)
    assert dialog.meta.isChecked() and dialog.weights.isEnabled()
    click(dialog.open_button)
    doc = wait_document(qtbot, win, "mlp_dialog.py")
    assert win.options.get("device") == "meta"
    assert has_meta_weights(doc.loaded.module)
    assert tuple(doc.find("fc1").meta["fxs_shape"]) == (4, 32)  # shapes as for any model
    assert any("built on the meta device: no weights" in m[2] for m in win.problems.messages())
    # Run says plainly that it needs weights, and how to give them
    pane = win.run_pane
    qtbot.mouseClick(pane.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not pane.running and "meta device" in pane.status.text(), timeout=30_000)
    assert "it has no weights to run" in pane.status.text() and "Open with Options" in pane.status.text()


class Answer:
    """Clicks ``button`` in the first question box that comes up and records its title and text."""

    def __init__(self, button: str):
        self.button, self.seen = button, None
        self.timer = QTimer()
        self.timer.timeout.connect(self.step)
        self.timer.start(50)

    def step(self) -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox) and self.seen is None:
            self.seen = (box.windowTitle(), box.text())
            target = next(b for b in box.buttons() if b.text().replace("&", "") == self.button)
            QTest.mouseClick(target, Qt.MouseButton.LeftButton)


def test_a_model_larger_than_memory_is_offered_the_meta_device(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("FXSTUDIO_MEMORY_LIMIT", "1K")  # the MLP's 3.2 KB of parameters do not fit
    path = write(tmp_path, "mlp_offer.py", MLP_SOURCE)
    win = make_window()
    answer = Answer("Yes")
    assert win.open_path(path, origin="argument")
    doc = wait_document(qtbot, win, "mlp_offer.py")
    answer.timer.stop()
    title, text = answer.seen
    assert title == "Build on the meta device?"
    assert "mlp_offer.py: its parameters take" in text and "more than the" in text
    assert has_meta_weights(doc.loaded.module) and win.options.get("device") == "meta"
    monkeypatch.setenv("FXSTUDIO_MEMORY_LIMIT", "1G")  # fits: opened with its weights, nothing asked
    again = write(tmp_path, "mlp_fits.py", MLP_SOURCE)
    assert win.open_flow.open(again, origin="argument", ask_unsaved=False)
    doc = wait_document(qtbot, win, "mlp_fits.py")
    assert not has_meta_weights(doc.loaded.module) and not win.options.get("device")
