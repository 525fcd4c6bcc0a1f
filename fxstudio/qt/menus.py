"""The window's actions, menus and toolbar, with the shortcuts desktop users expect."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QToolBar

from fxstudio.qt.canvas.view import ZOOM_STEP
from fxstudio.qt.canvas.repeat_fold import set_fold_repeats
from fxstudio.qt.actions.report_action import ReportAction
from fxstudio.qt.diff import DiffActions
from fxstudio.qt.shortcuts_dialog import show_shortcuts
from fxstudio.resources import EXAMPLES_DIR


def _action(window: QMainWindow, text: str, slot, shortcuts=(), tip: str = "", name: str = "") -> QAction:
    action = QAction(text, window)
    if shortcuts:
        action.setShortcuts([QKeySequence(s) if isinstance(s, str) else QKeySequence(s) for s in shortcuts])
    if tip:
        action.setStatusTip(tip)
        action.setToolTip(tip)
    action.setObjectName(name or "action_" + "".join(c for c in text.lower() if c.isalnum()))
    action.triggered.connect(lambda _checked=False: slot())
    window.addAction(action)  # shortcuts work even when the menu bar is hidden
    return action


def examples() -> list[Path]:
    """The built-in example model files, by name."""
    return sorted(EXAMPLES_DIR.glob("*.py"))


def build_actions(w) -> dict[str, QAction]:
    """Every action of the window ``w`` (a ``MainWindow``), by key."""
    a = {
        "delete": w.structure.erase,
        "open": _action(w, "&Open…", w.open_dialog, [QKeySequence.StandardKey.Open], "Open a model file (.py, .pt2, .pt)"),
        "open_options": _action(w, "Open with O&ptions…", lambda: w.open_flow.ask_options_and_open(), [],
                                "Open a model with a tracer, concrete args, leaf modules, autowrap functions, shapes"),
        "save": _action(w, "&Save Edit Script", w.save_script, [QKeySequence.StandardKey.Save], "Save the edits as a replayable edit script"),
        "save_as": _action(w, "Save Edit Script &As…", w.save_script_as, ["Ctrl+Shift+S"], "Save the edits to a new edit script"),
        "replay": _action(w, "&Apply Edit Script…", w.replay_dialog, [], "Apply the edits of a saved script to this model"),
        "export": _action(w, "&Export…", w.export_dialog, ["Ctrl+E"],
                          "Export the edited module as a standalone .py, or through torch.export as a .pt2; verified"),
        # StandardKey.Quit is empty outside KDE/GNOME themes (a bare X session, offscreen): Ctrl+Q then
        "quit": _action(w, "&Quit", w.close, QKeySequence.keyBindings(QKeySequence.StandardKey.Quit)
                        or [QKeySequence("Ctrl+Q")], "Quit fxstudio"),
        "undo": _action(w, "&Undo", w.undo, ["Ctrl+Z"], "Undo the last edit"),
        "redo": _action(w, "&Redo", w.redo, ["Ctrl+Shift+Z", "Ctrl+Y"], "Redo the edit undone last"),
        "find": _action(w, "&Find…", w.focus_find, [QKeySequence.StandardKey.Find], "Find nodes by name, op or target"),
        "find_next": _action(w, "Find &Next", w.find_next, [QKeySequence.StandardKey.FindNext], "Next match"),
        "fit": _action(w, "&Fit Graph", lambda: w.canvas.fit_readable(), ["F"],
                       "Fit the widest layer readably, with the inputs in view"),
        "fit_all": _action(w, "Fit &All", lambda: w.canvas.fit(), ["Shift+F"], "Fit the whole graph in the canvas"),
        "zoom_in": _action(w, "Zoom &In", lambda: w.canvas.zoom_by(ZOOM_STEP), [QKeySequence.StandardKey.ZoomIn, "Ctrl+="],
                           "Zoom in on the canvas"),
        "zoom_out": _action(w, "Zoom &Out", lambda: w.canvas.zoom_by(1 / ZOOM_STEP), [QKeySequence.StandardKey.ZoomOut],
                            "Zoom out of the canvas"),
        "zoom_reset": _action(w, "&Reset Zoom (100%)", lambda: w.canvas.reset_zoom(), ["Ctrl+0"],
                              "Zoom the canvas to 100%"),
        "minimap": _action(w, "&Minimap", lambda: None, [], "Show the minimap in the canvas corner", "action_minimap"),
        "fold_weights": _action(w, "Fold &Weights into Cards", lambda: None, [],
                                "Draw a weight used by one operation as a row of that operation's card",
                                "action_fold_weights"),
        "fold_repeats": _action(w, "Fold &Repeated Blocks", lambda: None, [],
                                "Draw each run of identical blocks (GPT-2's layers, a ResNet stage) as its first "
                                "block and one card for the others; a block that differs (an edit, a divergence "
                                "in the last run) stays unfolded", "action_fold_repeats"),
        "shortcuts": _action(w, "&Keyboard Shortcuts", lambda: show_shortcuts(w), ["F1"],
                             "Every keyboard shortcut of the window and the canvas"),
        "about": _action(w, "&About fxstudio", w.about, [], "About fxstudio"),
        "clear_recent": _action(w, "Clear Recent Files", w.clear_recent, [], "Forget the recent files"),
        "reset_layout": _action(w, "Reset Window Layout", w.reset_layout, [], "Put the docks back where they started"),
    }
    for key, short in (("undo", "Undo"), ("redo", "Redo")):
        a[key].setIconText(short)  # the toolbar stays short; the menu names the edit
    _connect_minimap(w, a["minimap"])
    _connect_fold_weights(w, a["fold_weights"])
    _connect_fold_repeats(w, a["fold_repeats"])
    w.report_action = ReportAction(w)  # File ▸ Save Report… (built off the GUI thread)
    a["report"] = w.report_action.action
    w.diff_actions = DiffActions(w)  # File ▸ Diff With… / Diff Against Original (qt/diff)
    a["diff_with"], a["diff_original"] = w.diff_actions.with_file, w.diff_actions.against_original
    return a


def _remembered_toggle(action: QAction, on: bool, show, remember) -> None:
    """Make ``action`` a checkable View toggle starting at ``on``: each toggle calls ``show(checked)``
    and ``remember(checked)`` (the setting)."""
    action.setCheckable(True)
    action.setChecked(on)
    show(on)

    def set_on(checked: bool) -> None:
        show(checked)
        remember(checked)

    action.toggled.connect(set_on)


def _connect_fold_weights(w, action: QAction) -> None:
    """View ▸ Fold Weights into Cards: checkable, remembered in settings (on by default)."""
    _remembered_toggle(action, w.prefs.fold_weights(), w.canvas.set_fold_weights, w.prefs.set_fold_weights)


def _connect_fold_repeats(w, action: QAction) -> None:
    """View ▸ Fold Repeated Blocks: checkable, unchecked again when the last run is unfolded on the canvas."""
    action.setCheckable(True)
    action.toggled.connect(lambda on: set_fold_repeats(w.canvas, on))

    def unfolded() -> None:
        action.blockSignals(True)
        action.setChecked(False)
        action.blockSignals(False)

    w.canvas.repeats.unfolded_all = unfolded


def _connect_minimap(w, action: QAction) -> None:
    """View ▸ Minimap: checkable, in step with the minimap's own toggle, remembered in settings."""
    _remembered_toggle(action, w.prefs.minimap_shown(), w.canvas.set_minimap_shown, w.prefs.set_minimap_shown)
    w.canvas.minimap_toggled.connect(action.setChecked)


