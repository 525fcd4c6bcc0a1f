"""The selection shared by every view: stable node ids, with a signal when it changes."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class SelectionModel(QObject):
    """Which nodes are selected (by stable id); canvas, panels and run pane all follow it."""

    changed = Signal(list)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._ids: list[int] = []

    def ids(self) -> list[int]:
        """The selected node ids, first selected first."""
        return list(self._ids)

    def current(self) -> int | None:
        """The node the property panel shows: the last selected one, or None."""
        return self._ids[-1] if self._ids else None

    def set(self, ids: list[int]) -> None:
        """Replace the selection; emits ``changed`` only when it differs."""
        ids = list(dict.fromkeys(ids))
        if ids != self._ids:
            self._ids = ids
            self.changed.emit(list(ids))

    def clear(self) -> None:
        """Select nothing."""
        self.set([])
