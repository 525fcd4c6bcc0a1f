"""Run Pass… with keyword arguments in a real window, and an analysis pass's results in the Properties
panel: the arguments field becomes the edit's ``kwargs``; text that does not read is shown and
nothing runs; ShapeProp's per-node summaries appear under "Analysis", named by the pass."""

from __future__ import annotations

import textwrap

from PySide6.QtWidgets import QLabel, QMessageBox

from fxstudio.resources import EXAMPLES_DIR
from tests.qt.window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

PASSES = '''
import torch
from torch.fx.passes.shape_prop import ShapeProp


def scale_output(gm, factor, example_inputs):
    out = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(out):
        mul = gm.graph.call_function(torch.mul, (out.args[0], factor))
    out.args = (mul,)
    gm.recompile()
    return gm


def shape_prop(gm, example_inputs):
    ShapeProp(gm).propagate(*example_inputs)
'''


def test_arguments_become_kwargs_and_analyses_show_in_the_panel(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: QMessageBox.StandardButton.Yes)
    pass_file = tmp_path / "passes.py"
    pass_file.write_text(textwrap.dedent(PASSES))
    win = make_window(autosave=False)
    doc = open_and_wait(qtbot, win, str(EXAMPLES_DIR / "residual_cnn.py"), origin="example")
    dialog = win.passes.open_run_pass()
    assert dialog.load_file(str(pass_file)) and dialog.select("scale_output")
    dialog.arguments.setText("factor=")
    dialog.try_accept()
    assert "Cannot read the pass arguments" in dialog.error.text() and not doc.history
    dialog.arguments.setText("factor=3.0")
    dialog.try_accept()
    assert win.passes.dialog is None and len(doc.history) == 1
    assert doc.edit_script()["edits"][0]["kwargs"] == {"factor": "3.0"}

    assert win.passes.run(pass_file.resolve(), "shape_prop") is None
    assert "(analysis: tensor_meta" in doc.history[-1]
    output = next(n for n in doc.edited.graph.nodes if n.op == "output")
    mul = output.args[0]
    win.selection.set([doc.id_of(mul)])
    qtbot.waitUntil(lambda: win.properties.current_node() is mul)
    texts = [w.text() for w in win.properties.findChildren(QLabel)]
    assert "ANALYSIS" in texts and "passes.py::shape_prop" in texts
    assert any(t.startswith("tensor_meta: ") and "float32" in t for t in texts)
