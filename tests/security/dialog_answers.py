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

    def __init__(self, answers: list[str], *, deadline_s: float = 90):
        self.pending = list(answers)
        self.seen: list[dict] = []
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
            if not self.pending:
                box.reject()
            else:
                want = self.pending.pop(0)
                next(b for b in box.buttons() if b.text().replace("&", "") == want).click()
        if time.monotonic() < self.deadline:
            QTimer.singleShot(50, self._poll)
