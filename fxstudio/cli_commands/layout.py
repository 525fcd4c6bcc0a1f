"""``fxstudio layout MODEL``: lay the graph out as the canvas does; print a summary or write JSON.

The summary gives node, edge, group and layer counts, the time the layout took and its edge
crossings; ``--json OUT`` writes ``Layout.to_json()`` (node boxes, edge routes, group frames,
seconds) plus ``crossings`` and ``repeated`` (the groups of identical blocks) atomically.
"""

from __future__ import annotations

import argparse
import json

from fxstudio.cli_commands.model_args import add_model_arguments, load_from_args
from fxstudio.core.errors import LoadError
from fxstudio.core.node_text import META_MODULE_PATH


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio layout``."""
    add_model_arguments(parser)
    parser.add_argument("--json", dest="json_out", metavar="OUT", help="write the layout as JSON to OUT ('-' for stdout)")
    parser.add_argument(
        "--collapse", metavar="PATH", action="append", default=[],
        help="show module PATH (e.g. layer1.0) as one card with its external edges; repeatable; "
        "'*' collapses every top-level module",
    )


def _collapse_set(graph, requested: list[str]) -> frozenset[str]:
    """The collapsed paths, checked against the module paths present in the graph."""
    from fxstudio.core.layout import ancestors

    present: set[str] = set()
    for node in graph.nodes:
        present.update(ancestors(node.meta.get(META_MODULE_PATH) or ""))
    out = set()
    for path in requested:
        if path == "*":
            out.update(p for p in present if "." not in p)
            continue
        if path not in present:
            known = ", ".join(sorted(p for p in present if "." not in p)[:8]) or "none"
            raise LoadError(
                f"--collapse {path}: the graph has no module '{path}'. Top-level modules: {known}."
            )
        out.add(path)
    return frozenset(out)


def run(args: argparse.Namespace) -> int:
    """Load, lay out, report; 2 when the model cannot be loaded or a path is unknown."""
    from fxstudio.core.fileio import atomic_write_text
    from fxstudio.core.layout import compute_layout
    from fxstudio.core.layout import repeated_groups
    from fxstudio.core.layout import count_crossings

    loaded = load_from_args(args)
    graph = loaded.graph_module.graph
    collapsed = _collapse_set(graph, args.collapse)
    layout = compute_layout(graph, collapsed=collapsed)
    crossings = count_crossings(layout)
    if args.json_out:
        data = layout.to_json()
        data["crossings"] = crossings
        data["repeated"] = repeated_groups(graph)
        text = json.dumps(data, indent=1) + "\n"
        if args.json_out == "-":
            print(text, end="")
            return 0
        try:
            atomic_write_text(args.json_out, text)
        except OSError as exc:
            raise LoadError(f"--json {args.json_out}: cannot write the file ({exc.strerror or exc}).") from None
    x0, y0, x1, y1 = layout.bounds()
    layers = 1 + max((b.layer for b in layout.nodes.values()), default=-1)
    layers = max(layers, 1 + max((g.layer for g in layout.groups.values()), default=-1))
    n_collapsed = sum(1 for g in layout.groups.values() if g.collapsed)
    print(f"{loaded.path.name} ({loaded.tracer}): {len(graph.nodes)} nodes, {len(layout.nodes)} cards, "
          f"{len(layout.edges)} edges, {len(layout.groups)} groups ({n_collapsed} collapsed), {layers} layers")
    print(f"layout: {layout.seconds * 1000:.1f} ms, {crossings} edge crossings, {x1 - x0:.0f} × {y1 - y0:.0f} units")
    if args.json_out:
        print(f"wrote {args.json_out}")
    return 0
