"""Folding repeated blocks: a run of identical sibling modules (GPT-2's ``h.0`` … ``h.11``, a ResNet
stage's ``BasicBlock``\\s) drawn as its first block, expanded, and cards for all the others.

``repeat_folds(graph)`` finds the runs (``repeated_groups``) and says what the layout must do:
collapse the folded blocks (``collapsed``) and draw each span of consecutive folded blocks as one
card (``merged``: each block of a span after its first maps to the first, whose card stands for
them all). A block that *differs* (``differs``: an edit, a divergence in the last run; a block of
another shape is not in the run at all) is never folded: it is drawn expanded and splits the
folded blocks around it into two spans, each labelled with its own count. So are blocks the user
unfolded (``opened``). ``label_folds`` writes the labels onto a finished layout: the representative
frame says "×12 identical", each card names its range. Unfolding is dropping the fold
(docs/notes/repeated_blocks.md).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from fxstudio.core.layout.groups import ancestors, class_names, repeated_groups
from fxstudio.core.layout.types import Layout
from fxstudio.core.node_text import META_MODULE_PATH, META_MODULE_STACK

_NAMED_DIFFERS = 3   # differing blocks a frame label names before it only counts them


@dataclass(frozen=True)
class RepeatRun:
    """One run of identical sibling blocks, in graph order; ``cls`` their class name ('' unknown).

    ``differs``: (block, reason) of the blocks drawn as they are because they differ from the
    others ("edited", "diverged"); ``opened``: blocks the user unfolded. Neither is folded."""

    paths: tuple[str, ...]
    cls: str = ""
    differs: tuple[tuple[str, str], ...] = ()
    opened: tuple[str, ...] = ()

    @property
    def differing(self) -> dict[str, str]:
        """Block → why it is not folded ("edited", "diverged")."""
        return dict(self.differs)

    @property
    def first(self) -> str:
        """The representative, drawn expanded: the first block that does not differ."""
        differing = self.differing
        return next((p for p in self.paths if p not in differing), self.paths[0])

    @property
    def spans(self) -> list[tuple[str, ...]]:
        """The folded blocks: the consecutive blocks after ``first`` that neither differ nor were
        opened, split where one does; each span is drawn as one card."""
        skip = self.differing.keys() | set(self.opened)
        out: list[tuple[str, ...]] = []
        current: list[str] = []
        for p in self.paths[self.paths.index(self.first) + 1:]:
            if p in skip:
                if current:
                    out.append(tuple(current))
                current = []
            else:
                current.append(p)
        if current:
            out.append(tuple(current))
        return out

    @property
    def cards(self) -> list[str]:
        """The path of each span's card (its first block)."""
        return [span[0] for span in self.spans]

    @property
    def card(self) -> str:
        """The path of the first span's card ('' when nothing is folded)."""
        spans = self.spans
        return spans[0][0] if spans else ""

    def span_of(self, path: str) -> tuple[str, ...] | None:
        """The folded span holding block ``path``, or None (not folded)."""
        return next((span for span in self.spans if path in span), None)

    def card_label(self, card: str | None = None) -> str:
        """``h.1 … h.11 · ×11 identical GPT2Block (as h.0)``: the label of the card of the span that
        starts at ``card`` (default: the first span), range · detail."""
        span = next((s for s in self.spans if card is None or s[0] == card), None) or (card or "",)
        rng = span[0] if len(span) == 1 else f"{span[0]} … {span[-1]}"
        what = f"identical {self.cls}" if self.cls else "identical blocks"
        return f"{rng} · ×{len(span)} {what} (as {self.first})"

    def frame_label(self, base: str) -> str:
        """The representative frame's label ``base`` with the run's count of identical blocks and
        the blocks that differ (named, or counted when there are many)."""
        differing = self.differing
        text = f"{base}  ×{len(self.paths) - len(differing)} identical ({self.paths[0]} … {self.paths[-1]}"
        if differing:
            names = list(differing)
            if len(names) <= _NAMED_DIFFERS:
                text += f"; {', '.join(names)} {'differs' if len(names) == 1 else 'differ'}"
            else:
                text += f"; {len(names)} differ"
        return text + ")"

    def differing_label(self, base: str, path: str) -> str:
        """The frame label of differing block ``path``: ``base`` and why it is not folded
        (``blocks.20 · Block · edited``: short, so that a block's narrow frame still shows it)."""
        return f"{base} · {self.differing[path]}"


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

    def folded_block(self, module_path: str) -> str | None:
        """The folded block holding module path ``module_path`` (a block or anything inside one),
        or None when what is there is drawn (not folded)."""
        if not self.collapsed or not module_path:
            return None
        return next((a for a in ancestors(module_path) if a in self.collapsed), None)


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


def differing_blocks(runs: Iterable[RepeatRun], nodes: Mapping[object, str]) -> dict[str, str]:
    """Block → reason for the blocks of ``runs`` holding a node of ``nodes`` (node → why it
    differs: "edited", "diverged"; the first reason met per block wins, so list edits first)."""
    blocks = {p for run in runs for p in run.paths}
    out: dict[str, str] = {}
    for node, reason in nodes.items():
        path = node.meta.get(META_MODULE_PATH) or ""
        block = next((a for a in ancestors(path) if a in blocks), None) if path else None
        if block is not None:
            out.setdefault(block, reason)
    return out


def repeat_folds(graph, runs: list[RepeatRun] | None = None, *, differs: Mapping[str, str] | None = None,
                 opened: Collection[str] = ()) -> RepeatFold:
    """The fold of every run of ``graph`` (or of ``runs``): every block but the first collapsed,
    each span of consecutive folded blocks drawn on its first block's card. ``differs`` (block →
    reason) and ``opened`` (blocks the user unfolded) are drawn expanded; a run with nothing
    left to fold is left out."""
    runs = repeat_runs(graph) if runs is None else runs
    differs = differs or {}
    opened = set(opened)
    collapsed: set[str] = set()
    merged: dict[str, str] = {}
    kept: list[RepeatRun] = []
    for run in runs:
        run = RepeatRun(run.paths, run.cls, tuple((p, differs[p]) for p in run.paths if p in differs),
                        tuple(p for p in run.paths if p in opened))
        spans = run.spans
        if not spans:
            continue
        kept.append(run)
        for span in spans:
            collapsed.update(span)
            merged.update((p, span[0]) for p in span[1:])
    return RepeatFold(runs=kept, collapsed=frozenset(collapsed), merged=merged)


def label_folds(layout: Layout, fold: RepeatFold) -> None:
    """Write the fold's labels on ``layout``'s frames and cards (new ``GroupBox`` objects: a
    layout may share its boxes with an earlier one)."""
    from dataclasses import replace

    groups = layout.groups
    for run in fold.runs:
        for card_path in run.cards:
            card = groups.get(card_path)
            if card is not None and card.collapsed:
                groups[card_path] = replace(card, label=run.card_label(card_path))
        frame = groups.get(run.first)
        if frame is not None and not frame.collapsed:
            groups[run.first] = replace(frame, label=run.frame_label(frame.label))
        for path in run.differing:
            frame = groups.get(path)
            if frame is not None and not frame.collapsed:
                groups[path] = replace(frame, label=run.differing_label(frame.label, path))
