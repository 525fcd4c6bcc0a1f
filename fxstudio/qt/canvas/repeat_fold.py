"""View ▸ Fold Repeated Blocks: the canvas side of ``fxstudio.core.layout.repeats``.

Folding collapses every block of each run of identical blocks but the first, draws the collapsed
ones as one card ("m.h.1 … m.h.5 · ×5 identical GPT2Block") and labels the first block's frame
"×6 identical". Expanding the card (its toggle, a double click) unfolds that run; the View action
unfolds them all. The folded blocks are ordinary collapsed groups, so edits, undo and rewiring work
as with any collapsed module (docs/notes/repeated_blocks.md).
"""

from __future__ import annotations

from fxstudio.core.layout import RepeatFold, label_folds, repeat_folds


class RepeatFolding:
    """The canvas's folded runs (``fold``; None when nothing is folded)."""

    def __init__(self):
        self.fold: RepeatFold | None = None
        self.unfolded_all = None   # called when the last folded run is unfolded from the canvas


    def reset(self) -> None:
        """Forget the fold (a new document)."""
        self.fold = None

    @property
    def merged(self) -> dict[str, str]:
        """What ``compute_layout(merged=...)`` needs: folded blocks drawn on their run's card."""
        return self.fold.merged if self.fold is not None else {}

    def label(self, layout) -> None:
        """Write the fold's labels on a fresh layout."""
        if self.fold is not None and self.fold.runs:
            label_folds(layout, self.fold)

    def runs(self):
        """The folded runs (empty when unfolded)."""
        return list(self.fold.runs) if self.fold is not None else []

    def unfold(self, canvas, path: str) -> bool:
        """Unfold the run whose card is ``path`` (True), or do nothing (False: not a folded card)."""
        run = self.fold.run_of(path) if self.fold is not None else None
        if run is None or path == run.first:
            return False
        runs = [r for r in self.fold.runs if r is not run]
        canvas.collapsed -= set(run.paths[1:])
        self.fold = repeat_folds(None, runs) if runs else None
        canvas.flush()
        canvas._relayout(previous=None)
        if self.fold is None and self.unfolded_all is not None:
            self.unfolded_all()
        return True


def set_fold_repeats(canvas, on: bool) -> int:
    """Fold (True) or unfold (False) every run of identical blocks on ``canvas``; returns the number
    of runs folded."""
    canvas.flush()
    rep = canvas.repeats
    if rep.fold is not None:
        canvas.collapsed -= set(rep.fold.collapsed)
        rep.fold = None
    if on and canvas.document is not None:
        fold = repeat_folds(canvas.document.edited.graph)
        if fold.runs:
            # A block folded into a run replaces any collapsed state inside it.
            canvas.collapsed = {p for p in canvas.collapsed
                                if not any(p == q or p.startswith(q + ".") for q in fold.collapsed)}
            canvas.collapsed |= set(fold.collapsed)
            rep.fold = fold
    if canvas.document is not None:
        canvas._relayout(previous=None)
    return len(rep.fold.runs) if rep.fold is not None else 0


def identical_layers_text(canvas, path: str) -> str:
    """The identical layers of the run ``path`` belongs to, one per line ('' when none): what the
    frame's tooltip lists."""
    from fxstudio.core.layout import repeat_runs

    if canvas.document is None:
        return ""
    for run in repeat_runs(canvas.document.edited.graph):
        if path in run.paths:
            lines = [f"Identical layers ({len(run.paths)}):"] + [f"  {p} · {run.cls}" if run.cls else f"  {p}" for p in run.paths]
            return "\n".join(lines)
    return ""
