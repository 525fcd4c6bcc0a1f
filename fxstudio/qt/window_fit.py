"""The main window's size on a first launch: the default (1600×1000) where the screen has the room,
else what the screen's available geometry (QScreen.availableGeometry: without the panels) holds,
title bar included, so that the status bar is never off screen."""

from __future__ import annotations

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QWidget

DEFAULT_SIZE = (1600, 1000)
FRAME_ALLOWANCE = (8, 40)
"""Room for the window manager's borders and title bar (width, height) before the window has them."""


def first_geometry(available: QRect, size: tuple[int, int] = DEFAULT_SIZE) -> QRect:
    """The window's client rectangle on a first launch: ``size`` where ``available`` (a screen's
    available geometry) holds it with its frame, else shrunk to fit; centred in ``available``."""
    fw, fh = FRAME_ALLOWANCE
    w = max(min(size[0], available.width() - fw), 1)
    h = max(min(size[1], available.height() - fh), 1)
    x = available.x() + max((available.width() - w - fw) // 2, 0) + fw // 2
    y = available.y() + max((available.height() - h - fh) // 2, 0) + fh - fw // 2
    return QRect(x, y, w, h)


def place_first(window: QWidget) -> None:
    """Size and centre ``window`` for a first launch on its screen (``first_geometry``)."""
    screen = window.screen()
    if screen is None:
        window.resize(*DEFAULT_SIZE)
        return
    window.setGeometry(first_geometry(screen.availableGeometry()))


def keep_on_screen(window: QWidget) -> None:
    """Once shown, shrink and move ``window`` so that its frame (title bar included) lies within its
    screen's available geometry; nothing when it does already."""
    screen = window.screen()
    if screen is None or window.isMaximized() or window.isFullScreen():
        return
    avail, frame = screen.availableGeometry(), window.frameGeometry()
    if avail.contains(frame):
        return
    extra_w, extra_h = frame.width() - window.width(), frame.height() - window.height()
    w = min(window.width(), avail.width() - extra_w)
    h = min(window.height(), avail.height() - extra_h)
    window.resize(max(w, 1), max(h, 1))
    x = min(max(frame.x(), avail.x()), avail.right() + 1 - (w + extra_w))
    y = min(max(frame.y(), avail.y()), avail.bottom() + 1 - (h + extra_h))
    window.move(x, y)
