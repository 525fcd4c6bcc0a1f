"""The fast paths behind a quick edit must give exactly what the slow paths give.

* ``compute_layout(previous=...)`` reads lanes, band tops, frames and class names that the previous
  layout kept (``Layout.lanes`` / ``layer_tops`` / ``group_cache``); with those dropped it rebuilds
  them from the boxes and routes. Both must lay out the same.
* ``GraphDiffer.update`` re-examines only the nodes a document event names; it must agree with a
  full ``graph_diff`` after every edit, undo and redo.
"""

import copy

import numpy as np

from fxstudio.testing import synthetic
from fxstudio.core.compare import GraphDiffer, graph_diff
from fxstudio.core.layout import compute_layout
from fxstudio.core.layout.groups import frame_gaps, frame_members
from tests.core.edit_helpers import doc_for
from tests.core.layout.layout_checks import assert_valid_layout


def _json(layout):
    out = layout.to_json()
    out.pop("seconds")
    return out


def _bare(layout):
    """The same layout without what it kept for the next incremental one."""
    out = copy.copy(layout)
    out.lanes = out.layer_tops = out.group_cache = None
    return out


def _check_same(graph, previous, collapsed=frozenset()):
    fast = compute_layout(graph, collapsed=collapsed, previous=previous)
    slow = compute_layout(graph, collapsed=collapsed, previous=_bare(previous))
    assert _json(fast) == _json(slow)
    assert_valid_layout(fast, graph if not collapsed else None)
    return fast


def test_cached_incremental_layout_equals_the_rebuilt_one():
    doc = doc_for("residual_cnn.py")
    g = doc.edited.graph
    layout = compute_layout(g)
    doc.apply_edit({"op": "set_arg", "node": "layer2_1_relu", "key": 0, "value": "%layer2_0_relu"})  # a rewire
    layout = _check_same(g, layout)
    doc.apply_edit({"op": "insert", "after": "layer2_1_bn1", "kind": "call_function", "target": "torch.sigmoid",
                    "args": "(%layer2_1_bn1,)", "name": "gate"})
    layout = _check_same(g, layout)
    doc.apply_edit({"op": "erase", "node": "layer1_1_relu", "replace_uses_with": "layer1_1_bn1"})
    layout = _check_same(g, layout)
    doc.undo()
    layout = _check_same(g, layout)
    collapsed = frozenset({"layer1", "layer3.0"})
    _check_same(g, compute_layout(g, collapsed=collapsed), collapsed)


def test_cached_incremental_layout_on_a_long_skip_chain():
    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", 600))
    g = gm.graph
    layout = compute_layout(g)
    adds = [n for n in g.nodes if n.op == "call_function" and n.name.startswith("add")]
    node = adds[len(adds) // 2]
    node.update_arg(1, node.args[0].all_input_nodes[0])   # rewire to a node further up
    _check_same(g, layout)


def test_frame_gaps_with_kept_structure_match_a_fresh_computation():
    doc = doc_for("residual_cnn.py")
    layout = compute_layout(doc.edited.graph)
    paths = [n.meta.get("fxs_module_path") or "" for n in doc.edited.graph.nodes]
    frames = frame_members(paths)
    layer = np.asarray([layout.nodes[n.name].layer for n in doc.edited.graph.nodes], dtype=np.int64)
    nlayers = int(layer.max()) + 1
    gaps = frame_gaps(frames, layer, nlayers, 40.0)
    assert gaps.shape == (nlayers,) and (gaps >= 40.0).all() and (gaps > 40.0).any()
    # The closing/opening rule by hand: gap below layer l = 16 + 12 for the frames closing at l and
    # 5 for each nested one around them, + 34 for the frames opening at l + 1 and 27 for each
    # nested one around them (5 apart, their 22 of label room), at least the base.
    lo, hi = {}, {}
    for p, members in frames.items():
        parts = p.split(".")
        for q in (".".join(parts[: i + 1]) for i in range(len(parts))):
            lo[q] = min(lo.get(q, 10**9), int(layer[members].min()))
            hi[q] = max(hi.get(q, -1), int(layer[members].max()))
    for lyr in range(nlayers - 1):
        closing = {q.count(".") for q in hi if hi[q] == lyr}
        opening = {q.count(".") for q in lo if lo[q] == lyr + 1}
        close = 12.0 + 5.0 * (len(closing) - 1) if closing else 0.0
        open_ = 34.0 + 27.0 * (len(opening) - 1) if opening else 0.0
        assert gaps[lyr] == max(40.0, 16 + close + open_)


def test_incremental_graph_diff_follows_edits_undo_and_redo():
    doc = doc_for("residual_cnn.py")
    differ = GraphDiffer(doc.original)
    differ.diff(doc.edited)
    events = []
    doc.subscribe(events.append)
    steps = [
        lambda: doc.apply_edit({"op": "set_arg", "node": "layer2_1_relu", "key": 0, "value": "%layer2_0_relu"}),
        lambda: doc.apply_edit({"op": "insert", "after": "layer2_1_bn1", "kind": "call_function",
                                "target": "torch.sigmoid", "args": "(%layer2_1_bn1,)", "name": "gate"}),
        lambda: doc.apply_edit({"op": "erase", "node": "layer1_1_relu", "replace_uses_with": "layer1_1_bn1"}),
        lambda: doc.apply_edit({"op": "rename", "node": "layer2_0_relu", "name": "renamed_relu"}),
        doc.undo, doc.undo, doc.redo, lambda: doc.go_to(0), lambda: doc.go_to(len(doc.history) - 1),
    ]
    for step in steps:
        events.clear()
        step()
        for event in events:
            if event.kind in ("edited", "undone", "redone"):
                got = differ.update(doc.edited, event.added | event.removed | event.changed, doc.node)
        assert got == graph_diff(doc.original, doc.edited)


def test_an_edit_the_layout_cannot_see_reuses_the_previous_layout():
    doc = doc_for("residual_cnn.py")
    g = doc.edited.graph
    before = compute_layout(g)
    doc.apply_edit({"op": "set_arg", "node": "flatten", "key": 1, "value": "1"})   # a literal: same structure
    after = compute_layout(g, previous=before)
    assert after.stats.get("reused") == 1 and _json(after) == _json(before)
    # What a fresh incremental pass gives for the same input is the same picture.
    assert _json(compute_layout(g, previous=_bare(before))) == _json(before)
    # A rewire is laid out again, and so is any layout asked with sizes or other collapsed groups.
    doc.apply_edit({"op": "set_arg", "node": "layer2_1_relu", "key": 0, "value": "%layer2_0_relu"})
    assert "reused" not in compute_layout(g, previous=after).stats
    assert "reused" not in compute_layout(g, previous=before, collapsed={"layer1"}).stats
    assert "reused" not in compute_layout(g, previous=before, sizes={"flatten": (400.0, 56.0)}).stats
