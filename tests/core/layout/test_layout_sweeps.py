"""The fast crossing-reduction, layering, flattening and packing paths give exactly what the plain
definitions give (the layout of the 4k/10k benchmark graphs depends on it being exact)."""

import numpy as np
import pytest

from fxstudio.core.layout import align as layout_align, crossings as layout_crossings
from fxstudio.core.errors import TraceError
from fxstudio.core.layout.graph_model import extract_graph, node_inputs
from fxstudio.core.node_text import target_label
from fxstudio.core.layout.crossings import (CrossingCounter, _RowSweeps, _VectorSweeps, count_layered_crossings,
                                            positions_from_keys, sweep_layers)
from fxstudio.core.layout.layers import assign_layers
from fxstudio.core.loading import load_model
from fxstudio.resources import EXAMPLES_DIR


def _random_layered(rng, n_layers, width, density, shuffle=True):
    """(layer, seg_src, seg_dst, pos): unit-span segments between consecutive layers, node ids in
    random order, positions from random keys (with ties)."""
    counts = rng.integers(1, width + 1, n_layers)
    layer = np.repeat(np.arange(n_layers), counts)
    n = len(layer)
    starts = np.cumsum(counts) - counts
    src, dst = [], []
    for lyr in range(n_layers - 1):
        above = np.arange(starts[lyr], starts[lyr] + counts[lyr])
        below = np.arange(starts[lyr + 1], starts[lyr + 1] + counts[lyr + 1])
        m = rng.poisson(density * max(len(above), len(below)))
        src += rng.choice(above, m).tolist()
        dst += rng.choice(below, m).tolist()
    s, d = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    pair = np.unique(s * n + d)
    s, d = pair // n, pair % n
    if shuffle:
        perm = rng.permutation(n)
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n)
        layer, s, d = layer[perm], inv[s], inv[d]
    key = rng.integers(0, 3, n).astype(float) if rng.random() < 0.3 else rng.random(n)
    return layer, s, d, positions_from_keys(layer, key, np.arange(n))


def _reference_sweep(layer, seg_src, seg_dst, pos, down):
    """One Gauss-Seidel barycentre sweep, written out plainly: each layer in turn sorted by the mean
    position of its neighbours in the layer sorted just before (own position when it has none),
    ties by position."""
    pos = pos.copy()
    nlayers = int(layer.max()) + 1
    nbrs = {v: [] for v in range(len(layer))}
    for a, b in zip(seg_src.tolist(), seg_dst.tolist()):
        if down:
            nbrs[b].append(a)
        else:
            nbrs[a].append(b)
    for lyr in (range(1, nlayers) if down else range(nlayers - 2, -1, -1)):
        members = [v for v in range(len(layer)) if layer[v] == lyr]

        def key(v):
            return (sum(pos[u] for u in nbrs[v]) / len(nbrs[v]) if nbrs[v] else pos[v], pos[v])

        for i, v in enumerate(sorted(members, key=key)):
            pos[v] = i
    return pos


def test_a_vectorised_sweep_is_exactly_the_gauss_seidel_sweep():
    rng = np.random.default_rng(5)
    done = 0
    for trial in range(150):
        layer, s, d, pos = _random_layered(rng, int(rng.integers(2, 40)), int(rng.integers(1, 12)),
                                           rng.uniform(0.3, 2.5))
        if len(s) == 0:
            continue
        nlayers = int(layer.max()) + 1
        vector = _VectorSweeps(layer, s, d, nlayers)
        for down in (True, False):
            want = _reference_sweep(layer, s, d, pos, down)
            rows = _RowSweeps(layer, s, d, pos, nlayers)
            rows.barycentre(pos, down, median=False)
            assert np.array_equal(np.asarray(rows.posl), want), trial
            got = vector.sweep(pos, down)
            if got is not None:  # None: too many rounds, the caller goes on in Python
                assert np.array_equal(got, want), trial
                done += 1
    assert done > 200


@pytest.mark.parametrize("rounds", [0, 1, 3, 24])
def test_sweeps_give_the_same_order_however_many_numpy_rounds_they_may_take(monkeypatch, rounds):
    rng = np.random.default_rng(11)
    for trial in range(40):
        layer, s, d, pos = _random_layered(rng, int(rng.integers(2, 50)), int(rng.integers(1, 10)),
                                           rng.uniform(0.5, 2.0))
        if len(s) == 0:
            continue
        monkeypatch.setattr(layout_crossings, "VECTOR_ROUNDS", 0)  # plain Python throughout
        want = sweep_layers(layer, s, d, pos, sweeps=8, transpose_passes=0)
        monkeypatch.setattr(layout_crossings, "VECTOR_ROUNDS", rounds)
        monkeypatch.setattr(layout_crossings, "VECTOR_WORK", 100)
        assert np.array_equal(sweep_layers(layer, s, d, pos, sweeps=8, transpose_passes=0), want), trial
        monkeypatch.setattr(layout_crossings, "VECTOR_WORK", 0)  # gives up after the first round
        assert np.array_equal(sweep_layers(layer, s, d, pos, sweeps=8, transpose_passes=0), want), trial


