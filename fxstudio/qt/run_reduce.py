"""The run pane's "Reduce to repro…" row, beside the first divergence: one click shrinks the problem
the last run found (the first divergence, or the edited graph's exception) to the smallest subgraph
that still shows it, and writes it as a standalone ``.py`` (``fxstudio.core.reduce``).

The reduction and the check of the written file in a fresh Python process run in a worker thread
(``workers.BackgroundTask``) with progress and Cancel; at the end the row says what was written,
with links to open the repro and to show it in its folder.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from fxstudio.core.errors import FxStudioError
from fxstudio.qt.run_controls import EditedSnapshot
from fxstudio.qt.workers import BackgroundTask

_ERROR = "<span style='color:#c62828'>{}</span>"


class ReduceRow(QWidget):
    """A Reduce button, its progress bar and Cancel, and the outcome with Open / Show in folder links.

    Hidden until the pane shows a report with a first divergence or an edited-graph exception
    (``offer``). ``pane`` is the ``RunPane``: the document, the inputs and the tolerances come from it.
    """

    def __init__(self, pane) -> None:
        super().__init__(pane)
        self.pane = pane
        self.task: BackgroundTask | None = None
        self.node: str | None = None
        self.written: Path | None = None
        self.button = QPushButton("Reduce to repro…")
        self.button.setToolTip("Shrink this problem to the smallest subgraph that still shows it and save it as "
                               "a standalone .py with its captured inputs (checked in a fresh Python process)")
        self.button.clicked.connect(lambda _checked=False: self.ask())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.bar = QProgressBar()
        self.bar.setRange(0, 100)
        self.bar.setMaximumWidth(160)
        self.bar.setMaximumHeight(12)
        self.bar.setTextVisible(False)
        self.label = QLabel()  # one line; the whole message is its tooltip
        self.label.linkActivated.connect(self._link)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.button)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        layout.addWidget(self.label, 1)
        self._busy(False)
        self.setVisible(False)

    def offer(self, report) -> None:
        """Show the row for ``report`` when it found something to reduce (None: hide it)."""
        if self.task is not None:
            return
        failure = getattr(report, "error", None)
        first = getattr(report, "first_divergence", None)
        if failure is not None and failure.graph == "edited":
            self.node, what = failure.node_name, "the exception"
        elif failure is None and first is not None:
            self.node, what = first.name, "the first divergence"
        else:
            self.node = None
        self._say("" if self.node is None else f"Save {what} at %{html.escape(self.node)} as a small repro.")
        self.setVisible(self.node is not None)

    def ask(self) -> bool:
        """Ask where to save the repro, then reduce; False when nothing was started."""
        doc = self.pane.doc
        if doc is None or self.node is None or self.task is not None:
            return False
        stem = Path(doc.loaded.path).stem if doc.loaded.path is not None else "model"
        folder = Path(doc.loaded.path).parent if doc.loaded.path is not None else Path.cwd()
        path, _ = QFileDialog.getSaveFileName(self, "Save repro", str(folder / f"{stem}_repro.py"), "Python (*.py)")
        if not path:
            return False
        if not path.endswith(".py"):
            path += ".py"
        return self.reduce_to(Path(path)) is not None

    def reduce_to(self, path: Path) -> BackgroundTask | None:
        """Reduce the offered problem and write ``path`` off the GUI thread; the task, or None."""
        from fxstudio.core.reduce import reduce_graphs, write_repro

        doc, node = self.pane.doc, self.node
        if doc is None or node is None or self.task is not None:
            return None
        try:
            rtol, atol = float(self.pane.rtol.text()), float(self.pane.atol.text())
            if not (rtol >= 0 and atol >= 0) or math.isinf(rtol + atol):
                raise ValueError
            inputs = self.pane.inputs_editor.inputs(doc)
        except ValueError:
            self._say(_ERROR.format("rtol and atol must be non-negative numbers, e.g. 1e-5."))
            return None
        except FxStudioError as exc:
            self._say(_ERROR.format(html.escape(str(exc))))
            return None
        doc.module()  # compiled here: the worker must not race the views for it
        snapshot, original, loaded = EditedSnapshot(doc), doc.original, doc.loaded
        seed = self.pane.inputs_editor.seed_value()
        about = [f"Source model: {loaded.display_name}; {doc.history_index} edit(s) made in fxstudio; "
                 f"run on {self.pane.inputs_editor.describe()}."]

        def work(ctx):
            ctx.progress("Preparing the edited graph", 0.0)
            reduction = reduce_graphs(original, snapshot.module(), inputs, node=node, rtol=rtol, atol=atol,
                                      seed=seed if seed is not None else 0, cancel=lambda: ctx.cancelled,
                                      progress=lambda fraction, text: ctx.progress(text, 0.85 * fraction))
            ctx.progress("Checking the repro in a fresh Python process", 0.85)
            written = write_repro(reduction, path, loaded=loaded, about=about, cancel=lambda: ctx.cancelled)
            return reduction, written

        task = BackgroundTask(work, name="reduce", parent=self)
        task.progress.connect(lambda text: self._say(html.escape(text) + "…"))
        task.fraction.connect(self.bar.setValue)
        task.succeeded.connect(self._succeeded)
        task.failed.connect(self._failed)
        task.cancelled_signal.connect(self._cancelled)
        self.task = task
        self.written = None
        self.bar.setValue(0)
        self._busy(True)
        return task.start()

    def cancel(self) -> None:
        """Stop waiting for the reduction: nothing is written (the worker stops at its next step)."""
        if self.task is not None:
            self.task.cancel()

    def _succeeded(self, result) -> None:
        reduction, written = result
        self._end()
        (_, esub), (_, ewhole) = reduction.sub_nodes, reduction.whole_nodes
        self.written = written.path
        found = reduction.verdict.removeprefix("reproduced: ")
        self._say(f"Wrote {html.escape(written.path.name)}: {esub} of {ewhole} nodes ({100 * esub / max(ewhole, 1):.1f}%), "
                  f"{reduction.kind} reproduced in a fresh process. "
                  "<a href='open'>Open</a> · <a href='folder'>Show in folder</a>",
                  f"{written.path}\n{found}")

    def _failed(self, exc, _tb: str) -> None:
        self._end()
        message = str(exc) if isinstance(exc, FxStudioError) else f"{type(exc).__name__}: {exc}"
        self._say(_ERROR.format(html.escape(_clip(message))), message)

    def _cancelled(self) -> None:
        self._end()
        self._say("Reduction cancelled; nothing was written.")

    def _say(self, text: str, tooltip: str = "") -> None:
        self.label.setText(text)
        self.label.setToolTip(tooltip)

    def _end(self) -> None:
        if self.task is not None:
            self.task.deleteLater()
        self.task = None
        self._busy(False)

    def _busy(self, busy: bool) -> None:
        self.button.setEnabled(not busy)
        self.bar.setVisible(busy)
        self.cancel_button.setVisible(busy)

    def _link(self, which: str) -> None:
        if self.written is not None:
            target = self.written if which == "open" else self.written.parent
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(target)))


def _clip(message: str, limit: int = 160) -> str:
    """The first line of ``message``, cut to ``limit`` characters (the tooltip has all of it)."""
    line = message.strip().splitlines()[0] if message.strip() else message
    return line if len(line) <= limit else line[:limit - 1] + "…"
