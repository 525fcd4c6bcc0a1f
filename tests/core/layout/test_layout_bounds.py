"""The layout's memory and time are bounded by a budget derived from the graph's size (issue #23).

A graph file is data: a legal, 660 KB graph whose input has 50k users in 50k different layers
asked the layered layout for billions of route points. Dummies, route points, crossing-counter
pairs and the cuts of ``count_crossings`` are now counted before they are allocated; past the
budget long edges run as single lanes beside the graph. The result is still a complete layout
(every card placed, every edge routed, no card crossed), and ordinary models never take that path.
Hostile sizes run in a subprocess under an address-space limit, so a memory bomb fails its test
and not the machine.
"""

import json
import os
import random
import resource
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from fxstudio.core.budgets import LAYOUT_BYTES
from fxstudio.core.layout import compute_layout, count_crossings
from fxstudio.core.layout.budget import ITEM_BYTES, MIN_BYTES, LayoutBudget
from fxstudio.core.layout.crossings import CrossingCounter, count_layered_crossings
from fxstudio.core.layout.lanes import LANE_GAP, ROUTE_POINTS, lane_columns
from fxstudio.core.layout.layers import add_dummies, dummy_counts, lanes_over
from fxstudio.core.layout.sweep_crossings import dominance_counts
from fxstudio.core.layout.types import EdgeRoute, Layout, NodeBox
from fxstudio.core.loading import load_model
from fxstudio.resources import EXAMPLES_DIR
from fxstudio.testing import synthetic
from tests.core.layout.layout_checks import assert_valid_layout
from tests.core.layout.wide_graphs import edge_triples, fan_in, fan_out, skip_pairs

ROOT = Path(__file__).resolve().parents[3]
ADDRESS_SPACE = 6 * 2**30


def _small_budget(monkeypatch, cards_and_dummies: int) -> None:
    """Every layout gets room for ``cards_and_dummies`` items only."""
    monkeypatch.setattr(LayoutBudget, "for_graph", classmethod(lambda cls, n, m: cls(ITEM_BYTES * cards_and_dummies)))


def _complete(layout, graph) -> None:
    """Every node has a card, every edge a route from its source's bottom to its destination's top."""
    assert set(layout.nodes) == {n.name for n in graph.nodes}
    assert {(e.src, e.dst, e.key) for e in layout.edges} == edge_triples(graph)
    for e in layout.edges:
        s, d = layout.nodes[e.src], layout.nodes[e.dst]
        assert e.points[0] == (s.x + s.w / 2, s.y + s.h) and e.points[-1] == (d.x + d.w / 2, d.y)


# ---- dummies are counted before they are made --------------------------------------------------


def test_dummies_are_counted_before_they_are_made_and_the_longest_lanes_go_first():
    layer = np.array([0, 1, 2, 3, 9, 5])
    src, dst = np.array([0, 0, 1, 2, 3]), np.array([4, 5, 4, 3, 4])
    counts = dummy_counts(6, layer, src, dst)
    assert counts.tolist() == [8, 7, 0, 5, 0, 0]  # unit 0: layers 1..8 (its lowest consumer is at 9)
    assert not lanes_over(counts, None).any() and not lanes_over(counts, 20).any()
    assert np.nonzero(lanes_over(counts, 19))[0].tolist() == [0]
    assert np.nonzero(lanes_over(counts, 5))[0].tolist() == [0, 1]
    assert np.nonzero(lanes_over(counts, 0))[0].tolist() == [0, 1, 3]


def test_under_a_limit_the_laned_sources_get_no_dummies_and_no_long_segments():
    layer = np.array([0, 1, 2, 3, 9, 5])
    src, dst = np.array([0, 0, 1, 2, 3]), np.array([4, 5, 4, 3, 4])
    all_layer, seg_src, seg_dst, base, owner, laned = add_dummies(6, layer, src, dst, limit=12)
    assert laned.tolist() == [True, False, False, False, False, False]
    assert len(all_layer) - 6 == 12 and set(owner.tolist()) == {1, 3} and base[0] == -1
    assert 0 not in seg_src.tolist()  # its edges span more than one layer: none is a segment
    assert (all_layer[seg_dst] - all_layer[seg_src] == 1).all()
    full = add_dummies(6, layer, src, dst)
    assert len(full[0]) - 6 == 20 and not full[5].any()


