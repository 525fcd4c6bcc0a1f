"""IncrementalCode.edit: inserts, erases, duplicates, dead-code elimination (and their undo/redo) as
line edits, equal to fx's full regeneration.

Every example model (both tracers) and generated 2k-node graphs are driven through a real
``Document`` with random structural edits mixed with argument edits, undo, redo and history jumps;
after each step the incremental text must equal ``graph.python_code(root_module="self").src``
exactly, the line edits applied to the old text must give the new one, and the node ↔ line maps
and last users must equal those of a fresh full generation. The common cases must go line by line;
what cannot (a first use of a function, a name fx would change, wrapped calls, placeholders, too
many nodes) must refuse, and a full regeneration is then right again.
"""

from __future__ import annotations

import collections
import random
import zlib

import pytest
import torch
import torch.fx

from fxstudio.testing import synthetic
from fxstudio.core.code_lines import LineEdit, apply_edits, make_edits, new_number
from fxstudio.core.code_text import MAX_NODES, IncrementalCode
from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.model import LoadedModel
from tests.core.test_code_text import EXAMPLE_LOADS, _load, random_step, scale, shift
from tests.core.test_code_text import Follower as ArgumentFollower

LINE_KINDS = ("edited", "undone", "redone", "saved")


def full_text(doc: Document) -> str:
    return doc.edited.graph.python_code(root_module="self").src


def _synthetic_document(kind: str, n_nodes: int) -> Document:
    gm = synthetic.as_graph_module(synthetic.make_graph(kind, n_nodes))
    return Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                                example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))


def assert_same_index(code: IncrementalCode, graph: torch.fx.Graph) -> None:
    """The incremental index equals the one a fresh full generation builds."""
    fresh = IncrementalCode()
    assert fresh.full(graph) == code.text
    assert code.node_lines() == fresh.node_lines()
    assert code._line == fresh._line and code._nodes == fresh._nodes and code._pos == fresh._pos
    # (None and a missing entry both mean "no users")
    assert {v: u for v, u in code._last_user.items() if u is not None} == fresh._last_user
    assert code._by_name == fresh._by_name
    assert code._generated == fresh._generated
    assert all(code.line_of(n) == fresh.line_of(n) for n in graph.nodes)


class Follower(ArgumentFollower):
    """What the Code dock does: follow a document's events; ``edit`` line by line when it can."""

    def __init__(self, doc: Document):
        super().__init__(doc)
        self.structural = False
        self.structural_by_lines = self.structural_full = 0
        self.refusals: collections.Counter = collections.Counter()
        self.refusal = ""  # why the last edit was refused
        doc.subscribe(self.on_event)

    def on_event(self, event) -> None:
        if event.kind not in LINE_KINDS:
            self.line_edit = False
        self.structural |= bool(event.added or event.removed)
        self.changed |= event.changed | event.added

    def sync(self, check_index: bool = True) -> list[LineEdit] | None:
        """Bring the text up to date; the line edits, or None after a full regeneration."""
        graph = self.doc.edited.graph
        edits = None
        if self.line_edit:
            nodes = [n for n in map(self.doc.node, self.changed) if n is not None]
            before = list(self.code.lines)
            edits = self.code.edit(graph, nodes)
            self.refusal = self.code.reason
            if edits is None:
                self.refusals[self.refusal] += 1
            else:
                apply_edits(before, edits)
                assert before == self.code.lines
        if edits is None:
            self.code.full(graph)
            self.full += 1
            self.structural_full += self.structural
        else:
            self.by_lines += 1
            self.structural_by_lines += self.structural
        self.changed, self.line_edit, self.structural = set(), True, False
        assert self.code.text == full_text(self.doc)
        if check_index:
            assert_same_index(self.code, graph)
        return edits


def _value_nodes(nodes):
    return [n for n in nodes if n.op not in ("placeholder", "output")]


def structural_step(doc: Document, rng: random.Random) -> bool:
    """One random insert, erase, duplicate or dead-code elimination; False when refused."""
    nodes = list(doc.edited.graph.nodes)
    values = _value_nodes(nodes)
    r = rng.random() if len(values) > 2 else 0.0  # a graph erased down to nothing grows again
    try:
        if r < 0.4:
            # Insert a torch function (no global) or an operator (pretty-printed, no global either).
            anchor = rng.choice([n for n in nodes if n.op != "output"])
            where = "after" if anchor.op == "placeholder" else rng.choice(["before", "after"])
            earlier = [n for n in nodes[:nodes.index(anchor) + (where == "after")] if n.op != "output"]
            source = rng.choice(earlier) if earlier else anchor
            doc.apply_edit({"op": "insert", where: anchor.name, "kind": "call_function",
                            "target": rng.choice(["torch.relu", "torch.neg", "operator.neg"]),
                            "args": f"(%{source.name},)"})
        elif r < 0.7:
            node = rng.choice(values)
            edit = {"op": "erase", "node": node.name}
            if node.users:
                if not node.all_input_nodes:
                    return False
                edit["replace_uses_with"] = rng.choice(node.all_input_nodes).name
            doc.apply_edit(edit)
        elif r < 0.9:
            doc.apply_edit({"op": "duplicate", "node": rng.choice(values).name})
        else:
            doc.apply_edit({"op": "eliminate_dead_code"})
    except EditRefused:
        return False
    return True


