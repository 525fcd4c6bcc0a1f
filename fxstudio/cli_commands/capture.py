"""``fxstudio capture SCRIPT.py [-o run.fxcap] [-- ARGS]``: run a script with torch.compile recording
every graph Dynamo captures (docs/from_code.md, "torch.compile capture"), then print a summary."""

from __future__ import annotations

import argparse
import sys

PASSTHROUGH = True
"""``fxstudio`` hands everything after ``--`` to the script untouched (``args.passthrough``)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio capture``."""
    parser.add_argument("script", metavar="SCRIPT.py", help="the Python script to run (it is your code: it runs as python SCRIPT.py would)")
    parser.add_argument("-o", "--output", default="run.fxcap", metavar="FILE.fxcap",
                        help="the capture file to write (default: run.fxcap)")
    parser.add_argument("--backend", default="inductor",
                        help="the backend that compiles each captured graph (default inductor; eager where "
                        "inductor cannot compile here)")
    parser.add_argument("--save-inputs", action="store_true",
                        help="also save the real example tensors of each graph (inputs and lifted parameters)")
    parser.epilog = "Arguments after -- are passed to the script: fxstudio capture train.py -o run.fxcap -- --epochs 1"


def run(args: argparse.Namespace) -> int:
    """Run the script under capture and print the graphs and their breaks; exit 1 when the script fails."""
    from fxstudio.core.capture import read_capture, run_script_captured, summary_lines
    from fxstudio.core.errors import FxStudioError

    script_args = list(getattr(args, "passthrough", None) or [])
    failure = None
    try:
        run_script_captured(args.script, script_args, args.output, backend=args.backend,
                            save_inputs=args.save_inputs)
    except FxStudioError as exc:
        if exc.exit_code != 1:  # no script, no capture
            raise
        failure = exc
    sys.stdout.flush()
    capture = read_capture(args.output)
    print("\n".join(summary_lines(capture)))
    print(f"wrote {args.output}: open it with `fxstudio {args.output}`, or one graph with "
          f"`fxstudio {args.output}::0`")
    if failure is not None:
        print(f"fxstudio: {failure}", file=sys.stderr)
        return 1
    return 0
