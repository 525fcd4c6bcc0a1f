"""Legal graphs whose naive layered layout is quadratic, for the layout-bounds tests (issue #23).

``python -m tests.core.layout.wide_graphs KIND N`` lays one out (and counts its crossings, as
``fxstudio layout`` does) and prints one JSON line of figures: what the bounded subprocess tests read.
"""

from __future__ import annotations

import json
import operator
import resource
import sys
import time

import torch
import torch.fx


def fan_out(n: int) -> torch.fx.Graph:
    """A chain of ``n`` nodes from placeholder ``x`` where every other node also adds ``x``: ``x``
    has ``n / 2`` users in as many layers."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    h = x
    for i in range(n):
        h = g.call_function(operator.add, (h, x)) if i % 2 == 0 else g.call_function(torch.relu, (h,))
    g.output(h)
    return g


def fan_in(n: int) -> torch.fx.Graph:
    """A chain of ``n`` relus whose every output also feeds one ``cat`` at the bottom: ``n`` sources
    each with an edge down to the last layer (a quadratic number of dummies)."""
    g = torch.fx.Graph()
    h = g.placeholder("x")
    outs = []
    for _ in range(n):
        h = g.call_function(torch.relu, (h,))
        outs.append(h)
    g.output(g.call_function(torch.cat, (outs,)))
    return g


def skip_pairs(n: int) -> torch.fx.Graph:
    """A chain of ``n`` nodes where each node of the second half also adds the node ``n / 2``
    before it: ``n / 2`` parallel edges each spanning ``n / 2`` layers."""
    g = torch.fx.Graph()
    h = g.placeholder("x")
    nodes = []
    half = n // 2
    for i in range(n):
        h = g.call_function(operator.add, (h, nodes[i - half])) if i >= half else g.call_function(torch.relu, (h,))
        nodes.append(h)
    g.output(h)
    return g


SHAPES = {"fan_out": fan_out, "fan_in": fan_in, "skip_pairs": skip_pairs}


def edge_triples(graph: torch.fx.Graph) -> set:
    """(src, dst, key) of every edge the layout must route."""
    from fxstudio.core.layout.graph_model import node_inputs

    return {(inp.name, node.name, key) for node in graph.nodes for inp, key in node_inputs(node)}


def main(kind: str, n: int) -> None:
    from fxstudio.core.layout import compute_layout, count_crossings, overlapping_pairs, upward_edges

    graph = SHAPES[kind](n)
    rss_graph = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    layout = compute_layout(graph)
    seconds = time.perf_counter() - t0
    rss_layout = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    crossings = count_crossings(layout)
    crossing_seconds = time.perf_counter() - t0
    routed = {(e.src, e.dst, e.key) for e in layout.edges}
    print(json.dumps({
        "seconds": seconds, "crossing_seconds": crossing_seconds, "crossings": crossings,
        "placed": sorted({node.name for node in graph.nodes} - set(layout.nodes)) == [],
        "routed": routed == edge_triples(graph), "edges": len(layout.edges),
        "points": sum(len(e.points) for e in layout.edges),
        "overlaps": len(overlapping_pairs(layout)), "upward": len(upward_edges(layout)),
        "n_dummies": layout.stats["n_dummies"], "n_lanes": layout.stats["n_lanes"],
        "budget": layout.stats["budget"], "rss_graph_kib": rss_graph, "rss_kib": rss_layout,
        "rss_end_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