def drive(doc: Document, steps: int, seed: int, check_index: bool = True) -> Follower:
    follower = Follower(doc)
    rng = random.Random(seed)
    for _ in range(steps):
        step = structural_step if rng.random() < 0.5 else random_step
        if step(doc, rng):
            follower.sync(check_index)
    return follower


@pytest.mark.parametrize("name,tracer", EXAMPLE_LOADS)
def test_random_inserts_and_erases_on_every_example_match_the_full_regeneration(name, tracer):
    doc = Document(_load(name, tracer))
    follower = drive(doc, steps=40, seed=zlib.crc32(f"nodes:{name}:{tracer}".encode()))
    assert follower.structural_by_lines + follower.structural_full >= 8
    # A wrapped call erased or copied, a rewire that moves nodes, a dead-code elimination of more
    # than MAX_NODES nodes regenerate; the rest goes line by line.
    assert follower.structural_by_lines >= 0.7 * (follower.structural_by_lines + follower.structural_full), \
        (follower.structural_by_lines, follower.structural_full, follower.refusals)


@pytest.mark.parametrize("kind", ["skip_chain", "transformer"])
def test_random_inserts_and_erases_on_a_2k_node_graph_match_the_full_regeneration(kind):
    doc = _synthetic_document(kind, 2_000)
    follower = drive(doc, steps=20, seed=11, check_index=False)
    assert_same_index(follower.code, doc.edited.graph)
    assert follower.structural_by_lines >= 0.8 * (follower.structural_by_lines + follower.structural_full), \
        (follower.structural_by_lines, follower.structural_full, follower.refusals)


def test_the_common_edits_and_their_undo_redo_go_line_by_line():
    doc = Document(_load("relu_add.py", "fx"))
    follower = Follower(doc)
    graph = doc.edited.graph
    relu = next(n for n in graph.nodes if n.op == "call_function" and n.target is torch.relu)
    add = next(n for n in graph.nodes if n.name.startswith("add"))
    count = len(follower.code.lines)

    def step(action, lines_delta):
        action()
        edits = follower.sync()
        assert edits is not None, follower.refusal
        assert len(follower.code.lines) == count + lines_delta
        return edits

    # torch.relu, which the graph already calls: one new line after relu's.
    relu_line = follower.code.line_of(relu)
    edits = step(lambda: doc.apply_edit({"op": "insert", "after": relu.name, "kind": "call_function",
                                         "target": "torch.relu", "args": f"(%{relu.name},)"}), 1)
    new = relu.next
    assert new.name == "relu_1" and follower.code.line_of(new) == relu_line + 1
    assert follower.code.line_of(add) == relu_line + 2
    assert sum(e.delta for e in edits) == 1
    step(doc.undo, 0)
    step(doc.redo, 1)
    step(doc.undo, 0)
    # Erase with replacement: a line goes, its users' lines read the replacement.
    step(lambda: doc.apply_edit({"op": "erase", "node": add.name, "replace_uses_with": relu.name}), -1)
    assert follower.code.lines[relu_line] == "    return relu"
    step(doc.undo, 0)
    step(doc.redo, -1)
    step(doc.undo, 0)
    # Duplicate, then dead-code elimination of the copy (its value is unused).
    step(lambda: doc.apply_edit({"op": "duplicate", "node": relu.name}), 1)
    step(lambda: doc.apply_edit({"op": "eliminate_dead_code"}), 0)
    step(doc.undo, 1)
    step(lambda: doc.go_to(0), 0)
    assert follower.full == 0


def test_a_user_function_the_code_already_names_is_inserted_line_by_line():
    doc = Document(_load("transformer_block.py", "fx"))
    follower = Follower(doc)
    call = next(n for n in doc.edited.graph.nodes if n.op == "call_function" and n.target is getattr)
    assert "getattr" in follower.code._globals
    doc.apply_edit({"op": "duplicate", "node": call.name})
    assert follower.sync() is not None, follower.refusal
    doc.undo()
    assert follower.sync() is not None, follower.refusal


def _graph() -> torch.fx.Graph:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(scale, (x,), {"factor": 3.0})
    b = g.call_function(torch.relu, (a,))
    g.output(b)
    return g


