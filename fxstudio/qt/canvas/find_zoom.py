"""Where Find leaves the view: on the match, at a zoom where its card can be read.

Going to a match used to centre the view on it and keep the zoom, so after Fit All on a graph of
thousands of nodes the match was a speck. Now, when the view is too far out for a card's name to
be read (a title line under ``MIN_TITLE_PX`` on screen, as at the least zoom the opening view
uses), going to a match zooms to ``FIND_ZOOM`` centred on it, where titles are some 15 px and
every line of the card is drawn; a view close enough to read is never zoomed out.
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from fxstudio.qt.canvas import style as st

MIN_TITLE_PX = 9.0    # a card's name, as tall as this on screen at least
FIND_ZOOM = 1.0       # where Find zooms in to: the cards at their own size


@lru_cache(maxsize=1)
def readable_zoom() -> float:
    """The least zoom at which a card's title is readable."""
    return MIN_TITLE_PX / max(QFontMetricsF(st.font("title")).height(), 1.0)


def is_readable(zoom: float) -> bool:
    """Whether cards can be read at ``zoom`` (a tolerance for the zoom steps' rounding)."""
    return zoom >= readable_zoom() - 1e-6


def show_readable(canvas, rect: QRectF) -> None:
    """Centre ``canvas`` (a ``GraphCanvas``) on scene rectangle ``rect``, first zooming in to
    ``FIND_ZOOM`` (or the readable zoom, if that is more) when the view is too far out to read it."""
    if not is_readable(canvas.zoom()):
        canvas.fresh_view = False
        canvas._set_zoom(max(FIND_ZOOM, readable_zoom()))
        canvas.centerOn(rect.center())
        canvas._sync_lod()
        canvas.zoom_changed.emit(canvas.zoom())
    else:
        canvas.centerOn(rect.center())
