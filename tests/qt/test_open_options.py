"""Open with Options: the way out of a trace failure in the window, the File menu dialog, the
Examples menu's per-example options, and the options remembered in the autosave journal."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from shiboken6 import isValid
from window_support import LOAD_TIMEOUT_MS, isolated, make_window  # noqa: F401

from fxstudio.core import journal
from fxstudio.resources import EXAMPLES_DIR

DATA_BRANCH = EXAMPLES_DIR / "data_branch.py"


def click(widget) -> None:
    """A left click in the middle of ``widget`` (its viewport for a text box), as a user gives focus."""
    target = widget.viewport() if hasattr(widget, "viewport") else widget
    QTest.mouseClick(target, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, target.rect().center())


def type_into(qtbot, widget, text: str) -> None:
    """Click ``widget``, then replace its text by typing into whatever has the focus."""
    click(widget)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is widget)
    focused = QApplication.focusWidget()
    QTest.keyClick(focused, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClick(focused, Qt.Key.Key_Delete)
    QTest.keyClicks(focused, text)


def shown_dialog(qtbot, win):
    qtbot.waitUntil(lambda: win.open_flow.options_dialog is not None and win.open_flow.options_dialog.isVisible())
    dialog = win.open_flow.options_dialog
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=5000)
    return dialog


def wait_document(qtbot, win, name: str):
    qtbot.waitUntil(lambda: win.document is not None and win.document.loaded.path.name == name,
                    timeout=LOAD_TIMEOUT_MS)
    return win.document


def test_failure_dialog_offers_the_suggested_fix_in_one_click(qtbot, make_window):
    win = make_window()
    assert win.open_path(DATA_BRANCH, origin="argument")  # as `fxstudio data_branch.py`, no flag
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and win.last_failure_dialog.isVisible(),
                    timeout=LOAD_TIMEOUT_MS)
    failure = win.last_failure_dialog
    button = failure.options_button
    assert button is not None and button.isVisible() and button.text() == "Open with options…"
    click(button)
    dialog = shown_dialog(qtbot, win)
    assert not isValid(failure) or not failure.isVisible()  # closed (and deleted on close)
    # Filled in from the diagnosis: the model, the tracer, the concrete arg that decides the branch.
    assert dialog.model.text() == str(DATA_BRANCH)
    assert dialog.tracer.currentData() == "fx"
    assert dialog.concrete.toPlainText() == "positive=True"
    click(dialog.open_button)
    doc = wait_document(qtbot, win, "data_branch.py")
    assert win.options["concrete_args"] == ["positive=True"]
    assert any("concrete args positive=True" in note for note in doc.loaded.notes)
    assert doc.find("mul") is not None  # the positive branch: x * 2
    # The journal remembers how the model was opened, so a recovery traces it the same way.
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "3"})
    entries = journal.journals_of(win.spec, abandoned_only=False)
    assert entries and entries[0].options.get("concrete_args") == ["positive=True"]


def test_file_menu_dialog_checks_fields_then_opens_with_them(qtbot, make_window):
    win = make_window()
    entries = {a.objectName(): a for a in win.menus["file"].actions()}
    assert "action_openwithoptions" in entries
    entries["action_openwithoptions"].trigger()
    dialog = shown_dialog(qtbot, win)
    assert dialog.model.text() == "" and dialog.concrete.toPlainText() == ""
    type_into(qtbot, dialog.model, str(DATA_BRANCH))
    type_into(qtbot, dialog.concrete, "positive=os.system('x')")
    click(dialog.open_button)
    # Refused by the argument syntax: the dialog stays, says why, and nothing opens.
    assert dialog.isVisible() and dialog.error.isVisible() and "positive" in dialog.error.text()
    assert win.document is None and not win.open_flow.busy
    type_into(qtbot, dialog.concrete, "positive=False")
    type_into(qtbot, dialog.leaves, "no such/name")
    click(dialog.open_button)
    assert dialog.isVisible() and "not a name" in dialog.error.text()
    assert QApplication.focusWidget() is dialog.leaves  # the bad field has the focus, to fix it
    QTest.keyClick(dialog.leaves, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClick(dialog.leaves, Qt.Key.Key_Delete)
    click(dialog.open_button)
    doc = wait_document(qtbot, win, "data_branch.py")
    assert win.options["concrete_args"] == ["positive=False"] and win.options["tracer"] == "fx"
    assert doc.find("neg") is not None and doc.find("mul") is None  # the other branch: -x
    # Opening the dialog again starts from what is shown now.
    win.actions["open_options"].trigger()
    again = shown_dialog(qtbot, win)
    assert again is not dialog and again.concrete.toPlainText() == "positive=False"
    again.reject()


def test_examples_menu_opens_data_branch_with_its_options(qtbot, make_window):
    win = make_window()
    entries = {a.objectName(): a for a in win.menus["examples"].actions()}
    entries["example_data_branch"].trigger()
    doc = wait_document(qtbot, win, "data_branch.py")
    assert win.last_failure_dialog is None
    assert win.options == {"concrete_args": ["positive=True"]}
    assert doc.find("mul") is not None


def test_journal_options_are_data_checked_before_use():
    """Options read back from a journal are data (docs/CONTRACTS.md "Trust boundary"): malformed ones are refused with a
    message, and an autowrap dotted path that would import a module is dropped."""
    import sys

    import pytest

    from fxstudio.core.errors import LoadError
    from fxstudio.qt.open_flow import data_safe_options, load_options

    assert load_options({"concrete_args": ["positive=True", "n=(1, 2)"], "leaf_modules": ["layer1.0"]}) == {
        "concrete_args": {"positive": True, "n": (1, 2)}, "leaf_modules": ("layer1.0",)}
    for bad, says in (({"concrete_args": "positive=True"}, "list of texts"),
                      ({"concrete_args": ["positive=__import__('os')"]}, "--concrete-arg positive="),
                      ({"leaf_modules": ["a;b"]}, "not a name"),
                      ({"autowrap_functions": [3]}, "list of texts")):
        with pytest.raises(LoadError, match=says):
            load_options(bad)
    assert "fxs_never_imported_module" not in sys.modules
    safe = data_safe_options({"autowrap_functions": ["helper", "torch.relu", "fxs_never_imported_module.fn"]})
    assert safe["autowrap_functions"] == ["helper", "torch.relu"]
    assert "fxs_never_imported_module" not in sys.modules


def test_the_window_journals_its_options_as_the_data_it_reads_back():
    """The options a window journals are those ``load_options`` reads, as data: lists of texts and
    numbers; unset ones are left out."""
    from fxstudio.core.journal_schema import check_options
    from fxstudio.qt.open_flow import load_options

    window_options = {"tracer": "fx", "input_shapes": [(2, 4)], "trust": False, "leaf_modules": ("layer1.0",),
                      "concrete_args": ["positive=True"], "autowrap_functions": []}
    data = load_options(window_options, as_data=True)
    assert data == {"tracer": "fx", "input_shapes": [[2, 4]], "leaf_modules": ["layer1.0"],
                    "concrete_args": ["positive=True"]}
    assert check_options(data) == data
    assert load_options(data) == load_options(window_options) == {
        "tracer": "fx", "input_shapes": [(2, 4)], "leaf_modules": ("layer1.0",), "concrete_args": {"positive": True}}


def test_a_remedy_adds_to_the_options_that_failed():
    from fxstudio.qt.open_flow import with_remedy

    failed = {"tracer": "fx", "concrete_args": ["n=3", "positive=None"], "leaf_modules": ["a"], "trust": True}
    fix = with_remedy(failed, {"tracer": "fx", "concrete_args": ["positive=True"], "leaf_modules": ["b"]})
    assert fix == {"tracer": "fx", "concrete_args": ["n=3", "positive=True"], "leaf_modules": ["a", "b"],
                   "trust": True}
