"""The layout the list docks share: a bar (a stretching first widget, then buttons or counts) above
the list itself, with no outer margins."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QVBoxLayout, QWidget


def bar_over(pane: QWidget, bar: list[QWidget], body: QWidget, bar_margins: tuple[int, int, int, int]) -> None:
    """Lay ``pane`` out as ``bar`` (its first widget takes the spare width; margins ``bar_margins``)
    above ``body``."""
    top = QHBoxLayout()
    top.setContentsMargins(*bar_margins)
    top.addWidget(bar[0], 1)
    for widget in bar[1:]:
        top.addWidget(widget)
    layout = QVBoxLayout(pane)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addLayout(top)
    layout.addWidget(body)
