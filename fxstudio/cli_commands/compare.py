"""``fxstudio compare MODEL EDITED``: run the original and the edited model, report the differences.

EDITED is an edit script (``.json``, replayed on MODEL; nodes matched by stable id) or an exported
fxstudio ``.py`` (loaded as a model of its own; nodes matched by structure, what they compute, since
tracing the file again may rename them: ``fxstudio.core.compare.node_pairing``). Exit status: 0 when the
comparison ran (with ``--check``: and every output is within tolerance), 1 when the edited graph
raises (the message names the node) or ``--check`` fails, 2 for unreadable input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from fxstudio.core.errors import FxStudioError, LoadError, RunError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``fxstudio compare``: the model options shared by every command, then these."""
    from fxstudio.cli_commands.model_args import add_model_arguments, add_tolerance_arguments

    add_model_arguments(parser, model_help="the original model file: FILE.py[::Name], FILE.pt2, FILE.pt/.pth")
    parser.add_argument("edited", metavar="EDITED", help="an edit script (.json) or an exported fxstudio .py")
    parser.add_argument("--dtype", default=None, choices=["float32", "float16", "bfloat16"],
                        help="run both models in this dtype (default: as loaded)")
    parser.add_argument("--seed", type=int, default=None,
                        help="use seeded random inputs shaped like the example inputs (or --input-spec)")
    parser.add_argument("--input-spec", action="append", default=None, metavar="SPEC",
                        help="a random input's shape and dtype, e.g. 1,3,32,32:float16 or 2,16:int64[0,100) "
                             "(repeat per input; implies random inputs)")
    parser.add_argument("--inputs", default=None, metavar="FILE.pt",
                        help="inputs from a .pt file of tensors (loaded with weights_only=True)")
    add_tolerance_arguments(parser)
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs of each model after the compared one (default: up to 5 within 0.05 s)")
    parser.add_argument("--no-per-node", dest="per_node", action="store_false",
                        help="compare outputs only, skip the node-by-node run")
    parser.add_argument("--compare-all", action="store_true",
                        help="run and compare every node twice, also those upstream of every edit "
                             "(by default they are computed once: equal by construction)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every output is within tolerance")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    from fxstudio.cli_commands.node_data import add_node_data_arguments

    add_node_data_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Load, replay or load the edited model, compare, print; returns the exit status."""
    from fxstudio.cli_commands.model_args import check_input_size, check_tolerances, load_from_args
    from fxstudio.core.compare import compare_models
    from fxstudio.core.compare import load_inputs_file, parse_input_spec, random_inputs, specs_from_inputs

    check_tolerances(args, RunError)
    if args.repeats is not None and args.repeats < 1:
        raise RunError("--repeats must be at least 1.")
    if args.seed is not None and not -(2**63) <= args.seed < 2**64:
        raise FxStudioError(f"--seed {args.seed}: a seed is a 64-bit integer.")
    with _unreadable_input():
        specs = [parse_input_spec(s) for s in args.input_spec] if args.input_spec else None
    for spec in specs or ():
        check_input_size(spec.shape, f"--input-spec {spec.text()}")
    from fxstudio.cli_commands.node_data import check_node_data_arguments, write_node_data

    check_node_data_arguments(args)
    loaded = load_from_args(args)  # --device meta builds the model there; the runs then use the cpu
    run_device = "cpu" if args.device in (None, "meta") else args.device
    original, traced, edited, match = _edited(loaded, Path(args.edited), args)

    placeholders = [n.name for n in traced.graph.nodes if n.op == "placeholder"]
    seed = args.seed if args.seed is not None else 0
    if args.inputs:
        with _unreadable_input():
            inputs = load_inputs_file(args.inputs, placeholders)
        source = f"inputs from {args.inputs}"
    elif args.seed is not None or specs:
        specs = specs or specs_from_inputs(tuple(loaded.example_inputs))
        inputs = random_inputs(specs, seed)
        source = f"random inputs, seed {seed}: " + "; ".join(s.text() for s in specs)
    else:
        inputs = tuple(loaded.example_inputs)
        source = "the model's example inputs"
    if not inputs and placeholders:
        raise RunError("The model has no example inputs: give --input-shape (e.g. 1,3,224,224) or --inputs FILE.pt.")

    report = compare_models(original, traced, edited, inputs, device=run_device, dtype=args.dtype,
                            rtol=args.rtol, atol=args.atol, repeats=args.repeats, per_node=args.per_node,
                            match=match, seed=seed, share_unchanged=not args.compare_all)
    how = {"id": "stable id", "name": "name", "structure": "structure"}[match]
    report.notes.insert(0, f"ran on {source}; nodes matched by {how}")
    if args.json:
        data = report.to_json()
        data["model"], data["edited"] = str(args.model), str(args.edited)
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(report.format_text())
    if report.error is not None:
        raise RunError(report.error.describe())
    write_node_data(args, report, traced, edited, inputs, match, run_device)
    if args.check and not report.all_close:
        raise RunError("The edited model's outputs are not within tolerance of the original's "
                       f"(rtol {args.rtol:g}, atol {args.atol:g}).")
    return 0


@contextlib.contextmanager
def _unreadable_input():
    """A bad ``--input-spec`` or ``--inputs`` file is bad usage (exit 2), not a failed run."""
    try:
        yield
    except RunError as exc:
        # one line: torch's own loading errors run to several paragraphs
        first = exc.message.strip().splitlines()[0] if exc.message.strip() else "unreadable input"
        raise FxStudioError(first if len(first) <= 300 else first[:297] + "...") from None


def _edited(loaded, path: Path, args: argparse.Namespace):
    """(original module, traced graph, edited graph, match kind) for an edit script or an exported file."""
    if not path.is_file():
        raise LoadError(f"The edited model {path} does not exist.")
    if path.suffix == ".json":
        from fxstudio.core.document import load_script, replay

        doc = replay(loaded, load_script(path))
        return loaded.module, doc.original, doc.module(), "id"
    if path.suffix == ".py":
        from fxstudio.core.loading import load_model

        other = load_model(path, tracer=loaded.tracer, input_shapes=args.input_shapes)
        return loaded.module, loaded.graph_module, other.graph_module, "structure"
    raise LoadError(f"{path} is neither an edit script (.json) nor an exported fxstudio .py file.")
