"""The window's default insert (issue #13 item 11): "Route the users through the new node" is
recorded as one ``insert`` with ``"reroute": true``, so the saved script replays to the same graph."""

from __future__ import annotations

import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from fxstudio.core.document import replay
from fxstudio.core.edits.script import load_script, save_script
from tests.qt.properties_support import actions_host, run


def _insert_after(qtbot, example: str, node: str, target: str, reroute: bool):
    doc, _, actions, _ = actions_host(qtbot, example, node)
    actions.insert_after.trigger()
    dialog = actions.dialog
    assert dialog.reroute.isChecked()  # the window's default
    dialog.reroute.setChecked(reroute)
    QTest.keyClicks(dialog.search, target)
    QTest.keyClick(dialog.search, Qt.Key_Return)
    assert actions.dialog is None
    return doc


def test_a_rerouted_insert_is_recorded_as_one_insert_with_reroute(qtbot, tmp_path):
    doc = _insert_after(qtbot, "add_mul.py", "add", "torch.sigmoid", reroute=True)
    x = doc.loaded.example_inputs[0]
    assert torch.allclose(run(doc), torch.sigmoid(x + 5) * 2)
    edits = doc.edit_script()["edits"]
    assert [e["op"] for e in edits] == ["insert"] and edits[0]["reroute"] is True
    path = tmp_path / "session.json"
    save_script(path, doc.edit_script())
    again = replay(doc.loaded, load_script(path))
    assert again.module().code == doc.module().code


def test_an_insert_without_reroute_records_no_reroute(qtbot):
    doc = _insert_after(qtbot, "add_mul.py", "add", "torch.sigmoid", reroute=False)
    edits = doc.edit_script()["edits"]
    assert [e["op"] for e in edits] == ["insert"] and "reroute" not in edits[0]
    assert doc.find("mul").args[0] is doc.find("add")
