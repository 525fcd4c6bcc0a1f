"""Folding repeated blocks: a run of identical sibling modules (GPT-2's ``h.0`` … ``h.11``, a ResNet
stage's ``BasicBlock``\\s) drawn as its first block, expanded, and one card for all the others.

``repeat_folds(graph)`` finds the runs (``repeated_groups``) and says what the layout must do:
collapse every block but the first (``collapsed``) and draw the collapsed ones as one card
(``merged``: each block after the second maps to the second, whose card stands for them all).
``label_folds`` writes the labels onto a finished layout: the representative frame says
"×12 identical", the card names the range. Unfolding is dropping the fold (docs/notes/repeated_blocks.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxstudio.core.layout.groups import class_names, repeated_groups
from fxstudio.core.layout.types import Layout
from fxstudio.core.node_text import META_MODULE_PATH, META_MODULE_STACK


@dataclass(frozen=True)
class RepeatRun:
    """One run of identical sibling blocks, in graph order; ``cls`` their class name ('' unknown)."""

    paths: tuple[str, ...]
    cls: str = ""

    @property
    def first(self) -> str:
        """The representative, drawn expanded."""
        return self.paths[0]

    @property
    def card(self) -> str:
        """The path whose collapsed card stands for all blocks but the first."""
        return self.paths[1]

    def card_label(self) -> str:
        """``h.1 … h.11 · ×11 identical GPT2Block``: the folded card's label (range · detail)."""
        rest = self.paths[1:]
        span = rest[0] if len(rest) == 1 else f"{rest[0]} … {rest[-1]}"
        what = f"identical {self.cls}" if self.cls else "identical blocks"
        return f"{span} · ×{len(rest)} {what} (as {self.first})"

    def frame_label(self, base: str) -> str:
        """The representative frame's label ``base`` with the run's count."""
        return f"{base}  ×{len(self.paths)} identical ({self.paths[0]} … {self.paths[-1]})"


@dataclass
class RepeatFold:
    """What folding every run asks of the layout: groups to collapse, groups drawn on another's card."""

    runs: list[RepeatRun] = field(default_factory=list)
    collapsed: frozenset = frozenset()
    merged: dict[str, str] = field(default_factory=dict)

    def run_of(self, path: str) -> RepeatRun | None:
        """The run ``path`` belongs to (as any of its blocks), or None."""
        for run in self.runs:
            if path in run.paths:
                return run
        return None


def repeat_runs(graph) -> list[RepeatRun]:
    """Every run of identical consecutive sibling blocks (two or more), outermost only, in graph order."""
    stacks, paths = [], []
    for node in graph.nodes:
        stacks.append(node.meta.get(META_MODULE_STACK) or [])
        paths.append(node.meta.get(META_MODULE_PATH) or "")
    classes = class_names(stacks, paths)
    runs = []
    for group in repeated_groups(graph):
        for run in _consecutive(group):
            if len(run) > 1:
                runs.append(RepeatRun(tuple(run), classes.get(run[0], "")))
    return runs


def _consecutive(paths: list[str]) -> list[list[str]]:
    """``paths`` (siblings in graph order) split where a numbering (``h.3``, ``h.5``) skips a block."""
    out: list[list[str]] = []
    prev = None
    for p in paths:
        tail = p.rsplit(".", 1)[-1]
        index = int(tail) if tail.isdigit() else None
        if out and not (index is not None and prev is not None and index != prev + 1):
            out[-1].append(p)
        else:
            out.append([p])
        prev = index
    return out


def repeat_folds(graph, runs: list[RepeatRun] | None = None) -> RepeatFold:
    """The fold of every run of ``graph`` (or of ``runs``): all blocks but the first collapsed, the
    third and later drawn on the second's card."""
    runs = repeat_runs(graph) if runs is None else runs
    collapsed: set[str] = set()
    merged: dict[str, str] = {}
    for run in runs:
        collapsed.update(run.paths[1:])
        for p in run.paths[2:]:
            merged[p] = run.card
    return RepeatFold(runs=runs, collapsed=frozenset(collapsed), merged=merged)


def label_folds(layout: Layout, fold: RepeatFold) -> None:
    """Write the fold's labels on ``layout``'s frames and cards (new ``GroupBox`` objects: a
    layout may share its boxes with an earlier one)."""
    from dataclasses import replace

    for run in fold.runs:
        card = layout.groups.get(run.card)
        if card is not None and card.collapsed:
            layout.groups[run.card] = replace(card, label=run.card_label())
        frame = layout.groups.get(run.first)
        if frame is not None and not frame.collapsed:
            layout.groups[run.first] = replace(frame, label=run.frame_label(frame.label))
