"""File ▸ Export of an edited graph that raises on its example inputs (issue #26, defect 3): the
failure dialog says it is the *edited* graph, names the node and torch's message, offers "Export
without verification" (which writes the file) and Cancel, and the status bar says how the export
ended instead of "Exporting …". Driven through the real save dialog and the real message box."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from fxstudio.core.export.python_file import ExportResult
from fxstudio.core.export import GraphRunFailed
from fxstudio.resources import EXAMPLES_DIR
from tests.qt.window_support import isolated, make_window, open_and_wait  # noqa: F401 - fixtures

EXPORT_TIMEOUT_MS = 120_000
BREAKING_EDIT = {"op": "set_arg", "node": "mul", "key": 1, "value": "'abc'"}   # y * 'abc': torch raises


class Driver:
    """Answers the modal dialogs as they come up (they run their own event loops): the save dialog
    with ``path``, the export failure box with the button ``answer``; records what each showed."""

    def __init__(self, win, path, answer: str):
        self.win, self.path, self.answer = win, path, answer
        self.save_title = None
        self.box: dict | None = None
        self.other: list[str] = []   # any other message box (closed, so that a failing test ends)
        self.timer = QTimer()
        self.timer.timeout.connect(self.step)
        self.timer.start(50)

    def step(self) -> None:
        modal = QApplication.activeModalWidget()
        if isinstance(modal, QFileDialog) and self.save_title is None:
            self.save_title = modal.windowTitle()
            modal.selectFile(str(self.path))
            modal.accept()
        elif isinstance(modal, QMessageBox) and modal.objectName() == "exportFailed" and self.box is None:
            self.box = {"title": modal.windowTitle(), "text": modal.text(), "details": modal.informativeText(),
                        "buttons": sorted(b.text().replace("&", "") for b in modal.buttons()),
                        "status": self.win.statusBar().currentMessage()}
            button = next(b for b in modal.buttons() if b.text().replace("&", "") == self.answer)
            QTest.mouseClick(button, Qt.MouseButton.LeftButton)
        elif isinstance(modal, QMessageBox) and modal.objectName() != "exportFailed":
            self.other.append(f"{modal.windowTitle()}: {modal.text()}")
            modal.done(0)

    def ended(self, win) -> bool:
        """The unverified export wrote its file, or a dialog other than the expected one came up."""
        return bool(self.other) or isinstance(win.last_export, ExportResult)


def test_the_failure_names_the_node_and_export_without_verification_writes_the_file(qtbot, make_window, tmp_path):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    doc.apply_edit(BREAKING_EDIT)
    out = tmp_path / "out" / "add_mul_edited.py"
    out.parent.mkdir()
    win.last_export = None
    driver = Driver(win, out, "Export without verification")
    win.actions["export"].trigger()   # File ▸ Export: the save dialog, then the export in a worker
    qtbot.waitUntil(lambda: driver.ended(win), timeout=EXPORT_TIMEOUT_MS)
    driver.timer.stop()
    assert driver.other == []
    assert driver.save_title == "Export"   # it saves .py and .pt2
    box = driver.box
    assert box is not None and box["title"] == "Export failed"
    assert "The edited graph fails on its example inputs at node <b>mul</b>" in box["text"]
    assert "operator.mul" in box["details"]
    assert "TypeError: only integer tensors of a single element can be converted to an index" in box["details"]
    assert box["buttons"] == ["Cancel", "Export without verification", "Show Node"]
    assert "Exporting" not in box["status"] and box["status"].startswith("Export of add_mul_edited.py failed")
    errors = [m for m in win.problems.messages() if m[0] == "error"]
    assert errors and "the edited graph fails on its example inputs at node `mul`" in errors[-1][2]
    # The button wrote the file, unverified, and the status bar says so.
    result = win.last_export
    assert result.py_path == out and out.is_file() and result.weights_path.is_file() and not result.verified
    assert "* 'abc'" in out.read_text() or "'abc'" in out.read_text()
    assert win.statusBar().currentMessage() == f"Exported {out} (not verified)"


def test_cancel_writes_nothing_and_show_node_selects_it(qtbot, make_window, tmp_path):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    doc.apply_edit(BREAKING_EDIT)
    out = tmp_path / "add_mul_edited.py"
    for answer in ("Cancel", "Show Node"):
        win.last_export = None
        driver = Driver(win, out, answer)
        win.export_to(out)   # what the save dialog's answer starts
        assert win.statusBar().currentMessage() == "Exporting and verifying add_mul_edited.py…"
        qtbot.waitUntil(lambda: driver.box is not None or bool(driver.other), timeout=EXPORT_TIMEOUT_MS)
        qtbot.waitUntil(lambda: not QApplication.activeModalWidget(), timeout=10_000)
        driver.timer.stop()
        assert driver.other == []
        assert isinstance(win.last_export, GraphRunFailed) and win.last_export.node == "mul"
        assert not out.exists() and list(tmp_path.glob("add_mul_edited*")) == []
        assert "Exporting" not in win.statusBar().currentMessage()
    assert win.selection.current() == doc.id_of(doc.find("mul"))
