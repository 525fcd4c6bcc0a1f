"""Worker threads never find dropped widgets for the cyclic collector to delete off the GUI thread."""

from __future__ import annotations

import gc
import weakref

from PySide6.QtWidgets import QWidget

from fxstudio.qt.workers import BackgroundTask


def test_dropped_widgets_in_a_cycle_are_collected_on_the_gui_thread_before_a_worker_starts(qtbot):
    was_enabled = gc.isenabled()
    gc.disable()   # so that nothing but the worker start collects the cycle
    try:
        widget = QWidget()
        widget.itself = widget   # a reference cycle: only the cyclic collector frees it
        ref = weakref.ref(widget)
        del widget
        assert ref() is not None
        seen = []
        task = BackgroundTask(lambda ctx: seen.append(ref() is None) or "done", name="probe")
        with qtbot.waitSignal(task.succeeded, timeout=5000) as got:
            task.start()
        assert got.args == ["done"] and seen == [True]
    finally:
        if was_enabled:
            gc.enable()
