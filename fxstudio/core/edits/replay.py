"""Replaying edits into a document, with one explicit policy for refused edits.

``replay_into(doc, edits, policy)`` is the one replay loop of fxstudio: ``fxstudio apply`` and
``compare`` (through ``document.replay``), File ▸ Apply Edit Script and ``--replay`` (``"keep"``),
and a crash recovery or an open with edits (``"skip"``) all use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fxstudio.core.errors import EditRefused

Policy = Literal["stop", "keep", "skip"]
POLICIES: tuple[str, ...] = ("stop", "keep", "skip")


@dataclass(frozen=True)
class Refusal:
    """One refused item of a replay: its 1-based ``number`` (as History numbers edits), its op (or a
    command's label) and the core's ``EditRefused``."""

    number: int
    op: str | None
    error: EditRefused


@dataclass(frozen=True)
class ReplayReport:
    """What a replay did: how many of the ``total`` items were ``applied`` and which were refused."""

    total: int
    applied: int
    refusals: tuple[Refusal, ...] = ()

    @property
    def complete(self) -> bool:
        """True when every item applied."""
        return not self.refusals and self.applied == self.total


def _is_command(item: Any) -> bool:
    return not isinstance(item, dict) and hasattr(item, "edits")


def _op_of(item: Any) -> str | None:
    if isinstance(item, dict):
        op = item.get("op")
        return op if isinstance(op, str) else None
    return getattr(item, "label", None) if _is_command(item) else None


def replay_into(doc, edits: Sequence[Any], policy: Policy, *,
                before_each: Callable[[int], None] | None = None) -> ReplayReport:
    """Apply ``edits`` to ``doc`` in order, each as its own undoable command.

    An item is an edit dict, or a recorded command (an object with ``edits`` and ``label``, such as
    a journal's ``JournalCommand``) applied as one compound command under its label.
    ``before_each(i)`` runs before item ``i`` (0-based); it may raise to cancel.

    ``policy`` says what a refused item does:

    - ``"stop"``: undo what this replay applied (and forget it) and raise ``EditRefused``
      "Edit N (op) of M was refused: <reason>" with ``index`` the 0-based position;
    - ``"keep"``: stop there, keep the edits applied before it, report the refusal;
    - ``"skip"``: go on with the next item; every refusal is reported.
    """
    if policy not in POLICIES:
        raise ValueError(f"replay policy {policy!r} is not one of {', '.join(POLICIES)}")
    items = list(edits)
    start = doc.history_index
    applied = 0
    refusals: list[Refusal] = []
    for i, item in enumerate(items):
        if before_each is not None:
            before_each(i)
        try:
            if _is_command(item):
                doc.apply_edits(item.edits, label=getattr(item, "label", None))
            else:
                doc.apply_edit(item)
        except EditRefused as exc:
            op = _op_of(item)
            if policy == "stop":
                doc.rewind(start)
                raise EditRefused(f"Edit {i + 1} ({op}) of {len(items)} was refused: {exc.message}", hint=exc.hint,
                                  internal=exc.internal, index=i) from None
            refusals.append(Refusal(i + 1, op, exc))
            if policy == "keep":
                break
            continue
        applied += 1
    return ReplayReport(len(items), applied, tuple(refusals))


__all__ = ["POLICIES", "Policy", "Refusal", "ReplayReport", "replay_into"]
