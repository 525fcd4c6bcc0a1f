"""Answering the window's real modal message boxes in process tests, as a user clicks them."""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox


class Answers:
    """Clicks the next modal message boxes' buttons (by text, in order) and records each box as
    ``title``, ``text``, ``informative text`` and the default button's text. A box beyond the
    answers given is rejected and recorded as ``UNEXPECTED``, so a test fails instead of hanging.
    ``stop()`` ends the polling (call it when the test ends)."""

    def __init__(self, answers: list[str], *, deadline_s: float = 90, texts: list[str] | None = None):
        self.pending = list(answers)
        self.seen: list[dict] = []
        self.texts = texts  # also each box as "title\ntext\ninformative text", and "UNEXPECTED"
        self.deadline = time.monotonic() + deadline_s
        self.stopped = False
        QTimer.singleShot(50, self._poll)

    def stop(self) -> None:
        """Stop answering (no later box of another test is clicked)."""
        self.stopped = True

    @property
    def unexpected(self) -> bool:
        """Whether a box came that the test gave no answer for."""
        return any(s.get("unexpected") for s in self.seen)

    def _poll(self) -> None:
        if self.stopped:
            return
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox) and box.isVisible():
            default = box.defaultButton()
            self.seen.append({"title": box.windowTitle(), "text": box.text(), "info": box.informativeText(),
                              "default": default.text().replace("&", "") if default is not None else None,
                              "unexpected": not self.pending})
            if self.texts is not None:
                self.texts.append(f"{box.windowTitle()}\n{box.text()}\n{box.informativeText()}")
                if not self.pending:
                    self.texts.append("UNEXPECTED")
            if not self.pending:
                box.reject()
            else:
                want = self.pending.pop(0)
                next(b for b in box.buttons() if b.text().replace("&", "") == want).click()
        if time.monotonic() < self.deadline:
            QTimer.singleShot(50, self._poll)


_current: list[Answers] = []


def click_through(answers: list[str], seen: list[str]) -> None:
    """Answer the next modal message boxes in turn by clicking the buttons named in ``answers``, as
    a user would; each box's text goes to ``seen`` ("UNEXPECTED" for a box beyond the answers).
    A later call, or :func:`stop_answering`, ends the previous answerer."""
    stop_answering()
    _current.append(Answers(answers, texts=seen))


def stop_answering() -> None:
    """End every answerer started by :func:`click_through` (call it when a test ends)."""
    while _current:
        _current.pop().stop()