def test_lane_columns_share_an_x_where_their_runs_do_not_meet_and_a_fan_in_is_one_column():
    # three separate fan-ins into 10, 11, 12 whose runs are [0, 3], [5, 8] and [2, 6]
    upper = np.array([0, 1, 2, 3, 4, 5])
    lower = np.array([10, 10, 11, 11, 12, 12])
    col = lane_columns(upper, lower, np.array([0, 1, 5, 6, 2, 3]), np.array([3, 3, 8, 8, 6, 6]), 13)
    assert col[0] == col[1] and col[2] == col[3] and col[4] == col[5]
    assert col[0] == col[2] != col[4]


# ---- ordinary models keep their layout ---------------------------------------------------------


@pytest.mark.parametrize("graph", [synthetic.skip_chain(4000), synthetic.transformer(8), synthetic.exported(8)],
                         ids=["skip_chain", "transformer", "exported"])
def test_ordinary_models_never_take_the_cheaper_path(graph):
    layout = compute_layout(graph)
    assert layout.stats["n_lanes"] == 0 and layout.stats["n_dummies"] > 0
    assert layout.stats["budget"] == MIN_BYTES  # a few thousand nodes: far from the budget
    assert_valid_layout(layout, graph)


def test_the_budget_grows_with_the_graph_and_stops_at_layout_bytes():
    assert LayoutBudget.for_graph(10, 10).bytes == MIN_BYTES
    mid = LayoutBudget.for_graph(60_000, 60_000).bytes
    assert MIN_BYTES < mid < LAYOUT_BYTES
    assert LayoutBudget.for_graph(10**7, 10**7).bytes == LAYOUT_BYTES
    # the 100k-node skip_chain benchmark (about 980k dummies) keeps its full layout
    assert LayoutBudget.for_graph(100_000, 106_000).dummies(100_000, depth=3) > 1_000_000


# ---- a fan-out costs its lane, not its layers --------------------------------------------------


def test_a_fan_outs_routes_cost_their_lanes_bends_not_the_layers_they_cross():
    graph = fan_out(3000)
    layout = compute_layout(graph)
    _complete(layout, graph)
    assert layout.stats["n_lanes"] == 0 and layout.stats["n_dummies"] == 2998  # one shared lane
    points = sum(len(e.points) for e in layout.edges)
    assert points <= 4 * len(layout.edges)  # was 2 per layer crossed: about 4.5 million here
    assert_valid_layout(layout, graph, check_routes=True)


# ---- past the budget, long edges run beside the graph ------------------------------------------


@pytest.mark.parametrize("shape", [fan_in, skip_pairs, fan_out])
def test_past_the_budget_long_edges_run_beside_the_graph_and_the_layout_is_complete(monkeypatch, shape):
    graph = shape(400)
    free = compute_layout(graph)
    _small_budget(monkeypatch, 900)
    layout = compute_layout(graph)
    _complete(layout, graph)
    assert_valid_layout(layout, graph, check_routes=True)
    assert layout.stats["n_dummies"] <= 900 - len(layout.nodes)
    if free.stats["n_dummies"] <= 900 - len(layout.nodes):  # the fan-out's shared lane fits
        assert layout.stats["n_lanes"] == 0
        return
    assert layout.stats["n_lanes"] > 0
    place = layout.placement  # every card and dummy: the columns begin right of all of them
    right = float((place.x + place.w / 2).max())
    beside = [e for e in layout.edges if len(e.points) == ROUTE_POINTS and e.points[2][0] >= right + LANE_GAP]
    assert len(beside) == layout.stats["n_lanes"]
    for e in beside:
        ys = [p[1] for p in e.points]
        assert ys == sorted(ys) and e.points[2][1] == e.points[1][1] and e.points[3][0] == e.points[2][0]
    if shape is fan_in:  # one column gathers them all
        assert layout.stats["n_lane_columns"] == 1


