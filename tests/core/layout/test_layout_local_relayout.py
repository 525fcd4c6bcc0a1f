"""Insert and erase of one node are laid out locally (``local_relayout``): the result is a valid
layout of the edited graph (the layout checkers), what it keeps for the next edit is what a fresh
extraction gives, and an undo puts every card back where it was."""

from __future__ import annotations

import functools

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.layout import compute_layout, frame_problems
from fxstudio.core.layout.engine import _same_arrays
from fxstudio.core.layout.graph_model import extract_graph
from fxstudio.core.loading import load_model
from fxstudio.core.model import LoadedModel
from fxstudio.testing import synthetic
from fxstudio.testing.residual_mlp import write_residual_mlp
from tests.core.layout import real_models
from tests.core.layout.layout_checks import assert_routes_avoid_cards, assert_valid_layout


def _synthetic(kind: str, n: int) -> Document:
    gm = synthetic.as_graph_module(synthetic.make_graph(kind, n))
    return Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                                example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))


@functools.lru_cache(maxsize=None)
def _residual_file(blocks: int):
    return write_residual_mlp(real_models.folder(), blocks, name=f"residual_mlp_{blocks}.py")


def _doc(kind: str) -> Document:
    if kind == "skip_chain":
        return _synthetic("skip_chain", 1500)
    if kind == "transformer":
        return _synthetic("transformer", 600)
    if kind == "gpt2":
        return Document(load_model(real_models.gpt2_pt2(2)))
    if kind == "cnn":
        return Document(load_model(real_models.cnn_py()))
    return Document(load_model(_residual_file(1700)))   # 10k nodes


class _Canvas:
    """What the canvas does per edit: an incremental layout given the nodes the event touched."""

    def __init__(self, doc: Document, fold: bool):
        self.doc, self.fold, self.events = doc, fold, []
        doc.subscribe(self.events.append)
        self.layout = compute_layout(doc.edited.graph, fold_weights=fold)
        self.local = 0
        self.problems: set | None = None   # frame_problems of ``layout``, once asked for

    def step(self, action, *, check_routes: bool) -> None:
        before = self.layout
        action()
        ev = self.events[-1]
        touched = [n for n in (self.doc.node(i) for i in ev.added | ev.changed) if n is not None]
        graph = self.doc.edited.graph
        new = compute_layout(graph, previous=before, changed=touched, fold_weights=self.fold)
        self.local += new.local is not None
        _check(new, graph, self.fold, check_routes)
        if new.local is not None:   # (an incremental relayout may squeeze frames until the next fresh one)
            if self.problems is None:
                self.problems = set(frame_problems(before, graph))
            problems = set(frame_problems(new, graph))
            assert problems <= self.problems, problems - self.problems
            self.problems = problems
        else:
            self.problems = None
        self.layout = new


def _check(layout, graph, fold: bool, check_routes: bool) -> None:
    assert_valid_layout(layout, None if fold else graph, check_routes=check_routes)
    for e in layout.edges:   # every route starts on its source's bottom and ends on its destination's top
        s, d = layout.nodes[e.src], layout.nodes[e.dst]
        (x0, y0), (x1, y1) = e.points[0], e.points[-1]
        assert abs(y0 - (s.y + s.h)) < 1e-6 and s.x <= x0 <= s.x + s.w, (e.src, e.dst)
        assert abs(y1 - d.y) < 1e-6 and d.x <= x1 <= d.x + d.w, (e.src, e.dst)
    for p, g in layout.groups.items():   # frames hold their members' cards (frame_problems: inside own frames)
        assert g.w > 0 and g.h > 0, p
    ga = extract_graph(graph, fold=fold)
    key, kept = layout.inputs
    assert _same_arrays(kept, ga), "the flattened graph kept for the next edit is not the graph's"
    assert list(layout.nodes) == ga.names
    assert sorted((e.src, e.dst, str(e.key)) for e in layout.edges) == sorted(
        (ga.names[s], ga.names[d], str(k)) for s, d, k in zip(ga.src.tolist(), ga.dst.tolist(), ga.keys))
    if layout.local is not None:
        assert layout.lanes[0] == {n: i for i, n in enumerate(ga.names)}
        assert layout.placement.n == ga.n
        for name, b in layout.nodes.items():   # the placement's cards are the boxes
            i = layout.lanes[0][name]
            assert layout.placement.layer[i] == b.layer
            assert abs(layout.placement.x[i] - (b.x + b.w / 2)) < 1e-6


def _routes(layout) -> dict:
    return {(e.src, e.dst, str(e.key)): [c for p in e.points for c in p] for e in layout.edges}


