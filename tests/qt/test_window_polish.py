"""Small things of the window that users meet first (issue #26, items 5 and 14): the first window
fits the screen, Find forgets the last model's query, the loading dialog's title reads whole,
"Open with options…" only where options can help, a click on empty canvas keeps the selection,
and `make run` without a display ends on fxstudio's own message."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from fxstudio.resources import EXAMPLES_DIR
from tests.qt.canvas_support import empty_spot
from tests.qt.window_support import LOAD_TIMEOUT_MS, isolated, make_window, open_and_wait  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parents[2]

FIRST_LAUNCH = textwrap.dedent("""
    import json
    from fxstudio.qt.launch import make_app, settle
    from fxstudio.qt.main_window import MainWindow

    app = make_app()
    win = MainWindow(autosave=False, persist=False)   # no saved geometry: a first launch
    win.show()
    settle(app, 0.6)
    avail, frame = win.screen().availableGeometry(), win.frameGeometry()
    bar = win.statusBar()
    bottom = bar.mapToGlobal(bar.rect().bottomLeft()).y()
    print(json.dumps({"avail": [avail.x(), avail.y(), avail.width(), avail.height()],
                      "frame": [frame.x(), frame.y(), frame.width(), frame.height()],
                      "bar_bottom": bottom, "bar_visible": bar.isVisible()}))
""")


def test_the_first_window_fits_a_screen_smaller_than_its_default_size(tmp_path):
    from fxstudio.qt.window_fit import DEFAULT_SIZE, first_geometry
    from PySide6.QtCore import QRect

    screen = tmp_path / "screen.json"
    screen.write_text(json.dumps({"screens": [{"name": "laptop", "x": 0, "y": 0, "width": 1366, "height": 768,
                                               "logicalDpiX": 96, "logicalDpiY": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={screen}", "PYTHONPATH": str(ROOT),
           "FXSTUDIO_CONFIG_DIR": str(tmp_path / "config"), "FXSTUDIO_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run([sys.executable, "-c", FIRST_LAUNCH], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    ax, ay, aw, ah = got["avail"]
    fx, fy, fw, fh = got["frame"]
    assert (aw, ah) == (1366, 768)
    assert ax <= fx and ay <= fy and fx + fw <= ax + aw and fy + fh <= ay + ah   # the whole window on screen
    assert got["bar_visible"] and got["bar_bottom"] < ay + ah                    # the status bar too
    # On a 1600x1000 screen: room for the title bar; on a large one, the default size, centred.
    small = first_geometry(QRect(0, 0, 1600, 1000))
    assert small.height() <= 1000 - 30 and small.top() >= 30 and small.bottom() < 1000
    large = first_geometry(QRect(0, 0, 2560, 1440))
    assert (large.width(), large.height()) == DEFAULT_SIZE and abs(large.center().x() - 1280) <= 2


def test_find_forgets_the_last_models_query(qtbot, make_window):
    win = make_window()
    open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    canvas = win.canvas
    canvas.open_search()
    QTest.keyClicks(canvas.search_bar.edit, "mul")
    assert canvas.matches() == ["mul"] and canvas.search_bar.isVisible()
    open_and_wait(qtbot, win, EXAMPLES_DIR / "sub_chain.py", origin="example")
    assert canvas.search_bar.edit.text() == "" and canvas.matches() == [] and not canvas.search_bar.isVisible()
    assert not any(card.match for card in canvas.canvas_scene.cards.values())


def test_the_loading_dialog_is_wide_enough_for_its_title(qtbot, make_window):
    win = make_window()
    assert win.open_path(EXAMPLES_DIR / "residual_cnn.py", origin="example")
    progress = win.open_flow.progress
    assert progress is not None
    # The window manager writes "Opening model — fxstudio" in the title bar, beside its buttons.
    title = f"{progress.windowTitle()} — {QApplication.applicationDisplayName()}"
    assert progress.minimumWidth() >= QFontMetrics(progress.font()).horizontalAdvance(title) + 160
    qtbot.waitUntil(lambda: win.document is not None and not win.open_flow.busy, timeout=LOAD_TIMEOUT_MS)


def test_open_with_options_is_offered_for_trace_failures_only(qtbot, make_window, tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("import torch\n\nclass Net(torch.nn.Module):\n    def forward(self, x)\n        return x\n")
    win = make_window()
    assert win.open_path(str(bad), origin="argument")
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and win.last_failure_dialog.isVisible(),
                    timeout=LOAD_TIMEOUT_MS)
    failure = win.last_failure_dialog
    assert "syntax error" in failure.label.text() and failure.options_button is None
    failure.close()
    win.last_failure_dialog = None
    assert win.open_path(EXAMPLES_DIR / "data_branch.py", origin="argument")   # a trace failure: options fix it
    qtbot.waitUntil(lambda: win.last_failure_dialog is not None and win.last_failure_dialog.isVisible(),
                    timeout=LOAD_TIMEOUT_MS)
    assert win.last_failure_dialog.options_button is not None
    win.last_failure_dialog.close()


def test_a_click_on_empty_canvas_focuses_it_and_keeps_the_selection(qtbot, make_window):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    canvas = win.canvas
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow)
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     canvas.viewport_pos_of("mul"))
    assert doc.node(win.selection.current()).name == "mul"
    win.properties.setFocus()
    QTest.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, empty_spot(canvas))
    assert QApplication.focusWidget() is canvas and doc.node(win.selection.current()).name == "mul"
    QTest.keyClick(canvas, Qt.Key.Key_Up)   # the canvas's keys act on the selection at once
    assert doc.node(win.selection.current()).name == "add"
    QTest.keyClick(canvas, Qt.Key.Key_Escape)   # Esc clears it
    assert win.selection.current() is None


def test_make_run_without_a_display_ends_on_fxstudios_message(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    venv = Path(sys.executable).parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(FXSTUDIO_CONFIG_DIR=str(tmp_path / "config"), FXSTUDIO_STATE_DIR=str(tmp_path / "state"))
    stamp = venv / ".installed"   # -o: taken as up to date, so make never installs anything here
    proc = subprocess.run(["make", "-o", str(stamp), "run", f"VENV={venv}", f"MODEL={EXAMPLES_DIR / 'add_mul.py'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert "no display found" in out and proc.returncode == 0, out
    assert "Error" not in out and "***" not in out
