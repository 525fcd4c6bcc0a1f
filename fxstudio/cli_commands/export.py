"""``fxstudio export MODEL -o OUT.py``: the model's graph as a standalone, verified Python file;
``-o OUT.pt2``: the graph through ``torch.export``, saved as an ExportedProgram.

``OUT.py``: writes ``OUT.py`` and ``OUT.weights.<hash>.pt`` beside it in one atomic step, after
importing the file in a fresh Python process, running it on the example inputs and comparing with
the graph in memory. ``OUT.pt2``: ``torch.export.export`` of the graph, ``torch.export.save``d, then
loaded with ``torch.export.load`` in a fresh process and compared the same way before it is renamed
into place. A full disk says so. Exit status: 0 exported and verified, 1 the export failed (torch.export
refused the graph, or the check failed; nothing written), 2 bad usage, an unusable target or an
unreadable model.
"""

from __future__ import annotations

import argparse
import sys

from fxstudio.cli_commands.model_args import add_model_arguments, load_from_args


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``-o OUT.py|OUT.pt2`` and ``--no-verify``, shared with ``fxstudio apply`` and ``fxstudio pass``."""
    parser.add_argument("-o", "--output", metavar="OUT.py", help="the Python file to write (weights go beside it), "
                        "or OUT.pt2: the torch.export ExportedProgram")
    parser.add_argument(
        "--no-verify", dest="verify", action="store_false",
        help="skip running the exported file in a fresh Python process to compare it with the graph",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``fxstudio export``."""
    add_model_arguments(parser)
    add_output_arguments(parser)


def export_and_report(source, output: str, *, script_path=None, verify: bool = True) -> int:
    """Export ``source`` (a Document or LoadedModel) to ``output`` and print what was written: a
    ``.pt2`` through ``torch.export``, anything else as a Python file."""
    if output.lower().endswith(".pt2"):
        return _export_pt2_and_report(source, output, script_path=script_path, verify=verify)
    from fxstudio.core.export import export_python

    result = export_python(source, output, script_path=script_path, verify=verify)
    print(f"wrote {result.py_path} and {result.weights_path.name} (class {result.class_name})")
    print(result.verdict + f" [{result.seconds:.1f} s]")
    for need in result.requirements:
        print(f"note: the file needs {need}")
    return 0


def _export_pt2_and_report(source, output: str, *, script_path=None, verify: bool = True) -> int:
    from fxstudio.core.export import export_pt2

    result = export_pt2(source, output, script_path=script_path, verify=verify)
    print(f"wrote {result.pt2_path} (torch.export ExportedProgram; load it with torch.export.load)")
    print(result.verdict + f" [{result.seconds:.1f} s]")
    for need in result.requirements:
        print(f"note: loading the file needs {need}")
    for note in result.notes:
        print(f"note: {note}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Load MODEL, export it to ``-o``; see the module docstring for the exit status."""
    if not args.output:
        print("fxstudio export: -o OUT.py is required (the file to write; OUT.pt2 for torch.export's format)", file=sys.stderr)
        return 2
    loaded = load_from_args(args)
    return export_and_report(loaded, args.output, verify=args.verify)
