"""Opening models in the window: the file dialog, the run-code and trust confirmations, a dropped
file, a trace failure with clickable file:line, and Export Python through the save dialog."""

from __future__ import annotations

import torch
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox
from window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait, user_copy  # noqa: F401

from fxstudio.resources import EXAMPLES_DIR


def _questions(monkeypatch, answer):
    asked = []

    def fake(parent, title, text, *args):
        asked.append((title, text))
        return answer

    monkeypatch.setattr(QMessageBox, "question", fake)
    return asked


def test_file_dialog_and_run_code_confirmation_remembered(qtbot, make_window, tmp_path, monkeypatch):
    model = user_copy(tmp_path, "sub_chain.py")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(model), "Models"))
    win = make_window()
    # First open of a user .py file: the question names the file; No opens nothing.
    asked = _questions(monkeypatch, QMessageBox.StandardButton.No)
    assert not win.open_dialog()
    assert win.document is None and len(asked) == 1
    assert asked[0][0] == "Run code from this file?" and "sub_chain.py" in asked[0][1]
    # Yes opens it and is remembered for this file: the next open does not ask.
    asked = _questions(monkeypatch, QMessageBox.StandardButton.Yes)
    win.actions["open"].trigger()
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert win.document.loaded.path == model and len(asked) == 1
    first = win.document
    asked = _questions(monkeypatch, QMessageBox.StandardButton.No)
    win.open_dialog()
    qtbot.waitUntil(lambda: win.document is not first, timeout=LOAD_TIMEOUT_MS)
    assert asked == []
    assert win.prefs.last_dir() == str(model.parent)


def test_drop_a_file_on_the_window(qtbot, make_window):
    win = make_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(EXAMPLES_DIR / "clamp.py"))])
    pos = QPointF(win.rect().center())
    args = (Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    enter = QDragEnterEvent(pos.toPoint(), *args)  # a drag enters the window, then drops
    QApplication.sendEvent(win, enter)
    assert enter.isAccepted()
    drop = QDropEvent(pos, *args)
    QApplication.sendEvent(win, drop)
    assert drop.isAccepted()
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert win.document.loaded.path.name == "clamp.py"
    # Something that is not a model is refused.
    other = QMimeData()
    other.setUrls([QUrl.fromLocalFile(str(EXAMPLES_DIR.parent / "style.qss"))])
    bad = QDragEnterEvent(pos.toPoint(), Qt.DropAction.CopyAction, other, Qt.MouseButton.LeftButton,
                          Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(win, bad)
    assert not bad.isAccepted()


def test_trace_failure_shows_clickable_file_line(qtbot, make_window):
    win = make_window()
    # Named on the command line without --concrete-arg (the Examples menu would apply one).
    assert win.open_path(EXAMPLES_DIR / "data_branch.py", origin="argument")
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and win.last_failure_dialog.isVisible(),
                    timeout=LOAD_TIMEOUT_MS)
    dialog = win.last_failure_dialog
    assert win.document is None
    assert "data_branch.py:" in dialog.label.text() and "concrete" in dialog.label.text()
    file, line = dialog.refs[0]
    assert file.endswith("data_branch.py") and line > 0
    dialog.open_ref(0)  # what clicking the link does
    assert win.code.tabs.currentIndex() == 1
    assert win.code.source.current_line() == line
    text = win.code.source.document().findBlockByNumber(line - 1).text()
    assert "positive" in text or "if" in text
    assert any(m[0] == "error" and m[1] == "load" for m in win.problems.messages())
    dialog.close()


def test_pickle_asks_for_trust_naming_the_file(qtbot, make_window, tmp_path, monkeypatch):
    path = tmp_path / "seq.pt"
    torch.save(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), path)
    asked = []

    def warn(parent, title, text, *args):
        asked.append((title, text))
        return QMessageBox.StandardButton.No

    monkeypatch.setattr(QMessageBox, "warning", warn)
    win = make_window()
    win.open_path(path, origin="dialog", options={"input_shapes": [(2, 4)]})
    qtbot.waitUntil(lambda: bool(asked), timeout=LOAD_TIMEOUT_MS)
    assert asked[0][0] == "Trust this file?" and str(path) in asked[0][1]
    qtbot.waitUntil(lambda: not win.open_flow.busy, timeout=LOAD_TIMEOUT_MS)
    assert win.document is None  # declined: nothing unpickled
    win.last_failure_dialog.close()

    def trust(parent, title, text, *args):
        asked.append((title, text))
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "warning", trust)
    # Trusted, the file still gives no example inputs: it opens at once with its shapes unknown (issue #15
    # defect 5: no dialog blocks the open), and the status bar offers to give them.
    from PySide6.QtWidgets import QInputDialog
    shapes_asked = []
    monkeypatch.setattr(QInputDialog, "getText", lambda parent, title, label, *a: (shapes_asked.append(label), ("2,4", True))[1])
    win.open_path(path, origin="dialog")
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert not shapes_asked and win.document.loaded.example_inputs == ()
    assert any(n.startswith("shapes unknown") for n in win.document.loaded.notes)
    offer = win.input_offer.button
    assert offer.isVisible()
    unknown = win.document
    qtbot.mouseClick(offer, Qt.MouseButton.LeftButton)  # Give input shapes…: asks, then reopens with them
    qtbot.waitUntil(lambda: win.document is not unknown and win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert shapes_asked and "no example inputs" in shapes_asked[0]
    assert win.options.get("trust") is True and win.options.get("input_shapes") == [(2, 4)]
    assert not offer.isVisible()
    assert tuple(win.document.loaded.example_inputs[0].shape) == (2, 4)
    assert any("full unpickle" in n for n in win.document.loaded.notes)


def test_export_python_through_the_save_dialog(qtbot, make_window, tmp_path, monkeypatch):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    out = tmp_path / "out" / "edited.py"
    out.parent.mkdir()
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    win.last_export = None
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    from PySide6.QtTest import QTest
    QTest.keyClick(win, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: win.last_export is not None, timeout=120_000)
    assert not isinstance(win.last_export, Exception), win.last_export
    assert win.last_export.verified and out.exists()
    # The exported file computes the edited function, (x + 5) * 10, when imported on its own.
    import importlib.util
    spec = importlib.util.spec_from_file_location("fxs_exported_edited", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    classes = [v for v in vars(module).values()
               if isinstance(v, type) and issubclass(v, torch.nn.Module) and v.__module__ == module.__name__]
    assert len(classes) == 1
    assert classes[0]()(torch.ones(2, 3)).tolist() == [[60.0] * 3] * 2


def test_examples_menu_and_cancelled_load(qtbot, make_window):
    win = make_window()
    # File ▸ Examples lists the built-in models; choosing one opens it without a question.
    entries = {a.objectName(): a for a in win.menus["examples"].actions()}
    assert {"example_add_mul", "example_residual_cnn"} <= set(entries)
    entries["example_add_mul"].trigger()
    # Cancel in the progress dialog detaches the load: nothing opens, the window stays usable.
    from PySide6.QtWidgets import QPushButton
    progress = win.open_flow.progress
    assert progress is not None and win.open_flow.busy
    progress.findChild(QPushButton).click()
    assert not win.open_flow.busy
    task_done = []
    win.open_flow.opened.connect(task_done.append)
    qtbot.wait(300)
    assert win.document is None and not task_done
    assert "cancelled" in win.statusBar().currentMessage()
    entries["example_add_mul"].trigger()
    qtbot.waitUntil(lambda: win.document is not None, timeout=LOAD_TIMEOUT_MS)
    assert win.document.loaded.path.name == "add_mul.py"
