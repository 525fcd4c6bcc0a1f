"""Shared test set-up: Qt runs offscreen, and examples are found by name."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if os.environ["QT_QPA_PLATFORM"] == "offscreen":
    # A desktop-sized screen (the plain offscreen one is 800x800): a window opens at its default
    # 1600x1000 here, as it does on the screens it is made for (main_window fits a smaller one).
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={os.path.join(os.path.dirname(__file__), 'offscreen_screen.json')}"
# Tests run two at a time on small machines; one torch thread each avoids oversubscription
# (OpenMP workers spinning against each other turn a 3 ms forward into a second).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The CLI's last resort turns an unanticipated exception into one line; in tests it re-raises with its
# traceback, so a missed check fails the test that asserts "no traceback" instead of hiding in exit 2.
os.environ.setdefault("FXSTUDIO_DEBUG", "1")

import pytest  # noqa: E402

from fxstudio.resources import EXAMPLES_DIR  # noqa: E402


@pytest.fixture(autouse=True)
def _qt_garbage_on_the_gui_thread(request):
    """After a Qt test, delete the windows and widgets it closed here, on the GUI thread.

    ``deleteLater`` waits for an event loop, and widgets caught in reference cycles wait for the
    cyclic garbage collector, which runs on whichever thread allocates next: often a loading
    worker of the next test, and Qt crashes deleting a widget off the GUI thread.
    """
    yield
    if "qtbot" not in request.fixturenames:
        return
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture
def examples_dir():
    """The folder of the built-in example models."""
    return EXAMPLES_DIR


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test (timings and OpenMP spinning on a shared machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
