"""Rubber-band selection on the canvas: Shift+drag (or Ctrl+drag, which adds to the selection) on
empty space draws a rectangle; on release the cards it touches are selected. A plain drag on empty
space still pans (docs/notes/canvas.md, gestures)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtWidgets import QGraphicsView, QRubberBand


class SelectionBand:
    """One rubber-band gesture over ``view`` (a ``GraphCanvas``), started at viewport ``origin``."""

    def __init__(self, view: QGraphicsView, origin: QPoint, additive: bool):
        self.view = view
        self.origin = origin
        self.additive = additive
        self.band = QRubberBand(QRubberBand.Shape.Rectangle, view.viewport())
        self.band.setObjectName("canvasSelectionBand")
        self.band.setGeometry(QRect(origin, QSize()))
        self.band.show()

    def rect(self, pos: QPoint) -> QRect:
        """The viewport rectangle between the origin and ``pos``."""
        return QRect(self.origin, pos).normalized()

    def move(self, pos: QPoint) -> None:
        """Follow the cursor."""
        self.band.setGeometry(self.rect(pos))

    def ids_inside(self, pos: QPoint) -> list[int]:
        """Ids of the cards the band touches, in graph (card) order."""
        area = self.view.mapToScene(self.rect(pos)).boundingRect()
        if area.width() < 1 and area.height() < 1:
            return []
        return self.view.canvas_scene.ids_in(area)   # made cards or not

    def finish(self, pos: QPoint, current: list[int]) -> list[int]:
        """End the gesture: the new selection (the cards inside, added to ``current`` if additive)."""
        self.band.hide()
        self.band.deleteLater()
        inside = self.ids_inside(pos)
        return [*current, *(i for i in inside if i not in current)] if self.additive else inside

    def cancel(self) -> None:
        """Drop the band without selecting."""
        self.band.hide()
        self.band.deleteLater()
