"""The chooser a ``.fxcap`` capture opens with: its graphs, each with where it broke in the user's
code; choosing one opens it in the editor (``run.fxcap::k``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QLabel, QListWidget, QListWidgetItem, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget,
)

from fxstudio.core.capture import Capture, break_text, input_text


def graph_label(index: int, graph: dict) -> str:
    """The list lines of one graph: number, op count, inputs; then where (file name:line) and why it ended."""
    count = sum(1 for n in graph.get("nodes") or [] if n.get("op") not in ("placeholder", "output"))
    brk = graph.get("break") if isinstance(graph.get("break"), dict) else {}
    where = brk.get("user_frame") if isinstance(brk.get("user_frame"), dict) else {}
    why = break_text(graph).rsplit(" at ", 1)[0] if where.get("file") else break_text(graph)
    place = f"{Path(str(where['file'])).name}:{where.get('line')}: " if where.get("file") else ""
    return f"graph_{index} — {count} op(s) — inputs {input_text(graph) or 'none'}\n    {place}{why}"


def graph_details(graph: dict) -> str:
    """The full break reason, the user's frames and the guards' text of one graph."""
    brk = graph.get("break") if isinstance(graph.get("break"), dict) else {}
    parts = ["Why the graph ended:", str(brk.get("reason") or "(not recorded)").strip(), ""]
    frames = [f for f in brk.get("frames") or [] if isinstance(f, dict)]
    if frames:
        parts.append("Where (innermost last):")
        parts += [f"  {f.get('file')}:{f.get('line')} in {f.get('function')}: {f.get('code')}" for f in frames]
        parts.append("")
    guards = str(graph.get("guards") or "").strip()
    parts += ["Guards:", guards or "(not recorded)"]
    return "\n".join(parts)


class CaptureChooser(QDialog):
    """Lists the graphs of ``capture``; Open (or a double click) calls ``on_open(index)``."""

    def __init__(self, parent: QWidget | None, capture: Capture, on_open: Callable[[int], None]):
        super().__init__(parent)
        self.setObjectName("captureChooser")
        self.capture = capture
        self.on_open = on_open
        self.setWindowTitle(f"Open a graph of {capture.path.name}")
        layout = QVBoxLayout(self)
        breaks = sum(1 for g in capture.graphs if isinstance(g.get("break"), dict) and g["break"].get("graph_break"))
        head = QLabel(f"torch.compile captured {len(capture.graphs)} graph(s) with {breaks} graph break(s) "
                      f"(backend {capture.backend or '?'}). Choose one to open it in the editor.")
        head.setWordWrap(True)
        layout.addWidget(head)
        split = QSplitter(Qt.Orientation.Vertical)
        self.list = QListWidget()
        self.list.setObjectName("captureGraphs")
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setSpacing(2)
        for k, graph in enumerate(capture.graphs):
            item = QListWidgetItem(graph_label(k, graph))
            item.setData(Qt.ItemDataRole.UserRole, k)
            item.setToolTip(break_text(graph))
            self.list.addItem(item)
        self.details = QPlainTextEdit()
        self.details.setObjectName("captureDetails")
        self.details.setReadOnly(True)
        split.addWidget(self.list)
        split.addWidget(self.details)
        split.setSizes([220, 180])
        layout.addWidget(split)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.list.currentRowChanged.connect(self._show)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        if capture.graphs:
            self.list.setCurrentRow(0)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(bool(capture.graphs))
        self.resize(900, 520)

    def _show(self, row: int) -> None:
        if 0 <= row < len(self.capture.graphs):
            self.details.setPlainText(graph_details(self.capture.graphs[row]))

    def chosen(self) -> int | None:
        """The graph selected in the list, or None."""
        item = self.list.currentItem()
        return None if item is None else int(item.data(Qt.ItemDataRole.UserRole))

    def accept(self) -> None:
        """Open the chosen graph (nothing chosen: stay open)."""
        index = self.chosen()
        if index is None:
            return
        super().accept()
        self.on_open(index)
