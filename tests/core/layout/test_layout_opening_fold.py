"""A large graph opens folded, and opening a module folds what would be too many cards (issue #28):
``core/layout/opening_fold.py`` on real graphs (a GPT-2 export, the example CNN, a 21,000-node
generated chain), checked against the layout it produces."""

from __future__ import annotations

import functools
import random

from fxstudio.core.layout import compute_layout, fold_inside, opened_collapsed, opening_collapsed
from fxstudio.core.layout.graph_model import extract_graph
from fxstudio.core.layout.groups import ancestors, collapse_owner
from fxstudio.core.layout.opening_fold import module_path_counts
from fxstudio.core.loading import load_model
from fxstudio.testing import synthetic
from tests.core.layout import real_models
from tests.core.layout.layout_checks import assert_valid_layout


@functools.lru_cache(maxsize=None)
def gpt2():
    return load_model(real_models.gpt2_pt2(6)).graph_module.graph


@functools.lru_cache(maxsize=None)
def chain():
    return synthetic.as_graph_module(synthetic.make_graph("skip_chain", 21_000)).graph


def _cards(layout) -> int:
    """Cards drawn: nodes' cards plus collapsed modules' cards."""
    return len(layout.nodes) + sum(1 for g in layout.groups.values() if g.collapsed)


def _level(paths, level: int) -> frozenset[str]:
    """Every module at ``level`` (dotted parts) that holds a node."""
    return frozenset(".".join(p.split(".")[:level]) for p in paths if p and p.count(".") + 1 >= level)


def test_a_fold_leaves_at_most_the_budget_and_is_the_deepest_level_that_does():
    g = gpt2()
    counts = module_path_counts(g)
    everything = len(compute_layout(g).nodes)
    for cards in (5, 20, 40, 80):
        folded = fold_inside(counts, "", cards)
        layout = compute_layout(g, collapsed=folded)
        assert_valid_layout(layout, g)
        assert folded and set(folded) <= set(layout.groups)
        level = max(p.count(".") + 1 for p in folded)
        assert folded == _level(counts, level)   # one whole level of modules
        shown = _cards(layout)
        if shown > cards:   # no level fits: the outermost modules are folded
            assert level == 1, (cards, shown)
        elif _level(counts, level + 1):   # the next level down would not fit
            assert _cards(compute_layout(g, collapsed=_level(counts, level + 1))) > cards, cards
    assert fold_inside(counts, "", everything + 10) == frozenset()


def test_graphs_up_to_the_threshold_open_unfolded_and_larger_ones_folded():
    assert opening_collapsed(gpt2()) == frozenset()
    g = chain()
    assert len(g.nodes) > 20_000
    folded = opening_collapsed(g)
    assert folded == {"blocks"}   # 4,900 blocks do not fit in 3,000 cards: the chain is one card
    layout = compute_layout(g, collapsed=folded, fold_weights=True)
    assert _cards(layout) == 3 and layout.groups["blocks"].collapsed   # x, blocks, output
    assert opening_collapsed(g, above=len(g.nodes)) == frozenset()


def test_opening_a_module_folds_its_contents_only_when_they_would_not_fit():
    g = chain()
    inner = opened_collapsed(g, {"blocks"}, "blocks")
    blocks = {p for p in module_path_counts(g) if p.count(".") == 1}
    assert "blocks" not in inner and inner == blocks   # every block a card of its own
    layout = compute_layout(g, collapsed=inner, fold_weights=True)
    assert all(layout.groups[p].collapsed for p in blocks) and not layout.groups["blocks"].collapsed
    # one block opened: its two nodes need no fold
    opened = opened_collapsed(g, inner, "blocks.7")
    assert opened == inner - {"blocks.7"}
    again = compute_layout(g, collapsed=opened, fold_weights=True)
    assert "linear_7" in again.nodes and not again.groups["blocks.7"].collapsed
    # under the threshold, opening removes the module and nothing else
    assert opened_collapsed(gpt2(), {"m.h.1", "m.h.2"}, "m.h.1") == {"m.h.2"}


def test_collapse_owner_is_the_outermost_collapsed_ancestor():
    rng = random.Random(3)
    names = ["a", "b", "h", "0", "1", "mlp"]
    paths = ["", *{".".join(rng.choice(names) for _ in range(rng.randint(1, 5))) for _ in range(400)}]
    every = sorted({a for p in paths for a in ancestors(p)})
    for _ in range(30):
        collapsed = frozenset(rng.sample(every, rng.randint(1, 12)))
        expected = [next((a for a in ancestors(p) if a in collapsed), None) for p in paths]
        assert collapse_owner(paths, collapsed) == expected


def test_folded_members_do_not_change_what_the_shown_cards_measure():
    g = gpt2()
    plain = extract_graph(g, fold=True)
    folded = extract_graph(g, fold=True, collapsed=frozenset({"m.h.2", "m.h.3"}))
    shown = [i for i, o in enumerate(folded.owners) if o is None]
    assert len(shown) < plain.n and folded.owners_for == {"m.h.2", "m.h.3"}
    assert [plain.lines[i] for i in shown] == [folded.lines[i] for i in shown]
    assert compute_layout(g, collapsed={"m.h.2", "m.h.3"}, fold_weights=True).nodes.keys() == \
        compute_layout(g, collapsed={"m.h.3", "m.h.2"}, fold_weights=True).nodes.keys()
