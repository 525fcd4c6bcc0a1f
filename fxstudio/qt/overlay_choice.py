"""The numeric overlays of the window: which one colours the canvas, measuring it off the GUI thread,
and View ▸ Overlay, Load Node Data…, Save Node Data….

``OverlayChoice(canvas, run_pane, parent)`` puts a ``ScaleLegend`` (chooser, colour bar, status) in
the canvas's bottom-left corner. Choosing an overlay:

- *Divergence* gives the canvas back to the last run's tolerance tints (``overlays.py``);
- *Accumulated error* takes the Run pane's last report rows when they are for the graph as it is,
  else measures;
- *Isolated error*, *SQNR*, *Time*, *Peak memory* are measured together, once per graph state, by
  ``fxstudio.core.overlays.compute_metrics`` in a ``BackgroundTask`` (the Run pane's device, dtype
  and inputs), then each is only a recolouring;
- *Loaded node data* shows the file last read by Load Node Data….

Colours go through ``GraphCanvas.set_metric_overlay`` (by node id: cards drawn later, the minimap
and the zoomed-out overview get them too); module frames' tooltips give the frame's total; the Run
pane's graph-diff list shows each added or changed node's value in a column of its own.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from fxstudio.core.errors import FxStudioError
from fxstudio.core.overlays import DATA, MEASURED, NodeMetrics, compute_metrics, error_from_divergence
from fxstudio.core.overlays import load_node_data, save_node_data
from fxstudio.qt.canvas.overlay_scale import CHOICES, DIVERGENCE, ScaleLegend, metric_marks, pale
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.run_controls import EditedSnapshot
from fxstudio.qt.workers import BackgroundTask

TOTAL_WORDS = {"sum": "total", "max": "worst", "min": "worst"}


class OverlayChoice(QObject):
    """Chooses, measures and shows the canvas's numeric overlay (module docstring)."""

    def __init__(self, canvas, run_pane, parent: QWidget | None = None):
        super().__init__(parent)
        self.canvas, self.run_pane, self.parent_widget = canvas, run_pane, parent
        self.doc = None
        self.key = DIVERGENCE
        self.measured: NodeMetrics | None = None   # every measured metric, for the graph as it was
        self.loaded: NodeMetrics | None = None     # node data read from a file
        self.stale = False                          # the graph changed since ``measured``
        self.task: BackgroundTask | None = None
        self.dialog: QFileDialog | None = None
        self.legend = ScaleLegend(canvas)
        self.legend.chosen.connect(self.choose)
        self.legend.hide()
        self.actions: dict[str, QAction] = {}
        self._subscription = DocumentSubscription(self._document_changed)
        canvas.viewport().installEventFilter(self)
        run_pane.report_ready.connect(self._report_ready)

    # -- window wiring ---------------------------------------------------------------------------
    def add_to_menu(self, view: QMenu) -> None:
        """View ▸ Overlay (one checkable entry per choice), Load Node Data…, Save Node Data…."""
        menu = view.addMenu("&Overlay")
        group = QActionGroup(self)
        for key, text in CHOICES:
            action = QAction(text, self)
            action.setCheckable(True)
            action.setChecked(key == self.key)
            action.setObjectName(f"action_overlay_{key}")
            action.triggered.connect(lambda _on=False, k=key: self.choose(k))
            group.addAction(action)
            menu.addAction(action)
            self.actions[key] = action
        self.actions["load"] = view.addAction("Load Node Data…", self.open_load_dialog)
        self.actions["save"] = view.addAction("Save Node Data…", self.open_save_dialog)
        self.actions["load"].setStatusTip("Colour the graph by a Model Explorer node-data JSON file")
        self.actions["save"].setStatusTip("Write the overlay shown as a Model Explorer node-data JSON file")
        view.addSeparator()

    def set_document(self, doc) -> None:
        """Follow ``doc`` (None: nothing open); what was measured or loaded for another is dropped."""
        self._cancel_task()
        self.doc = doc
        self._subscription.follow(doc)
        self.measured = self.loaded = None
        self.stale = False
        self.key = DIVERGENCE
        self.legend.set_key(DIVERGENCE)
        self.legend.show_scale(None)
        self._diff_column(None)
        self._check_action(DIVERGENCE)
        self.legend.setVisible(doc is not None)
        self._place()

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        """Keep the legend in the viewport's bottom-left corner."""
        if event.type() == QEvent.Type.Resize:
            self._place()
        return False

    # -- choosing --------------------------------------------------------------------------------
    def choose(self, key: str) -> None:
        """Show overlay ``key`` (a key of ``CHOICES``), measuring it first when needed."""
        self.key = key
        self.legend.set_key(key)
        self._check_action(key)
        if self.doc is None:
            return
        if key == DIVERGENCE:
            self._cancel_task()
            self.canvas.set_metric_overlay(None)
            self._diff_column(None)
            self.legend.show_scale(None)
        elif key == DATA:
            if self.loaded is None:
                self.canvas.set_metric_overlay({})
                self._diff_column(None)
                self.legend.show_scale(None, status="No node data loaded: View ▸ Load Node Data…")
            else:
                self.show(self.loaded, DATA)
        elif key == "error" and self._report_rows() is not None:
            self.show(error_from_divergence(self._report_rows(), self.doc.edited.graph), "error")
        elif self.measured is not None and not self.stale and key in self.measured.values:
            self.show(self.measured, key)
        else:
            self.measure()
        self._place()

    def show(self, metrics: NodeMetrics, key: str) -> None:
        """Colour the canvas by ``metrics``'s ``key``: tints and tooltip lines by node id, frame totals."""
        info = metrics.info(key)
        tints, texts = metric_marks(metrics, key, self.doc)
        word = TOTAL_WORDS[info.total]
        frames = {path: f"{info.title} ({word} inside): {metrics.text(key, total)}"
                  for path, total in metrics.frames.get(key, {}).items()}
        self.canvas.set_metric_overlay(tints, {nid: f"{info.title}: {t}" for nid, t in texts.items()}, frames)
        self._diff_column(info.title, texts, {nid: pale(c) for nid, c in tints.items()})
        where = f" on {metrics.device}" if metrics.device else ""
        timed = f", median of {metrics.repeats}" if key == "time" and metrics.repeats else ""
        note = f"{len(texts):,} nodes{where}{timed}" + (" (graph edited since)" if self.stale and metrics is self.measured else "")
        self.legend.show_scale(metrics, key, note)
        self._place()

    def measure(self) -> None:
        """Measure every metric for the graph as it is now, in a worker; the chosen one is shown after."""
        if self.task is not None:
            return
        doc, pane = self.doc, self.run_pane
        try:
            inputs = pane.inputs_editor.inputs(doc)
            snapshot = EditedSnapshot(doc)
        except FxStudioError as exc:
            self.legend.show_scale(None, status=str(exc))
            return
        device = pane.device.currentText()
        dtype = None if pane.dtype.currentIndex() == 0 else pane.dtype.currentText()
        seed = pane.inputs_editor.seed_value()
        original = doc.original

        def work(ctx):
            return compute_metrics(original, snapshot.module(), inputs, metrics=MEASURED, device=device, dtype=dtype,
                                   seed=seed, progress=lambda f, text: ctx.progress(text, f),
                                   cancel=lambda: ctx.cancelled)

        task = BackgroundTask(work, name="overlay", parent=self)
        task.succeeded.connect(lambda result, d=doc: self._measured(d, result))
        task.failed.connect(lambda exc, _tb: self._failed(exc))
        task.fraction.connect(lambda pct: self.legend.set_status(f"Measuring on {device}… {pct}%"))
        self.task = task
        self.legend.show_scale(None, status=f"Measuring on {device}…")
        self._place()
        task.start()

    # -- files -----------------------------------------------------------------------------------
    def load_from(self, path: str) -> bool:
        """Read node data from ``path`` and show it; a refusal is shown in the legend. True if read."""
        if self.doc is None:
            return False
        try:
            self.loaded = load_node_data(path, self.doc.edited.graph)
        except FxStudioError as exc:
            self.legend.setVisible(True)
            self.legend.show_scale(None, status=str(exc))
            self._place()
            return False
        self.choose(DATA)
        return True

    def save_to(self, path: str) -> bool:
        """Write the overlay shown as Model Explorer node data; True if written."""
        metrics = self.shown_metrics()
        if metrics is None:
            self.legend.set_status("Choose a measured overlay first: the divergence has no node data.")
            return False
        try:
            save_node_data(path, metrics, self.key)
        except (FxStudioError, OSError) as exc:
            self.legend.set_status(f"Cannot write {path}: {getattr(exc, 'strerror', None) or exc}")
            return False
        self.legend.set_status(f"Wrote {path}")
        return True

    def shown_metrics(self) -> NodeMetrics | None:
        """The ``NodeMetrics`` behind the overlay shown (None for the divergence or nothing yet)."""
        if self.key == DATA:
            return self.loaded
        if self.key == "error" and self._report_rows() is not None and self.doc is not None:
            return error_from_divergence(self._report_rows(), self.doc.edited.graph)
        if self.measured is not None and self.key in self.measured.values:
            return self.measured
        return None

    def open_load_dialog(self) -> None:
        """View ▸ Load Node Data…: a non-blocking file dialog."""
        self._open_dialog(QFileDialog.AcceptMode.AcceptOpen, self.load_from)

    def open_save_dialog(self) -> None:
        """View ▸ Save Node Data…: a non-blocking file dialog."""
        self._open_dialog(QFileDialog.AcceptMode.AcceptSave, self.save_to)

    # -- internals ---------------------------------------------------------------------------------
    def _open_dialog(self, mode, slot) -> None:
        if self.doc is None:
            return
        dialog = QFileDialog(self.parent_widget, "Node data (Model Explorer JSON)")
        dialog.setAcceptMode(mode)
        dialog.setNameFilter("Node data (*.json)")
        dialog.setDefaultSuffix("json")
        dialog.fileSelected.connect(slot)
        self.dialog = dialog
        dialog.open()

    def _report_rows(self):
        report = getattr(self.run_pane, "report", None)
        if report is None or getattr(self.run_pane, "stale", False) or not getattr(report, "nodes", None):
            return None
        return report.nodes

    def _report_ready(self, _report) -> None:
        if self.key == "error":
            self.choose("error")

    def _measured(self, doc, result: NodeMetrics) -> None:
        self.task = None
        if doc is not self.doc:
            return
        self.measured, self.stale = result, False
        if self.key in result.values:
            self.show(result, self.key)
        else:
            self.legend.set_status("")

    def _failed(self, exc) -> None:
        self.task = None
        self.canvas.set_metric_overlay({})
        self._diff_column(None)
        self.legend.show_scale(None, status=str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
        self._place()

    def _diff_column(self, title: str | None, texts: dict | None = None, colours: dict | None = None) -> None:
        """The overlay's values in the Run pane's graph-diff list too (a column; None removes it)."""
        view = getattr(self.run_pane, "diff_view", None)
        if view is not None and hasattr(view, "set_metric"):
            view.set_metric(title, texts, colours)

    def _cancel_task(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    def _document_changed(self, event) -> None:
        if event.kind in ("edited", "undone", "redone", "reset"):
            self.stale = self.measured is not None or self.stale

    def _check_action(self, key: str) -> None:
        action = self.actions.get(key)
        if action is not None and not action.isChecked():
            action.setChecked(True)

    def _place(self) -> None:
        vp = self.canvas.viewport().geometry()
        self.legend.adjustSize()
        self.legend.move(vp.left() + 10, vp.bottom() - self.legend.height() - 10)
        self.legend.raise_()
