"""Making the canvas items the view looks at, and dressing each new card as the view shows cards.

``realize_view(canvas)`` asks the scene for the items in the viewport at once (bounded by what a
screen holds) and for those in a margin around it a few milliseconds per event-loop turn, so
panning finds them made. ``decorate_card`` gives a card made late (scrolled into view, or looked up
by name) what the view gave the others: its selection outline, overlay tint and ring, search
marks and rewire feedback.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QTimer

from fxstudio.qt.canvas import style as st

MARGIN = 0.6         # of the viewport's size, on every side: made ahead of a pan
MARGIN_BUDGET_S = 0.012   # per event-loop turn for the margin (the GUI thread stays responsive)


def realize_view(canvas) -> None:
    """Make the items in ``canvas``'s viewport now, and those around it soon after."""
    scene = canvas.canvas_scene
    if scene.layout is None or _overview_zoom(canvas):
        return
    visible, wide = _view_and_margin(canvas)
    if scene.covers(visible):
        return
    scene.realize(visible, keep=wide)
    if not scene.covers(wide):
        _schedule(canvas)


def _schedule(canvas) -> None:
    timer = getattr(canvas, "_realize_timer", None)
    if timer is None:
        timer = canvas._realize_timer = QTimer(canvas)
        timer.setSingleShot(True)
        timer.setInterval(0)
        timer.timeout.connect(lambda: _margin_step(canvas))
    timer.start()


def _margin_step(canvas) -> None:
    """One turn's worth of the margin around the view (another turn follows until it is done)."""
    scene = canvas.canvas_scene
    if scene.layout is None or _overview_zoom(canvas):
        return
    visible, wide = _view_and_margin(canvas)
    if not scene.covers(visible):
        scene.realize(visible, keep=wide)
    if not scene.realize(wide, budget_s=MARGIN_BUDGET_S):
        _schedule(canvas)


def _view_and_margin(canvas) -> tuple[QRectF, QRectF]:
    """The scene rectangle in view, and it grown by ``MARGIN`` on every side."""
    visible = visible_rect(canvas)
    mx, my = visible.width() * MARGIN, visible.height() * MARGIN
    return visible, visible.adjusted(-mx, -my, mx, my)


def _overview_zoom(canvas) -> bool:
    """True when the view is zoomed out to the overview (whether or not the scene switched yet:
    a fit moves the view before it picks the level of detail)."""
    return canvas.canvas_scene.in_overview() or canvas.zoom() < st.LOD_PLAIN


def decorate_card(canvas, card) -> None:
    """Give a newly made ``card`` the view's current marks (the scene's ``card_made`` hook)."""
    ids = canvas.selected_ids
    nid = card.info.node_id
    card.selected = nid in ids
    rows = frozenset(r.node_id for r in card.info.rows if r.node_id in ids)
    if rows:
        card.row_selected = rows
        canvas._row_selected.append(card)
    canvas._overlay_cards((card,))
    matches = _as_set(canvas, "_match_cache", canvas._matches)
    if matches:
        current = canvas.current_match()
        name = card.info.name
        if name in matches:
            card.match = 2 if name == current else 1
        for r in card.info.rows:
            if r.name in matches:
                card.row_marks[r.node_id] = "current" if r.name == current else "match"
    if canvas._drag is not None:
        canvas._drag.decorate(card)


def _as_set(canvas, attr: str, values: list) -> set:
    """``set(values)``, remembered on ``canvas`` while ``values`` is the same list object."""
    cached = canvas.__dict__.get(attr)
    if cached is None or cached[0] is not values:
        cached = (values, set(values))
        setattr(canvas, attr, cached)
    return cached[1]


def visible_rect(canvas) -> QRectF:
    """The scene rectangle the viewport shows."""
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect()
