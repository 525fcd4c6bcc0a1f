"""The model-opening options every subcommand shares (``load_model``'s, docs/CONTRACTS.md "Loading"): add them, then load from them.

``add_model_arguments(parser)`` adds ``MODEL`` and ``--tracer``, ``--input-shape``, ``--trust``,
``--concrete-arg``, ``--leaf-module``, ``--autowrap``, ``--device`` (meta), ``--weights``; ``load_from_args(args)`` calls ``load_model``.
"""

from __future__ import annotations

import argparse

from fxstudio.core.errors import FxStudioError, LoadError
from fxstudio.core.model import LoadedModel


def parse_shape(text: str) -> tuple[int, ...]:
    """``"1,3,224,224"`` (or ``1x3x224x224``) → ``(1, 3, 224, 224)``; argparse reports bad text."""
    parts = [p.strip() for p in text.replace("x", ",").replace("×", ",").split(",") if p.strip()]
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a shape: give comma-separated sizes, e.g. 1,3,224,224"
        ) from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"'{text}': sizes must not be negative")
    try:
        check_input_size(dims, f"'{text}'")
    except FxStudioError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return dims


# An input larger than this many elements (16 GiB of float32) is a typo, not a model's input:
# refused before torch tries (and fails) to allocate it.
MAX_INPUT_ELEMENTS = 2**32


def check_input_size(shape: tuple[int, ...], what: str) -> None:
    """Refuse (exit 2) an input shape with more than ``MAX_INPUT_ELEMENTS`` elements."""
    count = 1
    for d in shape:
        count *= int(d)
    if count > MAX_INPUT_ELEMENTS:
        raise FxStudioError(f"{what}: {count:,} elements is more than the {MAX_INPUT_ELEMENTS:,} an input may have.")


def add_model_arguments(parser: argparse.ArgumentParser, *, model_help: str | None = None) -> None:
    """Add the positional ``model`` and the loading options to ``parser``."""
    parser.add_argument(
        "model",
        metavar="MODEL",
        help=model_help or "model file: FILE.py[::Name], FILE.pt2, or FILE.pt/.pth (a pickled module)",
    )
    add_loading_arguments(parser)


def add_loading_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the loading options alone (the GUI's ``fxstudio [MODEL]`` has its own optional MODEL)."""
    parser.add_argument(
        "--tracer", choices=("fx", "export"), default=None,
        help="fx: torch.fx.symbolic_trace (default for .py/.pt); export: torch.export (ATen level)",
    )
    parser.add_argument(
        "--input-shape", dest="input_shapes", metavar="SHAPE", type=parse_shape, action="append",
        help="shape of one forward input, e.g. 1,3,224,224 (repeat per input); random float32 values",
    )
    parser.add_argument(
        "--trust", action="store_true",
        help="allow a full unpickle of a .pt/.pth file, or torch.export.load of a .pt2 (it can run code from the file)",
    )
    parser.add_argument(
        "--concrete-arg", dest="concrete_args", metavar="NAME=VALUE", action="append", default=[],
        help="fix a forward argument to a value while tracing (decides data-dependent branches)",
    )
    parser.add_argument(
        "--leaf-module", dest="leaf_modules", metavar="NAME", action="append", default=[],
        help="do not trace into this submodule (a path like layer1.0 or a class name); repeatable",
    )
    parser.add_argument(
        "--autowrap", dest="autowrap_functions", metavar="FUNCTION", action="append", default=[],
        help="keep calls to this function as one node (like torch.fx.wrap): a name in the model file "
        "or a dotted path; repeatable",
    )
    parser.add_argument(
        "--device", default=None, metavar="DEVICE",
        help="meta: build a .py model without weights, or open a .pt2's structure only (for models larger than "
        "memory; run/compare need --weights). compare also takes cpu, cuda:N or mps: the device both models run on",
    )
    parser.add_argument(
        "--weights", default=None, metavar="CKPT",
        help="with --device meta: a .safetensors checkpoint (or a folder of shards), mapped from disk, not copied",
    )
    parser.add_argument(
        "--threads", type=parse_threads, default=None, metavar="N",
        help="torch threads for everything this runs (default: one where the tensors are small, else the "
        "cores other processes leave free; env FXSTUDIO_THREADS)",
    )


def parse_threads(text: str) -> int:
    """``--threads N``: a whole number, at least 1; argparse reports bad text."""
    from fxstudio.core.threads import parse_count

    try:
        return parse_count(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_concrete_args(items: list[str]) -> dict:
    """``["flag=True", "n=3"]`` → ``{"flag": True, "n": 3}``, values in the argument syntax of docs/edit-scripts.md."""
    from fxstudio.core.argsyntax import parse_value

    result = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise LoadError(f"--concrete-arg {item}: expected NAME=VALUE, e.g. --concrete-arg flag=True.")
        try:
            result[name] = parse_value(text.strip())
        except FxStudioError as exc:
            raise LoadError(f"--concrete-arg {item}: {exc.message}") from None
    return result


def load_from_args(args: argparse.Namespace) -> LoadedModel:
    """``load_model`` with the options parsed by ``add_model_arguments``."""
    from fxstudio.core.loading import load_model

    device = getattr(args, "device", None)
    if getattr(args, "command", None) == "compare" and device != "meta":
        device = None  # compare's --device cuda:0 is where the runs go, not where the model is built
    return load_model(
        args.model,
        device=device,
        weights=getattr(args, "weights", None),
        tracer=args.tracer,
        input_shapes=args.input_shapes,
        trust=args.trust,
        concrete_args=parse_concrete_args(args.concrete_args) or None,
        leaf_modules=tuple(args.leaf_modules),
        autowrap_functions=tuple(args.autowrap_functions),
    )


def add_tolerance_arguments(parser: argparse.ArgumentParser) -> None:
    """``--rtol`` and ``--atol``: when two values count as equal (compare, reduce, report)."""
    parser.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance (default 1e-5)")
    parser.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance (default 1e-6)")


def check_tolerances(args: argparse.Namespace, error: type[FxStudioError] = FxStudioError) -> None:
    """Refuse a negative (or NaN) ``--rtol``/``--atol`` with one line."""
    if not (args.rtol >= 0 and args.atol >= 0):  # also refuses nan
        raise error("--rtol and --atol must be numbers that are not negative.")
