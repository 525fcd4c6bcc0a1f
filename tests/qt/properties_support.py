"""Shared set-up for the Properties panel and structure-action tests: real example models opened
as Documents, the panel or the actions wired to a SelectionModel, and typing helpers."""

from __future__ import annotations

import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path


def open_doc(name: str) -> Document:
    """A Document on a built-in example model file."""
    return Document(load_model(example_path(name)))


def select(selection, doc: Document, name: str) -> int:
    """Select the node called ``name``; returns its id."""
    node_id = doc.id_of(doc.find(name))
    selection.set([node_id])
    return node_id


def run(doc: Document) -> torch.Tensor:
    """The edited module's output on the example inputs."""
    return doc.module()(*doc.loaded.example_inputs)


def click_into(widget) -> None:
    """Give ``widget`` the focus the way a user does, with a click (a combo box: on its text), and
    check that the window system's focus widget is it (or its focus proxy's target)."""
    target = widget.lineEdit() if hasattr(widget, "lineEdit") and widget.lineEdit() else widget
    window = widget.window()
    if not window.isActiveWindow():  # a click on a window activates it; offscreen, ask for it
        QTest.qWaitForWindowExposed(window, 2000)
        window.activateWindow()
        QTest.qWaitForWindowActive(window, 2000)
    QTest.mouseClick(target, Qt.LeftButton, Qt.NoModifier, target.rect().center())
    focused = QApplication.focusWidget()
    assert focused is not None and (focused is widget or focused is target or widget.isAncestorOf(focused)), \
        f"a click on {widget!r} left the focus on {focused!r}"


def keys(text_or_key, modifier=Qt.NoModifier) -> None:
    """Type a string, or press one key, at ``QApplication.focusWidget()``: where a window system
    delivers keys (for an editable combo box that is the combo, not its inner line edit)."""
    focused = QApplication.focusWidget()
    assert focused is not None, "no widget has the keyboard focus"
    if isinstance(text_or_key, str):
        QTest.keyClicks(focused, text_or_key, modifier)
    else:
        QTest.keyClick(focused, text_or_key, modifier)


def replace_text(widget, text: str, *, enter: bool = True) -> None:
    """Click into a field, select all, type ``text`` and press Enter, every key sent to the focus
    widget as a window system would."""
    click_into(widget)
    keys(Qt.Key_A, Qt.ControlModifier)
    keys(Qt.Key_Backspace)
    keys(text)
    if enter:
        keys(Qt.Key_Return)


def pick_from_dropdown(qtbot, combo, text: str) -> None:
    """Open a combo's drop-down and click the item showing ``text``."""
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    index = combo.findText(text)
    assert index >= 0, f"{text} not offered: {[combo.itemText(i) for i in range(combo.count())]}"
    model_index = view.model().index(index, 0)
    view.scrollTo(model_index)
    rect = view.visualRect(model_index)
    QTest.mouseClick(view.viewport(), Qt.LeftButton, Qt.NoModifier, rect.center())


def list_items(list_widget) -> list[str]:
    """Texts of the visible items of a QListWidget."""
    return [list_widget.item(i).text() for i in range(list_widget.count()) if not list_widget.item(i).isHidden()]


def actions_host(qtbot, example: str, node: str | None):
    """A shown, active host window carrying the structure actions, on an example document with
    ``node`` selected; returns (doc, selection, actions, host)."""
    from PySide6.QtWidgets import QWidget

    from fxstudio.qt.actions import StructureActions
    from fxstudio.qt.selection import SelectionModel

    doc = open_doc(example)
    selection = SelectionModel()
    host = QWidget()
    qtbot.addWidget(host)
    actions = StructureActions(lambda: doc, selection, host)
    host.addActions(actions.actions())
    host.resize(300, 200)
    host.show()
    host.activateWindow()  # shortcuts reach the active window only
    qtbot.waitUntil(host.isActiveWindow, timeout=3000)
    if node is not None:
        select(selection, doc, node)
    return doc, selection, actions, host
