"""``fxstudio inspect MODEL``: the graph as an aligned table with the lint verdict, or ``--json``."""

from __future__ import annotations

import argparse
import json
import sys

from fxstudio.cli_commands.model_args import add_model_arguments, load_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio inspect``."""
    add_model_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print every node's record as JSON")
    parser.add_argument(
        "--all", dest="show_hidden", action="store_true",
        help="also list export plumbing hidden by default (parameter reads, _guards_fn)",
    )


def run(args: argparse.Namespace) -> int:
    """Load, trace and print; exit 1 when ``graph.lint()`` fails, 2 for unreadable input."""
    from fxstudio.core.inspect_view import inspect_record, lint_verdict, render_table

    if _is_whole_capture(args.model):
        return _list_capture(args)
    loaded = load_from_args(args)
    if args.json:
        record = inspect_record(loaded)
        json.dump(record, sys.stdout, indent=1)
        sys.stdout.write("\n")
        ok = record["lint"]["ok"]
    else:
        sys.stdout.write(render_table(loaded, show_hidden=args.show_hidden))
        ok, _ = lint_verdict(loaded.graph_module)
    return 0 if ok else 1


def _is_whole_capture(spec: str) -> bool:
    """``run.fxcap`` with no ``::k``: the listing of its graphs, not one graph's table."""
    return "::" not in spec and spec.lower().endswith(".fxcap")


def _list_capture(args: argparse.Namespace) -> int:
    """Print the graphs of a torch.compile capture: nodes, inputs, and where each graph broke."""
    from fxstudio.core.capture import break_text, input_text, read_capture, summary_lines

    capture = read_capture(args.model)
    if args.json:
        record = {"capture": str(capture.path), "backend": capture.backend, "torch": capture.torch_version,
                  "notes": capture.notes, "graphs": [
                      {"index": k, "nodes": len(g.get("nodes") or []), "inputs": input_text(g),
                       "break": g.get("break"), "ends": break_text(g)} for k, g in enumerate(capture.graphs)]}
        json.dump(record, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(summary_lines(capture)) + "\n")
    return 0
