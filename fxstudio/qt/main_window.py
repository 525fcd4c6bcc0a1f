"""The editor window: canvas in the centre, docks around it, menus, status bar, autosave.

The window owns the document and the selection; every view gets ``set_document(doc)`` and follows
the ``SelectionModel``. The window redraws its own chrome (title, status bar, action states) from
``DocumentEvent``s and writes the autosave journal after every edit, undo and redo.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox

from fxstudio.core import journal
from fxstudio.core.errors import FxStudioError
from fxstudio.core.node_text import META_HIDDEN
from fxstudio.qt import canvas_keyboard, menus
from fxstudio.qt.actions.pass_actions import PassActions
from fxstudio.qt.actions.structure_actions import StructureActions
from fxstudio.qt.canvas.overlays import connect_run_pane
from fxstudio.qt.overlay_choice import OverlayChoice
from fxstudio.qt.canvas.rewire import warm_fake_checks
from fxstudio.qt.canvas.view import GraphCanvas
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.docks import build_docks, default_sizes
from fxstudio.qt.input_offer import InputOffer
from fxstudio.qt.open_dialogs import ask_unsaved
from fxstudio.qt.open_flow import MODEL_SUFFIXES, OpenFlow, load_options
from fxstudio.qt.selection import SelectionModel
from fxstudio.qt.settings import Preferences, make_settings
from fxstudio.qt.style import apply_style
from fxstudio.qt.window_commands import WindowCommands
from fxstudio.qt.window_fit import keep_on_screen, place_first

STATE_VERSION = 1


WARM_FAKE_AFTER_MS = 1000
"""How long after a model is shown its fake-tensor checks start warming (an import of ~1 s)."""


class MainWindow(WindowCommands, QMainWindow):
    """fxstudio's main window. ``document`` is the open ``Document`` or None."""

    document_changed = Signal(object)

    def __init__(self, settings: QSettings | None = None, *, autosave: bool = True, persist: bool = True):
        """``autosave``: write the crash journal; ``persist``: restore and save layout and recent files."""
        super().__init__()
        self.setObjectName("fxstudioMainWindow")
        self.settings = settings if settings is not None else make_settings()
        self.prefs = Preferences(self.settings)
        self.autosave = autosave
        self.persist = persist
        self.document = None
        self.spec: str | None = None
        self.options: dict = {}
        self.script_path: Path | None = None
        self.journal: journal.Journal | None = None  # this window's own autosave journal
        self.last_failure_dialog = None
        self.last_export = None  # the last ExportResult, or the exception that stopped it
        self._subscription = DocumentSubscription(self._on_event)
        self._rejection_note = ""  # the nodes the last edit made torch reject, as the status bar says them
        self._rejection_shown = ""  # the status-bar message that says it (cleared when an undo takes it back)
        self._tasks: list = []
        self.selection = SelectionModel(self)
        apply_style(self)
        self.canvas = GraphCanvas(self.selection)
        self.setCentralWidget(self.canvas)
        self.dock_set = build_docks(self, self.selection)
        self.docks, self.views = self.dock_set.docks, self.dock_set.views
        self.code, self.table = self.views["code"], self.views["table"]
        self.problems, self.history = self.views["problems"], self.views["history"]
        self.properties = self.views["properties"]
        self.run_pane = self.views["run"]
        self.structure = StructureActions(lambda: self.document, self.selection, self)
        self.passes = PassActions(lambda: self.document, self.selection, self.settings, self, self.prefs.last_dir)
        self.actions = menus.build_actions(self)
        self.menus = menus.build_menus(self, self.actions)
        self.overlay_choice = OverlayChoice(self.canvas, self.run_pane, self)   # View ▸ Overlay, node data
        self.overlay_choice.add_to_menu(self.menus["view"])
        menus.add_dock_toggles(self, self.menus["view"], self.docks)
        self.toolbar = menus.build_toolbar(self, self.actions)
        self._connect_views()
        self._build_status_bar()
        self.open_flow = OpenFlow(self)
        self.input_offer = InputOffer(self)  # a model opened without example inputs: offer to give them
        self.setAcceptDrops(True)
        self._default_state = self.saveState(STATE_VERSION)
        self._restore_settings()
        self.update_chrome()

    # ------------------------------------------------------------------ construction

    def _connect_views(self) -> None:
        self.properties.edit_refused.connect(lambda msg: self.report_refusal(msg))
        self.canvas.edit_refused.connect(lambda msg: self.report_refusal(msg))
        canvas_keyboard.connect(self)   # F2/Enter → Properties, hints → status bar, first-run hint
        self.run_pane.node_activated.connect(lambda node_id: self.selection.set([node_id]))
        connect_run_pane(self.canvas, self.run_pane)
        self.structure.edit_refused.connect(lambda msg: self.report_refusal(msg))
        self.structure.status.connect(lambda msg: self.show_status(msg, 6000))
        self.passes.edit_refused.connect(lambda msg: self.report_refusal(msg))
        self.passes.status.connect(lambda msg: self.show_status(msg, 8000))
        self.problems.counts_changed.connect(lambda *_: self.update_status())
        self.selection.changed.connect(lambda _ids: self.update_chrome())

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        bar.setObjectName("statusBar")
        self.status_nodes = QLabel("", self)
        self.status_nodes.setObjectName("statusNodes")
        self.status_lint = QLabel("", self)
        self.status_lint.setObjectName("statusLint")
        self.status_edits = QLabel("", self)
        self.status_edits.setObjectName("statusEdits")
        self.status_selected = QLabel("", self)
        self.status_selected.setObjectName("statusSelected")
        for label in (self.status_selected, self.status_nodes, self.status_edits, self.status_lint):
            label.setContentsMargins(8, 0, 8, 0)
            bar.addPermanentWidget(label)

    def _restore_settings(self) -> None:
        geometry = self.settings.value("window/geometry") if self.persist else None
        state = self.settings.value("window/state") if self.persist else None
        self._first_launch = not (isinstance(geometry, QByteArray) and not geometry.isEmpty())
        if not self._first_launch:
            self.restoreGeometry(geometry)
        else:
            place_first(self)   # the default size where the screen holds it
        self._placed = self.size()
        self._restored_state = isinstance(state, QByteArray) and self.restoreState(state, STATE_VERSION)
        self._sized = False

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        super().showEvent(event)
        if not self._sized:
            self._sized = True
            if self._first_launch:   # its frame is known now: title bar and status bar on the screen
                self._fit_screen()
                QTimer.singleShot(250, self, self._fit_screen)   # a window manager may add the frame later
            if not self._restored_state:
                default_sizes(self, self.dock_set)

    def _fit_screen(self) -> None:
        """A first launch: the whole window on its screen, unless the caller sized it (--screenshot)."""
        if self.size() == self._placed:
            keep_on_screen(self)
            self._placed = self.size()

    def reset_layout(self) -> None:
        """Put every dock back where it starts on a first run."""
        self.restoreState(self._default_state, STATE_VERSION)
        for dock in self.docks.values():
            dock.show()
        default_sizes(self, self.dock_set)

    def save_settings(self) -> None:
        """Persist geometry and dock layout (recent files and trust are saved as they change)."""
        if not self.persist:
            return
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState(STATE_VERSION))
        self.settings.sync()

    # ------------------------------------------------------------------ the document

    def set_document(self, doc, spec: str | None = None, options: dict | None = None) -> None:
        """Show ``doc`` in every view; ``spec`` is what was opened (for recent files and the journal)."""
        self.document = doc
        self.spec = spec
        self.options = dict(options or {})
        self.script_path = None
        self.selection.clear()
        self._subscription.follow(doc)
        for view in [self.canvas, *self.views.values()]:
            view.set_document(doc)
        self.overlay_choice.set_document(doc)
        if doc is not None and spec and self.persist and not _is_builtin(spec):
            self.prefs.add_recent(spec)
        self._follow_journal(spec)
        self.write_journal()
        self.update_chrome()
        if doc is not None:
            meta = self.options.get("device") == "meta" and not self.options.get("weights")
            folded = len(self.canvas.collapsed) if self.canvas.collapsed and not self.canvas.repeats.on else 0
            self.statusBar().showMessage(f"Opened {doc.loaded.display_name}"
                                         + (" on the meta device (no weights)" if meta else "")
                                         + (f"; {len(doc.edited.graph.nodes):,} nodes, so its modules are folded "
                                            "(+ on a module opens it)" if folded else ""), 8000 if folded else 5000)
            if not doc.read_only:
                # the first edit or rewire drag then does not wait for torch's import; after the new
                # graph's first frames, whose paints would wait for the importing thread (issue #25)
                QTimer.singleShot(WARM_FAKE_AFTER_MS, warm_fake_checks)
        self.document_changed.emit(doc)

    def ahead_followers(self) -> list:
        """What follows a staged edit in the worker that staged it (``views_ahead.prepare``)."""
        return [self.views["run"].diff_view.update_ahead] if "run" in self.views else []

    def _on_event(self, event) -> None:
        self.problems.follow_event(event)  # before the status bar reads what torch rejects
        if event.kind in ("edited", "undone", "redone", "reset"):
            self.write_journal()
            self._say_rejections(event)
        elif event.kind == "saved":
            self.clear_journal()
        self.update_chrome()

    def _say_rejections(self, event) -> None:
        """Right after an edit (undo, redo) that makes torch reject a node: its name and torch's
        message in the status bar, replacing whatever it said; once none is rejected, that goes."""
        rejected = getattr(event, "rejected", ())
        bar = self.statusBar()
        self._rejection_note = _rejection_line(rejected)
        if rejected:
            self._rejection_shown = self._rejection_note
            bar.showMessage(self._rejection_note)  # stays until the next message: an error to act on
        elif self._rejection_shown:  # an undo took the cause back: the message would be stale
            if bar.currentMessage() == self._rejection_shown and not (self.document and self.document.problems()):
                bar.clearMessage()
            self._rejection_shown = ""

    def show_status(self, message: str, ms: int, *, whole_document: bool = False) -> None:
        """A status-bar message after a gesture, keeping what torch rejects in it when the gesture's
        edit just made a node fail (a pass's label alone would hide that); ``whole_document``: any
        node torch rejects now (after a replay of several edits)."""
        note = self._rejection_note
        if whole_document:
            note = _rejection_line(self.document.problems() if self.document is not None else [])
        if note:
            self._rejection_shown = f"{message} — {note}"
            self.statusBar().showMessage(self._rejection_shown)
        else:
            self.statusBar().showMessage(message, ms)

    def write_journal(self) -> None:
        """Autosave: the edit script of unsaved work, or no journal when there is none."""
        if not self.autosave or self.document is None or not self.spec:
            return
        doc = self.document
        if not doc.dirty:
            self.clear_journal()
            return
        self._follow_journal(self.spec)
        try:
            self.journal.write(
                doc.edit_script(), labels=list(doc.history[: doc.history_index]), groups=doc.edit_groups(),
                options=load_options(self.options, as_data=True),
            )
        except (OSError, FxStudioError) as exc:  # a full disk must not stop editing; say so where it is seen
            self.problems.add("warning", "autosave", f"Could not write the autosave journal: {exc}")

    def clear_journal(self) -> None:
        """Delete this window's journal (the work was saved or discarded); other windows' stay."""
        if self.journal is not None:
            self.journal.clear()

    def _follow_journal(self, spec: str | None) -> None:
        """Give the window a journal of its own for ``spec``; the previous model's is cleared."""
        if not self.autosave:
            return
        key = journal.model_key(spec) if spec else None
        if self.journal is not None and self.journal.model != key:
            self.journal.clear()
            self.journal = None
        if key is not None and self.journal is None:
            self.journal = journal.Journal(spec)

    def update_chrome(self) -> None:
        """Title, action states and status bar from the document's current state."""
        doc = self.document
        if doc is None:
            self.setWindowTitle("fxstudio")
            self.setWindowModified(False)
        else:
            dirty = bool(doc.dirty)
            self.setWindowTitle(f"{doc.loaded.display_name}{' *' if dirty else ''} — fxstudio")  # " *": unsaved edits
        has = doc is not None
        a = self.actions
        a["undo"].setEnabled(has and doc.can_undo)
        a["redo"].setEnabled(has and doc.can_redo)
        if has and doc.can_undo:
            a["undo"].setText(f"&Undo {doc.history[doc.history_index - 1]}")
        else:
            a["undo"].setText("&Undo")
        if has and doc.can_redo:
            a["redo"].setText(f"&Redo {doc.history[doc.history_index]}")
        else:
            a["redo"].setText("&Redo")
        for key in ("save", "save_as", "export", "report", "replay", "find", "find_next", "fit",
                    "fit_all", "zoom_in", "zoom_out", "zoom_reset", "diff_with", "diff_original"):
            a[key].setEnabled(has)
        self.structure.update_enabled()
        self.passes.update_enabled()
        self.update_status()

    def _plumbing_count(self, doc) -> int:
        """How many of the edited graph's nodes are export plumbing that no view draws
        (``_guards_fn``): the status bar counts the nodes the file holds, as Netron and Model
        Explorer do. Counted once per edit (the status bar updates with every selection)."""
        key = (id(doc), doc.history_index, len(doc.edited.graph.nodes))
        if getattr(self, "_plumbing_key", None) != key:
            self._plumbing_key = key
            self._plumbing = sum(1 for n in doc.edited.graph.nodes
                                 if n.op == "call_module" and not n.users and n.meta.get(META_HIDDEN))
        return self._plumbing

    def update_status(self) -> None:
        """The permanent status-bar fields: selection, node count, edits, lint verdict."""
        doc = self.document
        if doc is None:
            for label in (self.status_nodes, self.status_lint, self.status_edits, self.status_selected):
                label.setText("")
            return
        count = len(doc.edited.graph.nodes) - self._plumbing_count(doc)
        self.status_nodes.setText(f"{count:,} nodes")
        n = doc.history_index
        self.status_edits.setText(
            f"{n} edit{'s' if n != 1 else ''}" + (", unsaved" if doc.dirty else (", saved" if n else ""))
        )
        rejected = self.problems.rejections
        if self.problems.lint_message:
            self.status_lint.setText("lint: ✖ fails")
            self.status_lint.setToolTip(self.problems.lint_message)
            self.status_lint.setStyleSheet("color: #c0392b;")
        elif rejected:  # never "ok" while torch rejects a node
            more = f" (+{len(rejected) - 1})" if len(rejected) > 1 else ""
            self.status_lint.setText(f"lint: ✖ torch rejects %{rejected[0].name}{more}")
            self.status_lint.setToolTip("\n".join(p.line for p in rejected[:20]))
            self.status_lint.setStyleSheet("color: #c0392b;")
        elif self.problems.checks.status == "unknown":  # nor where torch's checks could not run
            self.status_lint.setText("lint: ? unknown")
            self.status_lint.setToolTip(self.problems.checks_message or "Some shapes are unknown: torch's checks "
                                        "could not run there (see Problems)")
            self.status_lint.setStyleSheet("color: #8a6d1e;")
        else:
            self.status_lint.setText("lint: ✔ ok")
            self.status_lint.setToolTip("The edited graph passes graph.lint()")
            self.status_lint.setStyleSheet("color: #2e7d32;")
        node = doc.node(self.selection.current()) if self.selection.current() is not None else None
        self.status_selected.setText(f"selected: {node.name} ({node.op})" if node is not None else "")

    # ------------------------------------------------------------------ opening

    def open_path(self, spec, *, origin: str = "dialog", options: dict | None = None, edits=None,
                  sync: bool = False) -> bool:
        """Open a model file (see ``OpenFlow.open``); the result arrives later unless ``sync``."""
        return self.open_flow.open(spec, origin=origin, options=options, edits=edits, sync=sync)

    def open_example(self, path: Path) -> bool:
        """Open a built-in example."""
        return self.open_path(path, origin="example")

    def confirm_discard(self, action: str) -> bool:
        """Before ``action`` drops unsaved edits: ask Save/Discard/Cancel; True to go ahead."""
        doc = self.document
        if doc is None or not doc.dirty:
            return True
        answer = ask_unsaved(self, doc.loaded.display_name, action)
        if answer == QMessageBox.StandardButton.Save:
            return self.save_script()
        if answer == QMessageBox.StandardButton.Discard:
            self.clear_journal()
            return True
        return False

    def show_source(self, file: str, line: int) -> None:
        """Show ``file`` at ``line`` in the Code dock's Source tab."""
        self.docks["code"].show()
        self.docks["code"].raise_()
        self.code.show_source(file, line)

    def report_refusal(self, message: str, node: str | None = None) -> None:
        """A refused edit from any view: Problems dock (naming the node when known) and status bar."""
        self.problems.add_refusal(message, node if isinstance(node, str) else None)
        self.statusBar().showMessage(f"Refused: {message.splitlines()[0] if message else ''}", 8000)

    # ------------------------------------------------------------------ window events

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 (Qt override)
        if self.open_flow.busy:
            self.open_flow.cancel()
        if not self.confirm_discard("closing"):
            event.ignore()
            return
        self.save_settings()
        if self.document is None or not self.document.dirty:
            self.clear_journal()
        self._subscription.follow(None)
        event.accept()

    def dragEnterEvent(self, event) -> None:  # noqa: N802 (Qt override)
        if _dropped_model(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:  # noqa: N802 (Qt override)
        self.dragEnterEvent(event)

    def dropEvent(self, event) -> None:  # noqa: N802 (Qt override)
        path = _dropped_model(event.mimeData())
        if path is None:
            event.ignore()
            return
        event.acceptProposedAction()
        # Open after the drop returns: a modal question inside a drop handler blocks the drag source.
        QTimer.singleShot(0, lambda: self.open_path(path, origin="drop"))


def _rejection_line(rejected) -> str:
    """``torch rejects %mul: TypeError: ...`` for the first of ``rejected`` (``NodeProblem``s), and how many more."""
    if not rejected:
        return ""
    more = f" (+{len(rejected) - 1} more; see Problems)" if len(rejected) > 1 else ""
    return f"{rejected[0].line}{more}"


def _dropped_model(mime) -> Path | None:
    if not mime.hasUrls():
        return None
    for url in mime.urls():
        if url.isLocalFile():
            path = Path(url.toLocalFile())
            if path.suffix.lower() in MODEL_SUFFIXES and path.is_file():
                return path
    return None


def _is_builtin(spec: str) -> bool:
    from fxstudio.qt.open_flow import is_example

    return is_example(Path(spec.partition("::")[0]))
