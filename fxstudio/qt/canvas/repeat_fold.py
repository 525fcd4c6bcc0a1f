"""View ▸ Fold Repeated Blocks: the canvas side of ``fxstudio.core.layout.repeats``.

Folding collapses every block of each run of identical blocks but the first, draws each span of
consecutive folded blocks as one card ("m.h.1 … m.h.5 · ×5 identical GPT2Block") and labels the
first block's frame "×6 identical". A block that differs is never folded: one holding a node an
edit added or changed (the document's original against its edited graph), or a node the last run
tinted (the canvas's divergence scores). Such a block is drawn expanded, its frame labelled
"m.h.3 · GPT2Block · edited", and splits the folded blocks around it into two cards. The fold
follows the document: an edit, undo, redo or a new run that changes which blocks differ folds anew
(``refresh``).

Expanding a card (its toggle, a double click) unfolds that span; so does selecting a node folded
away inside it, from anywhere (``reveal``: the Run pane, Find, Problems, the code view, the
Table). The View action unfolds them all. The folded blocks are ordinary collapsed groups, so edits, undo and
rewiring work as with any collapsed module (docs/notes/repeated_blocks.md).
"""

from __future__ import annotations

from fxstudio.core.layout import RepeatFold, differing_blocks, label_folds, repeat_folds, repeat_runs

EDITED, DIVERGED, CLOSE = "edited", "diverged", "within tolerance"
"""Why a block is not folded, as its frame label says: an edit, or the last run's divergence."""


