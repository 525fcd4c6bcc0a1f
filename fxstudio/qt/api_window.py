"""The window of ``fxstudio.edit`` and ``fxstudio.show`` (``fxstudio/api.py``): a main window on a
module of the calling program, and the ``EditSession`` handle that waits for it to close.

Waiting runs a local ``QEventLoop`` (as a modal dialog's ``exec`` does), so it works the same with
no event loop running (a plain script: the loop runs while the caller waits), from inside a running
one (a slot, IPython's ``%gui qt`` input hook: a nested loop, no deadlock) and twice in a row.
"""

from __future__ import annotations

import copy
import os
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QThread, QTimer, Signal
from PySide6.QtWidgets import QApplication

from fxstudio.qt.main_window import MainWindow

VIEW_ONLY = ("This window is view only (opened by fxstudio.show): nothing can be edited here. "
             "To edit the graph, open it with fxstudio.edit(...).")
"""The refusal of every edit in a ``fxstudio.show`` window."""

TEST_GEOMETRY_ENV = "FXSTUDIO_TEST_GEOMETRY"
"""For input-driven tests: the file the window keeps its geometry in (``--test-geometry`` of the CLI)."""

_open_sessions: list["EditSession"] = []
_collector_ours = False  # whether the first session installed the GUI-thread garbage collector


class ApiWindow(MainWindow):
    """The main window on an in-memory model: closing it hands the edits back to the caller
    (no Save/Discard question), and a view-only window says so in its title."""

    closed = Signal()

    def __init__(self, *, view_only: bool = False):
        self.view_only = view_only
        self.api_document = None  # the in-memory model's document (set by EditSession)
        super().__init__()

    def confirm_discard(self, action: str) -> bool:
        """Never asks about the in-memory model: its edits are not lost, ``result()`` returns them.
        A model file opened in this window afterwards is asked about as in any window."""
        if self.document is not None and self.document is self.api_document:
            return True
        return super().confirm_discard(action)

    def update_chrome(self) -> None:
        """The main window's chrome, with "(view only)" in the title of a ``show`` window."""
        super().update_chrome()
        if self.view_only and self.document is not None:
            self.setWindowTitle(self.windowTitle().replace(" — fxstudio", " (view only) — fxstudio", 1))

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        """The main window's close, then ``closed`` (the session's edits are final) if it closed."""
        super().closeEvent(event)
        if event.isAccepted():
            self.closed.emit()


class EditSession(QObject):
    """The handle of one ``fxstudio.edit`` / ``show`` window (see ``fxstudio.api``)."""

    finished = Signal()

    def __init__(self, loaded, *, view_only: bool = False):
        """Open the window on ``loaded`` (a ``LoadedModel`` of kind "memory") and show it."""
        global _collector_ours
        from fxstudio.core.document import Document
        from fxstudio.qt.gui_gc import collecting_here, install_gui_thread_collector
        from fxstudio.qt.launch import make_app

        collecting = collecting_here()
        app = make_app()
        super().__init__()  # no parent: the caller's handle owns it (a child of the app would live as long as the app)
        install_gui_thread_collector(app)  # an application fxstudio did not start (IPython's %gui qt) too
        if not collecting:  # given back to Python when the last window of fxstudio.edit/show closes
            _collector_ours = True
        self.view_only = view_only
        self.document = Document(loaded)
        if view_only:
            self.document.read_only = VIEW_ONLY
        self._final_script: dict | None = None
        self.closed = False
        window = ApiWindow(view_only=view_only)
        window.api_document = self.document
        self.window: ApiWindow | None = window
        window.closed.connect(self._on_closed)
        window.destroyed.connect(self._on_destroyed)
        window.set_document(self.document, None, {})
        geometry = os.environ.get(TEST_GEOMETRY_ENV)
        if geometry:
            from fxstudio.qt.test_geometry import install

            install(window, geometry)
        window.show()
        if QApplication.platformName() != "offscreen":  # offscreen warns that it cannot raise
            window.raise_()
        window.activateWindow()
        name = loaded.entry or "the model"
        window.statusBar().showMessage(
            f"Viewing {name} from Python (view only). Close the window to return." if view_only else
            f"Editing {name} from Python: close the window (Ctrl+Q) to return the edited module.", 15000)
        _open_sessions.append(self)

    # ------------------------------------------------------------------ the handle

    @property
    def script(self) -> dict:
        """The edit script recorded so far (the JSON of File ▸ Save Edit Script, docs/edit-scripts.md);
        after the window closed, the script of the edits it returned. A copy: yours to change."""
        if self._final_script is not None:
            return copy.deepcopy(self._final_script)
        return copy.deepcopy(self.document.edit_script())

    def save_script(self, path: str | os.PathLike) -> Path:
        """Write ``script`` to ``path`` (what Save Edit Script writes); returns the path."""
        from fxstudio.core.edits import save_script

        save_script(Path(path), self.script)
        return Path(path)

    def done(self) -> bool:
        """Whether the window was closed."""
        return self.closed

    def wait(self, timeout: float | None = None) -> bool:
        """Process Qt events until the window is closed or ``timeout`` seconds passed; True if closed."""
        if self.closed:
            return True
        _check_gui_thread("wait for the window")
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        loop = QEventLoop()
        self.finished.connect(loop.quit)
        timer = QTimer()
        timer.setSingleShot(True)
        timer.timeout.connect(loop.quit)
        try:
            # again if the loop was ended by someone else (QApplication.quit() exits every loop)
            while not self.closed:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    timer.start(max(1, int(left * 1000)))
                loop.exec()
        finally:
            timer.stop()
            self.finished.disconnect(loop.quit)
        return self.closed

    def result(self, timeout: float | None = None):
        """Wait for the window to close (processing Qt events) and return the edited
        ``torch.fx.GraphModule``; ``TimeoutError`` if it is still open after ``timeout`` seconds."""
        if not self.wait(timeout):
            raise TimeoutError(f"the fxstudio window is still open after {timeout} s; close it first")
        return self.document.module()

    def close(self) -> None:
        """Close the window as its close button does (the edits are kept for ``result()``)."""
        if self.window is not None:
            self.window.close()

    def _on_destroyed(self, *_args) -> None:
        """The window was deleted without being closed (its parent went, the application ended)."""
        if not self.closed:
            self.window = None  # being destroyed: nothing may be called on it
            self._on_closed()

    def _on_closed(self) -> None:
        global _collector_ours
        self._final_script = self.document.edit_script()
        self.closed = True
        window, self.window = self.window, None
        if window is not None:
            window.deleteLater()
        if self in _open_sessions:
            _open_sessions.remove(self)
        if not _open_sessions and _collector_ours:
            # back to a program that may run no event loop: Python's own collector again
            from fxstudio.qt.gui_gc import uninstall_gui_thread_collector

            uninstall_gui_thread_collector()
            _collector_ours = False
        self.finished.emit()


def _check_gui_thread(what: str) -> None:
    app = QCoreApplication.instance()
    if app is not None and QThread.currentThread() is not app.thread():
        raise RuntimeError(f"fxstudio: {what} on the thread that runs Qt (the main thread), not in a worker thread")


def open_session(loaded, *, view_only: bool = False, block: bool = True) -> EditSession:
    """Open an ``ApiWindow`` on ``loaded``; with ``block`` wait until it is closed."""
    app = QCoreApplication.instance()
    if app is not None and not isinstance(app, QApplication):
        raise RuntimeError("fxstudio: a QCoreApplication without widgets is running; the window needs a QApplication")
    _check_gui_thread("open the window")
    session = EditSession(loaded, view_only=view_only)
    if block:
        session.wait()
    return session
