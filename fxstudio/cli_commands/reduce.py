"""``fxstudio reduce MODEL EDITS.json -o repro.py [--node N]``: shrink the first divergence (or the
exception) of the edited model to the smallest subgraph that still shows it, as a standalone repro.

The edit script is replayed as ``fxstudio apply`` does (pass files only with ``--trust-passes``);
both graphs run node by node on the model's example inputs (or ``--seed``'s random ones); the first
diverging or failing edited node (or ``--node N``) is reduced (``fxstudio.core.reduce``), and the
repro (``repro.py`` plus ``repro.data.pt``, torch only) is checked in a fresh process before it is
moved into place. It prints the node counts of the subgraphs against the whole graphs and the error.

Exit status: 0 the repro was written and reproduces, 1 nothing to reduce (no divergence, no
exception) or no subgraph shows it, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fxstudio.core.errors import FxStudioError, LoadError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``fxstudio reduce``: the model options shared by every command, then these."""
    from fxstudio.cli_commands.model_args import add_model_arguments, add_tolerance_arguments
    from fxstudio.cli_commands.pass_cmd import add_trust_arguments

    add_model_arguments(parser, model_help="the original model file: FILE.py[::Name], FILE.pt2, FILE.pt/.pth")
    parser.add_argument("edits", metavar="EDITS.json", help="the edit script whose result diverges or raises")
    parser.add_argument("-o", "--output", required=True, metavar="REPRO.py",
                        help="the repro file to write (its data goes beside it as REPRO.data.pt)")
    parser.add_argument("--node", default=None, metavar="N",
                        help="reduce the divergence at edited node N instead of the first one")
    add_tolerance_arguments(parser)
    parser.add_argument("--seed", type=int, default=None,
                        help="run on seeded random inputs shaped like the example inputs")
    add_trust_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Replay, reduce, write and verify the repro; print what was found."""
    from fxstudio.cli_commands.model_args import check_tolerances, load_from_args
    from fxstudio.cli_commands.pass_cmd import check_script_passes, cli_pass_trust
    from fxstudio.core.compare import random_inputs, specs_from_inputs
    from fxstudio.core.document import Document, replay_into
    from fxstudio.core.edits import load_script, validate_script
    from fxstudio.core.reduce import reduce_graphs, write_repro

    check_tolerances(args)
    if args.seed is not None and not -(2**63) <= args.seed < 2**64:
        raise FxStudioError(f"--seed {args.seed}: a seed is a 64-bit integer.")
    out = Path(args.output)
    if out.suffix != ".py":
        raise FxStudioError(f"-o {args.output}: a repro is a Python file; give a name ending in .py.")
    if not out.resolve().parent.is_dir():
        raise FxStudioError(f"-o {args.output}: the folder {out.resolve().parent} does not exist.")
    if not Path(args.edits).is_file():
        raise LoadError(f"The edit script {args.edits} does not exist.")
    script = load_script(args.edits)
    validate_script(script)
    base_dir = Path(args.edits).resolve().parent
    trust, allow = args.trust_passes, args.allow_changed_passes
    check_script_passes(script["edits"], base_dir, trust_files=trust, allow_changed=allow)
    loaded = load_from_args(args)
    doc = Document(loaded)
    doc.set_pass_trust(cli_pass_trust(base_dir, trust_files=trust, allow_changed=allow))
    replay_into(doc, script["edits"], "stop")
    inputs = tuple(loaded.example_inputs)
    source = "the model's example inputs"
    if args.seed is not None:
        specs = specs_from_inputs(inputs)
        inputs = random_inputs(specs, args.seed)
        source = f"random inputs, seed {args.seed}"
    placeholders = [n for n in doc.original.graph.nodes if n.op == "placeholder"]
    if placeholders and not inputs:
        raise FxStudioError("The model has no example inputs: give --input-shape (e.g. 1,3,224,224).")

    reduction = reduce_graphs(doc.original, doc.module(), inputs, node=args.node, rtol=args.rtol, atol=args.atol,
                              seed=args.seed if args.seed is not None else 0)
    (osub, esub), (owhole, ewhole) = reduction.sub_nodes, reduction.whole_nodes
    print(f"{reduction.kind} at %{reduction.node} ({source}; {reduction.trials} subgraphs tried)")
    other = (f"{osub} of {owhole} of the original" if reduction.original is not None
             else "no original counterpart (the node was added by the edits)")
    print(f"subgraph: {esub} of {ewhole} nodes of the edited graph ({100 * esub / max(ewhole, 1):.1f}%), {other}")
    print(f"error: {reduction.verdict.removeprefix('reproduced: ')}")
    about = [f"Source model: {loaded.display_name}; edit script: {Path(args.edits).name} "
             f"({len(script['edits'])} edits); run on {source}."]
    written = write_repro(reduction, out, loaded=loaded, about=about)
    print(f"wrote {written.path} and {written.data_path.name}")
    print(f"verified in a fresh process: {written.output}")
    return 0
