"""Crash recovery: on start, offer to restore edits an earlier process journaled but never saved.

A journal is abandoned when no live window holds its lock (see ``fxstudio.core.journal``); a live
window's journal is never offered or touched. The offer names the model, the number of edits and
their labels, numbered as History numbers them; Recover reopens the model and replays the edits as
the same undoable commands (the document is dirty afterwards, so the work is still unsaved), Discard
deletes the journal, Not Now keeps it for the next start. Several abandoned journals of one model
(two windows that both crashed) are offered one after the other.

A journal is data: its options are validated by the core, and ``trust`` in them is dropped, so a
pickled ``.pt`` is unpickled only after the window's own trust question naming the file. Malformed
journal files are moved aside by the core and named in the Problems dock.
"""

from __future__ import annotations

import html
import sys
from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

from fxstudio.core import journal

RECOVER, DISCARD, LATER = "recover", "discard", "later"
MAX_LABELS = 12


def report_bad(window, bad: journal.Quarantined, *, echo: bool = False) -> str:
    """Name a malformed journal (and where it went) in the Problems dock; ``echo`` also prints it."""
    if bad.moved_to is not None:
        message = f"{bad.reason}. It was moved aside to {bad.moved_to}; nothing was recovered from it."
    else:
        message = f"{bad.reason}. It could not be moved aside and was left at {bad.path}."
    if window is not None:
        window.problems.add("warning", "journal", message)
        dock = getattr(window, "docks", {}).get("problems")
        if dock is not None:
            dock.show()
            dock.raise_()  # it would sit unseen behind the Code tab
    if echo:
        print(f"fxstudio: warning: {message}", file=sys.stderr)
    return message


def abandoned_journals(window=None, *, echo: bool = False) -> list[journal.JournalEntry]:
    """Abandoned journals whose model file exists, newest first; malformed files found on the way
    are moved aside and reported (see :func:`report_bad`)."""
    scan = journal.scan_journals()
    for bad in scan.bad:
        report_bad(window, bad, echo=echo)
    return [e for e in scan.entries if Path(e.model.partition("::")[0]).exists()]


def pick_journal(requested: str | None, window=None) -> journal.JournalEntry | None:
    """The abandoned journal to offer: the requested model's newest if any, else the newest one."""
    entries = abandoned_journals(window)
    if not entries:
        return None
    if requested:
        key = journal.model_key(requested)
        for entry in entries:
            if entry.model == key:
                return entry
    return entries[0]


def ask_recovery(parent: QWidget, entry: journal.JournalEntry, *, place: tuple[int, int] | None = None) -> str:
    """The recovery question as a dialog: returns ``recover``, ``discard`` or ``later``.

    ``place`` is ``(n, total)`` when several journals of the model are offered in turn.
    """
    box = QMessageBox(parent)
    box.setObjectName("recoveryDialog")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Recover unsaved edits?")
    name = Path(entry.model.partition("::")[0]).name
    box.setText(f"<b>fxstudio closed without saving your edits to {html.escape(name)}.</b>")
    labels = [label or "(edit)" for label in entry.labels][-MAX_LABELS:]
    first = len(entry.labels) - len(labels) + 1  # History's number of the first label listed
    items = "".join(f"<li>{html.escape(label)}</li>" for label in labels)
    more = first - 1
    which = f"Journal {place[0]} of {place[1]} for this model.<br>" if place and place[1] > 1 else ""
    box.setInformativeText(
        which
        + f"{html.escape(entry.describe())}<br>{html.escape(entry.model)}"
        + (f"<br><i>…{more} earlier edit{'s' if more != 1 else ''} not listed</i>" if more > 0 else "")
        + (f'<ol start="{first}">{items}</ol>' if items else "<br>")
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
    """Offer the abandoned journals of ``requested`` one by one (or, without it, the newest journal
    of any model); True when a recovery open was started."""
    entries = abandoned_journals(window)
    if requested:
        key = journal.model_key(requested)
        entries = [e for e in entries if e.model == key]
    else:
        entries = entries[:1]
    for n, entry in enumerate(entries, start=1):
        answer = ask_recovery(window, entry, place=(n, len(entries)))
        if answer == DISCARD:
            if not journal.discard_journal(entry):
                window.statusBar().showMessage(f"{entry.path.name} is in use by another window; kept.", 6000)
        elif answer == RECOVER and recover(window, entry):
            return True
    return False


def recover(window, entry: journal.JournalEntry) -> bool:
    """Reopen ``entry``'s model in ``window`` with its commands replayed; False when it did not start.

    The journal is claimed (locked) for the time of the open, so no other window offers it; it is
    deleted once its edits are back and journaled by this window, kept when an edit is refused or
    the open fails.
    """
    owned = journal.claim(entry)
    if owned is None:
        window.statusBar().showMessage(f"{entry.path.name} is being recovered by another window.", 6000)
        return False
    options = {k: v for k, v in entry.options.items() if k != "trust"}  # trust is asked, never read from a file
    flow = window.open_flow

    def finished(doc) -> None:
        disconnect()
        refused = list(flow.last_refusals)
        if doc is None or window.document is not doc:
            owned.release()
        elif refused:
            owned.release()
            window.problems.add(
                "warning", "journal",
                f"{len(refused)} of {entry.edit_count} recovered edits were refused; the journal "
                f"{entry.path} is kept and offered again at the next start.")
        else:
            owned.clear()

    def failed(_message) -> None:
        disconnect()
        owned.release()

    def disconnect() -> None:
        for signal, slot in ((flow.opened, finished), (flow.failed, failed)):
            try:
                signal.disconnect(slot)
            except (RuntimeError, TypeError):
                pass

    flow.opened.connect(finished)
    flow.failed.connect(failed)
    started = flow.open(entry.model, origin="recovery", options=options, edits=entry.commands())
    if not started:
        disconnect()
        owned.release()
    return started
