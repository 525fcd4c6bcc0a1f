"""The Problems dock: lint verdict, the nodes torch rejects (one row each, source "torch", kept in
step with the document: an undo that clears the cause removes the row), refused edits with their
reasons, warnings and load notes.

Other parts report here through :meth:`ProblemsView.add` (the window connects the canvas's and the
panels' ``edit_refused`` signals to it). Clicking a problem that names a node selects that node.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem, QWidget

from fxstudio.core.node_checks import CheckState
from fxstudio.qt import views_ahead
from fxstudio.qt.aside import Aside, large_graph
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.lazy_refresh import LazyRefresh
from fxstudio.qt.pane_layout import bar_over
from fxstudio.qt.selection import SelectionModel

SEVERITY_COLORS = {"error": "#c0392b", "warning": "#b9770e", "info": "#2e6da4"}
SEVERITY_MARKS = {"error": "✖", "warning": "▲", "info": "●"}


class ProblemsView(QWidget):
    """A list of (severity, source, message[, node]) rows, newest refusals first after the lint row."""

    counts_changed = Signal(int, int)  # errors, warnings

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.selection = selection
        self.doc = None
        self._subscription = DocumentSubscription(self.follow_event)
        self.lint_message = ""
        self.checks = CheckState()  # what torch rejects now: kept in step with every event, shown or not
        self.checks_message = ""  # the verdict of the last relint (node_checks.GraphVerdict.message)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("problemsTree")
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["", "Source", "Message", "Node"])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setWordWrap(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        self.tree.setColumnWidth(0, 26)
        self.tree.setColumnWidth(1, 70)
        self.tree.setColumnWidth(3, 90)
        self.tree.itemClicked.connect(self._clicked)
        self.summary = QLabel("", self)
        clear = QPushButton("Clear", self)
        clear.setObjectName("clearProblems")
        clear.setToolTip("Remove refused edits and warnings (load notes, the lint verdict and the nodes torch rejects stay)")
        clear.clicked.connect(lambda: self.clear(keep=("lint", "torch", "load")))
        bar_over(self, [self.summary, clear], self.tree, bar_margins=(6, 2, 4, 0))
        self.lazy = LazyRefresh(self, self.relint, delay_ms=150)
        self.aside = Aside(self, "lint")   # a large graph's verdict, in a worker (aside.py)

    @property
    def rejections(self) -> list:
        """``node_checks.NodeProblem`` of every node torch rejects now (up to date after each event,
        even while the dock is hidden and its rows wait)."""
        return self.checks.problems()

    def follow_event(self, event) -> None:
        """A document event: update what torch rejects at once, the rows when the dock is shown
        (the window calls this first too: it is idempotent)."""
        if self.doc is not None:
            self.checks.update(self.doc, event)
        self.lazy.request()

    def set_document(self, doc) -> None:
        """Start over for ``doc``: its load notes and its lint verdict (journal reports stay: they
        are about the start-up, not about one model)."""
        self.doc = doc
        self.aside.cancel()
        self._subscription.follow(doc)
        self.checks.reset(doc)
        self.clear(keep=("journal",))
        if doc is not None:
            for note in doc.loaded.notes:
                self.add("info", "load", str(note))
        self.relint()

    def relint(self) -> None:
        """Run ``graph.lint()`` and torch's checks on the edited graph (``Document.verdict``): the
        verdict in the first row, then one error row per node torch rejects. A large graph's (1.2 s
        at 200,000 nodes) is checked in a worker, a row saying so meanwhile (``aside.py``)."""
        self._clear_checks()
        if self.doc is None:
            self.lint_message = ""
            self._update_summary()
            return
        doc = self.doc
        verdict = views_ahead.take(doc.edited.graph, "verdict", None, doc.serial)
        if verdict is None and large_graph(doc.edited.graph):
            def deliver(result, current: bool) -> None:
                if current:
                    self._clear_checks()
                    self._show(result)
                else:
                    self.lazy.request()   # edited meanwhile: check the graph as it is now
            self.add("info", "lint", f"Checking the {len(doc.edited.graph.nodes):,} nodes of the edited graph…",
                     position=0)
            self.aside.start(doc, doc.verdict, deliver)
            return
        self._show(verdict or doc.verdict())

    def _clear_checks(self) -> None:
        for i in reversed(range(self.tree.topLevelItemCount())):
            if self.tree.topLevelItem(i).text(1) in ("lint", "torch"):
                self.tree.takeTopLevelItem(i)
        self.checks_message = ""

    def _show(self, verdict) -> None:
        """The rows of ``verdict`` (a ``node_checks.GraphVerdict`` of the edited graph)."""
        self.checks_message = verdict.message
        if verdict.status == "failed":  # lint reports any structural problem as an exception
            self.lint_message = verdict.message.splitlines()[0]
            self.add("error", "lint", f"graph.lint() fails: {verdict.message}", position=0)
            rejected = self.doc.problems()
        else:
            self.lint_message = ""
            self.add("info", "lint", "The edited graph passes graph.lint().", position=0)
            rejected = list(verdict.rejected)
        for problem in reversed(rejected):  # graph order, below the lint row
            self.add("error", "torch", f"{problem.message} (a run would fail here)", problem.name, position=1)

    def add(self, severity: str, source: str, message: str, node: str | None = None, *, position: int | None = None) -> None:
        """Report a problem; refusals and warnings go on top (below the lint row), notes at the end."""
        mark = SEVERITY_MARKS.get(severity, "●")
        item = QTreeWidgetItem([mark, source, message.strip(), node or ""])
        item.setData(0, Qt.ItemDataRole.UserRole, severity)
        item.setToolTip(2, f"{time.strftime('%H:%M:%S')}  {message.strip()}")
        item.setForeground(0, QBrush(QColor(SEVERITY_COLORS.get(severity, "#555"))))
        if severity == "error":
            item.setForeground(2, QBrush(QColor(SEVERITY_COLORS["error"])))
        if position is None:
            position = 1 if severity in ("error", "warning") and self._has_lint_row() else 0
            if severity == "info":
                position = self.tree.topLevelItemCount()
        self.tree.insertTopLevelItem(position, item)
        self._update_summary()

    def add_refusal(self, message: str, node: str | None = None) -> None:
        """A refused edit: the core's reason, shown as an error."""
        self.add("error", "edit", message, node)

    def clear(self, keep: tuple[str, ...] = ()) -> None:
        """Remove every row whose source is not in ``keep``."""
        for i in reversed(range(self.tree.topLevelItemCount())):
            if self.tree.topLevelItem(i).text(1) not in keep:
                self.tree.takeTopLevelItem(i)
        self._update_summary()

    def messages(self) -> list[tuple[str, str, str]]:
        """(severity, source, message) of every row, top to bottom (for tests and scripts)."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            it = self.tree.topLevelItem(i)
            out.append((it.data(0, Qt.ItemDataRole.UserRole), it.text(1), it.text(2)))
        return out

    def _has_lint_row(self) -> bool:
        return self.tree.topLevelItemCount() > 0 and self.tree.topLevelItem(0).text(1) == "lint"

    def _update_summary(self) -> None:
        sev = [m[0] for m in self.messages()]
        errors, warnings = sev.count("error"), sev.count("warning")
        parts = [f"{errors} error{'s' if errors != 1 else ''}", f"{warnings} warning{'s' if warnings != 1 else ''}"]
        self.summary.setText("  ".join(parts))
        self.counts_changed.emit(errors, warnings)

    def _clicked(self, item: QTreeWidgetItem) -> None:
        name = item.text(3)
        if self.doc is not None and name:
            node = self.doc.find(name)
            if node is not None:
                self.selection.set([self.doc.id_of(node)])
