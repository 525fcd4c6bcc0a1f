"""Opening and folding modules of a large graph: the canvas side of ``core/layout/opening_fold.py``.

A graph over ``FOLD_ABOVE`` nodes opens with its modules folded (the worker that loaded it chose
the fold and laid it out: ``views_ahead.prepare``). Opening or folding a module of such a graph
lays it out again in a worker, never on the GUI thread: the status bar says what is being laid
out, the canvas stays where it is meanwhile, and a second toggle before the first is drawn is
refused with a line that says so. In smaller graphs a toggle lays out at once, as before.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF

from fxstudio.qt import views_ahead
from fxstudio.qt.aside import Aside, large_graph

BUSY_HINT = "Still laying out {what}: one moment"


def opening_collapsed(canvas, doc) -> set[str]:
    """The groups ``doc``'s graph opens folded: what its loading worker chose, else chosen here."""
    from fxstudio.core.layout import opening_collapsed as choose

    graph = doc.edited.graph
    offered = views_ahead.take(graph, "opening_collapsed", None, doc.serial)
    return set(offered if offered is not None else choose(graph))


class FoldToggles:
    """Collapse or expand a module group of the canvas's graph, keeping its corner on screen."""

    def __init__(self, canvas):
        self.canvas = canvas
        self.aside = Aside(canvas, "layout")   # the worker laying out a large graph's toggle
        self.shown = ""   # the module it lays out

    @property
    def busy(self) -> bool:
        """A large graph's toggle is being laid out."""
        return self.aside.busy

    def toggle(self, path: str) -> None:
        """Collapse ``path``, or expand it (in a large graph, with its contents folded as the
        budget asks)."""
        canvas = self.canvas
        canvas.flush()
        if canvas.repeats.unfold(canvas, path):
            return
        doc = canvas.document
        if doc is None:
            return
        if self.busy:
            canvas.status_hint.emit(BUSY_HINT.format(what=self.shown))
            return
        anchor = self._anchor(path)
        opening = path in canvas.collapsed
        if not large_graph(doc.edited.graph):
            canvas.collapsed = set(_toggled(doc.edited.graph, canvas.collapsed, path, opening))
            self._draw(path, anchor)
            return
        self._start(doc, path, opening, anchor)

    def _anchor(self, path: str):
        before = _group_corner(self.canvas, path)
        return self.canvas.mapFromScene(before) if before is not None else None

    def _draw(self, path: str, anchor) -> None:
        # A fresh layout (not ``previous=``): folding changes the shape of the whole column, and
        # pinning the old positions leaves zig-zag edges through the gap. The user's place is
        # kept by the anchor instead.
        canvas = self.canvas
        canvas._relayout(previous=None)
        after = _group_corner(canvas, path)
        if anchor is not None and after is not None:
            centre = QPointF(canvas.viewport().rect().center())
            canvas.centerOn(after + (centre - QPointF(anchor)) / canvas.zoom())

    def _start(self, doc, path: str, opening: bool, anchor) -> None:
        canvas = self.canvas
        graph, before = doc.edited.graph, frozenset(canvas.collapsed)
        settings = views_ahead.canvas_settings(canvas, keep_positions=False)

        def work():
            from fxstudio.core.layout import compute_layout

            collapsed = _toggled(graph, before, path, opening)
            layout = compute_layout(graph, collapsed=collapsed, fold_weights=settings.fold_weights,
                                    merged=dict(settings.merged))
            return collapsed, layout

        def deliver(result, current: bool) -> None:
            if canvas.document is not doc:
                return
            if not current or frozenset(canvas.collapsed) != before:
                canvas.status_hint.emit(f"{path} was not toggled: the graph changed while it was laid out")
                return
            collapsed, layout = result
            canvas.collapsed = set(collapsed)
            views_ahead.offer(graph, "layout", views_ahead.canvas_settings(canvas).key, doc.serial, layout)
            self._draw(path, anchor)
            canvas.status_hint.emit(f"Laid out {path}: {len(layout.nodes) + len(layout.groups):,} cards and frames")

        self.shown = path
        canvas.status_hint.emit(f"Laying out {path}…")
        self.aside.start(doc, work, deliver)

    def cancel(self) -> None:
        """Drop a pending toggle (another document is shown)."""
        self.aside.cancel()


def _toggled(graph, collapsed, path: str, opening: bool) -> frozenset[str]:
    """``collapsed`` after ``path`` is opened (``opening``; in a large graph its contents folded as
    the budget asks) or folded (its inner folds forgotten)."""
    if opening:
        from fxstudio.core.layout import opened_collapsed

        return opened_collapsed(graph, collapsed, path)
    return frozenset(p for p in collapsed if not p.startswith(path + ".")) | {path}


def _group_corner(canvas, path: str) -> QPointF | None:
    layout = canvas.canvas_scene.layout
    g = layout.groups.get(path) if layout else None
    return QPointF(g.x, g.y) if g is not None else None


class EditLayouts:
    """A large folded graph's relayout after an edit, in a worker (issue #28).

    Local relayout (``core/layout/local_relayout.py``) does not place cards among folded modules,
    so an edit there lays out the whole folded graph: 0.2 s with 3,400 folded blocks, 6 s with
    47,000. The scene shows the graph as it was until the new layout arrives; edits meanwhile are
    laid out together (their cards all refreshed)."""

    def __init__(self, canvas):
        self.canvas = canvas
        self.aside = Aside(canvas, "layout")
        self._waiting: tuple | None = None   # (refresh, changed, nodes) of the edits not drawn yet

    def wanted(self, previous) -> bool:
        """Whether an edit's relayout (``previous`` the layout shown) goes to a worker."""
        canvas = self.canvas
        return previous is not None and bool(canvas.collapsed) and large_graph(canvas.document.edited.graph)

    def start(self, previous, refresh: set[str] | None, changed: list | None, nodes: dict | None) -> None:
        """Lay the edited graph out in a worker; then draw it as ``canvas._relayout`` would have."""
        canvas = self.canvas
        if self.aside.busy and self._waiting is not None:
            before = self._waiting
            refresh = None if refresh is None or before[0] is None else set(refresh) | before[0]
            changed = [*(before[1] or []), *(changed or [])]
            nodes = {**(before[2] or {}), **(nodes or {})}
        self._waiting = (refresh, changed, nodes)
        doc = canvas.document
        graph = doc.edited.graph
        settings = views_ahead.canvas_settings(canvas, keep_positions=False)

        def work():
            from fxstudio.core.layout import compute_layout

            return compute_layout(graph, collapsed=settings.collapsed, previous=previous, changed=changed,
                                  fold_weights=settings.fold_weights, merged=dict(settings.merged))

        def deliver(layout, current: bool) -> None:
            waiting, self._waiting = self._waiting, None
            if canvas.document is not doc or waiting is None:
                return
            if not current:   # the graph changed with no relayout of its own (a constant): again
                self.start(previous, *waiting)
                return
            key = views_ahead.canvas_settings(canvas).key
            if key != settings.key:
                return   # a module was opened or folded meanwhile: that redraw drew everything
            views_ahead.offer(graph, "layout", key, doc.serial, layout)
            canvas._relayout(previous, *waiting)

        self.aside.start(doc, work, deliver)

    def cancel(self) -> None:
        """Drop a pending relayout (another document)."""
        self.aside.cancel()
        self._waiting = None
