"""One pane of the diff window: a read-only graph canvas whose cards are ringed by their diff status.

``pane_document(graph)`` wraps a compared graph in a view-only ``Document`` of its own (over the
very graph, which it numbers: pass graphs no live document uses), and ``DiffPane`` shows it with a
title; ``DiffCanvas.show_kinds`` rings each card ``changed``,
``added`` (only in this graph) or ``removed`` (a base node missing from another graph) in the
colours of the main canvas's change outlines.
"""

from __future__ import annotations

import torch.fx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from fxstudio.core.compare import GraphDiff
from fxstudio.core.document import Document
from fxstudio.core.model import LoadedModel
from fxstudio.qt.canvas import GraphCanvas
from fxstudio.qt.selection import SelectionModel

READ_ONLY = "The diff window is read-only: edit the model in the main window."


PaneModel = tuple[Document, dict[torch.fx.Node, torch.fx.Node]]
"""A pane's view-only document and, per compared node, the node the pane shows for it."""


def pane_document(module: torch.fx.GraphModule, title: str) -> PaneModel:
    """A view-only document over ``module``'s very graph (no copy: a 10k-node graph's copy costs
    about a second), and each compared node's node in it (itself). The document numbers the nodes
    (``meta["fxs_id"]``) and owns the graph from then on: pass a graph no live document uses (a
    copy of a document's original, ``EditedSnapshot``'s module, a file loaded for the diff).
    No Qt: a worker may build it."""
    loaded = LoadedModel(path=None, kind="memory", module=module, graph_module=module, example_inputs=(), entry=title)
    doc = Document(loaded, adopt_graph=True, view_only=READ_ONLY)
    copies = dict(zip(module.graph.nodes, doc.original.graph.nodes))
    return doc, copies


def pane_title(graph) -> str:
    """``A: model.py (fx) (38 nodes)`` for a ``core.diff.DiffGraph``."""
    return f"{graph.label}: {graph.source or '<graph>'} ({len(graph.module.graph.nodes)} nodes)"


def prepare_panes(diff) -> list[PaneModel]:
    """The pane documents of every graph of a ``GraphsDiff`` (no Qt: for a worker)."""
    return [pane_document(g.module, pane_title(g)) for g in diff.graphs]


class DiffCanvas(GraphCanvas):
    """A ``GraphCanvas`` whose rings are set from outside (``show_kinds``); its own legend stays hidden
    (the diff window has one legend for every pane)."""

    def show_kinds(self, kinds: dict[int, str]) -> None:
        """Ring the cards of these node ids by kind (``changed``, ``added``, ``removed``)."""
        by_kind = {k: frozenset(i for i, v in kinds.items() if v == k) for k in ("added", "removed", "changed")}
        old = self._diff_kinds
        self._diff = GraphDiff(by_kind["added"], by_kind["removed"], by_kind["changed"])
        self._diff_kinds = dict(kinds)
        self._apply_overlays(old.keys() | kinds.keys(), tints=False)
        self.legend.hide()

    def _update_legend(self) -> None:
        self.legend.hide()


class DiffPane(QWidget):
    """A title over a read-only canvas of one compared graph."""

    def __init__(self, title: str, model: PaneModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.document, self.copies = model
        self.originals = {copy: node for node, copy in self.copies.items()}
        self.selection = SelectionModel(self)
        self.title = QLabel(title, self)
        self.title.setObjectName("diffPaneTitle")
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title.setStyleSheet("font-weight: bold; padding: 3px; background: #eef2f6; border-bottom: 1px solid #b4bfcc;")
        self.canvas = DiffCanvas(self.selection, self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.title)
        layout.addWidget(self.canvas, 1)
        self.canvas.set_minimap_shown(False)   # narrow panes: the graph needs the room
        self.canvas.set_document(self.document)

    def id_of(self, node: torch.fx.Node) -> int | None:
        """The pane's node id of a compared node (a node of the module given), or None."""
        copy = self.copies.get(node)
        return self.document.id_of(copy) if copy is not None else None

    def node_of(self, node_id: int) -> torch.fx.Node | None:
        """The compared node shown with this id, or None."""
        copy = self.document.node(node_id)
        return self.originals.get(copy) if copy is not None else None
