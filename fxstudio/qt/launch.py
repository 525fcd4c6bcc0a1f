"""Starting the window for ``fxstudio [MODEL]``: the application, recovery offer, ``--replay`` and
``--screenshot``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from fxstudio.core.errors import EditRefused, ScriptError
from fxstudio.resources import DEFAULT_EXAMPLE, ICON_PNG, example_path
from fxstudio.timing import mark


def _qt_messages(mode, context, message: str) -> None:
    # The offscreen platform warns about every top-level window; that says nothing to a user.
    if "propagateSizeHints" in message:
        return
    print(message, file=sys.stderr)


GUI_SWITCH_INTERVAL_S = 0.0005
"""How long a thread holding the interpreter lock keeps it when another asks (Python's default: 5 ms)."""


def make_app() -> QApplication:
    """The QApplication (created once), styled."""
    from PySide6.QtCore import qInstallMessageHandler

    from fxstudio.qt import stall_trace, stall_watch
    from fxstudio.qt.gui_gc import install_gui_thread_collector
    from fxstudio.qt.style import apply_app_style

    existing = QApplication.instance()
    if existing is not None:
        return existing
    qInstallMessageHandler(_qt_messages)
    app = QApplication([sys.argv[0]])
    app.setApplicationName("fxstudio")
    app.setOrganizationName("fxstudio")
    app.setApplicationDisplayName("fxstudio")
    app.setDesktopFileName("fxstudio")  # Wayland links the window to packaging/linux/fxstudio.desktop
    if ICON_PNG.is_file():  # an installation without the icon still starts
        app.setWindowIcon(QIcon(str(ICON_PNG)))
    apply_app_style(app)
    install_gui_thread_collector(app)  # widgets in cycles are never deleted off the GUI thread
    stall_trace.install(stall_watch.install(app))  # only with FXSTUDIO_STALL_LOG (and _TRACE) set
    # Every paint, slot and event filter written in Python takes the interpreter lock back from the
    # worker holding it: by default that worker keeps it up to 5 ms, and a frame that calls Python
    # a hundred times waited up to 0.5 s behind a load, a run or an export (issue #25).
    sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    return app


def settle(app: QApplication, seconds: float = 0.3) -> None:
    """Process events for a moment (layouts, deferred redraws) before grabbing the window."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)


def _read_edits(path: str | None) -> list[dict] | None:
    if not path:
        return None
    import os

    from fxstudio.core.edits import load_script

    edits = load_script(path)["edits"]
    folder = os.path.dirname(os.path.abspath(path))
    for edit in edits:  # a pass file named relative to the script, as `fxstudio apply` reads it
        if isinstance(edit, dict) and isinstance(edit.get("file"), str) and not os.path.isabs(edit["file"]):
            edit["file"] = os.path.join(folder, edit["file"])
    return edits


def launch(args, options: dict, size: tuple[int, int]) -> int:
    """Run the GUI for the parsed ``args``; returns the exit status."""
    app = make_app()
    spec = args.model or str(example_path(DEFAULT_EXAMPLE))
    edits = _read_edits(args.replay)
    if args.screenshot:
        return _screenshot(app, spec, options, edits, args, size)
    window = start_window(spec, options, edits, args.select, trust_passes=bool(getattr(args, "trust_passes", False)))
    if getattr(args, "test_geometry", None):
        from fxstudio.qt.test_geometry import install

        install(window, args.test_geometry)
    return int(app.exec())


def start_window(spec: str, options: dict, edits: list[dict] | None = None, select: str | None = None,
                 trust_passes: bool = False):
    """Show the main window and, once the event loop runs: offer a recovery, open ``spec``, then
    apply ``edits`` and select ``select``. Returns the window (``launch`` then runs the loop)."""
    from fxstudio.qt.main_window import MainWindow
    from fxstudio.qt.recovery import offer_recovery, pick_journal

    window = MainWindow()
    window.show()

    def start() -> None:
        mark("window_shown")
        entry = pick_journal(spec, window)
        same_model = entry is not None and _same(entry.model, spec)
        if same_model and offer_recovery(window, spec):
            return
        window.open_path(spec, origin="argument", options=options)
        QTimer.singleShot(0, lambda: mark("progress_shown"))
        _once(window.open_flow.opened, lambda _doc: _after_open(window, spec, edits, select, entry, same_model,
                                                                          trust_passes))

    QTimer.singleShot(0, start)
    return window


def _once(signal, slot) -> None:
    """Connect ``slot`` for the next emission of ``signal`` only."""
    def run(*a):
        signal.disconnect(run)
        slot(*a)
    signal.connect(run)


def _after_open(window, spec, edits, select, entry, same_model, trust_passes: bool = False) -> None:
    """After the model named on the command line opened: --replay, --select, other recoveries."""
    from fxstudio.qt.recovery import offer_recovery

    if window.spec is None or not _same(window.spec, spec):
        return  # that load failed and the user opened something else: the options were for it
    if edits:
        _trust_script_passes(window, edits, trust_passes)
        window.apply_edits(edits, source="--replay")
    if select:
        _select(window, select)
    if entry is not None and not same_model:
        QTimer.singleShot(0, lambda: offer_recovery(window, None))


def _trust_script_passes(window, edits: list[dict], trust: bool) -> None:
    """With ``--trust-passes``: the pass files the replayed script names are trusted by this window
    (as if the user had said Yes to each), so ``run_pass`` / ``replace_pattern`` edits replay."""
    if trust:
        window.passes.trust_files([e["file"] for e in edits if isinstance(e, dict) and isinstance(e.get("file"), str)])


def _same(a: str, b: str) -> bool:
    """Whether two model specs name the same file and entry."""
    from fxstudio.core.journal import model_key

    return model_key(a) == model_key(b)


def _select(window, name: str) -> bool:
    doc = window.document
    node = doc.find(name) if doc is not None else None
    if node is None:
        window.statusBar().showMessage(f"No node named {name!r}", 6000)
        return False
    window.selection.set([doc.id_of(node)])
    return True


def _screenshot(app, spec: str, options: dict, edits, args, size: tuple[int, int]) -> int:
    from fxstudio.qt.main_window import MainWindow

    out = Path(args.screenshot)
    if out.suffix.lower() not in (".png", ".jpg", ".jpeg", ".bmp"):
        raise ScriptError(f"--screenshot needs an image file name ending in .png, not {out.name!r}")
    if not out.parent.exists():
        raise ScriptError(f"--screenshot: the folder {out.parent} does not exist")
    # A screenshot is the first-run window: default layout, nothing autosaved or remembered.
    window = MainWindow(autosave=False, persist=False)
    try:
        _render(app, window, spec, options, edits, args, size, out)
    finally:
        window.autosave = False
        window.document = None  # nothing to ask about on close
        window.close()
        window.deleteLater()
    print(f"fxstudio: wrote {out} ({size[0]}x{size[1]})")
    return 0


def _report_journals(window, spec: str) -> None:
    """Non-interactive recovery: malformed journals are moved aside and named (Problems, stderr);
    unsaved work of this model is never replayed into a screenshot, only mentioned."""
    from fxstudio.qt.recovery import abandoned_journals

    kept = [e for e in abandoned_journals(window, echo=True) if _same(e.model, spec)]
    if kept:
        window.problems.add("info", "journal", f"{len(kept)} abandoned journal(s) of this model with unsaved edits "
                            "kept: start fxstudio on it without --screenshot to recover them.")


def _render(app, window, spec: str, options: dict, edits, args, size: tuple[int, int], out: Path) -> None:
    """Open ``spec`` in ``window`` synchronously, replay and select, then grab the window to ``out``."""
    window.resize(*size)
    window.show()
    settle(app, 0.1)
    _report_journals(window, spec)
    window.open_path(spec, origin="argument", options=options, sync=True)
    if edits:
        _trust_script_passes(window, edits, bool(getattr(args, "trust_passes", False)))
    if edits and not window.apply_edits(edits, source="--replay"):
        messages = [m for m in window.problems.messages() if m[0] == "error"]
        raise EditRefused(messages[0][2] if messages else "an edit of --replay was refused")
    if args.select and not _select(window, args.select):
        raise ScriptError(f"--select: the graph has no node named {args.select!r}")
    settle(app, 0.4)
    for view in window.views.values():
        lazy = getattr(view, "lazy", None)
        if lazy is not None:
            lazy.flush()
    if args.select:
        window.canvas.zoom_by(1.0 / window.canvas.zoom())  # readable cards around the selected node
        window.canvas.center_on_node(window.selection.current())
    else:
        window.canvas.show_start()  # what a user sees on opening: readable cards, not a tiny overview
    settle(app, 0.3)
    if not window.grab().save(str(out)):
        raise ScriptError(f"--screenshot: could not write {out}")
