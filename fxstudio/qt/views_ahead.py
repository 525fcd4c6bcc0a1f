"""What the views compute when a graph arrives, computed ahead in the worker that made the graph.

Opening a model and installing a pass end on the GUI thread, where the canvas lays the graph out,
the code view generates its text and the change list diffs it against the original: 0.3-0.8 s of
one turn on a 3,000-node model (issue #25). The worker that loaded the model (or ran and staged the
pass) holds the graph alone until it hands it over, so it computes these too (``prepare``) and
*offers* them here, keyed by the graph and the document's ``serial``. A view that would compute one
``take``s it instead; an offer for another state of the graph (a later edit, another collapse of
the canvas) is never returned. Offers die with their graph, and only the newest graph's are kept.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, replace
from typing import Any

_offers: "weakref.WeakKeyDictionary[Any, dict[str, tuple]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


@dataclass(frozen=True)
class CanvasSettings:
    """What the canvas's layout depends on besides the graph (read on the GUI thread)."""

    collapsed: frozenset = frozenset()
    fold_weights: bool = True
    merged: tuple = ()
    previous: Any = None   # the layout shown now, whose positions a relayout keeps

    @property
    def key(self) -> tuple:
        """What must match for a layout computed with these settings to be the canvas's."""
        return (self.collapsed, self.fold_weights, self.merged)


def canvas_settings(canvas, *, keep_positions: bool = True) -> CanvasSettings:
    """The settings ``canvas`` (a ``GraphCanvas``) lays its graph out with now."""
    return CanvasSettings(frozenset(canvas.collapsed), bool(canvas.fold_weights),
                          tuple(sorted(canvas.repeats.merged.items())),
                          canvas.canvas_scene.layout if keep_positions else None)


def offer(graph, kind: str, key, serial: int, value) -> None:
    """Offer ``value`` (a layout, a code generation, a diff) of ``graph`` at document ``serial``."""
    with _lock:
        for other in [g for g in _offers.keys() if g is not graph]:
            del _offers[other]   # one graph's offers at a time: an untaken layout is not kept alive
        _offers.setdefault(graph, {})[kind] = (key, serial, value)


def take(graph, kind: str, key, serial: int):
    """The offered ``kind`` of ``graph`` for ``key`` at ``serial`` (removed: it is taken once), or None."""
    with _lock:
        found = _offers.get(graph, {}).pop(kind, None)
    if found is None or found[0] != key or found[1] != serial:
        return None
    return found[2]


def prepare(doc, settings: CanvasSettings | None, *, diff: bool = False, opening: bool = False, staged=None,
            followers=()) -> None:
    """In the worker that holds ``doc``'s graph: the canvas's layout (with ``settings``), the code
    view's generation and, with ``diff``, the change list's diff against the original; ``opening``:
    the modules a large graph opens folded (the layout's ``collapsed``) and the input the opening
    view starts at too. ``settings.previous``: a layout of the same graph
    already drawn (a ``.pt2``'s structure), reused when nothing differs. ``staged``:
    the graph is this staged edit's (``Document.stage_edit``), for the state its commit makes;
    each of ``followers`` is then called with ``(doc, ids, serial)``, the node ids it touched
    (``GraphDiffView.update_ahead``). The lint verdict, code and diff of a graph over ``FOLD_ABOVE``
    nodes are left to the views' own workers (``aside.py``): the graph is drawn without them."""
    from fxstudio.core.code_text import IncrementalCode
    from fxstudio.core.layout import FOLD_ABOVE, compute_layout

    graph, serial = doc.edited.graph, doc.serial + (1 if staged is not None else 0)
    touched = None
    if staged is not None:
        changes = staged.tx.changes
        ids = set(changes.added) | set(changes.removed) | set(changes.changed)
        for follow in followers:
            follow(doc, ids, serial)
        # what the canvas's redraw passes as ``changed`` (``GraphCanvas._redraw``)
        touched = [n for n in map(doc.node, set(changes.added) | set(changes.changed)) if n is not None]
    if settings is not None and opening:   # a large graph opens with its modules folded (large_fold.py)
        from fxstudio.core.layout import opening_collapsed

        folded = opening_collapsed(graph)
        offer(graph, "opening_collapsed", None, serial, folded)
        settings = replace(settings, collapsed=folded)
    if settings is not None:
        layout = compute_layout(graph, collapsed=settings.collapsed, previous=settings.previous, changed=touched,
                                fold_weights=settings.fold_weights, merged=dict(settings.merged))
        offer(graph, "layout", settings.key, serial, layout)
    large = len(graph.nodes) > FOLD_ABOVE   # its verdict, code and diff come later, from the views' workers (``aside.py``)
    if opening and not large:
        offer(graph, "verdict", None, serial, doc.verdict())   # the Problems list's first row
    if opening:   # the opening view starts at this input
        from fxstudio.core.layout import feeding_input

        offer(graph, "feeding_input", None, serial, (feeding_input(graph),))
    if not large:
        code = IncrementalCode()
        code.full(graph)
        offer(graph, "code", None, serial, code)
    if diff and not large:
        from fxstudio.core.compare import GraphDiffer

        differ = GraphDiffer(doc.original)
        offer(graph, "diff", None, serial, (differ, differ.diff(doc.edited)))
