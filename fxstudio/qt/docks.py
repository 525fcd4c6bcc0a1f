"""The window's docks and their initial arrangement at 1600×1000.

Right: Properties (tall), with History tabbed behind it. Bottom: Code, Table, Problems and Run as
tabs. The canvas is the central widget. Every dock has an ``objectName`` so ``saveState`` restores
the user's arrangement on the next start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget, QWidget

from fxstudio.qt.code_view import CodeView
from fxstudio.qt.history_view import HistoryView
from fxstudio.qt.problems import ProblemsView
from fxstudio.qt.properties.panel import PropertiesPanel
from fxstudio.qt.run_pane import RunPane
from fxstudio.qt.table_view import TableView


@dataclass
class Docks:
    """The dock widgets by role, and the views inside them."""

    docks: dict[str, QDockWidget] = field(default_factory=dict)
    views: dict[str, QWidget] = field(default_factory=dict)


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
        out.docks[key] = _dock(window, key, title, view, shortcut)
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
    return out


def default_sizes(window: QMainWindow, docks: Docks) -> None:
    """Give the docks sensible sizes for the window's current size (about 1600×1000 by default)."""
    width, height = max(window.width(), 800), max(window.height(), 600)
    window.resizeDocks([docks.docks["properties"]], [int(width * 0.24)], Qt.Orientation.Horizontal)
    window.resizeDocks([docks.docks["code"]], [int(height * 0.30)], Qt.Orientation.Vertical)
