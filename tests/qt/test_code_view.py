"""The Code dock follows argument edits line by line, and its text is always fx's full code.

Real edits (typed into the Properties panel, Ctrl+Z, a rewire, an insert) in a real window, and a
standalone dock on a 2k-node graph; after each, the editor's text must equal
``graph.python_code(root_module="self").src`` (without its leading blank lines).
"""

from __future__ import annotations

import torch
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from window_support import isolated, make_window, open_and_wait  # noqa: F401 (fixtures)

from fxstudio.testing import synthetic
from fxstudio.core.document import Document
from fxstudio.core.model import LoadedModel
from fxstudio.qt.code_view import LINE_UPDATE_DELAY_MS, CodeView, map_code_lines
from fxstudio.qt.selection import SelectionModel
from fxstudio.resources import EXAMPLES_DIR
from tests.qt.properties_support import replace_text


def full_code(doc) -> str:
    return doc.edited.graph.python_code(root_module="self").src.lstrip("\n")


class Spy:
    """Counts the editor's whole-text replacements, line replacements and other line edits
    (inserts, removals)."""

    def __init__(self, editor):
        self.whole = self.lines = self.edits = 0
        set_code, replace_lines, edit_lines = editor.set_code, editor.replace_lines, editor.edit_lines

        def whole(text):
            self.whole += 1
            set_code(text)

        def lines(mapping):
            self.lines += 1
            replace_lines(mapping)

        def edits(line_edits):
            if any(e.delta for e in line_edits):
                self.edits += 1
            edit_lines(line_edits)

        editor.set_code, editor.replace_lines, editor.edit_lines = whole, lines, edits


def test_edits_in_the_window_update_the_code_line_by_line(qtbot, make_window):
    win = make_window()
    doc = open_and_wait(qtbot, win, EXAMPLES_DIR / "residual_cnn.py")
    win.docks["code"].raise_()
    code = win.code
    qtbot.waitUntil(lambda: code.edited.toPlainText() == full_code(doc), timeout=5000)
    spy = Spy(code.edited)

    # Type a constant into the Properties panel and press Enter: one set_arg.
    add = next(n for n in doc.edited.graph.nodes if n.name.startswith("add"))
    win.selection.set([doc.id_of(add)])
    line = code.line_for(add.name)
    assert line > 0 and code.edited.current_line() == line
    replace_text(win.properties.fields[1], "0.5")
    assert len(doc.history) == 1
    assert code.lazy.pending and code.lazy._timer.interval() == LINE_UPDATE_DELAY_MS
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=2000)
    text = code.edited.toPlainText()
    assert text == full_code(doc) and f"{add.name} = " in text.split("\n")[line - 1]
    assert "0.5" in text.split("\n")[line - 1]
    assert (spy.whole, spy.lines) == (0, 1)
    assert code.edited.current_line() == line  # the selection's band is still on the edited node

    # Ctrl+Z undoes it; the dock follows line by line again.
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    QTest.keyClick(win, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert doc.history_index == 0
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=2000)
    assert code.edited.toPlainText() == full_code(doc)
    assert (spy.whole, spy.lines) == (0, 2)

    # A rewire (the deletion suffixes move too).
    doc.apply_edit({"op": "set_arg", "node": add.name, "key": 1, "value": f"%{add.args[0].args[0].name}"})
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=2000)
    assert code.edited.toPlainText() == full_code(doc)
    assert (spy.whole, spy.lines) == (0, 3)

    # An insert adds a line, on the next turn too; the selected node's band follows its line.
    below = next(n for n in doc.edited.graph.nodes if add in n.all_input_nodes)
    win.selection.set([doc.id_of(below)])
    below_line = code.line_for(below.name)
    assert code.edited.current_line() == below_line
    doc.apply_edit({"op": "insert", "after": add.name, "kind": "call_function", "target": "torch.relu",
                    "args": f"(%{add.name},)"})
    assert code.lazy._timer.interval() == LINE_UPDATE_DELAY_MS
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=5000)
    assert code.edited.toPlainText() == full_code(doc)
    assert (spy.whole, spy.edits) == (0, 1)
    assert code.line_for(below.name) == code.edited.current_line() == below_line + 1
    assert code.line_for(add.next.name) == line + 1
    # An erase (its uses go to add again), then undo of both: still no regeneration.
    doc.apply_edit({"op": "erase", "node": add.next.name, "replace_uses_with": add.name})
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=5000)
    assert code.edited.toPlainText() == full_code(doc)
    assert code.line_for(below.name) == code.edited.current_line() == below_line
    for moved in (1, 0):
        doc.undo()
        qtbot.waitUntil(lambda: not code.lazy.pending, timeout=5000)
        assert code.edited.toPlainText() == full_code(doc)
        assert code.line_for(below.name) == code.edited.current_line() == below_line + moved
    assert (spy.whole, spy.edits) == (0, 4)
    # A function the code never called before: the whole code is regenerated, after the pause.
    doc.apply_edit({"op": "insert", "after": add.name, "kind": "call_function", "target": "math.sqrt",
                    "args": "(2.0,)"})
    qtbot.waitUntil(lambda: not code.lazy.pending, timeout=5000)
    assert code.edited.toPlainText() == full_code(doc)
    assert spy.whole == 1
    # Clicking still maps lines to nodes after the regeneration.
    assert code.line_for(add.name) > 0 and code.edited.current_line() == code.line_for(below.name)
    win.document.mark_saved()


