"""The Code dock: the edited module's generated Python and the original model file's source.

Tab "Edited code" shows ``doc.module().code`` highlighted, with the selected node's line marked;
clicking a line selects the node that line defines. After an edit that changes, inserts or erases
a few nodes (and its undo/redo) only the lines that changed are rewritten, inserted or removed
(:class:`fxstudio.core.code_text.IncrementalCode`), on the next event-loop turn; anything else
(or whatever that class refuses) regenerates the whole text after a pause in the edits.
Tab "Source" shows the user's file scrolled to the selected node's source line
(``Document.source_of``), or any file:line asked for by :meth:`CodeView.show_source` (the
trace-failure dialog's links).
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

from fxstudio.core.code_lines import LineEdit
from fxstudio.core.code_text import MAX_NODES, IncrementalCode
from fxstudio.core.node_text import META_HIDDEN
from fxstudio.qt import views_ahead
from fxstudio.qt.aside import Aside, large_graph
from fxstudio.qt.code_editor import CodeEditor
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.lazy_refresh import LazyRefresh
from fxstudio.qt.selection import SelectionModel

CODE_DELAY_MS = 250
"""Regenerating the whole code costs ~0.3 s at 10k nodes: wait for a pause in the edits (one per burst)."""

LINE_UPDATE_DELAY_MS = 0
"""Rewriting the few lines an edit changed costs a few milliseconds: do it on the next event-loop
turn (a burst of events in one turn, e.g. a history jump, is still one update)."""

OPENED_TEXT_DELAY_MS = 40
"""A document that arrives with its code generated ahead (``views_ahead``: an open) gets its text
this long after it is shown, on a turn of its own: setting 3,000 lines costs 15-25 ms, which the
turn that draws the new graph's first frame must not also pay (issue #25)."""

GENERATING = "# Generating the code of {n:,} nodes in the background…\n"
"""The Code dock's text while a large graph's code is generated in a worker (``aside.py``)."""

LINE_UPDATE_MAX_NODES = MAX_NODES
"""More nodes than this added or removed since the last refresh: regenerate everything (changed
nodes are not counted: an edit reports every node whose shape it changed, and those whose line
is the same cost nothing)."""

_LINE_EDIT_KINDS = ("edited", "undone", "redone", "saved")

PREAMBLE_LINES = 4
"""More lines than this before the first call (parameter reads, pytree plumbing): a new document's
code opens scrolled to that call."""
_CALLS = ("call_function", "call_method", "call_module")

_ASSIGN = re.compile(r"^\s+([A-Za-z_]\w*)\s*=\s")
_DEF = re.compile(r"^def forward\(")


def map_code_lines(code: str, graph) -> tuple[dict[str, int], dict[int, str]]:
    """For generated FX code: node name → 1-based line defining it, and line → node name.

    Placeholders live on the ``def forward`` line, ``output`` on the ``return`` line, every other
    node on the line that assigns its name.
    """
    names = {n.name for n in graph.nodes}
    placeholders = [n.name for n in graph.nodes if n.op == "placeholder"]
    output = next((n.name for n in reversed(graph.nodes) if n.op == "output"), None)
    line_of: dict[str, int] = {}
    node_at: dict[int, str] = {}
    for number, text in enumerate(code.split("\n"), start=1):
        m = _ASSIGN.match(text)
        if m and m.group(1) in names and m.group(1) not in line_of:
            line_of[m.group(1)] = number
            node_at[number] = m.group(1)
        elif _DEF.match(text):
            for name in placeholders:
                line_of.setdefault(name, number)
            if placeholders:
                node_at[number] = placeholders[0]
        elif output and text.strip().startswith("return") and output not in line_of:
            line_of[output] = number
            node_at[number] = output
    return line_of, node_at


