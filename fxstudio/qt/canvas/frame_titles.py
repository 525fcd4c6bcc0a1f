"""Where module frames have their titles: a grid of rectangles to ask which ones meet a box
(edge labels keep off them). Thousands of frames take a few milliseconds to index."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from PySide6.QtCore import QRectF

CELL = 256.0  # scene units per grid cell


def _cells(rect: QRectF) -> Iterator[tuple[int, int]]:
    x0, x1 = int(rect.left() // CELL), int(rect.right() // CELL)
    y0, y1 = int(rect.top() // CELL), int(rect.bottom() // CELL)
    return ((x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1))


class TitleGrid:
    """Rectangles (frame title bands, scene coordinates) indexed by the grid cells they cover."""

    def __init__(self, rects: Iterable[QRectF]):
        self._cells: dict[tuple[int, int], list[QRectF]] = {}
        for rect in rects:
            for key in _cells(rect):
                self._cells.setdefault(key, []).append(rect)

    def meeting(self, rect: QRectF) -> list[QRectF]:
        """The rectangles that intersect ``rect``, each once."""
        found: dict[int, QRectF] = {}
        for key in _cells(rect):
            for band in self._cells.get(key, ()):
                if band.intersects(rect):
                    found[id(band)] = band
        return list(found.values())
