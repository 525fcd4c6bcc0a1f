"""The layout result shared by the layout engine, the canvas and `fxstudio layout`.

Coordinates are scene units (1 unit = 1 pixel at zoom 1); y grows downward, so every edge
goes from a smaller y to a larger y. Nodes are keyed by FX node name.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

_serials = itertools.count(1)


@dataclass
class NodeBox:
    """A node's card: top-left corner, size and layer (0 = top)."""

    name: str
    x: float
    y: float
    w: float
    h: float
    layer: int


@dataclass
class EdgeRoute:
    """An edge from ``src`` to ``dst`` feeding the input ``key`` (int position or keyword) of ``dst``.

    ``points`` is a polyline from the bottom of ``src`` to the top of ``dst``. ``src`` or ``dst``
    may be a collapsed group's path when the edge crosses a collapsed group's border.
    """

    src: str
    dst: str
    key: int | str
    points: list[tuple[float, float]]


@dataclass
class GroupBox:
    """The frame of a module group (``path`` like ``layer1.0``); collapsed groups show as one card."""

    path: str
    label: str
    x: float
    y: float
    w: float
    h: float
    depth: int
    collapsed: bool = False
    members: int = 0
    layer: int = -1  # the layer of a collapsed group's card; -1 for an expanded frame


@dataclass
class Layout:
    """A complete layout: node cards, edge routes, module frames and the seconds it took."""

    nodes: dict[str, NodeBox] = field(default_factory=dict)
    edges: list[EdgeRoute] = field(default_factory=list)
    groups: dict[str, GroupBox] = field(default_factory=dict)
    seconds: float = 0.0
    stats: dict = field(default_factory=dict)  # layout engine's counters and stage times; not in JSON
    # What an incremental layout reads off this one, kept by ``compute_layout`` so the next edit
    # need not rebuild it from the boxes and routes (None: rebuild). Not in JSON, not compared.
    lanes: tuple | None = field(default=None, repr=False, compare=False)  # (source, layer) → dummy x
    layer_tops: dict | None = field(default=None, repr=False, compare=False)  # layer → top of its cards
    group_cache: tuple | None = field(default=None, repr=False, compare=False)  # frames + class names, by paths
    inputs: tuple | None = field(default=None, repr=False, compare=False)  # (collapsed, GraphArrays) laid out
    # What a rerouting edit reads (``layout_reroute``): the placed arrays of units and dummies
    # (``Placement``), routes an edit removed (for its undo), and, on a rerouted layout, which
    # layout it was derived from and the nodes whose input edges it redrew.
    placement: object | None = field(default=None, repr=False, compare=False)
    route_memory: dict | None = field(default=None, repr=False, compare=False)
    serial: int = field(default_factory=lambda: next(_serials), repr=False, compare=False)
    delta: tuple | None = field(default=None, repr=False, compare=False)  # (base serial, frozenset of dst names)
    # On a layout ``local_relayout`` derived from another (one node inserted or erased): (base serial,
    # added name or None, removed name or None, frozenset of the nodes whose input edges were redone,
    # each edge's position in the base's ``edges`` or -1 for a new route). Not in JSON, not compared.
    local: tuple | None = field(default=None, repr=False, compare=False)

    def bounds(self) -> tuple[float, float, float, float]:
        """(x0, y0, x1, y1) enclosing every node and group."""
        boxes = [(b.x, b.y, b.x + b.w, b.y + b.h) for b in self.nodes.values()]
        boxes += [(g.x, g.y, g.x + g.w, g.y + g.h) for g in self.groups.values()]
        if not boxes:
            return (0.0, 0.0, 0.0, 0.0)
        xs0, ys0, xs1, ys1 = zip(*boxes)
        return (min(xs0), min(ys0), max(xs1), max(ys1))

    def to_json(self) -> dict:
        """A JSON-ready dict (the format of ``fxstudio layout --json``)."""
        return {
            "seconds": self.seconds,
            "nodes": {n: {"x": b.x, "y": b.y, "w": b.w, "h": b.h, "layer": b.layer} for n, b in self.nodes.items()},
            "edges": [{"src": e.src, "dst": e.dst, "key": e.key, "points": [list(p) for p in e.points]} for e in self.edges],
            "groups": {
                p: {"label": g.label, "x": g.x, "y": g.y, "w": g.w, "h": g.h, "depth": g.depth,
                    "collapsed": g.collapsed, "members": g.members, "layer": g.layer}
                for p, g in self.groups.items()
            },
        }