def _check(code: IncrementalCode, g: torch.fx.Graph, changed) -> str | None:
    """Edit ``code`` after a change of ``g``: None when done line by line (and right), else why not."""
    before = list(code.lines)
    edits = code.edit(g, changed)
    if edits is not None:
        apply_edits(before, edits)
        assert before == code.lines == g.python_code(root_module="self").src.split("\n")
        assert_same_index(code, g)
        return None
    reason = code.reason
    assert reason and code.full(g) == g.python_code(root_module="self").src
    return reason


def test_hand_built_graph_new_globals_names_and_placeholders():
    g = _graph()
    code = IncrementalCode()
    code.full(g)
    nodes = {n.name: n for n in g.nodes}
    global_name = next(k for k, v in code._globals.items() if v is scale)
    # A second call of the user function: its global already exists under that name.
    with g.inserting_after(nodes["relu"]):
        again = g.call_function(scale, (nodes["relu"],))
    assert _check(code, g, [again, nodes["relu"]]) is None
    # A node named like that global: fx's namespace would rename one of them.
    with g.inserting_after(again):
        clash = g.call_function(torch.neg, (again,), name=global_name)
    assert clash.name == global_name
    assert "named like" in _check(code, g, [clash])
    g.erase_node(clash)
    code.full(g)
    # A function the code never called: a new global.
    with g.inserting_after(again):
        first = g.call_function(shift, (again,))
    assert "global" in _check(code, g, [first])
    g.erase_node(first)
    code.full(g)
    # A new placeholder changes the def line.
    with g.inserting_before(nodes["scale"]):
        extra = g.placeholder("extra")
    assert "placeholder" in _check(code, g, [extra])
    g.erase_node(extra)
    code.full(g)
    # The same count of nodes, one erased and one added: still found by the walk.
    relu = nodes["relu"]
    with g.inserting_after(relu):
        neg = g.call_function(torch.neg, (relu,))
    again.replace_all_uses_with(neg)
    g.erase_node(again)
    assert _check(code, g, [neg, relu, nodes["output"]]) is None


def test_wrapped_calls_and_too_many_nodes_refuse():
    doc = Document(_load("wrapped_fn.py", "fx"))
    follower = Follower(doc)
    wrapped = next(n for n in doc.edited.graph.nodes if n.meta.get("is_wrapped"))
    doc.apply_edit({"op": "duplicate", "node": wrapped.name})
    assert follower.sync() is None and "added" in follower.refusal
    doc.undo()
    follower.sync()
    doc.apply_edit({"op": "erase", "node": wrapped.name, "replace_uses_with": wrapped.all_input_nodes[0].name})
    assert follower.sync() is None and "removed" in follower.refusal

    doc = Document(_load("relu_add.py", "fx"))
    follower = Follower(doc)
    edits = [{"op": "insert", "after": "relu", "kind": "call_function", "target": "torch.relu", "args": "(%relu,)"}
             for _ in range(MAX_NODES + 1)]
    doc.apply_edits(edits)
    assert follower.sync() is None and str(MAX_NODES) in follower.refusal
    doc.apply_edits(edits[:MAX_NODES // 2])
    assert follower.sync() is not None
    doc.undo()
    assert follower.sync() is not None
    doc.apply_edit({"op": "eliminate_dead_code"})  # 65 nodes at once
    assert follower.sync() is None and str(MAX_NODES) in follower.refusal


def test_line_edit_helpers():
    lines = [f"l{i}" for i in range(1, 8)]
    edits = make_edits({2: ["a", "b"], 6: ["z"]}, {1: None, 2: "L3", 4: None, 5: "L6"})
    # Adjacent changes merge: lines 2-3 (removed, inserted before, replaced), then 5-7.
    assert edits == [LineEdit(2, 2, ("a", "b", "L3")), LineEdit(5, 2, ("L6", "z"))]
    apply_edits(lines, edits)
    assert lines == ["l1", "a", "b", "L3", "l4", "L6", "z", "l7"]
    assert [new_number(k, edits) for k in range(1, 8)] == [1, None, None, 5, None, None, 8]
    with pytest.raises(ValueError):
        apply_edits(lines, [LineEdit(3, 1, ()), LineEdit(2, 1, ())])


def test_many_reported_nodes_whose_lines_stay_do_not_refuse():
    # An edit reports every node whose shape it changed: those cost a comparison, not a refusal.
    doc = _synthetic_document("skip_chain", 300)
    code = IncrementalCode()
    code.full(doc.edited.graph)
    relu = next(n for n in doc.edited.graph.nodes if n.name.startswith("relu"))
    doc.apply_edit({"op": "insert", "after": relu.name, "kind": "call_function", "target": "torch.neg",
                    "args": f"(%{relu.name},)"})
    nodes = list(doc.edited.graph.nodes)
    assert len(nodes) > 4 * MAX_NODES
    assert code.edit(doc.edited.graph, nodes) is not None, code.reason
    assert code.text == full_text(doc)
