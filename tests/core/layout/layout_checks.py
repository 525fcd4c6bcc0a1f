"""Geometric checks shared by the layout tests: every card apart, every edge downward, no route
through a card."""

import numpy as np

from fxstudio.core.layout import overlapping_pairs, upward_edges


def assert_valid_layout(layout, graph=None, *, check_routes=False):
    """No overlapping cards, every edge downward from its source to its destination; with
    ``graph``, every node is laid out (or inside a collapsed group) and every edge routed."""
    assert overlapping_pairs(layout) == []
    assert upward_edges(layout) == []
    if graph is not None:
        collapsed = {p for p, g in layout.groups.items() if g.collapsed}
        for node in graph.nodes:
            path = node.meta.get("fxs_module_path") or ""
            inside = any(path == c or path.startswith(c + ".") for c in collapsed)
            assert (node.name in layout.nodes) != inside, node.name
    if check_routes:
        assert_routes_avoid_cards(layout)


def assert_routes_avoid_cards(layout):
    """No route passes through the inside of a card other than its own two ends."""
    names = list(layout.nodes)
    boxes = np.array([(b.x, b.y, b.x + b.w, b.y + b.h) for b in layout.nodes.values()])
    for e in layout.edges:
        pts = np.asarray(e.points)
        t = np.linspace(0, 1, 9)[:, None, None]
        samples = (pts[:-1][None] * (1 - t) + pts[1:][None] * t).reshape(-1, 2)
        inside = ((samples[:, None, 0] > boxes[None, :, 0] + 0.5) & (samples[:, None, 0] < boxes[None, :, 2] - 0.5)
                  & (samples[:, None, 1] > boxes[None, :, 1] + 0.5) & (samples[:, None, 1] < boxes[None, :, 3] - 0.5))
        hit = {names[j] for j in np.nonzero(inside.any(axis=0))[0]}
        assert not hit, f"route {e.src}->{e.dst} passes through {sorted(hit)}"