def test_sweeps_never_return_more_crossings_than_they_start_with():
    rng = np.random.default_rng(3)
    for _ in range(30):
        layer, s, d, pos = _random_layered(rng, 30, 8, 1.5)
        after = sweep_layers(layer, s, d, pos, sweeps=8, transpose_passes=0)
        assert count_layered_crossings(layer, after, s, d) <= count_layered_crossings(layer, pos, s, d)
        assert sorted(after[layer == 3].tolist()) == list(range(int((layer == 3).sum())))


def test_the_crossing_counter_matches_the_merge_count(monkeypatch):
    rng = np.random.default_rng(0)
    for trial in range(120):
        layer, s, d, pos = _random_layered(rng, int(rng.integers(2, 8)), int(rng.integers(1, 90)),
                                           rng.uniform(0.2, 3.0), shuffle=trial % 2 == 0)
        monkeypatch.setattr(layout_crossings, "PAIR_GAP_LIMIT", int(rng.integers(2, 80)))  # some gaps wider
        counter = CrossingCounter(layer, s, d)
        for _ in range(3):
            assert counter(pos) == count_layered_crossings(layer, pos, s, d), trial
            pos = positions_from_keys(layer, rng.random(len(layer)), np.arange(len(layer)))
    # Two segments from one node, or into one node, never cross.
    layer = np.array([0, 0, 1, 1])
    assert CrossingCounter(layer, np.array([0, 0, 1]), np.array([2, 3, 2]))(np.array([0, 1, 0, 1])) == 1


def _reference_layers(n, src, dst, weight_like):
    """Longest path from the top; then, bottom up, each weight-like node right above its first consumer."""
    lay = [0] * n
    for v in range(n):
        ins = [lay[int(a)] for a, b in zip(src, dst) if b == v]
        lay[v] = max(ins) + 1 if ins else 0
    for v in range(n - 1, -1, -1):
        outs = [lay[int(b)] for a, b in zip(src, dst) if a == v]
        if outs and weight_like[v]:
            lay[v] = min(outs) - 1
    return lay


def test_layering_follows_its_definition():
    rng = np.random.default_rng(2)
    for _ in range(60):
        n = int(rng.integers(2, 40))
        m = int(rng.integers(1, 3 * n))
        a = rng.integers(0, n, m)
        b = rng.integers(0, n, m)
        keep = a < b
        src, dst = a[keep], b[keep]
        wl = rng.random(n) < 0.3
        assert assign_layers(n, src, dst, wl).tolist() == _reference_layers(n, src.tolist(), dst.tolist(), wl)


def test_the_right_packing_in_left_packing_order_equals_the_searched_longest_path():
    rng = np.random.default_rng(4)
    for _ in range(40):
        layer, s, d, pos = _random_layered(rng, int(rng.integers(2, 30)), int(rng.integers(1, 8)), 1.0)
        n = len(layer)
        widths = rng.choice([0.0, 140.0, 200.0], n)
        gaps = rng.choice([14.0, 36.0], n)
        root = layout_align.block_roots(layout_align.align(layer, pos, widths == 0, rng.random(n) < 0.2, s, d))
        perm = np.lexsort((pos, layer))
        same = layer[perm][1:] == layer[perm][:-1]
        ra, rb = root[perm[:-1][same]], root[perm[1:][same]]
        sep = rng.uniform(14, 300, len(ra))
        left = layout_align._longest_path(n, ra, rb, sep)
        order = np.argsort(-left[rb], kind="stable")
        assert np.array_equal(layout_align._longest_path_in_order(n, rb, ra, sep, order),
                              layout_align._longest_path(n, rb, ra, sep))
        layout_align.compact(layer, pos, widths, gaps, root)  # and compact runs through it


@pytest.mark.parametrize("tracer", ["fx", "export"])
def test_flattening_matches_node_inputs_on_every_example(tracer):
    done = 0
    for path in sorted(EXAMPLES_DIR.glob("*.py")):
        try:
            graph = load_model(path, tracer=tracer).graph_module.graph
        except TraceError:
            continue
        ga = extract_graph(graph)
        nodes = list(graph.nodes)
        index = {node: i for i, node in enumerate(nodes)}
        want = [(index[src], i, key) for i, node in enumerate(nodes) for src, key in node_inputs(node)]
        assert list(zip(ga.src.tolist(), ga.dst.tolist(), ga.keys)) == want, path.name
        assert ga.targets == [target_label(node) for node in nodes]
        assert ga.names == [node.name for node in nodes]
        for i, node in enumerate(nodes):
            shape = node.meta.get("fxs_shape")
            shape_len = len("×".join(str(x) for x in shape)) if type(shape) is tuple else 0
            dtype = node.meta.get("fxs_dtype")
            if shape_len and type(dtype) is str:  # the card reads "2×3 float32"
                shape_len += 1 + len(dtype)
            assert ga.label_len[i] == max(len(node.name), len(ga.targets[i]), shape_len)
        done += 1
    assert done >= 9
