"""Crash recovery: on start, offer to restore edits an earlier process journaled but never saved.

A journal is abandoned when its writer is no longer running (see ``fxstudio.core.journal``). The
offer names the model, the number of edits and their labels; Recover reopens the model and replays
the edits as undoable commands (the document is dirty afterwards, so the work is still unsaved),
Discard deletes the journal, Not Now keeps it for the next start.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

from fxstudio.core import journal

RECOVER, DISCARD, LATER = "recover", "discard", "later"
MAX_LABELS = 12


def pick_journal(requested: str | None) -> journal.JournalEntry | None:
    """The abandoned journal to offer: the requested model's if any, else the newest one."""
    entries = [e for e in journal.find_journals() if Path(e.model.partition("::")[0]).exists()]
    if not entries:
        return None
    if requested:
        key = journal.model_key(requested)
        for entry in entries:
            if entry.model == key:
                return entry
    return entries[0]


def ask_recovery(parent: QWidget, entry: journal.JournalEntry) -> str:
    """The recovery question as a dialog: returns ``recover``, ``discard`` or ``later``."""
    box = QMessageBox(parent)
    box.setObjectName("recoveryDialog")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Recover unsaved edits?")
    name = Path(entry.model.partition("::")[0]).name
    box.setText(f"<b>fxstudio closed without saving your edits to {html.escape(name)}.</b>")
    labels = entry.labels[-MAX_LABELS:]
    items = "".join(f"<li>{html.escape(label)}</li>" for label in labels)
    more = len(entry.labels) - len(labels)
    box.setInformativeText(
        f"{html.escape(entry.describe())}<br>{html.escape(entry.model)}"
        + (f"<ol>{items}</ol>" if items else "")
        + (f"<i>…and {more} earlier</i><br>" if more > 0 else "")
        + "Recover reopens the model and replays these edits (undoable, still unsaved)."
    )
    recover = box.addButton("Recover", QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton("Not Now", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(recover)
    box.exec()
    clicked = box.clickedButton()
    if clicked is recover:
        return RECOVER
    if clicked is discard:
        return DISCARD
    return LATER


def offer_recovery(window, requested: str | None) -> bool:
    """Offer the journal :func:`pick_journal` finds; True when a recovery open was started."""
    entry = pick_journal(requested)
    if entry is None:
        return False
    answer = ask_recovery(window, entry)
    if answer == DISCARD:
        journal.discard_journal(entry)
        return False
    if answer == LATER:
        return False
    options = dict(entry.options)
    return window.open_flow.open(
        entry.model, origin="recovery", options=options, edits=entry.script["edits"], ask_unsaved=False
    )