def _anchors(doc: Document, pred, k: int = 3) -> list[str]:
    """Names of nodes matching ``pred`` at the start, the middle and the end of the graph."""
    nodes = [n for n in doc.edited.graph.nodes if pred(n)]
    assert nodes
    picks = [nodes[min(1, len(nodes) - 1)], nodes[len(nodes) // 2], nodes[-2 if len(nodes) > 2 else -1]]
    return list(dict.fromkeys(n.name for n in picks))[:k]


def _tensor_op(n) -> bool:
    return n.op in ("call_function", "call_method", "call_module") and n.meta.get("fxs_shape") is not None \
        and bool(n.users)


def _unary(n) -> bool:
    args = [a for a in n.args if isinstance(a, torch.fx.Node)]
    return (_tensor_op(n) and len(args) == 1 and isinstance(n.args[0], torch.fx.Node)
            and n.args[0].meta.get("fxs_shape") == n.meta.get("fxs_shape") and n.args[0].op != "placeholder"
            and n.args[0].meta.get("fxs_shape") is not None and n.args[0].op != "get_attr")


@pytest.mark.parametrize("kind", ["skip_chain", "transformer", "gpt2", "cnn"])
@pytest.mark.parametrize("fold", [True, False])
def test_insert_erase_and_undo_are_local_and_valid(kind: str, fold: bool):
    doc = _doc(kind)
    canvas = _Canvas(doc, fold)
    small = len(doc.edited.graph.nodes) < 700
    steps = 0
    for i, name in enumerate(_anchors(doc, _tensor_op)):
        edit = {"op": "insert", "after": name, "kind": "call_function", "target": "torch.relu",
                "args": f"(%{name},)", "name": f"probe_{i}"}
        shown, routes = dict(canvas.layout.nodes), _routes(canvas.layout)
        canvas.step(lambda: doc.apply_edit(edit), check_routes=small)
        inserted = canvas.layout.local is not None
        canvas.step(doc.undo, check_routes=small)
        if inserted and canvas.layout.local is not None:   # the undo of a local insert gives the layout back
            assert canvas.layout.nodes == shown
            got = _routes(canvas.layout)
            assert got.keys() == routes.keys()
            assert all(got[k] == pytest.approx(routes[k]) for k in routes)
        canvas.step(doc.redo, check_routes=small)
        assert canvas.layout.nodes[f"probe_{i}"].y > shown[name].y
        canvas.step(doc.undo, check_routes=small)
        steps += 4
    for name in _anchors(doc, _unary):
        node = doc.find(name)
        shown = dict(canvas.layout.nodes)
        canvas.step(lambda: doc.apply_edit({"op": "erase", "node": name, "replace_uses_with": node.args[0].name}),
                    check_routes=small)
        assert name not in canvas.layout.nodes
        canvas.step(doc.undo, check_routes=small)
        steps += 2
        if canvas.layout.local is not None:   # the undo of a local erase puts every card back in place
            assert canvas.layout.nodes == shown
    assert canvas.local >= steps // 3, f"only {canvas.local} of {steps} edits were laid out locally"
    print(f"{kind}: {canvas.local} of {steps} edits local")


def test_residual_mlp_at_10k_nodes_stays_local():
    doc = _doc("residual_mlp")
    assert len(doc.edited.graph.nodes) >= 10_000
    canvas = _Canvas(doc, True)
    steps = 0
    for i, name in enumerate(_anchors(doc, _tensor_op)):
        edit = {"op": "insert", "after": name, "kind": "call_function", "target": "torch.relu",
                "args": f"(%{name},)", "name": f"probe_{i}"}
        canvas.step(lambda: doc.apply_edit(edit), check_routes=False)
        canvas.step(doc.undo, check_routes=False)
        steps += 2
    for name in _anchors(doc, _unary):
        node = doc.find(name)
        canvas.step(lambda: doc.apply_edit({"op": "erase", "node": name, "replace_uses_with": node.args[0].name}),
                    check_routes=False)
        canvas.step(doc.undo, check_routes=False)
        steps += 2
    assert canvas.local == steps


def test_a_route_across_the_new_layer_goes_round_the_new_card():
    doc = _doc("skip_chain")
    canvas = _Canvas(doc, True)
    add = [n for n in doc.edited.graph.nodes if n.name.startswith("add")][40]
    canvas.step(lambda: doc.apply_edit({"op": "insert", "after": add.name, "kind": "call_function",
                                        "target": "torch.relu", "args": f"(%{add.name},)", "name": "probe"}),
                check_routes=True)
    assert canvas.layout.local is not None and canvas.layout.local[5] is not None   # a new layer was opened
    probe, anchor = canvas.layout.nodes["probe"], canvas.layout.nodes[add.name]
    assert probe.layer == anchor.layer + 1 and probe.y > anchor.y + anchor.h


def test_not_local_when_a_group_is_collapsed():
    doc = _doc("cnn")
    events = []
    doc.subscribe(events.append)
    layout = compute_layout(doc.edited.graph, collapsed={"layer2"}, fold_weights=True)
    name = _anchors(doc, _tensor_op)[0]
    doc.apply_edit({"op": "insert", "after": name, "kind": "call_function", "target": "torch.relu",
                    "args": f"(%{name},)", "name": "probe"})
    touched = [n for n in (doc.node(i) for i in events[-1].added | events[-1].changed) if n is not None]
    new = compute_layout(doc.edited.graph, collapsed={"layer2"}, previous=layout, changed=touched, fold_weights=True)
    assert new.local is None and "probe" in new.nodes