def test_too_many_route_points_move_the_costliest_sources_beside_the_graph(monkeypatch):
    graph = fan_out(600)
    monkeypatch.setattr(LayoutBudget, "points", lambda self, edges: 2 * edges)
    layout = compute_layout(graph)
    _complete(layout, graph)
    assert_valid_layout(layout, graph, check_routes=True)
    assert layout.stats["n_lanes"] == 299  # x's long edges: the only ones through dummies
    long = [e for e in layout.edges if e.src == "x" and layout.nodes[e.dst].layer > 1]
    assert len(long) == 299 and all(len(e.points) == ROUTE_POINTS for e in long)


# ---- crossing counts: same numbers, bounded memory ---------------------------------------------


def test_the_crossing_counter_keeps_at_most_its_pair_budget_and_counts_the_same():
    rng = np.random.default_rng(3)
    layer = np.repeat(np.arange(6), 40)
    seg_src = np.nonzero(layer < 5)[0]
    seg_dst = seg_src + 40 + rng.integers(-5, 5, len(seg_src)).clip(-(seg_src % 40), 39 - seg_src % 40)
    for _ in range(5):
        pos = np.concatenate([rng.permutation(40) for _ in range(6)])
        want = count_layered_crossings(layer, pos, seg_src, seg_dst)
        for max_pairs in (None, 0, 800, 10**6):
            counter = CrossingCounter(layer, seg_src, seg_dst, max_pairs=max_pairs)
            assert len(counter.src_a) <= (max_pairs if max_pairs is not None else 8 * len(seg_src) + 4096)
            assert counter(pos) == want


def test_dominance_counts_match_brute_force():
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 64, 300):
        pk, pv = rng.integers(-3, 20, size), rng.integers(0, 15, size)
        qk, qv = rng.integers(-3, 20, 50), rng.integers(0, 15, 50)
        want = [int(((pk <= a) & (pv <= b)).sum()) for a, b in zip(qk, qv)]
        assert dominance_counts(pk, pv, qk, qv).tolist() == want


def _random_layout(seed: int) -> Layout:
    rng = random.Random(seed)
    lay = Layout()
    rows = rng.randint(2, 12)
    for i in range(rng.randint(2, 30)):
        r = rng.randrange(rows)
        x = rng.choice([0, 50, 100, rng.uniform(0, 300)])
        lay.nodes[f"n{i}"] = NodeBox(f"n{i}", x, r * 100.0 + rng.choice([0, 3.5]), 40, 50, r)
    names = list(lay.nodes)
    for _ in range(rng.randint(2, 40)):
        a, b = rng.sample(names, 2)
        sa, sb = lay.nodes[a], lay.nodes[b]
        y0, y1 = sa.y + sa.h, sb.y
        pts = [(sa.x + 20, y0)]
        for _ in range(rng.randint(0, 4)):  # diagonals across many rows, detours, ties, wiggles
            pts.append((rng.choice([pts[-1][0], rng.uniform(-50, 350), 100.0]), rng.uniform(min(y0, y1), max(y0, y1))))
        pts.append((sb.x + 20, y1))
        if rng.random() < 0.5:
            pts.sort(key=lambda p: p[1], reverse=y1 < y0)
        lay.edges.append(EdgeRoute(a, b, 0, pts))
    return lay


def test_count_crossings_by_sweep_gives_the_dense_count():
    for seed in range(150):
        lay = _random_layout(seed)
        assert count_crossings(lay, cut_limit=0) == count_crossings(lay), seed
    for name, tracer in [("transformer_block.py", "fx"), ("transformer_block.py", "export"), ("residual_cnn.py", "fx")]:
        lay = compute_layout(load_model(EXAMPLES_DIR / name, tracer=tracer).graph_module.graph)
        assert count_crossings(lay, cut_limit=0) == count_crossings(lay)
    lay = compute_layout(synthetic.skip_chain(2000))
    dense = count_crossings(lay)
    assert dense > 0 and count_crossings(lay, cut_limit=0) == dense


