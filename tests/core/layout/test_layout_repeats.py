"""Repeated blocks (issue #15), without Qt: identical layers are found on real graphs, and a fold
draws the first block expanded and all the others as one card, with the edges kept."""

from __future__ import annotations

import functools

from fxstudio.core.layout import compute_layout, frame_problems, label_folds, repeat_folds, repeat_runs
from fxstudio.core.layout.repeats import _consecutive
from fxstudio.core.loading import load_model
from tests.core.layout import real_models


@functools.lru_cache(maxsize=None)
def gpt2():
    return load_model(real_models.gpt2_pt2(6)).graph_module.graph


@functools.lru_cache(maxsize=None)
def cnn():
    return load_model(real_models.cnn_pt2()).graph_module.graph


def test_identical_layers_are_the_gpt2_blocks_and_the_resnet_stage_blocks():
    runs = repeat_runs(gpt2())
    assert [(r.paths, r.cls) for r in runs] == [(tuple(f"m.h.{i}" for i in range(6)), "GPT2Block")]
    stages = {r.paths: r.cls for r in repeat_runs(cnn())}
    # layer1 holds three identical 8-channel blocks, layer2 two 16-channel ones: two runs.
    assert stages == {("layer1.0", "layer1.1", "layer1.2"): "Block", ("layer2.0", "layer2.1"): "Block"}
    assert _consecutive(["h.0", "h.1", "h.3", "h.4"]) == [["h.0", "h.1"], ["h.3", "h.4"]]


def test_folding_draws_the_first_block_and_one_card_for_the_rest():
    g = gpt2()
    full = compute_layout(g, fold_weights=True)
    fold = repeat_folds(g)
    assert fold.collapsed == {"m.h.1", "m.h.2", "m.h.3", "m.h.4", "m.h.5"}
    assert fold.merged == {"m.h.2": "m.h.1", "m.h.3": "m.h.1", "m.h.4": "m.h.1", "m.h.5": "m.h.1"}
    layout = compute_layout(g, collapsed=fold.collapsed, merged=fold.merged, fold_weights=True)
    label_folds(layout, fold)
    card = layout.groups["m.h.1"]
    assert card.collapsed and not {"m.h.2", "m.h.3", "m.h.4", "m.h.5"} & set(layout.groups)
    assert card.label == "m.h.1 … m.h.5 · ×5 identical GPT2Block (as m.h.0)"
    assert layout.groups["m.h.0"].label == "m.h.0 · GPT2Block  ×6 identical (m.h.0 … m.h.5)"
    in_blocks = [n.name for n in g.nodes if n.name in full.nodes
                 and any(n.meta["fxs_module_path"].startswith(f"m.h.{i}") for i in range(1, 6))]
    assert card.members == len(in_blocks) > 100   # the cards the five blocks drew
    assert set(full.nodes) - set(layout.nodes) == set(in_blocks)
    # The card takes the run's edges (in from h.0 and the attention mask, out to ln_f); none
    # inside the run is left.
    assert any(e.src == "m.h.1" for e in layout.edges) and any(e.dst == "m.h.1" for e in layout.edges)
    assert not [e for e in layout.edges if e.src in in_blocks or e.dst in in_blocks]
    assert not [e for e in layout.edges if e.src == e.dst]
    assert frame_problems(layout, g) == []
    # Unfolding is laying out without the fold: everything is back as it was.
    again = compute_layout(g, fold_weights=True, previous=layout)
    assert set(again.nodes) == set(full.nodes) and "m.h.3" in again.groups and not again.groups["m.h.1"].collapsed


def test_a_fold_survives_an_edit_in_the_first_block():
    g = gpt2()
    fold = repeat_folds(g)
    before = compute_layout(g, collapsed=fold.collapsed, merged=fold.merged, fold_weights=True)
    gm = load_model(real_models.gpt2_pt2(6)).graph_module   # a copy to edit
    import torch

    act = next(n for n in gm.graph.nodes if n.meta.get("fxs_module_path") == "m.h.0.mlp.act" and n.op == "call_function")
    with gm.graph.inserting_after(act):
        gate = gm.graph.call_function(torch.sigmoid, (act,))
    gate.meta["fxs_module_path"] = "m.h.0.mlp"
    after = compute_layout(gm.graph, collapsed=fold.collapsed, merged=fold.merged, fold_weights=True, previous=before)
    assert gate.name in after.nodes and after.groups["m.h.1"].collapsed
    assert set(after.nodes) - set(before.nodes) == {gate.name}
