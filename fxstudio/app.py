"""The GUI entry point: ``fxstudio [MODEL] [--screenshot PNG] [--replay EDITS.json]``.

This module imports no Qt at import time: ``fxstudio inspect`` builds its parser through here, and
on a machine without a display Qt would abort the process before Python could say why, so the
headless check runs before any Qt import.
"""

from __future__ import annotations

import argparse
import os
import sys

HEADLESS_MESSAGE = (
    "fxstudio: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open. "
    "To render the window to an image, use `fxstudio MODEL --screenshot out.png`; to run the window "
    "without a screen, set QT_QPA_PLATFORM=offscreen or start it as `xvfb-run fxstudio`; to look at a "
    "graph in the terminal, use `fxstudio inspect MODEL`."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The GUI's options (the README's "Command line"): an optional model, a screenshot file, an edit script to replay."""
    parser.add_argument("model", nargs="?", help="model file (.py, .py::Name, .pt2, .pt/.pth); default: the built-in example")
    parser.add_argument("--screenshot", metavar="PNG", help="render the window with the model loaded to PNG (offscreen) and exit")
    parser.add_argument("--size", default="1600x1000", metavar="WxH", help="window size for --screenshot (default 1600x1000)")
    parser.add_argument("--select", metavar="NODE", help="select this node after opening (useful with --screenshot)")
    parser.add_argument("--replay", metavar="EDITS.json", help="apply an edit script after opening, edit by edit, as if typed")
    parser.add_argument("--trust-passes", action="store_true",
                        help="with --replay: run the pass files the script names without asking (they run code)")
    from fxstudio.cli_commands.model_args import add_loading_arguments

    # The same loading options as the subcommands: --tracer, --input-shape, --trust, --concrete-arg,
    # --leaf-module, --autowrap (the window's File > Open with Options... asks for the same).
    add_loading_arguments(parser)
    parser.add_argument(
        "--test-geometry", metavar="FILE", default=None,
        help="for input-driven tests: keep FILE updated with on-screen rectangles of widgets and cards (JSON)",
    )


def is_headless(environ: dict[str, str] | None = None, platform: str | None = None) -> bool:
    """True where Qt has no display to open (the rule of ``fxstudio.api.has_display``: on Linux a
    display-less Qt platform such as offscreen, else DISPLAY / WAYLAND_DISPLAY for xcb / wayland)."""
    from fxstudio.api import has_display

    return not has_display(environ, platform)


def parse_size(text: str) -> tuple[int, int]:
    """``"1600x1000"`` → ``(1600, 1000)``; a bad size raises ``ScriptError`` (exit 2)."""
    from fxstudio.core.errors import ScriptError

    try:
        w, h = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ScriptError(f"--size must look like 1600x1000, not {text!r}") from None
    if not (200 <= w <= 10000 and 200 <= h <= 10000):
        raise ScriptError(f"--size {text} is out of range (200 to 10000 pixels per side)")
    return w, h


def gui_options(args: argparse.Namespace) -> dict:
    """The window's open options from the parsed flags; a bad ``--concrete-arg`` raises ``LoadError`` (exit 2)."""
    from fxstudio.cli_commands.model_args import parse_concrete_args

    parse_concrete_args(args.concrete_args)  # refused here, before a window opens
    options = {"tracer": args.tracer, "input_shapes": args.input_shapes, "trust": bool(args.trust)}
    if args.device:
        options["device"] = args.device
    if args.weights:
        options["weights"] = args.weights
    for key in ("concrete_args", "leaf_modules", "autowrap_functions"):
        if getattr(args, key):
            options[key] = list(getattr(args, key))
    return options


def run(args: argparse.Namespace) -> int:
    """Start the window (or render it to ``--screenshot``); returns the exit status."""
    if args.screenshot:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if is_headless():
        print(HEADLESS_MESSAGE, file=sys.stderr)
        return 2
    size = parse_size(args.size)
    if getattr(args, "test_geometry", None):
        from fxstudio.core.errors import ScriptError

        folder = os.path.dirname(os.path.abspath(args.test_geometry))
        if not os.path.isdir(folder):
            raise ScriptError(f"--test-geometry: the folder {folder} does not exist")
    options = gui_options(args)
    from fxstudio.qt.launch import launch

    return launch(args, options, size)
