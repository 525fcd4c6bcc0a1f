"""Opening ``.pt2`` archives in the window (issue #15): reopening frees the previous document's
weights, with the application's own garbage collection (``GuiThreadCollector``: automatic
collection off, collections from a GUI-thread timer), not a collection the test runs itself."""

from __future__ import annotations

import threading
import weakref

import pytest
import torch
from torch import nn

from tests.qt.window_support import app_collector, make_window, isolated, open_and_wait  # noqa: F401 - fixtures

WIDTH = 2048  # one 2048×2048 float32 weight: 16 MiB, well above RSS noise
RELEASE_WAIT_MS = 3000


class Wide(torch.nn.Module):
    """One wide linear layer plus a residual add."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return torch.relu(self.a(x)) + x


def save_wide(path):
    """A real ``torch.export.save`` archive of ``Wide``."""
    torch.manual_seed(0)
    torch.export.save(torch.export.export(Wide(), (torch.randn(2, WIDTH),)), path)
    return path


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _settled_rss(qtbot) -> float:
    qtbot.wait(RELEASE_WAIT_MS)  # the open flow frees the old document after the first frame
    return _rss_mib()


def test_reopening_frees_the_previous_documents_weights(qtbot, make_window, tmp_path, app_collector):
    path = save_wide(tmp_path / "wide.pt2")
    win = make_window()
    first = open_and_wait(qtbot, win, str(path))
    weight = first.loaded.module.get_parameter("a.weight")
    refs = {"document": weakref.ref(first), "module": weakref.ref(first.loaded.module),
            "weight": weakref.ref(weight)}
    if first.loaded.exported_program is not None:  # none where the archive opened without torch's rebuild
        refs["program"] = weakref.ref(first.loaded.exported_program)
    del first, weight
    open_and_wait(qtbot, win, str(path))
    qtbot.waitUntil(lambda: all(r() is None for r in refs.values()), timeout=RELEASE_WAIT_MS)
    rss_two = _settled_rss(qtbot)  # first-use caches (imports, Qt, torch) are filled by now
    for _ in range(3):
        doc = open_and_wait(qtbot, win, str(path))
        assert doc.loaded.module.get_parameter("a.weight").shape == (WIDTH, WIDTH)
    del doc
    rss_five = _settled_rss(qtbot)
    leak_mib = 3 * WIDTH * WIDTH * 4 / 2**20  # what keeping each of the three reopens' weights would add
    # Half of that: allocator noise (arenas, torch's caches) measured up to ~16 MiB on CI.
    assert rss_five - rss_two < leak_mib / 2, f"RSS {rss_two:.0f} MiB after 2 opens, {rss_five:.0f} after 5"


class Chain(nn.Module):
    """Residual Linear+ReLU blocks in a Sequential (module frames), small weights."""

    def __init__(self, n=6, w=8):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(w, w), nn.ReLU()) for _ in range(n)])

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return x


def test_a_pt2_graph_is_shown_view_only_before_it_is_editable(qtbot, make_window, tmp_path, monkeypatch):
    """The archive's structure is on the canvas while torch still rebuilds the program (held here
    until the view-only graph was checked); Ctrl+D (Duplicate) there is refused saying why; then the
    editable document replaces it with the same node names, and a Delete erases an unused node."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from fxstudio.core.loading import pt2_weights

    path = tmp_path / "chain.pt2"
    torch.manual_seed(0)
    torch.export.save(torch.export.export(Chain().eval(), (torch.randn(2, 8),)), path)
    release = threading.Event()
    real_read = pt2_weights.payloads_as_data

    def held(*args):  # the real weights read (issue #28), once the test has looked at the view-only graph
        assert release.wait(60)
        return real_read(*args)

    monkeypatch.setattr(pt2_weights, "payloads_as_data", held)
    win = make_window()
    win.resize(1400, 900)
    assert win.open_path(str(path), origin="argument")
    qtbot.waitUntil(lambda: win.document is not None, timeout=60_000)
    preview = win.document
    assert preview.read_only and "still loading its weights" in preview.read_only
    assert win.open_flow.busy
    assert win.open_flow.progress is None or not win.open_flow.progress.isVisible()
    assert "Loading the weights" in win.statusBar().currentMessage()
    win.canvas.flush()
    names = [n.name for n in preview.edited.graph.nodes]
    QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     win.canvas.viewport_pos_of("relu"))
    assert QApplication.focusWidget() is win.canvas
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)  # Duplicate
    qtbot.waitUntil(lambda: "still loading its weights" in win.statusBar().currentMessage(), timeout=5000)
    assert [n.name for n in preview.edited.graph.nodes] == names and not preview.dirty
    release.set()
    qtbot.waitUntil(lambda: win.document is not preview and not win.open_flow.busy, timeout=60_000)
    doc = win.document
    assert not doc.read_only
    assert [n.name for n in doc.edited.graph.nodes if n.op != "call_module"] == \
        [n for n in names if n != "_guards_fn"]
    win.canvas.flush()
    doc.apply_edit({"op": "set_arg", "node": "output", "key": 0, "value": "%add_4"})  # the last add: unused
    win.canvas.flush()
    QTest.mouseClick(win.canvas.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     win.canvas.viewport_pos_of("add_5"))
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: doc.find("add_5") is None, timeout=5000)


def test_the_status_bar_counts_the_nodes_the_file_holds(qtbot, make_window, tmp_path):
    """``ExportedProgram.module()`` adds a ``_guards_fn`` call the file does not hold and no view draws:
    the status bar counts what Netron and Model Explorer count, the program's own graph."""
    path = save_wide(tmp_path / "wide.pt2")
    win = make_window()
    doc = open_and_wait(qtbot, win, str(path))
    held = len(torch.export.load(str(path)).graph.nodes)
    assert len(doc.edited.graph.nodes) == held + 1  # the module's graph has _guards_fn besides
    qtbot.waitUntil(lambda: win.status_nodes.text() == f"{held} nodes", timeout=5000)
