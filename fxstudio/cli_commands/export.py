"""``fxstudio export MODEL -o OUT.py``: the model's graph as a standalone, verified Python file.

Writes ``OUT.py`` and ``OUT.weights.<hash>.pt`` beside it in one atomic step, after importing the
file in a fresh Python process, running it on the example inputs and comparing with the graph in
memory. A full disk says so. Exit status: 0 exported and
verified, 1 the export failed its check (nothing written), 2 bad usage, an unusable target or an
unreadable model.
"""

from __future__ import annotations

import argparse
import sys

from fxstudio.cli_commands.model_args import add_model_arguments, load_from_args


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``-o OUT.py`` and ``--no-verify``, shared with ``fxstudio apply``."""
    parser.add_argument("-o", "--output", metavar="OUT.py", help="the Python file to write (weights go beside it)")
    parser.add_argument(
        "--no-verify", dest="verify", action="store_false",
        help="skip running the exported file in a fresh Python process to compare it with the graph",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio export``."""
    add_model_arguments(parser)
    add_output_arguments(parser)


def export_and_report(source, output: str, *, script_path=None, verify: bool = True) -> int:
    """Export ``source`` (a Document or LoadedModel) to ``output`` and print what was written."""
    from fxstudio.core.export import export_python

    result = export_python(source, output, script_path=script_path, verify=verify)
    print(f"wrote {result.py_path} and {result.weights_path.name} (class {result.class_name})")
    print(result.verdict + f" [{result.seconds:.1f} s]")
    for need in result.requirements:
        print(f"note: the file needs {need}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Load MODEL, export it to ``-o``; see the module docstring for the exit status."""
    if not args.output:
        print("fxstudio export: -o OUT.py is required (the file to write)", file=sys.stderr)
        return 2
    loaded = load_from_args(args)
    return export_and_report(loaded, args.output, verify=args.verify)
