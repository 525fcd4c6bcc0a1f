"""``fxstudio report MODEL [EDITS.json] -o report.html``: one self-contained HTML report.

The model is loaded, the edit script (if any) replayed as ``fxstudio apply`` replays it, the original
and the edited graphs compared as ``fxstudio compare`` compares them, and the report written
atomically: the graph drawing, the edits, the compare table, the first divergence, the per-node plot
and the diff of the generated code. The file opens offline and makes no network request.

Exit status: 0 the report was written (whatever it says: a failing edited graph is reported in it,
and the verdict is printed), 1 an edit was refused (nothing written), 2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fxstudio.core.errors import FxStudioError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``fxstudio report``: the shared model options, the script, the output, the run."""
    from fxstudio.cli_commands.model_args import add_model_arguments, add_tolerance_arguments
    from fxstudio.cli_commands.pass_cmd import add_trust_arguments

    add_model_arguments(parser)
    parser.add_argument("edits", metavar="EDITS.json", nargs="?", default=None,
                        help="an edit script to replay (without one the report shows the model as loaded)")
    parser.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the HTML file to write")
    parser.add_argument("--seed", type=int, default=None,
                        help="compare on seeded random inputs shaped like the example inputs")
    add_tolerance_arguments(parser)
    parser.add_argument("--no-compare", dest="compare", action="store_false",
                        help="do not run the models (no compare table, divergence or plot)")
    add_trust_arguments(parser)


def _check_output(path: Path) -> None:
    if path.is_dir():
        raise FxStudioError(f"-o {path}: is a folder; give the report's file name, e.g. {path / 'report.html'}.")
    if not path.parent.is_dir():
        raise FxStudioError(f"-o {path}: the folder {path.parent} does not exist.")


def run(args: argparse.Namespace) -> int:
    """Load, replay, compare, write; prints where the report went and its verdict."""
    from fxstudio.cli_commands.model_args import check_tolerances, load_from_args
    from fxstudio.cli_commands.pass_cmd import check_script_passes, cli_pass_trust
    from fxstudio.core.compare import random_inputs, specs_from_inputs
    from fxstudio.core.document import Document, replay_into
    from fxstudio.core.edits import load_script, validate_script
    from fxstudio.core.report import ReportInputs, compare_for_report, save_report, verdict

    out = Path(args.output)
    _check_output(out)
    check_tolerances(args)
    script, base_dir = {"edits": []}, None
    trust_files, allow_changed = args.trust_passes, args.allow_changed_passes
    if args.edits is not None:
        script = load_script(args.edits)
        validate_script(script)
        base_dir = Path(args.edits).resolve().parent  # a pass file is relative to the script's folder
        check_script_passes(script["edits"], base_dir, trust_files=trust_files, allow_changed=allow_changed)
    loaded = load_from_args(args)
    doc = Document(loaded)
    doc.set_pass_trust(cli_pass_trust(base_dir, trust_files=trust_files, allow_changed=allow_changed))
    replay_into(doc, script["edits"], "stop")
    edited = doc.module()
    report, why = None, "not run (--no-compare)"
    if args.compare:
        inputs, source = tuple(loaded.example_inputs or ()), "the model's example inputs"
        if args.seed is not None and inputs:
            specs = specs_from_inputs(inputs)
            inputs = random_inputs(specs, args.seed)
            source = f"random inputs, seed {args.seed}: " + "; ".join(s.text() for s in specs)
        device = getattr(args, "device", None)  # the shared loading option: meta loads, the run is on cpu
        device = "cpu" if device in (None, "meta") else device
        report, why = compare_for_report(loaded.module, doc.original, edited, inputs, device=device,
                                         rtol=args.rtol, atol=args.atol,
                                         seed=args.seed if args.seed is not None else 0)
        if report is not None:
            report.notes.insert(0, f"ran on {source}")
    inputs_ = ReportInputs(title=loaded.display_name, original=doc.original, edited=edited,
                           edits=list(script["edits"]), labels=list(doc.history[:doc.history_index]),
                           script_name=Path(args.edits).name if args.edits else "", compare=report,
                           compare_error=why)
    save_report(out, inputs_)
    print(f"wrote {out}: {verdict(inputs_)[1]}")
    return 0
