"""The run pane: run the original and the edited model on a device, see where they diverge.

Device, dtype and tolerances, the inputs editor, Run (in a worker thread, with progress and
cancel), a metrics table per output, the per-node table, the graph-diff list and the pyqtgraph
plots. Clicking a node's point or row selects it through the ``SelectionModel`` and emits
``node_activated(id)``; ``report_ready(CompareReport)`` gives the window the per-node divergence
(``report.divergence_by_id``) to colour the canvas with.

The Threads box sets torch's threads for the run (``run_controls``; "auto": the policy of
``fxstudio.core.threads``), and the summary says what the run got and why. Each model is timed by
``compare_models``'s automatic default (up to 5 runs within 0.1 s). Run is the ``stall_watch``
action "run", from the click to the report shown; the bar is busy while the run prepares, then
moves with every 1% of the nodes compared (naming the node) and with each timed model.
"""

from __future__ import annotations

import html
import math
import threading
import weakref
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QMetaMethod, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QProgressBar, QPushButton,
    QSplitter, QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget,
)

from fxstudio.core import threads as thread_policy
from fxstudio.core.compare import warm_up_fused_kernel
from fxstudio.core.compare import CompareReport, RunCancelled, available_devices, compare_models
from fxstudio.core.errors import FxStudioError, RunError
from fxstudio.qt.doc_subscription import DocumentSubscription
from fxstudio.qt.graph_diff import GraphDiffView
from fxstudio.qt.run_controls import EditedSnapshot, ThreadsBox, thread_note
from fxstudio.qt.run_inputs_editor import InputsEditor
from fxstudio.qt.run_layout import PlotsArea, fit_tables
from fxstudio.qt.run_nodes_table import STATUS_TEXT, NodesTable, number_text as _num, style_table
from fxstudio.qt.run_plots import RunPlots
from fxstudio.qt.run_reduce import ReduceRow
from fxstudio.qt.selection import SelectionModel
from fxstudio.qt import stall_watch, workers
from fxstudio.qt.workers import start_worker

DTYPES = ["as loaded", "float32", "float16", "bfloat16"]
RUN_START_DELAY_MS = 30
"""Run's worker starts after the repaint its click queued (the plots cleared): with the worker on the
interpreter that repaint took 70-90 ms instead of 20 (issue #25)."""
__all__ = ["RunPane", "STATUS_TEXT", "render_screenshot"]


class _RunJob(QObject):
    """One comparison in a daemon thread; signals arrive queued on the GUI thread."""

    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, fn: Callable, parent: QObject | None = None):
        super().__init__(parent)
        self.fn = fn
        self.doc = None  # the document the run is for; a result for another one is dropped
        self.cancel_event = threading.Event()
        self.thread = threading.Thread(target=self._work, name="fxstudio-run", daemon=True)

    def _work(self) -> None:
        try:
            workers.wait_for_importers()
            report = self.fn(workers.throttled_progress(lambda f, text: self.progress.emit(float(f), text)),
                             self.cancel_event)
        except RunCancelled:
            self.cancelled.emit()
        except FxStudioError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown in the pane, never a crash
            self.failed.emit(f"The run failed unexpectedly: {type(exc).__name__}: {exc}")
        else:
            self.finished.emit(report)


def _item(text: str, *, align_right: bool = False, color: QColor | None = None, data=None) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    if color is not None:
        item.setForeground(QBrush(color))
    if data is not None:
        item.setData(Qt.ItemDataRole.UserRole, data)
    return item


