"""``fxstudio diff A B [C ...]``: graphs side by side, every one against the first; exit 1 when they differ.

Each of A, B, C… is a model file (``.py[::Name]``, ``.pt2``, ``.pt``/``.pth``, an exported fxstudio
``.py``), opened with the loading flags every command takes (``--tracer`` applies to all); B, C… may
also be an edit script (``.json``), replayed on A: A's original and edited graphs are then compared
node by node by stable id (lineage). ``--tracer-b export`` (``--tracer-a`` … ``--tracer-f``) sets the
tracer of one model alone, so ``fxstudio diff model.py model.py --tracer-b export`` compares the fx
graph of a model with its export graph. Nodes are matched by lineage, structure or name
(``fxstudio.core.diff``). Exit status: 0 the graphs are the same, 1 they differ, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from pathlib import Path

from fxstudio.core.errors import FxStudioError, LoadError

LETTERS = string.ascii_lowercase[:6]
JSON_SCHEMA = """\
--json prints one object, format "fxstudio.diff/1" (fields are only ever added):
  {"format": "fxstudio.diff/1", "differ": bool,
   "graphs": [{"label": "A", "source": "m.py (fx)",
               "nodes": [{"name", "op", "target", "hidden": bool (export plumbing)}]}],
   "comparisons": [{"base": "A", "other": "B",          (every graph against the first)
                    "counts": {"added", "removed", "changed", "same"},
                    "matches": [{"base": name, "other": name,
                                 "how": "lineage" | "structure" | "name",
                                 "status": "same" | "changed",
                                 "changes": [{"field": "args[1]" | "kwargs['alpha']" | "target" | "op"
                                                       | "module" | "weights[...]",
                                              "before": text, "after": text}]}],
                    "added": [names in other], "removed": [names in base]}]}
lineage: stable ids of one document (an edit script replayed on A) or torch's from_node provenance;
structure: what the nodes compute (op, target, constants, matched inputs), or for fx vs export the
module (nn_module_stack), source line (stack_trace), operator family and neighbours; name: the same
name and op. Exit status: 0 the same, 1 they differ, 2 bad input."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``fxstudio diff``: the models, the loading options every command takes, then these."""
    from fxstudio.cli_commands.model_args import add_loading_arguments

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = JSON_SCHEMA
    parser.add_argument(
        "models", metavar="MODEL", nargs="+",
        help="two or more: FILE.py[::Name], FILE.pt2, FILE.pt/.pth, an exported fxstudio .py; after the first, "
             "an edit script (.json) is replayed on the first model (original vs edited, matched by lineage)")
    add_loading_arguments(parser)
    for letter in LETTERS:
        parser.add_argument(
            f"--tracer-{letter}", dest=f"tracer_{letter}", choices=("fx", "export"), default=None,
            help=argparse.SUPPRESS if letter not in "ab" else
            f"tracer of the {'first' if letter == 'a' else 'second'} model alone (also --tracer-c … --tracer-f); "
            "'fxstudio diff m.py m.py --tracer-b export' diffs the fx graph against the export graph")
    parser.add_argument("--json", action="store_true",
                        help="print the diff as JSON (format fxstudio.diff/1, schema below)")
    parser.add_argument("--all", dest="show_hidden", action="store_true",
                        help="also list export plumbing only one side has (lifted weight reads, guards)")


def run(args: argparse.Namespace) -> int:
    """Load every model, diff, print; 0 same, 1 differ (2 for bad input is raised as FxStudioError)."""
    from fxstudio.core.diff import diff_graphs

    if len(args.models) < 2:
        raise FxStudioError("diff needs two models or more: fxstudio diff A B [C ...].")
    if args.models[0].lower().endswith(".json"):
        raise LoadError(f"{args.models[0]}: the first MODEL is a model file; an edit script comes after it.")
    graphs = _load_all(args)
    diff = diff_graphs(graphs)
    if args.json:
        json.dump(diff.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(diff.format_text(show_hidden=args.show_hidden))
    if diff.differ:
        print("fxstudio: the graphs differ", file=sys.stderr)
        return 1
    return 0


def _label(i: int) -> str:
    return string.ascii_uppercase[i] if i < 26 else f"G{i + 1}"


def _load_all(args: argparse.Namespace) -> list:
    """One ``DiffGraph`` per MODEL, in order."""
    from fxstudio.cli_commands.model_args import load_from_args
    from fxstudio.core.diff import DiffGraph

    graphs: list = []
    first = None
    for i, spec in enumerate(args.models):
        tracer = getattr(args, f"tracer_{LETTERS[i]}", None) if i < len(LETTERS) else None
        if i > 0 and spec.lower().endswith(".json"):
            graphs.append(_replayed(first, graphs[0], spec, _label(i)))
            continue
        one = argparse.Namespace(**vars(args))   # the same loading flags for every model
        one.model, one.tracer = spec, tracer or args.tracer
        loaded = load_from_args(one)
        if first is None:
            first = loaded
        graphs.append(DiffGraph(_label(i), loaded.graph_module, f"{spec} ({loaded.tracer})"))
    return graphs


def _replayed(loaded, base, script_path: str, label: str):
    """The first model's document after the edit script; the base becomes its original (same ids)."""
    from fxstudio.core.diff import DiffGraph
    from fxstudio.core.document import load_script, replay

    path = Path(script_path)
    if not path.is_file():
        raise LoadError(f"The edit script {path} does not exist.")
    doc = replay(loaded, load_script(path))
    base.module, base.lineage = doc.original, "document"
    return DiffGraph(label, doc.module(), f"{script_path} replayed on {base.source}", lineage="document")
