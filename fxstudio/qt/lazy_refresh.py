"""Coalesced, debounced, visibility-aware refresh for dock views.

A burst of document events (``go_to`` across twenty commands, a replayed script) triggers one
redraw on the next event-loop turn, and a view hidden behind another tab redraws only when shown:
on a 10k-node graph the code and table views cost tens of milliseconds each, which an edit must not
pay while they are out of sight.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget


class LazyRefresh(QObject):
    """Calls ``refresh`` once per event-loop turn at most, and only while ``widget`` is visible."""

    def __init__(self, widget: QWidget, refresh: Callable[[], None], delay_ms: int = 0):
        """``delay_ms``: wait this long after the last request (a burst of edits costs one redraw)."""
        super().__init__(widget)
        self._widget = widget
        self._refresh = refresh
        self._stale = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(delay_ms)
        self._timer.timeout.connect(self._run)
        widget.installEventFilter(self)

    def request(self) -> None:
        """Ask for a redraw: soon if visible, else when next shown."""
        self._stale = True
        if self._widget.isVisible():
            self._timer.start()

    def flush(self) -> None:
        """Redraw now if a redraw is pending, visible or not (set-up, tests and screenshots)."""
        if self._stale:
            self._timer.stop()
            self._stale = False
            self._refresh()

    @property
    def pending(self) -> bool:
        """True while a redraw is owed."""
        return self._stale

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt override)
        if obj is self._widget and event.type() == QEvent.Type.Show and self._stale:
            self._timer.start()
        return False

    def _run(self) -> None:
        self._timer.stop()
        if not self._widget.isVisible():
            return  # hidden since the request: stay stale until shown
        self._stale = False
        self._refresh()
