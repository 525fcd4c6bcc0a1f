"""File ▸ Export to a ``.pt2``: the save dialog offers torch.export's format beside the Python file;
choosing it writes a verified ExportedProgram off the GUI thread, and a module torch.export refuses
is one line in the failure dialog."""

from __future__ import annotations

import textwrap

import torch
from PySide6.QtWidgets import QFileDialog, QMessageBox

from fxstudio.qt.window_commands import EXPORT_FILTERS
from fxstudio.resources import EXAMPLES_DIR
from window_support import isolated, make_window, open_and_wait  # noqa: F401

EXPORT_TIMEOUT_MS = 120_000


def _save_dialog(monkeypatch, answer: str, chosen: str) -> list:
    asked = []

    def fake(parent, title, default, filters, selected=""):
        asked.append((title, default, filters, selected))
        return answer, chosen

    monkeypatch.setattr(QFileDialog, "getSaveFileName", fake)
    return asked


def test_choosing_the_pt2_filter_writes_a_verified_exported_program(qtbot, make_window, tmp_path, monkeypatch):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "add_mul.py", origin="example")
    doc.apply_edit({"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    out = tmp_path / "out"
    out.mkdir()
    asked = _save_dialog(monkeypatch, str(out / "edited"), EXPORT_FILTERS[1])  # no suffix typed
    win.last_export = None
    assert win.actions["export"].text() == "&Export…"
    win.actions["export"].trigger()
    assert asked[0][2] == "Python file (*.py);;PyTorch ExportedProgram (*.pt2)"
    qtbot.waitUntil(lambda: win.last_export is not None, timeout=EXPORT_TIMEOUT_MS)
    result = win.last_export
    assert not isinstance(result, Exception), result
    assert result.pt2_path == out / "edited.pt2" and result.verified
    assert result.verdict.startswith("verified: torch.export.load gives outputs")
    program = torch.export.load(out / "edited.pt2")
    x = torch.randn(2, 3)
    assert torch.allclose(program.module()(x), (x + 5) * 10)  # the edit (* 10, was * 2) is in the file
    assert sorted(p.name for p in out.iterdir()) == ["edited.pt2"]
    # The next export proposes the same file type.
    again = _save_dialog(monkeypatch, "", "")
    assert not win.export_dialog()
    assert again[0][1].endswith("add_mul_edited.pt2") and again[0][3] == EXPORT_FILTERS[1]


def test_a_module_torch_export_refuses_shows_one_line(qtbot, make_window, tmp_path, monkeypatch):
    model = tmp_path / "branchy.py"
    model.write_text(textwrap.dedent("""
        import torch

        @torch.fx.wrap
        def sign_scale(x):
            if x.sum() > 0:
                return x * 2
            return -x

        class Branchy(torch.nn.Module):
            def forward(self, x):
                return sign_scale(x + 1) + 1

        def example_inputs():
            return (torch.ones(2, 3),)
    """))
    win = make_window()
    open_and_wait(qtbot, win, model)
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text, *a: shown.append((title, text)))
    _save_dialog(monkeypatch, str(tmp_path / "branchy_edited.pt2"), EXPORT_FILTERS[1])
    win.last_export = None
    assert win.export_dialog()
    qtbot.waitUntil(lambda: win.last_export is not None, timeout=EXPORT_TIMEOUT_MS)
    assert shown and shown[0][0] == "Export failed"
    message = shown[0][1]
    assert len(message.splitlines()) == 1
    assert message.startswith("torch.export cannot export the edited module at node `sign_scale` (branchy.sign_scale)")
    assert not (tmp_path / "branchy_edited.pt2").exists()
