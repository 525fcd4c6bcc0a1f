"""The window's look: Fusion with a light palette and ``resources/style.qss``."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from fxstudio.resources import RESOURCES_DIR

STYLESHEET = RESOURCES_DIR / "style.qss"


def apply_app_style(app: QApplication) -> None:
    """Fusion and a light palette for the whole application (call once, before the window shows)."""
    app.setStyle("Fusion")
    pal = app.palette()
    pal.setColor(QPalette.ColorRole.Window, QColor("#eef0f3"))
    pal.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    pal.setColor(QPalette.ColorRole.AlternateBase, QColor("#f7f9fb"))
    pal.setColor(QPalette.ColorRole.Highlight, QColor("#3b7dd8"))
    pal.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    pal.setColor(QPalette.ColorRole.Text, QColor("#1f2937"))
    pal.setColor(QPalette.ColorRole.WindowText, QColor("#1f2937"))
    app.setPalette(pal)


def apply_style(window: QWidget) -> None:
    """The window chrome's stylesheet (docks, tabs, toolbar, status bar)."""
    try:
        window.setStyleSheet(STYLESHEET.read_text(encoding="utf-8"))
    except OSError:
        pass  # an installation without the stylesheet still works, just plainer