def rewire(doc, node) -> None:
    """``add(a, b)`` reads the input of ``a`` instead of ``b``: a legal rewire to an earlier node."""
    doc.apply_edit({"op": "set_arg", "node": node.name, "key": 1, "value": f"%{node.args[0].all_input_nodes[0].name}"})


def _synthetic_document(n_nodes: int) -> Document:
    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", n_nodes))
    return Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                                example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))


def _shown_dock(qtbot, doc: Document) -> tuple[CodeView, SelectionModel]:
    """A Code dock on screen (900x500) showing ``doc``."""
    selection = SelectionModel()
    view = CodeView(selection)
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    qtbot.waitExposed(view)
    view.set_document(doc)
    return view, selection


def test_line_updates_on_a_big_graph_keep_the_scroll_position_and_recolour(qtbot):
    doc = _synthetic_document(2_000)
    view, selection = _shown_dock(qtbot, doc)
    editor = view.edited
    assert editor.toPlainText() == full_code(doc)
    spy = Spy(editor)
    adds = [n for n in doc.edited.graph.nodes if n.name.startswith("add")]

    # Scroll to the middle, then edit a node on screen and one far below it.
    target = adds[len(adds) // 2]
    line = view.line_for(target.name)
    editor.verticalScrollBar().setValue(max(0, line - 5))
    qtbot.wait(10)
    scroll = editor.verticalScrollBar().value()
    far = adds[-2]
    before = editor.document().findBlockByNumber(line - 1).text()
    for node in (target, far):
        rewire(doc, node)
    qtbot.waitUntil(lambda: not view.lazy.pending, timeout=2000)
    assert editor.toPlainText() == full_code(doc)
    assert (spy.whole, spy.lines) == (0, 1)  # both edits in one update
    assert editor.verticalScrollBar().value() == scroll
    # The edited line on screen is coloured again, for its new text.
    block = editor.document().findBlockByNumber(line - 1)
    assert block.text().startswith(f"    {target.name} = ") and block.text() != before
    spans = [(r.start, r.length) for r in block.layout().formats()]
    assert spans and spans == [(r.start, r.length) for r in editor.highlighter._ranges(block.text())]

    # Undo both at once (a history jump is one event): still line by line, still exact.
    doc.go_to(0)
    qtbot.waitUntil(lambda: not view.lazy.pending, timeout=2000)
    assert editor.toPlainText() == full_code(doc)
    assert (spy.whole, spy.lines) == (0, 2)

    # Renaming changes every line that mentions the node: a full regeneration.
    doc.apply_edit({"op": "rename", "node": target.name, "name": "renamed_add"})
    view.lazy.flush()
    assert editor.toPlainText() == full_code(doc)
    assert spy.whole == 1 and view.line_for("renamed_add") == line


def test_a_hidden_dock_catches_up_when_shown(qtbot):
    doc = _synthetic_document(300)
    view = CodeView(SelectionModel())
    qtbot.addWidget(view)
    view.set_document(doc)
    assert not view.isVisible()
    adds = [n for n in doc.edited.graph.nodes if n.name.startswith("add")]
    for node in adds[:5]:
        rewire(doc, node)
    doc.undo()
    assert view.lazy.pending
    spy = Spy(view.edited)
    view.show()
    qtbot.waitUntil(lambda: not view.lazy.pending, timeout=2000)
    assert view.edited.toPlainText() == full_code(doc)
    assert (spy.whole, spy.lines) == (0, 1)


def test_line_maps_from_the_generation_equal_the_text_scan(qtbot):
    from fxstudio.core.loading import load_model

    for name, tracer in [("residual_cnn.py", "fx"), ("residual_cnn.py", "export"), ("transformer_block.py", "fx"),
                         ("data_branch.py", "fx"), ("wrapped_fn.py", "fx")]:
        concrete = {"positive": True} if name == "data_branch.py" else None
        view = CodeView(SelectionModel())
        qtbot.addWidget(view)
        view.set_document(Document(load_model(EXAMPLES_DIR / name, tracer=tracer, concrete_args=concrete)))
        code, graph = view.edited.toPlainText(), view.doc.edited.graph
        assert view._code.node_lines() is not None
        assert view._line_maps(code, graph) == map_code_lines(code, graph), (name, tracer)


def test_inserts_and_erases_on_a_big_graph_go_line_by_line_and_keep_the_view(qtbot):
    doc = _synthetic_document(2_000)
    view, selection = _shown_dock(qtbot, doc)
    editor = view.edited
    spy = Spy(editor)
    relus = [n for n in doc.edited.graph.nodes if n.name.startswith("relu")]
    above, selected, below = relus[10], relus[len(relus) // 2], relus[-3]
    selection.set([doc.id_of(selected)])
    line = view.line_for(selected.name)
    assert editor.current_line() == line
    scroll = editor.verticalScrollBar().value()

    def settle(lines_moved):
        qtbot.waitUntil(lambda: not view.lazy.pending, timeout=2000)
        text = editor.toPlainText()
        assert text == full_code(doc)
        assert spy.whole == 0
        # The band stays on the selected node, the view on the same lines.
        assert view.line_for(selected.name) == editor.current_line() == line + lines_moved
        assert editor.document().findBlockByNumber(line + lines_moved - 1).text().startswith(f"    {selected.name} = ")
        assert editor.verticalScrollBar().value() == scroll + lines_moved
        assert (view._line_of, view._node_at) == map_code_lines(text, doc.edited.graph)

    def insert(after):
        doc.apply_edit({"op": "insert", "after": after.name, "kind": "call_function",
                        "target": "torch.nn.functional.relu", "args": f"(%{after.name},)"})

    insert(above)
    settle(1)
    assert spy.edits == 1
    insert(below)  # below the view: nothing on screen moves
    settle(1)
    doc.apply_edit({"op": "erase", "node": above.name, "replace_uses_with": above.args[0].name})
    settle(0)
    doc.apply_edit({"op": "eliminate_dead_code"})  # the two inserted relus
    settle(-1)
    assert spy.edits == 4
    doc.go_to(0)
    settle(0)
    # Without a selection the scroll position alone is kept (and shifted by lines added above).
    selection.set([])
    editor.verticalScrollBar().setValue(scroll)
    insert(above)
    qtbot.waitUntil(lambda: not view.lazy.pending, timeout=2000)
    assert editor.toPlainText() == full_code(doc)
    assert editor.verticalScrollBar().value() == scroll + 1 and editor.current_line() == 0
    # An insert in view: the lines in view are coloured for their text, the new one included.
    first = editor.firstVisibleBlock().blockNumber()
    on_screen = view._node_at[first + 3]
    insert(doc.find(on_screen))
    qtbot.waitUntil(lambda: not view.lazy.pending, timeout=2000)
    assert editor.toPlainText() == full_code(doc)
    assert editor.firstVisibleBlock().blockNumber() == first
    new = editor.document().findBlockByNumber(first + 3)
    assert new.text().startswith(f"    {doc.find(on_screen).next.name} = ")
    for number in range(first, first + 10):
        block = editor.document().findBlockByNumber(number)
        spans = [(r.start, r.length) for r in block.layout().formats()]
        assert spans and spans == [(r.start, r.length) for r in editor.highlighter._ranges(block.text())]
    assert (spy.whole, spy.edits) == (0, 7)


def test_text_out_of_step_with_the_code_falls_back_to_the_whole_text(qtbot):
    """Should the shown text ever disagree with the hunks, the dock shows fx's whole code again
    instead of raising in the event loop."""
    doc = _synthetic_document(300)
    view = CodeView(SelectionModel())
    qtbot.addWidget(view)
    view.show()
    view.set_document(doc)
    qtbot.waitUntil(lambda: view.edited.toPlainText() == full_code(doc), timeout=5000)
    view.edited.set_code("# not the code\n")  # out of step: the next hunks do not fit it
    node = next(n for n in doc.edited.graph.nodes if n.name.startswith("add"))
    doc.apply_edit({"op": "insert", "after": node.name, "kind": "call_function", "target": "operator.neg",
                    "args": f"(%{node.name},)", "name": "neg_probe"})
    qtbot.waitUntil(lambda: not view.lazy.pending, timeout=5000)
    assert view.edited.toPlainText() == full_code(doc)
