"""``fxstudio apply MODEL EDITS.json [-o OUT.py] [--trust-passes] [--allow-changed-passes] [--keep-invalid]``:
replay an edit script on a model and print the edited graph as ``inspect`` does; with ``-o``, export
the edited module and verify it.

An edit that applies but makes a node fail torch's own checks (fake-tensor propagation raises there,
so a run would fail: ``mul`` of a tensor and ``'hello'``, a ``Linear(5→2)`` fed a ``1×10`` input)
is reported on stderr, one line per rejected node with torch's message; the graph is still printed,
and the exit status is 1 with nothing written, unless ``--keep-invalid`` is given (then ``-o`` writes
the file without the verification run that cannot pass).

A ``run_pass`` / ``replace_pattern`` edit naming a pass file runs code from that file (relative to the
script's folder): without ``--trust-passes`` the script is refused before anything runs (exit 2, one
line naming the file); a file whose ``sha256`` differs from the recorded one is refused the same way
unless ``--allow-changed-passes``. Built-in passes (``fxstudio.passes.*``) need neither.

Exit status: 0 all edits applied (and exported), 1 an edit was refused (the message names its
index in ``edits`` and the reason), torch rejects a node (without ``--keep-invalid``) or the export
failed its check, 2 bad usage, an unreadable model or a malformed script.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from fxstudio.cli_commands.model_args import add_model_arguments, load_from_args

DOC = "docs/edit-scripts.md"  # in the fxstudio source tree


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio apply``."""
    from fxstudio.cli_commands.export import add_output_arguments
    from fxstudio.cli_commands.pass_cmd import add_trust_arguments

    add_model_arguments(parser)
    parser.add_argument("edits", metavar="EDITS.json",
                        help="edit script (format fxstudio.edits/1, described in docs/edit-scripts.md)")
    parser.epilog = (f"The edit-script format (every op and field, the argument syntax, refusals) is described in "
                     f"{DOC}. Exit status: 0 applied, 1 an edit was refused, torch rejects a node the edits made "
                     "(unless --keep-invalid) or the export failed its check, 2 bad usage, an unreadable model or "
                     "a malformed script.")
    parser.add_argument("--json", action="store_true", help="print the edited graph's nodes as JSON")
    parser.add_argument(
        "--keep-invalid", action="store_true",
        help="exit 0 even when the edits make a node that torch's own checks (fake-tensor propagation) reject, "
             "so that a run would fail there; each such node is still reported on stderr",
    )
    add_output_arguments(parser)
    add_trust_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Load, replay, print (and export with ``-o``); see the module docstring for the exit status."""
    from pathlib import Path

    from fxstudio.cli_commands.pass_cmd import check_script_passes, cli_pass_trust
    from fxstudio.core.document import Document, replay_into
    from fxstudio.core.edits import load_script, validate_script
    from fxstudio.core.inspect_view import inspect_record, lint_verdict, render_table

    script = load_script(args.edits)
    validate_script(script)
    base_dir = Path(args.edits).resolve().parent  # a pass file is relative to the script's folder
    trust_files, allow_changed = getattr(args, "trust_passes", False), getattr(args, "allow_changed_passes", False)
    check_script_passes(script["edits"], base_dir, trust_files=trust_files, allow_changed=allow_changed)
    loaded = load_from_args(args)
    doc = Document(loaded)
    doc.set_pass_trust(cli_pass_trust(base_dir, trust_files=trust_files, allow_changed=allow_changed))
    replay_into(doc, script["edits"], "stop")  # what replay() does, with the command's pass trust
    edited = dataclasses.replace(loaded, graph_module=doc.module())
    rejected = doc.problems()
    if args.json:
        record = inspect_record(edited)
        record["edits"] = len(script["edits"])
        json.dump(record, sys.stdout, indent=1)
        sys.stdout.write("\n")
        ok = record["lint"]["ok"]
    else:
        print(f"applied {len(script['edits'])} edit(s) from {args.edits}")
        sys.stdout.write(render_table(edited))
        ok, _ = lint_verdict(edited.graph_module)
    keep = getattr(args, "keep_invalid", False)
    sys.stdout.flush()
    for problem in rejected:  # one line each: the node and torch's message, no traceback
        print(f"fxstudio: {'kept (--keep-invalid): ' if keep else ''}{problem.line}"
              f"{'' if keep else ' (a run would fail there; pass --keep-invalid to accept it)'}", file=sys.stderr)
    if not ok:
        return 1
    if rejected and not keep:
        if getattr(args, "output", None):  # a file that fails every run is written only when asked to
            print(f"fxstudio: {args.output} not written: torch rejects %{rejected[0].name} "
                  "(--keep-invalid writes it without the verification run)", file=sys.stderr)
        return 1
    code = 0
    if getattr(args, "output", None):
        from fxstudio.cli_commands.export import export_and_report

        # a rejected node fails every run: write the file, skip the verification run that cannot pass
        code = export_and_report(doc, args.output, script_path=args.edits, verify=args.verify and not rejected)
        if rejected and args.verify:
            print(f"note: the verification run was skipped: torch rejects %{rejected[0].name}, so every run fails there")
    return 1 if rejected and not keep else code
