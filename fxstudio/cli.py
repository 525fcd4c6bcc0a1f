"""The `fxstudio` command line: the GUI by default, and the headless commands of the README's "Command line".

Each subcommand lives in ``fxstudio/cli_commands/<name>.py`` with ``add_arguments(parser)`` and
``run(args) -> int``. Expected failures (``FxStudioError``) print their message and exit with the
error's code, never a traceback; so do running out of memory or of recursion depth on a huge or
deeply nested input (exit 2), and, as a last resort, any other exception (one "unexpected error" line,
exit 2; ``FXSTUDIO_DEBUG=1`` shows its traceback). A closed stdout pipe (``| head``) ends the command
quietly (exit 141).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from fxstudio.core.errors import FxStudioError
from fxstudio.core.temp_folders import sweep_verify_folders

SUBCOMMANDS = {
    "inspect": "Print the graph as a table (or JSON) with the lint verdict.",
    "apply": "Replay an edit script on a model; with -o, export and verify.",
    "export": "Export a model as a standalone Python file, verified.",
    "compare": "Run the original and edited models and compare outputs node by node.",
    "layout": "Compute the canvas layout and print or write it.",
    "pass": "Run one torch.fx pass on a model as one edit; print what changed, save the script, export.",
    "capture": "Run a script with torch.compile recording each captured graph to a .fxcap file.",
    "diff": "Show two or more graphs side by side, nodes matched by lineage or structure; exit 1 when they differ.",
    "reduce": "Shrink a divergence or an exception to the smallest subgraph that shows it, as a standalone repro.",
    "report": "Write one self-contained HTML report: graph, edits, compare table, first divergence, code diff.",
}


MODULE_NAMES = {"pass": "pass_cmd"}  # a subcommand whose module cannot bear its name (a keyword)


def _subcommand_module(name: str):
    return importlib.import_module(f"fxstudio.cli_commands.{MODULE_NAMES.get(name, name)}")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit 2 (argparse's own also print
    the usage block): ``fxstudio inspect: argument --input-shape: ... (fxstudio inspect --help)``."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: {text} (see {self.prog} --help)\n")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: a subcommand's parser when argv starts with one, else the GUI's."""
    if argv and argv[0] in SUBCOMMANDS:
        parser = OneLineParser(prog="fxstudio")
        sub = parser.add_subparsers(dest="command", required=True)
        name = argv[0]
        p = sub.add_parser(name, help=SUBCOMMANDS[name], description=SUBCOMMANDS[name])
        _subcommand_module(name).add_arguments(p)
        return parser
    parser = OneLineParser(
        prog="fxstudio",
        description="fxstudio: edit torch.fx graphs. Subcommands: "
        + ", ".join(SUBCOMMANDS)
        + " (fxstudio SUBCOMMAND --help).",
    )
    importlib.import_module("fxstudio.app").add_arguments(parser)
    parser.set_defaults(command="gui")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``fxstudio`` console script; returns the exit status. Ctrl+C (SIGINT), at
    any point, prints one line, ``fxstudio: cancelled``, and exits 130 at once (``_cancelled``)."""
    try:
        status = _main(argv)
    except KeyboardInterrupt:
        return _cancelled(process=argv is None)
    if argv is None and _QUICK_EXIT:
        _exit_now(status)
    return status


_QUICK_EXIT: list[bool] = []  # set by a headless subcommand of this process's own command line


def _exit_now(status: int) -> None:
    """End the process without the interpreter's teardown: freeing the graphs and modules of a
    3,000-node model one object at a time took 0.9 s after the command had printed everything
    (issue #25). A subcommand's files are closed and its temporary folders removed by then (with
    blocks); only the standard streams need flushing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sweep_verify_folders()  # left in the temp dir by exports killed while verifying (one listdir)
    passthrough: list[str] | None = None
    if argv and argv[0] in SUBCOMMANDS and getattr(_subcommand_module(argv[0]), "PASSTHROUGH", False) and "--" in argv:
        cut = argv.index("--")  # `fxstudio capture SCRIPT.py -- ARGS`: ARGS are the script's, untouched
        argv, passthrough = argv[:cut], argv[cut + 1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if passthrough is not None:
        args.passthrough = passthrough
    try:
        from fxstudio.core.fx_compat import quiet_fx_call_errors

        quiet_fx_call_errors()  # a failing forward is named in one line by fxstudio, not printed by torch.fx
        _start_threads(args)
        if args.command not in ("gui", "capture"):  # capture runs the user's script: its atexit hooks run
            _QUICK_EXIT.append(True)
        module = importlib.import_module("fxstudio.app") if args.command == "gui" else _subcommand_module(args.command)
        status = int(module.run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, while BrokenPipeError is still caught
        return status
    except BrokenPipeError:
        return _stdout_closed()
    except FxStudioError as exc:
        return _fail(str(exc), exc.exit_code)
    except MemoryError:
        return _fail("out of memory: the input is too large for this machine (MemoryError).", 2)
    except RecursionError:  # before RuntimeError, its base class
        return _fail("the input is nested too deeply to process (RecursionError).", 2)
    except RuntimeError as exc:
        if not _allocation_failed(exc):
            return _unexpected(exc)
        return _fail(f"out of memory: {str(exc).strip().splitlines()[-1][:200]}", 2)
    except KeyboardInterrupt:
        raise  # main: one line, exit 130
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, never a traceback
        return _unexpected(exc)


def _start_threads(args: argparse.Namespace) -> None:
    """The thread policy (``fxstudio.core.threads``) for this process: ``--threads`` wins; the window
    leaves a core to its GUI thread."""
    from fxstudio.core import threads

    if getattr(args, "threads", None) is not None:
        threads.set_override(args.threads)
    threads.start_process(leave_for_gui=args.command == "gui")


# What a shell reports for a program stopped by SIGPIPE (128 + 13), as ``yes | head`` does.
EXIT_BROKEN_PIPE = 141


def _stdout_closed() -> int:
    """The reader of stdout went away (``fxstudio compare ... | head``): stop quietly, as other
    command-line tools do. stdout is pointed at devnull so the flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def _allocation_failed(exc: RuntimeError) -> bool:
    """Whether torch failed to allocate a tensor (it raises RuntimeError, not MemoryError, on cpu)."""
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    return (oom is not None and isinstance(exc, oom)) or "can't allocate memory" in str(exc)


UNEXPECTED = "unexpected error"


def _unexpected(exc: Exception) -> int:
    """An exception no check anticipated (a bug in fxstudio, or torch failing on an input that passed
    every check): one line naming it, exit 2; ``FXSTUDIO_DEBUG=1`` re-raises it with its traceback."""
    if os.environ.get("FXSTUDIO_DEBUG"):
        raise exc
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    detail = "".join(c if c.isprintable() else repr(c)[1:-1] for c in f"{type(exc).__name__}: {first}")
    return _fail(f"{UNEXPECTED} ({detail}); nothing was written. This is a bug: please report it with the "
                 "command and file (FXSTUDIO_DEBUG=1 shows the traceback).", 2)


EXIT_CANCELLED = 130
"""What a shell reports for a program stopped by SIGINT (128 + 2)."""


def _cancelled(process: bool) -> int:
    """Ctrl+C: ``fxstudio: cancelled`` and exit 130. When fxstudio is the process (the console
    script), it exits right away: the interrupt has already unwound every ``with`` and ``finally``
    (temporary folders removed), and tearing down torch's interpreter state can take seconds."""
    _fail("cancelled", EXIT_CANCELLED)
    if not process:
        return EXIT_CANCELLED
    _exit_now(EXIT_CANCELLED)


def _fail(message: str, code: int) -> int:
    """Print ``fxstudio: message`` on stderr and return ``code``."""
    try:
        print(f"fxstudio: {message}", file=sys.stderr)
    except (BrokenPipeError, OSError):
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
