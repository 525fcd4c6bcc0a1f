"""Help ▸ Keyboard Shortcuts: every shortcut of the window, read from its actions when shown.

The rows are generated from the QActions the window holds (their current shortcuts, so a changed
shortcut shows as it is) plus the keys the canvas handles itself (``view.CANVAS_KEYS``): the list
cannot drift from what the keys do.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHeaderView, QLabel, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)
from shiboken6 import getCppPointer

from fxstudio.qt.canvas.view import CANVAS_KEYS


SHARED_WITH_CANVAS = ("F", "Shift+F", "F3")
"""Keys that a window action and the canvas both handle, doing the same thing. Any other window
shortcut on a canvas key is a clash, and its row says so."""


def _plain(text: str) -> str:
    """Menu text without its mnemonic ampersands and trailing ellipsis."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").strip()


def _menu_order(window: QWidget) -> list[QAction]:
    """The actions of ``window``'s menu bar as the menus show them, submenus in place."""
    out: list[QAction] = []

    def walk(actions) -> None:
        for action in actions:
            if action.menu() is not None:
                walk(action.menu().actions())
            elif not action.isSeparator():
                out.append(action)

    bar = window.menuBar() if hasattr(window, "menuBar") else None
    if bar is not None:
        walk(bar.actions())
    return out


def shortcut_rows(window: QWidget) -> list[tuple[str, str, str]]:
    """(keys, what it does, where) for every action of ``window`` that has a shortcut (in menu
    order, then those in no menu in the order they were created), then the canvas's own keys."""
    rows: list[tuple[str, str, str]] = []
    seen: set[int] = set()  # C++ addresses: one action may come with two Python wrappers
    canvas_keys = {k.strip() for keys, _ in CANVAS_KEYS for k in keys.split(" / ")}
    for action in [*_menu_order(window), *window.findChildren(QAction)]:
        texts = [t for t in (s.toString(QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts()) if t]
        key = getCppPointer(action)[0]
        if key in seen or not texts:
            continue
        seen.add(key)
        what = _plain(action.iconText() if not action.text() else action.text())
        # An undo/redo action names the edit it would undo: the list names the command.
        what = what.split(" ", 1)[0] if action.objectName() in ("action_undo", "action_redo") else what
        # Fit / Fit All / Find Next do on the canvas what the canvas's own F / Shift+F / F3 do: no clash.
        clash = [t for t in texts if t in canvas_keys and t not in SHARED_WITH_CANVAS]
        where = f"window (on the canvas, {clash[0]} is the canvas's)" if clash else "window"
        rows.append((" / ".join(texts), what, where))
    rows.extend((keys, what, "canvas") for keys, what in CANVAS_KEYS)
    return rows


class ShortcutsDialog(QDialog):
    """A read-only table of ``shortcut_rows(window)``."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.setObjectName("shortcutsDialog")
        self.setWindowTitle("Keyboard Shortcuts — fxstudio")
        self.rows = shortcut_rows(window)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Window shortcuts work from anywhere in the window; canvas keys work "
                                "while the canvas has the focus (click an empty spot of it first: that keeps "
                                "the selection; Esc clears it).", self))
        table = self.table = QTableWidget(len(self.rows), 3, self)
        table.setObjectName("shortcutsTable")
        table.setHorizontalHeaderLabels(["Keys", "Action", "Where"])
        table.verticalHeader().setVisible(False)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        for r, row in enumerate(self.rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                table.setItem(r, c, item)
        header = table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(table)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(640, 560)


def show_shortcuts(window: QWidget) -> ShortcutsDialog:
    """Open (non-modal) the Keyboard Shortcuts dialog of ``window`` and return it."""
    dialog = ShortcutsDialog(window)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
    window.last_shortcuts_dialog = dialog
    dialog.show()
    return dialog
