"""Coalesced, debounced, visibility-aware refresh for dock views.

A burst of document events (``go_to`` across twenty commands, a replayed script) triggers one
redraw on the next event-loop turn, and a view hidden behind another tab redraws only when shown:
on a 10k-node graph the code and table views cost tens of milliseconds each, which an edit must not
pay while they are out of sight.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QDockWidget, QWidget


class LazyRefresh(QObject):
    """Calls ``refresh`` once per event-loop turn at most, and only while ``widget`` is visible."""

    def __init__(self, widget: QWidget, refresh: Callable[[], None], delay_ms: int = 0):
        """``delay_ms``: wait this long after the last request (a burst of edits costs one redraw)."""
        super().__init__(widget)
        self._widget = widget
        self._refresh = refresh
        self._stale = False
        self._dock: QDockWidget | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(delay_ms)
        self._timer.timeout.connect(self._run)
        widget.installEventFilter(self)

    def shown(self) -> bool:
        """True when the widget is on screen: not hidden, and not a dock tabbed behind another."""
        return self._widget.isVisible() and not self._widget.visibleRegion().isEmpty()

    def request(self, delay_ms: int | None = None) -> None:
        """Ask for a redraw: soon if on screen, else when next shown.

        ``delay_ms`` (when given) becomes the wait from now on: a view can wait long for an
        expensive redraw and not at all for a cheap one.
        """
        self._stale = True
        if delay_ms is not None:
            self._timer.setInterval(delay_ms)
        self._watch_dock()
        if self.shown():
            self._timer.start()

    def _watch_dock(self) -> None:
        # A dock tabbed behind another stays "visible" to Qt; its visibilityChanged says when it comes forward.
        if self._dock is not None:
            return
        parent = self._widget.parentWidget()
        while parent is not None and not isinstance(parent, QDockWidget):
            parent = parent.parentWidget()
        if parent is not None:
            self._dock = parent
            parent.visibilityChanged.connect(lambda on: on and self._stale and self._timer.start())

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
        if obj is self._widget and self._stale and event.type() in (QEvent.Type.Show, QEvent.Type.Paint):
            if not self._timer.isActive():
                self._timer.start()
        return False

    def _run(self) -> None:
        self._timer.stop()
        if not self.shown():
            return  # hidden since the request: stay stale until shown
        self._stale = False
        self._refresh()
