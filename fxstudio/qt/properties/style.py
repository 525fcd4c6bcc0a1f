"""Look of the Properties panel: its stylesheet and the small widgets its sections are built from."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

OP_COLORS = {
    "placeholder": "#2e7d32",
    "call_function": "#1565c0",
    "call_method": "#6a1b9a",
    "call_module": "#ad5d00",
    "get_attr": "#00838f",
    "output": "#455a64",
}
"""Badge colour of each op kind (the canvas uses its own palette; these only need to be distinct)."""

KEY_WIDTH = 74
"""Width of the label column, the same in every section so the fields line up."""

PANEL_QSS = """
#fxsProperties { background: #f6f7f9; }
#fxsProperties QLabel { color: #263238; }
QLabel#fxsSection {
    color: #546e7a; font-weight: 600; font-size: 11px; letter-spacing: 1px;
    padding: 10px 0 3px 0; border-bottom: 1px solid #dde1e6;
}
QLabel#fxsKey { color: #607d8b; padding-right: 4px; }
QLabel#fxsKeyDefault { color: #9aa5ad; font-style: italic; padding-right: 4px; }
QLabel#fxsTitle { font-size: 15px; font-weight: 600; }
QLabel#fxsBadge { color: white; border-radius: 3px; padding: 1px 6px; font-size: 11px; font-weight: 600; }
QLabel#fxsError { color: #c62828; font-size: 11px; }
QLabel#fxsRejected {
    color: #b71c1c; background: #fdecea; border: 1px solid #e57373; border-radius: 3px; padding: 4px 6px;
}
QLabel#fxsShape[fxsState="rejected"] { color: #c62828; font-weight: 600; }
QLabel#fxsShape[fxsState="unknown"] { color: #8a6d1e; font-style: italic; }
QLabel#fxsNote { color: #78909c; font-size: 11px; font-style: italic; }
QLabel#fxsMono, QLabel#fxsRepr {
    font-family: "DejaVu Sans Mono", monospace; font-size: 11px; color: #37474f;
    background: #eceff1; border-radius: 3px; padding: 4px 6px;
}
QLabel#fxsShape { color: #37474f; font-family: "DejaVu Sans Mono", monospace; font-size: 11px; }
#fxsProperties QLineEdit, #fxsProperties QComboBox {
    background: white; border: 1px solid #cfd8dc; border-radius: 3px; padding: 2px 4px;
    font-family: "DejaVu Sans Mono", monospace; font-size: 12px; min-height: 18px;
}
#fxsProperties QComboBox::drop-down {
    subcontrol-origin: padding; subcontrol-position: center right; width: 18px;
    border: none; border-left: 1px solid #e3e7ea;
}
#fxsProperties QComboBox::down-arrow {
    image: url(:/qt-project.org/styles/commonstyle/images/arrow-down-16.png); width: 9px; height: 9px;
}
#fxsProperties QLineEdit#fxsNameField {
    font-family: sans-serif; font-size: 14px; font-weight: 600; border: 1px solid transparent;
    background: transparent;
}
#fxsProperties QLineEdit#fxsNameField:hover { border: 1px solid #cfd8dc; background: white; }
#fxsProperties QLineEdit:focus, #fxsProperties QComboBox:focus { border: 1px solid #1e88e5; }
#fxsProperties QLineEdit[fxsState="invalid"], #fxsProperties QComboBox[fxsState="invalid"] {
    border: 1px solid #e53935; background: #fff5f5;
}
#fxsProperties QLineEdit[fxsState="pending"], #fxsProperties QComboBox[fxsState="pending"] {
    border: 1px solid #f59e0b; background: #fffbeb;
}
#fxsProperties QLineEdit[fxsState="default"], #fxsProperties QComboBox[fxsState="default"] {
    color: #9aa5ad; background: #fafbfc; font-style: italic;
}
#fxsProperties QLineEdit[readOnly="true"] { background: #eef1f3; color: #455a64; }
QPushButton#fxsLink {
    border: none; background: transparent; color: #1565c0; text-align: left;
    padding: 1px 0; font-family: "DejaVu Sans Mono", monospace; font-size: 12px;
}
QPushButton#fxsLink:hover { text-decoration: underline; color: #0d47a1; }
QPushButton#fxsSmall {
    border: 1px solid #cfd8dc; border-radius: 3px; background: white; padding: 1px 6px;
    color: #455a64; min-width: 14px;
}
QPushButton#fxsSmall:hover { background: #e3f2fd; border-color: #90caf9; }
QToolButton#fxsAction {
    border: 1px solid #cfd8dc; border-radius: 3px; background: white; padding: 1px 7px;
    color: #37474f; font-size: 11px;
}
QToolButton#fxsAction:hover { background: #e3f2fd; border-color: #90caf9; }
QToolButton#fxsAction:disabled { color: #b0bec5; border-color: #e3e7ea; }
QLabel#fxsEmpty { color: #90a4ae; font-size: 13px; padding: 40px 10px; }
"""


def section_label(text: str) -> QLabel:
    """An uppercase section header with a rule under it."""
    label = QLabel(text.upper())
    label.setObjectName("fxsSection")
    return label


def key_label(text: str, *, default: bool = False, tooltip: str = "") -> QLabel:
    """A right-aligned row label; ``default`` marks a parameter whose default value is in use."""
    label = QLabel(text)
    label.setObjectName("fxsKeyDefault" if default else "fxsKey")
    label.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
    label.setMinimumWidth(KEY_WIDTH)
    if tooltip:
        label.setToolTip(tooltip)
    return label


def op_badge(op: str) -> QLabel:
    """A coloured pill naming the node's op kind."""
    label = QLabel(op)
    label.setObjectName("fxsBadge")
    label.setStyleSheet(f"background: {OP_COLORS.get(op, '#607d8b')};")
    label.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Fixed)
    return label


def small_button(text: str, tooltip: str) -> QPushButton:
    """A compact bordered button used for row actions (remove keyword, add keyword)."""
    button = QPushButton(text)
    button.setObjectName("fxsSmall")
    button.setToolTip(tooltip)
    button.setCursor(Qt.PointingHandCursor)
    button.setSizePolicy(QSizePolicy.Fixed, QSizePolicy.Fixed)
    return button


class NodeLink(QWidget):
    """A node name drawn as a link, with its shape beside it; clicking emits ``clicked(node_id)``."""

    clicked = Signal(int)

    def __init__(self, node_id: int, name: str, detail: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self.node_id = node_id
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        self.button = QPushButton(name)
        self.button.setObjectName("fxsLink")
        self.button.setCursor(Qt.PointingHandCursor)
        self.button.setToolTip(f"Select {name}")
        self.button.clicked.connect(lambda: self.clicked.emit(self.node_id))
        layout.addWidget(self.button)
        if detail:
            info = QLabel(detail)
            info.setObjectName("fxsShape")
            layout.addWidget(info)
        layout.addStretch(1)