# ---- hostile sizes, in a subprocess under an address-space limit -------------------------------


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run_bounded(argv, timeout=240, cwd=ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "OMP_NUM_THREADS": "1",
           "FXSTUDIO_STATE_DIR": str(Path(cwd) / "state")}
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env,
                          preexec_fn=_limit_address_space)


def _figures(kind: str, n: int) -> dict:
    proc = _run_bounded([sys.executable, "-m", "tests.core.layout.wide_graphs", kind, n])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_100k_node_chain_whose_input_has_50k_users_lays_out_in_bounded_memory_and_time():
    got = _figures("fan_out", 100_000)
    assert got["placed"] and got["routed"] and got["overlaps"] == 0 and got["upward"] == 0
    assert got["n_dummies"] < 100_000 and got["points"] <= 4 * got["edges"]  # was 5e9 points (37 GiB)
    assert got["seconds"] < 20 and got["crossing_seconds"] < 20  # about 1 s and 2 s on 2 cores
    assert got["rss_kib"] - got["rss_graph_kib"] < 1.5 * 2**20  # about 0.3 GiB above the graph itself


@pytest.mark.parametrize("kind", ["fan_in", "skip_pairs"])
def test_graphs_asking_for_a_quadratic_number_of_dummies_lay_out_within_the_budget(kind):
    got = _figures(kind, 20_000)
    assert got["placed"] and got["routed"] and got["overlaps"] == 0 and got["upward"] == 0
    assert got["n_lanes"] > 0  # about 2e8 dummies asked for
    assert got["n_dummies"] * ITEM_BYTES <= got["budget"]
    assert got["seconds"] < 20


def _capture(path: Path, n: int) -> Path:
    """A hand-written capture of ``fan_out(n)``: a chain whose input is used by every other node."""
    tensor = {"kind": "tensor", "shape": [2], "dtype": "float32", "requires_grad": False}

    def node(op, name, target, args):
        return {"op": op, "name": name, "target": target, "args": args, "kwargs": "{}"}

    nodes = [dict(node("placeholder", "x", "L_x_", "()"), value=tensor)]
    prev = "x"
    for i in range(n):
        nodes.append(node("call_function", f"n{i}", "operator.add", f"(%{prev}, %x)") if i % 2 == 0
                     else node("call_function", f"n{i}", "torch.relu", f"(%{prev},)"))
        prev = f"n{i}"
    nodes.append(node("output", "output", "output", f"((%{prev},),)"))
    graph = {"index": 0, "name": "graph_0", "compile_id": "0/0", "inputs": [tensor], "guards": "",
             "saved_inputs": False, "nodes": nodes,
             "break": {"reason": "return_value", "graph_break": False, "frames": [], "user_frame": None}}
    manifest = {"format": "fxstudio-capture", "version": 1, "torch": "2.13", "backend": "eager", "notes": [],
                "graphs": [graph]}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("capture.json", json.dumps(manifest))
    return path


def test_fxstudio_layout_on_a_capture_whose_input_has_10k_users_in_10k_layers(tmp_path):
    capture = _capture(tmp_path / "fan.fxcap", 20_000)
    out = tmp_path / "layout.json"
    fxstudio = Path(sys.executable).parent / "fxstudio"
    proc = _run_bounded([fxstudio, "layout", f"{capture}::0", "--json", out], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "20002 nodes, 20002 cards, 30001 edges" in proc.stdout and " 0 edge crossings" in proc.stdout
    data = json.loads(out.read_text())
    assert len(data["nodes"]) == 20002 and len(data["edges"]) == 30001
    assert sum(len(e["points"]) for e in data["edges"]) <= 4 * 30001
    assert data["seconds"] < 10