class CodeView(QWidget):
    """Edited code and original source, both following the selection."""

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.selection = selection
        self.doc = None
        self._subscription = DocumentSubscription(self._on_event)
        self._code = IncrementalCode()
        self._changed: set[int] = set()  # node ids changed since the last refresh
        self._line_edits = False  # True while every event since the last refresh may go line by line
        self._touched = 0  # nodes added or removed since the last refresh (with repeats)
        self._offset = 0  # leading blank lines of the generated source that the pane drops
        self._opened = False  # a new document: its first full refresh scrolls to the computation
        self._line_of: dict[str, int] = {}
        self._node_at: dict[int, str] = {}
        self._source_file: Path | None = None
        self._ahead: tuple | None = None  # (graph, serial, IncrementalCode) taken at set_document, set later
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.edited = CodeEditor(self)
        self.edited.setObjectName("editedCode")
        self.source = CodeEditor(self)
        self.source.setObjectName("sourceCode")
        self.source_label = QLabel("", self)
        self.source_label.setObjectName("sourceLabel")
        source_page = QWidget(self)
        sl = QVBoxLayout(source_page)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(2)
        sl.addWidget(self.source_label)
        sl.addWidget(self.source)
        self.tabs.addTab(self.edited, "Edited code")
        self.tabs.addTab(source_page, "Source")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tabs)
        self.lazy = LazyRefresh(self, self.refresh, delay_ms=CODE_DELAY_MS)
        self.aside = Aside(self, "code")   # a large graph's code, generated in a worker (aside.py)
        self.edited.line_clicked.connect(self._edited_line_clicked)
        selection.changed.connect(lambda _ids: self.follow_selection())

    def set_document(self, doc) -> None:
        """Show ``doc`` (or nothing) and follow its events."""
        self.doc = doc
        self.aside.cancel()
        self._subscription.follow(doc)
        self._code = IncrementalCode()
        self._changed.clear()
        self._line_edits = False
        self._touched = 0
        self._source_file = None
        self._opened = True   # the next full refresh scrolls to the computation
        if doc is not None:
            path = doc.loaded.path
            if path is not None and Path(path).suffix == ".py":
                self._load_source(Path(path))
            else:
                self.source.set_code("")
                self.source_label.setText(" No Python source: this model was loaded from a saved file.")
        else:
            self.source.set_code("")
            self.source_label.setText("")
        self._ahead = None
        ahead = None
        if doc is not None and not doc.read_only:
            ahead = views_ahead.take(doc.edited.graph, "code", None, doc.serial)
        if ahead is not None:   # generated by the worker that loaded it: the text comes on a later turn
            self._ahead = (doc.edited.graph, doc.serial, ahead)
            self.lazy.request(OPENED_TEXT_DELAY_MS)
            return
        self.lazy.request()
        if doc is None or not doc.read_only:
            # A view-only graph (a .pt2's structure while its weights load) gets its code when the
            # event loop next turns: the first frame of a 10k-node graph does not wait for it.
            self.lazy.flush()

    def _on_event(self, event) -> None:
        # Edits of a few nodes (changed, added or removed) can be applied line by line: soon.
        # Anything else is a full regeneration: after a pause in the edits.
        self._touched += len(event.added) + len(event.removed)
        if event.kind not in _LINE_EDIT_KINDS or self._touched > LINE_UPDATE_MAX_NODES:
            self._line_edits = False
        self._changed.update(event.changed)
        self._changed.update(event.added)
        cheap = self._line_edits and self._code.incremental
        self.lazy.request(LINE_UPDATE_DELAY_MS if cheap else CODE_DELAY_MS)

    def refresh(self, *, full: bool = False) -> None:
        """Bring the edited code up to date and re-mark the selection: only the lines that changed
        when every event since the last refresh was an edit (or undo/redo) of a few nodes and the
        code can follow it line by line (unless ``full``), else all of it."""
        # while a large graph's code is being generated the text is a placeholder: nothing to edit
        changed, line_edits = self._changed, self._line_edits and not full and not self.aside.busy
        self._changed, self._line_edits, self._touched = set(), True, 0
        if self.doc is None:
            self.edited.set_code("")
            self._line_of, self._node_at = {}, {}
            self._line_edits = False
            return
        if line_edits and self._update_lines(changed):
            self.follow_selection()
            return
        graph = self.doc.edited.graph
        # The text recompile() would produce, without compiling it or touching the module: a view
        # must not pay for (or trigger) the document's deferred recompile.
        kept, self._ahead = self._ahead, None
        if kept is not None and kept[0] is graph and kept[1] == self.doc.serial:
            ahead = kept[2]
        else:
            ahead = views_ahead.take(graph, "code", None, self.doc.serial)
        if ahead is not None:   # generated by the worker that made this graph
            self._code = ahead
            src = ahead.text
        elif large_graph(graph):   # 5-6 s at 200,000 nodes: in a worker, which calls back here
            self._generate_aside()
            return
        else:
            src = self._code.full(graph)
        code = src.lstrip("\n")
        self._offset = len(src) - len(code)
        self._line_of, self._node_at = self._line_maps(code, graph)
        self.edited.set_code(code)
        if self._opened:
            self._opened = False
            first = self.first_op_line()
            self.edited.verticalScrollBar().setValue(first - 1 if first > PREAMBLE_LINES else 0)
        self.follow_selection()

    def _generate_aside(self) -> None:
        """Generate the code in a worker, "generating…" shown meanwhile; then a full refresh shows it
        (or starts again for the graph as it is by then)."""
        doc, graph = self.doc, self.doc.edited.graph
        serial = doc.serial

        def work():
            code = IncrementalCode()
            code.full(graph)
            return code

        def deliver(code, current: bool) -> None:
            if current:
                self._ahead = (graph, serial, code)
            self.refresh(full=True)

        self._line_of, self._node_at = {}, {}
        self.edited.set_code(GENERATING.format(n=len(graph.nodes)))
        self.aside.start(doc, work, deliver)

    def first_op_line(self) -> int:
        """The line of the edited code where the computation starts: the first call that is not a
        lifted weight's (a ``.pt2``'s code opens with hundreds of parameter reads); 0 if none."""
        for node in self.doc.edited.graph.nodes if self.doc is not None else ():
            if node.op in _CALLS and not node.meta.get(META_HIDDEN) and node.name in self._line_of:
                return self._line_of[node.name]
        return 0

    def _line_maps(self, code: str | None, graph) -> tuple[dict[str, int], dict[int, str]]:
        """Node name → line and line → node name, as :func:`map_code_lines` gives them; from the
        generation's own line map when it has one (no regex pass over the text; ``code`` may then
        be None)."""
        maps = self._code.line_maps(self._offset)
        return map_code_lines(code, graph) if maps is None else maps

    def _update_lines(self, changed: set[int]) -> bool:
        """Rewrite, insert and remove the lines of the nodes ``changed`` (ids; those erased since
        resolve to None and are found by the code's own walk); False when a full refresh is needed.

        When lines were inserted or removed the line ↔ node maps are rebuilt from the code's index
        (numbers shift; names stay, renames are refused).
        """
        nodes = [node for node in map(self.doc.node, changed) if node is not None]
        graph = self.doc.edited.graph
        edits = self._code.edit(graph, nodes)
        if edits is None:
            return False
        offset = self._offset
        try:
            self.edited.edit_lines([LineEdit(e.start - offset, e.removed, e.texts) for e in edits])
        except ValueError:  # the shown text out of step with the code's (never seen): show all of it
            self._code.incremental = False
            return False
        if any(e.delta for e in edits):
            self._line_of, self._node_at = self._line_maps(None, graph)
        return True

    def follow_selection(self) -> None:
        """Mark the selected node's line in both tabs."""
        if self.doc is None:
            return
        node_id = self.selection.current()
        node = self.doc.node(node_id) if node_id is not None else None
        if node is None:
            self.edited.highlight_line(0)
            return
        self.edited.highlight_line(self._line_of.get(node.name, 0))
        src = self.doc.source_of(node)
        if isinstance(src, dict) and src.get("file") and src.get("line"):
            self.show_source(src["file"], int(src["line"]), switch=False)

    def line_for(self, name: str) -> int:
        """The 1-based line of the edited code that defines node ``name`` (0 if none)."""
        return self._line_of.get(name, 0)

    def show_source(self, file: str | Path, line: int, *, switch: bool = True) -> None:
        """Show ``file`` in the Source tab with ``line`` marked (and bring the tab forward)."""
        path = Path(file)
        if path != self._source_file:
            if not self._load_source(path):
                return
        self.source.highlight_line(line)
        self.source_label.setText(f" {path.name}:{line}  —  {path}")
        if switch:
            self.tabs.setCurrentIndex(1)

    def _load_source(self, path: Path) -> bool:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        self._source_file = path
        self.source.set_code(text)
        self.source_label.setText(f" {path.name}  —  {path}")
        return True

    def _edited_line_clicked(self, line: int, word: str) -> None:
        if self.doc is None:
            return
        name = self._node_at.get(line)
        if name is None:
            return
        if line == self._line_of.get(name) and word and self.doc.find(word) is not None:
            first = self.doc.find(word)
            if first.op == "placeholder":
                name = word  # the def line: the parameter clicked on
        node = self.doc.find(name)
        if node is not None:
            self.selection.set([self.doc.id_of(node)])
