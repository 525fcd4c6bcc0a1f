"""Stylesheet and chrome shared by the structure-action dialogs."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPushButton

DIALOG_QSS = """
QDialog#fxsDialog { background: #f6f7f9; }
QLabel#fxsDialogTitle { font-size: 15px; font-weight: 600; color: #263238; padding-bottom: 2px; }
QLabel#fxsDialogKey { color: #607d8b; }
QLabel#fxsDialogError { color: #c62828; background: #fff5f5; border: 1px solid #ef9a9a;
    border-radius: 3px; padding: 4px 6px; }
QLabel#fxsDialogHint { color: #78909c; font-size: 11px; }
QDialog#fxsDialog QLineEdit, QDialog#fxsDialog QComboBox {
    background: white; border: 1px solid #cfd8dc; border-radius: 3px; padding: 3px 5px; min-height: 18px;
}
QDialog#fxsDialog QComboBox::drop-down {
    subcontrol-origin: padding; subcontrol-position: center right; width: 18px;
    border: none; border-left: 1px solid #e3e7ea;
}
QDialog#fxsDialog QComboBox::down-arrow {
    image: url(:/qt-project.org/styles/commonstyle/images/arrow-down-16.png); width: 9px; height: 9px;
}
QDialog#fxsDialog QLineEdit:focus { border: 1px solid #1e88e5; }
QDialog#fxsDialog QLineEdit[fxsState="invalid"] { border: 1px solid #e53935; background: #fff5f5; }
QDialog#fxsDialog QListWidget {
    background: white; border: 1px solid #cfd8dc; border-radius: 3px;
    font-family: "DejaVu Sans Mono", monospace; font-size: 12px;
}
QDialog#fxsDialog QListWidget::item { padding: 3px 4px; }
QDialog#fxsDialog QListWidget::item:selected { background: #1e88e5; color: white; }
QDialog#fxsDialog QPushButton { padding: 4px 14px; }
"""


def error_label() -> QLabel:
    """The hidden, word-wrapped line a dialog shows a refusal in (styled ``fxsDialogError``)."""
    error = QLabel()
    error.setObjectName("fxsDialogError")
    error.setWordWrap(True)
    error.hide()
    return error


def ok_cancel_buttons(dialog: QDialog, ok_text: str) -> tuple[QDialogButtonBox, QPushButton]:
    """OK (named ``ok_text``, the default button, calling ``dialog.try_accept``) and Cancel
    (``dialog.reject``): the button box and its OK button."""
    buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
    ok_button = buttons.button(QDialogButtonBox.Ok)
    ok_button.setText(ok_text)
    ok_button.setDefault(True)
    buttons.accepted.connect(dialog.try_accept)
    buttons.rejected.connect(dialog.reject)
    return buttons, ok_button