class RepeatFolding:
    """The canvas's folded runs: ``on`` while View ▸ Fold Repeated Blocks is checked, ``fold`` the
    runs folded now (None when unfolded), ``opened`` the blocks the user unfolded since."""

    def __init__(self):
        self.fold: RepeatFold | None = None
        self.on = False
        self.opened: set[str] = set()
        self.unfolded_all = None   # called when the last folded run is unfolded from the canvas
        self._differ = None   # (document, GraphDiffer of its original)
        self._original_runs = None   # (document, repeat_runs of its original graph)

    def reset(self) -> None:
        """Forget the fold (a new document); the View action is told it is off."""
        was_on = self.on
        self.fold, self.on, self.opened, self._differ, self._original_runs = None, False, set(), None, None
        if was_on and self.unfolded_all is not None:
            self.unfolded_all()

    @property
    def merged(self) -> dict[str, str]:
        """What ``compute_layout(merged=...)`` needs: folded blocks drawn on their span's card."""
        return self.fold.merged if self.fold is not None else {}

    def label(self, layout) -> None:
        """Write the fold's labels on a fresh layout."""
        if self.fold is not None and self.fold.runs:
            label_folds(layout, self.fold)

    def runs(self):
        """The folded runs (empty when unfolded)."""
        return list(self.fold.runs) if self.fold is not None else []

    # -- what differs ---------------------------------------------------------------------------
    def differing_nodes(self, canvas, events: list | None = None) -> dict:
        """Node → why its block must not be folded: added or changed by an edit (``EDITED``), or
        tinted by the last run (``DIVERGED`` beyond tolerance, ``CLOSE`` within it). ``events``:
        the document events since the last call, when every one since was given (the diff then
        re-examines only their nodes); None: a full diff."""
        doc = canvas.document
        out: dict = {}
        if not doc.can_undo:   # nothing applied: the graph is the original
            self._differ = None
        else:
            from fxstudio.core.compare import GraphDiffer

            if self._differ is None or self._differ[0] is not doc:
                self._differ, events = (doc, GraphDiffer(doc.original)), None
            if events is not None and all(e.kind in ("edited", "undone", "redone") for e in events):
                ids = set().union(*(set(e.added) | set(e.removed) | set(e.changed) for e in events))
                diff = self._differ[1].update(doc.edited, ids, doc.node)
            else:
                diff = self._differ[1].diff(doc.edited)
            for node_id in diff.changed | diff.added:
                node = doc.node(node_id)
                if node is not None:
                    out[node] = EDITED
        for node_id, score in canvas.divergence().items():
            node = doc.node(node_id) if score else None
            if node is not None:
                out.setdefault(node, DIVERGED if not score <= 1 else CLOSE)
        return out

    def compute(self, canvas, events: list | None = None) -> RepeatFold:
        """The fold of the canvas's document as it is now (what differs and what was opened kept out).

        An edit that changes a block's structure takes it out of its run; the runs inside it (its
        two LayerNorms) would then be outermost and fold: a block an edit touched is drawn as it
        is, so they are left out."""
        doc = canvas.document
        graph = doc.edited.graph
        runs = repeat_runs(graph)
        if not runs:
            self._differ = None   # it skips these events: a full diff next time
            return RepeatFold()
        nodes = self.differing_nodes(canvas, events)
        edited = {node: why for node, why in nodes.items() if why == EDITED}
        if edited:
            if self._original_runs is None or self._original_runs[0] is not doc:
                self._original_runs = (doc, repeat_runs(doc.original.graph))
            touched = differing_blocks(self._original_runs[1], edited)
            runs = [r for r in runs if not any(r.paths[0].startswith(b + ".") for b in touched)]
        return repeat_folds(graph, runs, differs=differing_blocks(runs, nodes), opened=self.opened)

    def _apply(self, canvas, fold: RepeatFold) -> None:
        """Make ``fold`` the canvas's: its blocks collapsed, the previous fold's expanded again."""
        if self.fold is not None:
            canvas.collapsed -= set(self.fold.collapsed)
        # A block folded into a run replaces any collapsed state inside it.
        canvas.collapsed = {p for p in canvas.collapsed
                            if not any(p == q or p.startswith(q + ".") for q in fold.collapsed)}
        canvas.collapsed |= set(fold.collapsed)
        self.fold = fold if fold.runs else None

    def refresh(self, canvas, events: list | None = None) -> bool:
        """While folding is on, fold again by what differs now; True when the fold changed (the
        caller then lays the graph out anew). ``events``: the document events being drawn."""
        if not self.on or canvas.document is None:
            self._differ = None   # it misses these events: a full diff next time
            return False
        fold = self.compute(canvas, events)
        if fold.runs == (self.fold.runs if self.fold is not None else []):
            return False
        self._apply(canvas, fold)
        return True

    def follow(self, canvas) -> None:
        """Something besides the graph changed what differs (a run's divergence): fold anew and
        redraw if that changes the fold."""
        if self.on and canvas.document is not None:
            canvas.flush()
            if self.refresh(canvas):
                self.redraw(canvas)

    def redraw(self, canvas, start_if_lost: bool = False) -> None:
        """Lay the canvas out anew after the fold changed, keeping the selected node in view
        (``start_if_lost``: else the opening view, as the graph's shape changed under the view)."""
        canvas._relayout(previous=None)
        current = canvas.selection.current()
        if not (current is not None and canvas.center_on_node(current)) and start_if_lost:
            canvas.show_start()

    # -- unfolding ------------------------------------------------------------------------------
    def unfold(self, canvas, path: str) -> bool:
        """Unfold the span whose card is ``path`` (True), or do nothing (False: not a folded card)."""
        run = self.fold.run_of(path) if self.fold is not None else None
        span = run.span_of(path) if run is not None else None
        if span is None:
            return False
        self._open(canvas, span)
        return True

    def reveal(self, canvas, node_id: int | None) -> bool:
        """Unfold the span hiding node ``node_id`` (True), so that its card can be shown and
        scrolled to; False when the node is not folded away."""
        doc = canvas.document
        if self.fold is None or not self.fold.collapsed or node_id is None or doc is None:
            return False
        node = doc.node(node_id)
        block = self.fold.folded_block(doc.module_path_of(node)) if node is not None else None
        run = self.fold.run_of(block) if block is not None else None
        span = run.span_of(block) if run is not None else None
        if span is None:
            return False
        self._open(canvas, span)
        return True

    def _open(self, canvas, span: tuple[str, ...]) -> None:
        self.opened |= set(span)
        canvas.flush()
        self._apply(canvas, self.compute(canvas))
        if self.fold is None:   # nothing folded any more: as if the View action were unchecked
            self.on, self.opened = False, set()
        canvas._relayout(previous=None)
        if not self.on and self.unfolded_all is not None:
            self.unfolded_all()


def set_fold_repeats(canvas, on: bool) -> int:
    """Fold (True) or unfold (False) every run of identical blocks on ``canvas``; returns the number
    of runs folded."""
    canvas.flush()
    rep = canvas.repeats
    if rep.fold is not None:
        canvas.collapsed -= set(rep.fold.collapsed)
    rep.fold, rep.opened = None, set()
    rep.on = bool(on) and canvas.document is not None
    if rep.on:
        rep._apply(canvas, rep.compute(canvas))
    if canvas.document is not None:
        rep.redraw(canvas, start_if_lost=True)
    return len(rep.fold.runs) if rep.fold is not None else 0


def identical_layers_text(canvas, path: str) -> str:
    """The identical layers of the run ``path`` belongs to, one per line ('' when none): what the
    frame's tooltip lists."""
    if canvas.document is None:
        return ""
    for run in repeat_runs(canvas.document.edited.graph):
        if path in run.paths:
            lines = [f"Identical layers ({len(run.paths)}):"] + [f"  {p} · {run.cls}" if run.cls else f"  {p}" for p in run.paths]
            return "\n".join(lines)
    return ""
