"""The canvas's first-run hint: a strip in a band under the canvas (the view's bottom margin, so it
covers no card) that says how to select, rewire, navigate by keyboard and find every shortcut,
with a close button.

The window shows it until the user closes it (``dismissed`` is then emitted and remembered in
the settings); the band goes with it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

HINT_TEXT = ("Click a card to select it · <b>drag an input port</b> (the circle on a card's top edge) "
             "onto another card to feed that input from it · arrows walk the edges · F2 edits the "
             "first argument · F fits · F1 lists every shortcut")


class CanvasHint(QFrame):
    """The first-run hint strip; ``dismissed`` when its close button is clicked."""

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("canvasHint")
        self.setStyleSheet("#canvasHint { background: rgba(255, 255, 255, 215); border: 1px solid #b4bfcc;"
                           " border-radius: 5px; } #canvasHint QLabel { color: #3e4854; }")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        self.label = QLabel(HINT_TEXT, self)
        self.label.setObjectName("canvasHintText")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        row.addWidget(self.label, 1)
        self.close_button = QToolButton(self)
        self.close_button.setObjectName("canvasHintClose")
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Do not show this hint again")
        self.close_button.clicked.connect(self._dismiss)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def _dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()


HINT_MAX_W = 980   # wider, a line of it is too long to read
BAND_PAD = 4       # above and below the hint in its band


def place_hint(view) -> None:
    """Put ``view``'s hint (a ``CanvasHint`` child of the canvas ``view``) in a band under the
    canvas's viewport, so it covers no card whatever the view shows; no band while it is hidden
    (not ``isVisible()``: that is False until the window is shown)."""
    hint = view.hint
    band = 0
    if not hint.isHidden():
        width = max(min(view.width() - 20, HINT_MAX_W), 200)
        hint.setFixedWidth(width)
        height = hint.heightForWidth(width) if hint.hasHeightForWidth() else hint.sizeHint().height()
        hint.setFixedHeight(max(height, hint.minimumSizeHint().height()))
        band = hint.height() + 2 * BAND_PAD
        hint.move(10, view.height() - band + BAND_PAD)
    margins = view.viewportMargins()
    if margins.bottom() != band:
        view.setViewportMargins(0, 0, 0, band)   # resizes the viewport: the view places its overlays again
