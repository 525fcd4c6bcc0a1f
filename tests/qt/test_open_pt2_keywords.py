"""A GPT-2 ``.pt2`` exported with keyword inputs and a ``ModelOutput`` output opens in the window
at once (issue #15, defects 2 and 4): no shape dialog, the graph drawn, the notes say what was done."""

from __future__ import annotations

from tests.core.loading.hf_files import save_gpt2
from tests.qt.window_support import make_window, isolated  # noqa: F401 - fixtures


def test_a_keyword_input_gpt2_archive_opens_without_a_dialog(qtbot, make_window, tmp_path):
    from PySide6.QtWidgets import QApplication

    path = save_gpt2(tmp_path / "gpt2_kw.pt2", keywords=True)
    win = make_window()
    assert win.open_path(str(path), origin="argument")
    # GPT-2 on a loaded 2-core machine; the view-only structure shows first, then the document
    qtbot.waitUntil(lambda: win.document is not None and not win.open_flow.busy, timeout=180_000)
    doc = win.document
    assert QApplication.activeModalWidget() is None  # no "give the input shapes" dialog
    assert [n.name for n in doc.original.graph.nodes if n.op == "placeholder"][-3:] == [
        "input_ids", "use_cache", "return_dict"]
    assert any("keyword inputs passed in their positional slots" in n for n in doc.loaded.notes)
    # (the ModelOutput class is registered already: this process imported transformers to save the file)
    assert type(doc.loaded.graph_module(*doc.loaded.example_inputs)).__name__ == "CausalLMOutputWithCrossAttentions"
    qtbot.wait(200)
    win.grab().save(str(tmp_path / "gpt2_kw_window.png"))
