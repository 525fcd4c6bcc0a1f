"""The offer to give example inputs when a model opened without them (issue #15, defect 5).

A pickled ``GraphModule`` or a model ``.py`` without ``example_inputs()`` opens with the fx tracer at
once, its shapes unknown (the core's load note says so). Nothing blocks the open: the window shows the
graph, says "Shapes unknown" in the status bar and keeps a **Give input shapes…** button beside it while
they are unknown; File ▸ Give Input Shapes… does the same at any time. Either asks for one shape per
input (the input-shape dialog Open uses) and reopens the model with them, replaying the edits made so far.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QPushButton

from fxstudio.qt import open_dialogs

STATUS_TEXT = "Shapes unknown: the model opened without example inputs. Give input shapes to see them."
"""The status-bar message shown when a model opens with its shapes unknown."""


class InputOffer(QObject):
    """The Give Input Shapes action and status-bar button of ``window`` (a ``MainWindow``)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.action = QAction("Give &Input Shapes…", window)
        self.action.setObjectName("action_give_input_shapes")
        self.action.setStatusTip("Give the shapes of the model's inputs: fxstudio reopens it with them, keeping the edits")
        self.action.triggered.connect(lambda _checked=False: self.ask())
        self.button = QPushButton("Give input shapes…", window)
        self.button.setObjectName("giveInputShapes")
        self.button.setToolTip(self.action.statusTip())
        self.button.setFlat(True)
        self.button.clicked.connect(lambda _checked=False: self.ask())
        self.button.hide()
        window.statusBar().addPermanentWidget(self.button)
        file_menu = window.menus.get("file")
        if file_menu is not None:
            after = window.actions.get("open_options")
            actions = file_menu.actions()
            index = actions.index(after) + 1 if after in actions else len(actions)
            file_menu.insertAction(actions[index] if index < len(actions) else None, self.action)
        window.document_changed.connect(self.update)
        self.update(None)

    def needed(self) -> bool:
        """True while the open document's shapes are unknown for want of example inputs."""
        from fxstudio.core.loading import shapes_unknown

        doc = self.window.document
        return doc is not None and doc.loaded.path is not None and shapes_unknown(doc.loaded)

    def update(self, _doc=None) -> None:
        """Show the offer when the document opened without inputs; hide it otherwise."""
        needed = self.needed()
        self.button.setVisible(needed)
        self.action.setEnabled(self.window.document is not None and self.window.spec is not None)
        if needed:
            self.window.statusBar().showMessage(STATUS_TEXT, 15000)

    def ask(self) -> bool:
        """Ask for the input shapes and reopen the model with them; False when declined or not possible."""
        window = self.window
        doc, spec = window.document, window.spec
        if doc is None or not spec or window.open_flow.busy:
            return False
        path = Path(str(spec).partition("::")[0])
        inputs = [n.name for n in doc.loaded.graph_module.graph.nodes if n.op == "placeholder"]
        reason = (f"{path.name} gives no example inputs; its inputs are {', '.join(inputs) or 'none'}. "
                  "fxstudio reopens it with random inputs of these shapes and replays your edits.")
        shapes = open_dialogs.ask_input_shapes(window, path, reason)
        if not shapes:
            return False
        options = {**window.options, "input_shapes": shapes}
        edits = doc.edit_script()["edits"]
        return window.open_flow.open(spec, origin="dialog", options=options, edits=edits, ask_unsaved=False)
