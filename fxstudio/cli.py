"""The `fxstudio` command line: the GUI by default, and the headless commands of design §5.

Each subcommand lives in ``fxstudio/cli_commands/<name>.py`` with ``add_arguments(parser)`` and
``run(args) -> int``. Expected failures (``FxStudioError``) print their message and exit with the
error's code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from fxstudio.core.errors import FxStudioError

SUBCOMMANDS = {
    "inspect": "Print the graph as a table (or JSON) with the lint verdict.",
    "apply": "Replay an edit script on a model; with -o, export and verify.",
    "export": "Export a model as a standalone Python file, verified.",
    "compare": "Run the original and edited models and compare outputs node by node.",
    "layout": "Compute the canvas layout and print or write it.",
}


def _subcommand_module(name: str):
    return importlib.import_module(f"fxstudio.cli_commands.{name}")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: a subcommand's parser when argv starts with one, else the GUI's."""
    if argv and argv[0] in SUBCOMMANDS:
        parser = argparse.ArgumentParser(prog="fxstudio")
        sub = parser.add_subparsers(dest="command", required=True)
        name = argv[0]
        p = sub.add_parser(name, help=SUBCOMMANDS[name], description=SUBCOMMANDS[name])
        _subcommand_module(name).add_arguments(p)
        return parser
    parser = argparse.ArgumentParser(
        prog="fxstudio",
        description="fxstudio: edit torch.fx graphs. Subcommands: "
        + ", ".join(SUBCOMMANDS)
        + " (fxstudio SUBCOMMAND --help).",
    )
    importlib.import_module("fxstudio.app").add_arguments(parser)
    parser.set_defaults(command="gui")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fxstudio`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        module = importlib.import_module("fxstudio.app") if args.command == "gui" else _subcommand_module(args.command)
        return int(module.run(args) or 0)
    except FxStudioError as exc:
        print(f"fxstudio: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("fxstudio: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
