"""Line edits of a text: lines inserted, removed and replaced, as one list of non-overlapping hunks.

:meth:`fxstudio.core.code_text.IncrementalCode.edit` describes how the generated code changed with
these, and the Code dock applies them to its editor (``CodeEditor.edit_lines``) without replacing
the whole document. Every line number here is 1-based and refers to the text *before* the edit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class LineEdit:
    """Replace ``removed`` lines starting at line ``start`` (1-based, in the text before the edit)
    by ``texts``: an insertion before ``start`` when ``removed`` is 0, a removal when ``texts`` is
    empty. ``start`` may be one past the last line (an insertion at the end)."""

    start: int
    removed: int
    texts: tuple[str, ...]

    @property
    def delta(self) -> int:
        """How many lines the text gains (negative: loses) with this edit."""
        return len(self.texts) - self.removed


def make_edits(inserted: dict[int, list[str]], replaced: dict[int, str | None]) -> list[LineEdit]:
    """Hunks from elementary changes keyed by 0-based line of the old text: ``inserted[k]`` lines
    go before line k, ``replaced[k]`` is line k's new text (None: the line is removed). Sorted,
    adjacent changes merged into one hunk."""
    edits: list[LineEdit] = []
    for k in sorted(inserted.keys() | replaced.keys()):
        texts = list(inserted.get(k, ()))
        removed = 0
        if k in replaced:
            removed = 1
            if replaced[k] is not None:
                texts.append(replaced[k])
        if not removed and not texts:
            continue
        if edits and edits[-1].start + edits[-1].removed == k + 1:
            last = edits.pop()
            edits.append(LineEdit(last.start, last.removed + removed, last.texts + tuple(texts)))
        else:
            edits.append(LineEdit(k + 1, removed, tuple(texts)))
    return edits


def check_edits(edits: Sequence[LineEdit], line_count: int) -> None:
    """Raise ValueError unless ``edits`` are sorted, non-overlapping, within a text of
    ``line_count`` lines and free of newlines."""
    end = 1
    for e in edits:
        if e.start < end or e.removed < 0 or e.start + e.removed > line_count + 1:
            raise ValueError(f"line edits overlap, are unsorted or out of range: {e}")
        if any("\n" in t for t in e.texts):
            raise ValueError("a line edit's text holds a newline")
        end = e.start + e.removed


def apply_edits(lines: list[str], edits: Sequence[LineEdit]) -> None:
    """Apply ``edits`` to ``lines`` (a text split on newlines) in place."""
    check_edits(edits, len(lines))
    for e in reversed(edits):
        lines[e.start - 1:e.start - 1 + e.removed] = e.texts


def new_number(number: int, edits: Iterable[LineEdit]) -> int | None:
    """Where old line ``number`` (1-based) is after ``edits``; None when an edit removed or
    replaced it."""
    shift = 0
    for e in edits:
        if number < e.start:
            break
        if number < e.start + e.removed:
            return None
        shift += e.delta
    return number + shift
