"""Folding repeated blocks around the blocks that differ (issue #26), without Qt: a block an edit
or a divergence touched is drawn expanded and splits the folded blocks into spans, each its own
card with its own count; the labels say so."""

from __future__ import annotations

from fxstudio.core.layout import compute_layout, differing_blocks, frame_problems, label_folds, repeat_folds, repeat_runs
from fxstudio.core.loading import load_model
from tests.model_files import REPEATED_BLOCKS_BODY, write_model


def test_a_differing_block_splits_the_fold_into_two_counted_cards(tmp_path):
    graph = load_model(f"{write_model(tmp_path / 'blocks.py', REPEATED_BLOCKS_BODY)}::Net").graph_module.graph
    runs = repeat_runs(graph)
    assert [(r.paths[0], r.paths[-1], len(r.paths)) for r in runs] == [("blocks.0", "blocks.39", 40)]
    nodes = {n.name: n for n in graph.nodes}
    differs = differing_blocks(runs, {nodes["mul_20"]: "edited", nodes["relu_20"]: "diverged", nodes["add_33"]: "diverged"})
    assert differs == {"blocks.20": "edited", "blocks.33": "diverged"}   # the first reason per block
    fold = repeat_folds(graph, runs, differs=differs, opened={"blocks.35", "blocks.36"})
    run = fold.runs[0]
    assert run.first == "blocks.0" and [(s[0], s[-1]) for s in run.spans] == [
        ("blocks.1", "blocks.19"), ("blocks.21", "blocks.32"), ("blocks.34", "blocks.34"), ("blocks.37", "blocks.39")]
    assert {"blocks.20", "blocks.33", "blocks.35", "blocks.36", "blocks.0"}.isdisjoint(fold.collapsed)
    assert fold.merged["blocks.19"] == "blocks.1" and fold.merged["blocks.32"] == "blocks.21"
    assert fold.folded_block("blocks.5.fc") == "blocks.5" and fold.folded_block("blocks.20") is None
    layout = compute_layout(graph, collapsed=fold.collapsed, merged=fold.merged, fold_weights=True)
    label_folds(layout, fold)
    cards = {p: g.label for p, g in layout.groups.items() if g.collapsed}
    assert cards == {
        "blocks.1": "blocks.1 … blocks.19 · ×19 identical Block (as blocks.0)",
        "blocks.21": "blocks.21 … blocks.32 · ×12 identical Block (as blocks.0)",
        "blocks.34": "blocks.34 · ×1 identical Block (as blocks.0)",
        "blocks.37": "blocks.37 … blocks.39 · ×3 identical Block (as blocks.0)",
    }
    assert layout.groups["blocks.0"].label == "blocks.0 · Block  ×38 identical (blocks.0 … blocks.39; blocks.20, blocks.33 differ)"
    assert layout.groups["blocks.20"].label == "blocks.20 · Block · edited"
    assert layout.groups["blocks.33"].label == "blocks.33 · Block · diverged"
    assert "mul_20" in layout.nodes and "mul_19" not in layout.nodes and "mul_35" in layout.nodes
    assert frame_problems(layout, graph) == []


def test_the_representative_is_the_first_block_that_does_not_differ(tmp_path):
    graph = load_model(f"{write_model(tmp_path / 'blocks.py', REPEATED_BLOCKS_BODY)}::Net").graph_module.graph
    fold = repeat_folds(graph, differs={"blocks.0": "edited", "blocks.1": "diverged"})
    run = fold.runs[0]
    assert run.first == "blocks.2" and run.spans == [tuple(f"blocks.{i}" for i in range(3, 40))]
    assert run.card_label() == "blocks.3 … blocks.39 · ×37 identical Block (as blocks.2)"
    # Nothing left to fold: the run is left out.
    assert repeat_folds(graph, differs={f"blocks.{i}": "edited" for i in range(1, 40)}).runs == []
