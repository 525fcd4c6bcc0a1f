"""What the window does for the canvas's keyboard and hints (docs/notes/canvas.md): F2/Enter on a selected
card focuses its first argument field in Properties, the canvas's hints go to the status bar,
and the first-run hint is shown until it is dismissed (remembered in the settings)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from fxstudio.qt.properties.arg_editor import ValueField


def argument_fields(panel) -> list[ValueField]:
    """The Properties panel's argument fields on display, in reading order (top to bottom)."""
    fields = [f for f in panel.findChildren(ValueField) if f.isVisibleTo(panel) and f.isEnabled()]
    return sorted(fields, key=lambda f: (f.mapTo(panel, QPoint(0, 0)).y(), f.mapTo(panel, QPoint(0, 0)).x()))


def focus_first_argument(window, node_id: int) -> bool:
    """Show the Properties dock and put the focus in the first argument field of node
    ``node_id`` (its text selected, so typing replaces it); False when the node has none."""
    dock = window.docks["properties"]
    dock.show()
    dock.raise_()
    panel = window.properties
    if panel.node_id != node_id or not argument_fields(panel):
        panel.refresh()
    fields = argument_fields(panel)
    if not fields:
        node = window.document.node(node_id) if window.document is not None else None
        window.statusBar().showMessage(f"{node.name if node is not None else 'This node'} has no argument to edit.", 5000)
        return False
    field = fields[0]
    panel.scroll.ensureWidgetVisible(field)
    field.setFocus(Qt.FocusReason.ShortcutFocusReason)
    if field.lineEdit() is not None:
        field.lineEdit().selectAll()
    return True


def connect(window) -> None:
    """Wire the canvas of ``window`` (a ``MainWindow``) to its Properties dock, status bar and settings."""
    canvas = window.canvas
    canvas.edit_requested.connect(lambda node_id: focus_first_argument(window, node_id))

    def hint(text: str) -> None:
        if text:
            window.statusBar().showMessage(text, 8000)
        elif window.statusBar().currentMessage().startswith(canvas.PORT_HINT):
            window.statusBar().clearMessage()

    canvas.status_hint.connect(hint)
    canvas.set_first_run_hint(not window.prefs.canvas_hint_dismissed())
    canvas.hint.dismissed.connect(window.prefs.dismiss_canvas_hint)
