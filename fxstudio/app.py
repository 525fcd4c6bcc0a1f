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
    """The GUI's options (design §5): an optional model, a screenshot file, an edit script to replay."""
    parser.add_argument("model", nargs="?", help="model file (.py, .py::Name, .pt2, .pt/.pth); default: the built-in example")
    parser.add_argument("--screenshot", metavar="PNG", help="render the window with the model loaded to PNG (offscreen) and exit")
    parser.add_argument("--size", default="1600x1000", metavar="WxH", help="window size for --screenshot (default 1600x1000)")
    parser.add_argument("--select", metavar="NODE", help="select this node after opening (useful with --screenshot)")
    parser.add_argument("--replay", metavar="EDITS.json", help="apply an edit script after opening, edit by edit, as if typed")
    parser.add_argument("--tracer", choices=("fx", "export"), default=None, help="tracer: fx (default for .py/.pt) or export")
    parser.add_argument(
        "--input-shape", action="append", default=None, metavar="N,C,H,W",
        help="example input shape when the model file gives none (repeat for several inputs)",
    )
    parser.add_argument("--trust", action="store_true", help="allow a full unpickle of a .pt/.pth file (runs code from it)")


def is_headless(environ: dict[str, str] | None = None, platform: str | None = None) -> bool:
    """True where Qt has no display to open: Linux with no DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return False
    return not any(env.get(key) for key in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


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


def parse_shapes(values: list[str] | None) -> list[tuple[int, ...]] | None:
    """``["1,3,224,224"]`` → ``[(1, 3, 224, 224)]``; a bad shape raises ``ScriptError`` (exit 2)."""
    from fxstudio.core.errors import ScriptError

    if not values:
        return None
    shapes = []
    for text in values:
        try:
            shape = tuple(int(p) for p in text.replace("x", ",").split(",") if p.strip())
        except ValueError:
            raise ScriptError(f"--input-shape must be comma-separated integers like 1,3,224,224, not {text!r}") from None
        if not shape or any(d < 0 for d in shape):
            raise ScriptError(f"--input-shape {text!r} is not a shape")
        shapes.append(shape)
    return shapes


def run(args: argparse.Namespace) -> int:
    """Start the window (or render it to ``--screenshot``); returns the exit status."""
    if args.screenshot:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    if is_headless():
        print(HEADLESS_MESSAGE, file=sys.stderr)
        return 2
    size = parse_size(args.size)
    options = {"tracer": args.tracer, "input_shapes": parse_shapes(args.input_shape), "trust": bool(args.trust)}
    from fxstudio.qt.launch import launch

    return launch(args, options, size)