def build_menus(w, actions: dict[str, QAction]) -> dict[str, QMenu]:
    """The menu bar: File, Edit, View, Help; returns the menus by key (recent, examples included)."""
    bar = w.menuBar()
    menus: dict[str, QMenu] = {}
    file = bar.addMenu("&File")
    file.addAction(actions["open"])
    file.addAction(actions["open_options"])
    menus["recent"] = file.addMenu("Open &Recent")
    menus["recent"].setObjectName("menu_recent")
    menus["recent"].aboutToShow.connect(w.populate_recent)
    menus["examples"] = file.addMenu("E&xamples")
    _fill_examples(w, menus["examples"])
    file.addSeparator()
    for key in ("save", "save_as", "replay", "export", "report"):
        file.addAction(actions[key])
    file.addSeparator()
    file.addAction(actions["diff_with"])
    file.addAction(actions["diff_original"])
    file.addSeparator()
    file.addAction(actions["quit"])
    edit = bar.addMenu("&Edit")
    for key in ("undo", "redo"):
        edit.addAction(actions[key])
    edit.addSeparator()
    structure = w.structure.actions()
    edit.addActions(structure)  # Insert before/after, Erase (Delete), Replace uses, Duplicate, Rename, DCE
    w.addActions(structure)
    menus["structure"] = edit
    edit.addSeparator()
    edit.addActions(w.passes.pass_actions())          # Run Pass…, Replace Pattern…
    edit.addSeparator()
    edit.addActions(w.passes.selection_actions())     # Insert after each…, Swap target of all…, Erase all
    w.addActions([*w.passes.pass_actions(), *w.passes.selection_actions()])
    edit.addSeparator()
    edit.addAction(actions["find"])
    edit.addAction(actions["find_next"])
    view = bar.addMenu("&View")
    for key in ("fit", "fit_all", None, "zoom_in", "zoom_out", "zoom_reset", None, "minimap", "fold_weights", "fold_repeats"):
        if key is None:
            view.addSeparator()
        else:
            view.addAction(actions[key])
    view.addSeparator()
    menus["view"] = view
    help_menu = bar.addMenu("&Help")
    help_menu.addAction(actions["shortcuts"])
    ex = help_menu.addMenu("E&xample Models")
    _fill_examples(w, ex)
    help_menu.addSeparator()
    help_menu.addAction(actions["about"])
    menus["file"], menus["edit"], menus["help"] = file, edit, help_menu
    return menus


def add_dock_toggles(w, menu: QMenu, docks: dict) -> None:
    """Show/hide entries for each dock under View (Alt+1…)."""
    for dock in docks.values():
        menu.addAction(dock.toggleViewAction())
    menu.addSeparator()
    menu.addAction(w.actions["reset_layout"])


def _fill_examples(w, menu: QMenu) -> None:
    for path in examples():
        act = menu.addAction(path.stem.replace("_", " "))
        act.setToolTip(str(path))
        act.setObjectName(f"example_{path.stem}")
        act.triggered.connect(partial(lambda p, _c=False: w.open_example(p), path))


def build_toolbar(w, actions: dict[str, QAction]) -> QToolBar:
    """The main toolbar: open, save, export, undo, redo, find, fit."""
    bar = QToolBar("Main", w)
    bar.setObjectName("toolbar_main")
    bar.setMovable(False)
    for key in ("open", "save", "export", None, "undo", "redo", None, "find", "fit"):
        if key is None:
            bar.addSeparator()
        else:
            bar.addAction(actions[key])
    w.addToolBar(bar)
    return bar