def _table(headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    style_table(table, QHeaderView.ResizeMode.ResizeToContents)
    return table


_warming: list[threading.Thread] = []
_largest: "weakref.WeakKeyDictionary[Any, int | None]" = weakref.WeakKeyDictionary()


def measure_tensors_ahead(doc) -> None:
    """In the worker that loaded ``doc``: its largest tensor, which ``_kernel_worth_loading`` then
    reads instead of walking 3,000 parameters on the GUI thread (20-30 ms of the open's turn)."""
    _largest[doc] = thread_policy.largest_tensor_elements(doc.original, tuple(doc.loaded.example_inputs or ()))


def _kernel_worth_loading(doc) -> bool:
    """Whether a run of ``doc`` may want the comparison kernel: a tensor of it is not small
    (``threads.SMALL_TENSOR_ELEMENTS``, the policy's own line; the kernel loads for pairs of 64k
    elements and up), or its sizes are unknown. A graph of small tensors is compared by numpy."""
    if doc is None:
        return False
    if doc not in _largest:
        measure_tensors_ahead(doc)
    largest = _largest[doc]
    return largest is None or largest >= thread_policy.SMALL_TENSOR_ELEMENTS


def _warm_comparison_kernel_soon(delay_ms: int = 300) -> None:
    """Once per process, just after a run pane is first shown with a document whose run will use
    it (``_kernel_worth_loading``): load the comparison kernel on a worker thread
    (``warm_up_fused_kernel``), so that the first Run does not wait ~0.5 s for it.

    Not at start-up: the import holds the interpreter for about half a second, which would slow
    whatever the user does on a big graph then (selecting took 110 instead of 68 ms in
    ``bench.bench_window``); a user who opens the Run tab is about to run. Nor while a model is
    loading: the load would share the interpreter with it (a 10k-node ``.pt2`` drew 1.5x slower).
    Nor for a graph of small tensors, which never uses the kernel: importing numba holds the
    interpreter in stretches of 0.15-0.2 s, stalls of the window while the user clicks Run."""
    if _warming:
        return
    thread = threading.Thread(target=warm_up_fused_kernel, name="fxstudio-warm-kernel", daemon=True)
    _warming.append(thread)

    def start() -> None:
        if workers.running("open"):
            QTimer.singleShot(500, start)
        else:
            start_worker(thread)
    QTimer.singleShot(delay_ms, start)


class RunPane(QWidget):
    """The dock's widget: settings, Run/Cancel, metrics, per-node and diff lists, plots."""

    node_activated = Signal(int)
    report_ready = Signal(object)
    diff_changed = Signal(object)

    def __init__(self, selection: SelectionModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.selection = selection
        self.doc = None
        self.report: CompareReport | None = None
        self.stale = False
        self._job: _RunJob | None = None
        self._snapshot: EditedSnapshot | None = None  # the edited graph as last run, while unchanged
        self._changed_during_run = False
        self._subscription = DocumentSubscription(self._document_changed)
        self._build()
        selection.changed.connect(self._follow_selection)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        """The first time a run pane is shown with a document that will use the comparison kernel,
        the kernel starts loading."""
        super().showEvent(event)
        self._warm_kernel()

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        """The least height at ``width``: the dock's scroll area asks this (the wrapped status line
        makes the layout height-for-width) and would otherwise get the preferred height, scrolling
        a pane that fits."""
        status = self.status.heightForWidth(max(width - 12, 1)) - self.status.minimumSizeHint().height()
        return self.minimumSizeHint().height() + max(0, status)

    def _warm_kernel(self) -> None:
        if not _warming and self.isVisible() and _kernel_worth_loading(self.doc):
            _warm_comparison_kernel_soon()

    # -- construction ---------------------------------------------------------------------------

    def _build(self) -> None:
        self.device = QComboBox()
        self.device.addItems(available_devices())
        self.device.setToolTip("Where both models run")
        self.dtype = QComboBox()
        self.dtype.addItems(DTYPES)
        self.dtype.setToolTip("Cast the models and their floating inputs for the run")
        self.rtol = QLineEdit("1e-5")
        self.atol = QLineEdit("1e-6")
        for edit, tip in ((self.rtol, "relative tolerance"), (self.atol, "absolute tolerance")):
            edit.setMaximumWidth(70)
            edit.setToolTip(tip)
        self.run_button = QPushButton("Run")
        self.run_button.setMinimumWidth(56)  # under the style's 80: the row fits a 960-pixel dock
        self.run_button.setDefault(True)
        self.run_button.setToolTip("Run the original and the edited graph and compare them node by node")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setMinimumWidth(64)
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.inputs_editor = InputsEditor()
        # Its hint fits "seed 2147483647"; a seed that long scrolls, and the row fits a 960-pixel dock.
        self.inputs_editor.seed.setMinimumWidth(90)
        self.threads = ThreadsBox()

        row = QHBoxLayout()
        row.setSpacing(8)
        for label, widget in (("Device", self.device), ("dtype", self.dtype), ("rtol", self.rtol), ("atol", self.atol),
                              ("Threads", self.threads), ("Inputs", self.inputs_editor)):
            pair = QHBoxLayout()  # a label close to its box, the pairs further apart
            pair.setSpacing(3)
            pair.addWidget(QLabel(label))
            pair.addWidget(widget, 1 if widget is self.inputs_editor else 0)
            row.addLayout(pair, 1 if widget is self.inputs_editor else 0)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)

        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(6)
        self.status = QLabel("Open a model, edit it, then Run to compare the edited graph with the original.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.metrics = _table(["Output", "Shape", "Max abs", "Max rel", "Cosine", "allclose"])
        self.nodes_table = NodesTable()
        self.nodes_table.itemClicked.connect(self._node_row_clicked)
        self.diff_view = GraphDiffView(self.selection)
        self.diff_view.diff_changed.connect(self.diff_changed)
        # Someone besides this pane (the canvas's rings) follows the diff: keep it current at once.
        self.diff_view.live = lambda: self.isSignalConnected(QMetaMethod.fromSignal(self.diff_changed))
        self.tabs = QTabWidget()
        self.tabs.addTab(self.nodes_table, "Nodes")
        self.tabs.addTab(self.diff_view, "Changes")
        self.plots = RunPlots()
        self.plots.node_clicked.connect(self._activate)
        self.plots_area = PlotsArea(self.plots)

        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.metrics)
        left.addWidget(self.tabs)
        left.setStretchFactor(0, 1)
        left.setStretchFactor(1, 3)
        # Reduce to repro (shown after a divergence) heads the tables, below the divergence line:
        # there it takes no height from the plots.
        self.reduce_row = ReduceRow(self)
        left_box = QWidget()
        left_layout = QVBoxLayout(left_box)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.setSpacing(4)
        left_layout.addWidget(self.reduce_row)
        left_layout.addWidget(left, 1)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left_box)
        splitter.addWidget(self.plots_area)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 4)
        splitter.setSizes([460, 940])
        self.splitter = splitter

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(row)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(splitter, 1)
        self._update_enabled()

    # -- document -------------------------------------------------------------------------------

    def set_document(self, doc) -> None:
        """Follow ``doc`` (None: nothing open); a previous report is cleared."""
        self.cancel()
        self.doc = doc
        self._snapshot = None
        self.report = None
        self.stale = False
        self._changed_during_run = False
        self.plots.clear_plots()
        if self.progress.value() > 0:   # setValue repaints the window at once: the canvas's first paint
            self.progress.setValue(0)   # then joined this turn (0.1 s more of the open's stall)
        self.metrics.setRowCount(0)
        self.nodes_table.setRowCount(0)
        self.diff_view.set_document(doc)
        self.reduce_row.offer(None)
        self._subscription.follow(doc)
        self._warm_kernel()
        if doc is not None:
            self.inputs_editor.set_example_inputs(doc.loaded.example_inputs)
            self.status.setText(f"{html.escape(doc.loaded.display_name)}: edit the graph, then Run to compare "
                                "the edited graph with the original.")
        else:
            self.status.setText("Open a model, edit it, then Run to compare the edited graph with the original.")
        self._update_enabled()

    def _document_changed(self, event) -> None:
        if getattr(event, "kind", "edited") == "saved":
            return
        self._snapshot = None
        if self._job is not None:
            self._changed_during_run = True  # the run compares the graph as it was when Run was pressed
        elif self.report is not None and not self.stale:
            self._mark_stale()

    def _mark_stale(self) -> None:
        self.stale = True
        self.status.setText(self.status.text() + "<br><i>The graph changed since this run: Run again.</i>")

    # -- running --------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while a comparison runs in the worker thread."""
        return self._job is not None

    def run(self) -> None:
        """Start a comparison with the current settings (errors in the settings show in the status line)."""
        if self.doc is None or self._job is not None:
            return
        try:
            rtol, atol = float(self.rtol.text()), float(self.atol.text())
            if rtol < 0 or atol < 0 or math.isnan(rtol) or math.isnan(atol):
                raise ValueError
        except ValueError:
            self._show_error("rtol and atol must be non-negative numbers, e.g. 1e-5.")
            return
        try:
            inputs = self.inputs_editor.inputs(self.doc)
        except FxStudioError as exc:
            self._show_error(str(exc))
            return
        doc = self.doc
        # The edited graph as it is now (the user may edit again while the run goes on): copied here,
        # built and compiled on the worker; reused while the document does not change.
        stall_watch.begin("run")
        if self._snapshot is None or self._snapshot.doc is not doc:
            try:
                self._snapshot = EditedSnapshot(doc)
            except Exception as exc:  # noqa: BLE001 - a graph that cannot be copied is shown, not raised
                stall_watch.end("run")
                self._show_error(f"The edited graph cannot be copied for the run: {type(exc).__name__}: {exc}")
                return
        snapshot = self._snapshot
        original, traced = doc.loaded.module, doc.original
        device = self.device.currentText()
        dtype = None if self.dtype.currentText() == DTYPES[0] else self.dtype.currentText()
        seed = self.inputs_editor.seed_value()
        source = self.inputs_editor.describe()
        threads = self.threads.threads()

        def work(progress, cancel):
            progress(0.0, f"preparing the run of {snapshot.nodes:,} nodes")
            try:
                edited = snapshot.module()
            except Exception as exc:  # noqa: BLE001 - a graph that does not compile is shown, not raised
                raise RunError(f"The edited graph cannot be compiled: {type(exc).__name__}: {exc}") from None
            report = compare_models(original, traced, edited, inputs, device=device, dtype=dtype, rtol=rtol,
                                    atol=atol, progress=progress, cancel=cancel, seed=seed, repeats=None,
                                    threads=threads)
            report.notes.insert(0, f"ran on {source}")
            return report

        job = _RunJob(work, self)
        job.doc = doc
        job.progress.connect(self._progress)
        job.finished.connect(self._finished)
        job.failed.connect(self._failed)
        job.cancelled.connect(self._cancelled)
        self._job = job
        self._changed_during_run = False
        # Busy (an animated bar) while the run prepares: copying, compiling and scheduling the
        # graphs report no fraction (0.5-1 s on 3,000 nodes); the first compared node sets a range.
        self.progress.setRange(0, 0)
        self.status.setText(f"Running on {device}{'' if threads is None else f', {threads} thread(s)'}…")
        self._update_enabled()
        QTimer.singleShot(RUN_START_DELAY_MS, job, lambda: start_worker(job.thread))

    def cancel(self) -> None:
        """Ask the running comparison to stop at the next node."""
        if self._job is not None:
            self._job.cancel_event.set()
            self.status.setText("Cancelling…")

    def _progress(self, fraction: float, text: str) -> None:
        if self._job is not None and not self._job.cancel_event.is_set():
            if fraction > 0 and self.progress.maximum() == 0:
                self.progress.setRange(0, 1000)  # the preparation is over: how far along, from here on
            self.progress.setValue(int(fraction * 1000))
            self.status.setText(f"Running on {self.device.currentText()}: {html.escape(text)}")

    def _end_job(self) -> bool:
        """Forget the finished job; False when it ran for a document no longer shown (drop its result)."""
        job, self._job = self._job, None
        self.progress.setRange(0, 1000)
        current = job is None or job.doc is self.doc
        if job is not None:
            job.deleteLater()
        self._update_enabled()
        return current

    def _finished(self, report: CompareReport) -> None:
        if self._end_job():
            self.progress.setValue(1000)
            self.show_report(report, staged=True, done=lambda: stall_watch.end("run"))
        else:
            stall_watch.end("run")

    def _failed(self, message: str) -> None:
        if self._end_job():
            self.progress.setValue(0)
            self._show_error(message)
        self._snapshot = None  # built again next time (a graph that would not compile, say)
        stall_watch.end("run")

    def _cancelled(self) -> None:
        if self._end_job():
            self.progress.setValue(0)
            self.status.setText("Run cancelled.")
        stall_watch.end("run")

    def _show_error(self, message: str) -> None:
        self.status.setText(f"<span style='color:#c62828'>{html.escape(message)}</span>")

    def _update_enabled(self) -> None:
        busy = self._job is not None
        self.run_button.setEnabled(self.doc is not None and not busy)
        self.cancel_button.setEnabled(busy)
        for w in (self.device, self.dtype, self.rtol, self.atol, self.threads, self.inputs_editor):
            w.setEnabled(not busy)

    # -- showing a report -----------------------------------------------------------------------

    def show_report(self, report: CompareReport, *, staged: bool = False,
                    done: Callable[[], None] | None = None) -> None:
        """Fill the summary, tables and plots from ``report`` and emit ``report_ready``, then call
        ``done``. With ``staged`` the plots, then ``report_ready`` (the canvas colours its cards),
        come on the next event-loop turns: on a 3,000-node graph three waits of the window of
        30-70 ms each rather than one of 150 ms (a report replaced meanwhile stops there)."""
        self.report = report
        self.stale = False
        self.status.setText(self._summary(report))
        self.reduce_row.offer(report)
        if self._changed_during_run:
            self._mark_stale()
        self._fill_metrics(report)
        self._fill_nodes(report)
        self._fit_tables()
        self.tabs.setCurrentWidget(self.nodes_table)

        def plots() -> None:
            self.plots.show_report(report)
            self.plots.mark_selected(self.selection.current())
            focus = report.first_divergence or next((n for n in report.nodes if n.status == "error"), None)
            if focus is not None:
                # After the table has laid out its new rows, or the scroll is lost.
                QTimer.singleShot(0, lambda row=focus.index: self._scroll_nodes_to(row))

        stages = [plots, lambda: self.report_ready.emit(report)]

        def next_stage() -> None:
            if self.report is report and stages:
                stages.pop(0)()
            if self.report is report and stages:
                QTimer.singleShot(0, next_stage)
            elif done is not None:
                done()
        if staged:
            QTimer.singleShot(0, next_stage)
        else:
            while stages:
                stages.pop(0)()
            if done is not None:
                done()

    def _fit_tables(self) -> None:
        """Every column of both tables whole (allclose is the last one) and the Output table as high
        as its rows (``run_layout.fit_tables``)."""
        fit_tables(self.splitter, self.metrics, self.nodes_table, self.tabs)

    def _scroll_nodes_to(self, row: int) -> None:
        item = self.nodes_table.item(row, 0)
        if item is not None:
            self.nodes_table.scrollToItem(item, QAbstractItemView.ScrollHint.PositionAtCenter)

    def _summary(self, r: CompareReport) -> str:
        parts = []
        if r.error is not None:
            parts.append(f"<b style='color:#c62828'>{html.escape(r.error.describe())}</b>")
        elif r.first_divergence is not None:
            fd = r.first_divergence
            parts.append(f"<b style='color:#c62828'>First divergence: {html.escape(fd.name)}</b> "
                         f"({html.escape(fd.op)} {html.escape(fd.target)}), max abs error {_num(fd.max_abs)}"
                         + (f", {html.escape(fd.note)}" if fd.note else ""))
        else:
            parts.append("<b style='color:#2e7d32'>No node diverges beyond tolerance.</b>")
        if r.outputs:
            n_ok = sum(o.allclose for o in r.outputs)
            parts.append(f"{n_ok}/{len(r.outputs)} outputs allclose")
        if r.trace_outputs:
            traced_same = all(o.max_abs == 0.0 for o in r.trace_outputs)
            parts.append("tracing changed nothing" if traced_same else "<b>tracing changed the outputs</b>")
        if r.timings_ms:
            parts.append(" · ".join(f"{k} {v:.2f} ms" for k, v in r.timings_ms.items()))
        note = thread_note(r)
        if note:
            parts.append(html.escape(note))
        parts.append(f"{r.device}, {r.dtype or 'dtype as loaded'}, rtol {r.rtol:g}, atol {r.atol:g}")
        return " — ".join(parts[:1]) + "<br>" + " · ".join(parts[1:])

    def _fill_metrics(self, r: CompareReport) -> None:
        table = self.metrics
        table.setRowCount(0)
        for o in r.outputs:
            row = table.rowCount()
            table.insertRow(row)
            shape = "×".join(map(str, o.shape)) if o.shape is not None else "—"
            ok_color = QColor(46, 125, 50) if o.allclose else QColor(198, 40, 40)
            values = [_item(o.path), _item(shape), _item(_num(o.max_abs), align_right=True),
                      _item(_num(o.max_rel), align_right=True), _item(_num(o.cosine, ".6f"), align_right=True),
                      _item(("yes" if o.allclose else "NO") + (f" ({o.note})" if o.note else ""), color=ok_color)]
            for col, item in enumerate(values):
                table.setItem(row, col, item)

    def _fill_nodes(self, r: CompareReport) -> None:
        self.nodes_table.set_report(r)

    # -- selection ------------------------------------------------------------------------------

    def _activate(self, node_id: int) -> None:
        self.selection.set([node_id])
        self.node_activated.emit(node_id)

    def _node_row_clicked(self, item) -> None:
        node_id = self.nodes_table.item(item.row(), 1).data(Qt.ItemDataRole.UserRole)
        if node_id is not None:
            self._activate(int(node_id))

    def _follow_selection(self, ids: list) -> None:
        current = ids[-1] if ids else None
        self.plots.mark_selected(current)
        if self.report is None or current is None:
            return
        for row, n in enumerate(self.report.nodes):
            if n.node_id == current:
                self.nodes_table.blockSignals(True)
                self.nodes_table.selectRow(row)
                self.nodes_table.blockSignals(False)
                self.nodes_table.scrollToItem(self.nodes_table.item(row, 0))
                break

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        """Stop a running comparison with the pane."""
        self.cancel()
        super().closeEvent(event)


def render_screenshot(path: str, model: str = "residual_cnn.py") -> None:
    """Render the pane after a real edit to ``path`` (``python -m fxstudio.qt.run_pane OUT.png``)."""
    from PySide6.QtWidgets import QApplication

    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model
    from fxstudio.resources import example_path

    app = QApplication.instance() or QApplication([])
    doc = Document(load_model(example_path(model)))
    doc.apply_edit({"op": "set_target", "node": "layer1_1_relu", "target": "torch.nn.GELU()"})
    selection = SelectionModel()
    pane = RunPane(selection)
    pane.set_document(doc)
    pane.resize(1400, 600)
    pane.show()
    pane.run()
    while pane.running:
        app.processEvents()
        threading.Event().wait(0.02)
    app.processEvents()
    if pane.report is not None and pane.report.first_divergence is not None:
        selection.set([pane.report.first_divergence.node_id])
    app.processEvents()
    if not pane.grab().save(path):
        raise RunError(f"Could not write {path}")


if __name__ == "__main__":
    import sys

    render_screenshot(sys.argv[1] if len(sys.argv) > 1 else "docs/img/run_pane.png")
