"""The window's docks and their initial arrangement at 1600×1000.

Right: Properties (tall), with History tabbed behind it. Bottom: Code, Table, Problems and Run as
tabs, low (``CODE_SHARE`` of the height) so that the canvas has the room on a first launch; the
Run tab, raised the first time, takes ``RUN_SHARE`` for its plots. The canvas is the central
widget. Every dock has an ``objectName`` so ``saveState`` restores the user's arrangement on the
next start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea, QTabWidget, QWidget

from fxstudio.qt.code_view import CodeView
from fxstudio.qt.history_view import HistoryView
from fxstudio.qt.problems import ProblemsView
from fxstudio.qt.properties.panel import PropertiesPanel
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.table_view import TableView


CODE_SHARE = 0.2    # of the window's height: the bottom docks on a first launch
PROPERTIES_SHARE = 0.24   # of its width: the Properties dock
RUN_SHARE = 0.5     # the bottom docks once the Run tab is raised (its tables and plots need the height)


@dataclass
class Docks:
    """The dock widgets by role, and the views inside them."""

    docks: dict[str, QDockWidget] = field(default_factory=dict)
    views: dict[str, QWidget] = field(default_factory=dict)
    run_grown: bool = False   # the Run tab had its height once (``grow_for_run``)


def _dock(window: QMainWindow, key: str, title: str, view: QWidget, shortcut: str) -> QDockWidget:
    dock = QDockWidget(title, window)
    dock.setObjectName(f"dock_{key}")
    dock.setWidget(view)
    dock.setFeatures(
        QDockWidget.DockWidgetFeature.DockWidgetMovable
        | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        | QDockWidget.DockWidgetFeature.DockWidgetClosable
    )
    dock.toggleViewAction().setShortcut(shortcut)
    return dock


def _scrolling(view: QWidget) -> QScrollArea:
    """``view`` in a frameless scroll area: the docks it is tabbed with may be lower than it needs
    (the canvas has the room on a first launch); it then scrolls instead of holding them up."""
    area = QScrollArea()
    area.setObjectName(f"{view.objectName()}Scroll")
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    area.setWidget(view)
    return area


def build_docks(window: QMainWindow, selection) -> Docks:
    """Create the views and their docks in the default layout; returns them by role."""
    out = Docks()
    views = {
        "properties": ("Properties", PropertiesPanel(selection), "Alt+1"),
        "history": ("History", HistoryView(selection), "Alt+2"),
        "code": ("Code", CodeView(selection), "Alt+3"),
        "table": ("Table", TableView(selection), "Alt+4"),
        "problems": ("Problems", ProblemsView(selection), "Alt+5"),
    }
    views["run"] = ("Run", RunPane(selection), "Alt+6")
    for key, (title, view, shortcut) in views.items():
        if not view.objectName():
            view.setObjectName(f"{key}View")
        out.views[key] = view
        out.docks[key] = _dock(window, key, title, _scrolling(view) if key == "run" else view, shortcut)
    window.setDockNestingEnabled(True)
    window.setTabPosition(Qt.DockWidgetArea.AllDockWidgetAreas, QTabWidget.TabPosition.North)
    window.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, out.docks["properties"])
    window.tabifyDockWidget(out.docks["properties"], out.docks["history"])
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, out.docks["code"])
    for key in ("table", "problems", "run"):
        window.tabifyDockWidget(out.docks["code"], out.docks[key])
    out.docks["properties"].raise_()
    out.docks["code"].raise_()
    out.docks["run"].visibilityChanged.connect(lambda shown: shown and grow_for_run(window, out))
    return out


def default_sizes(window: QMainWindow, docks: Docks) -> None:
    """Give the docks sensible sizes for the window's current size (about 1600×1000 by default):
    most of it to the canvas."""
    width, height = max(window.width(), 800), max(window.height(), 600)
    window.resizeDocks([docks.docks["properties"]], [int(width * PROPERTIES_SHARE)], Qt.Orientation.Horizontal)
    window.resizeDocks([docks.docks["code"]], [int(height * CODE_SHARE)], Qt.Orientation.Vertical)


def grow_for_run(window: QMainWindow, docks: Docks) -> None:
    """The first time the Run tab shows, make the bottom docks ``RUN_SHARE`` of the window's height
    when they are lower (its plots need the room); later the user's size stays."""
    if docks.run_grown or not window.isVisible():
        return
    docks.run_grown = True
    run = docks.docks["run"]
    want = int(window.height() * RUN_SHARE)
    if run.height() < want and not run.isFloating():
        window.resizeDocks([run], [want], Qt.Orientation.Vertical)
