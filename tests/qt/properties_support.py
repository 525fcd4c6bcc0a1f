"""Shared set-up for the Properties panel and structure-action tests: real example models opened
as Documents, the panel or the actions wired to a SelectionModel, and typing helpers."""

from __future__ import annotations

import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

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


def replace_text(widget, text: str, *, enter: bool = True) -> None:
    """Select all of a line edit (or an editable combo's), type ``text``, press Enter."""
    edit = widget.lineEdit() if hasattr(widget, "lineEdit") and widget.lineEdit() else widget
    edit.setFocus()
    QTest.keyClick(edit, Qt.Key_A, Qt.ControlModifier)
    QTest.keyClick(edit, Qt.Key_Backspace)
    QTest.keyClicks(edit, text)
    if enter:
        QTest.keyClick(edit, Qt.Key_Return)


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
