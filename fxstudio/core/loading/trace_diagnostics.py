"""Turning a tracer's exception into a ``TraceError`` that names the user's line and the likely fix.

The fix is given twice: as text in the message, and as a ``TraceRemedy`` on the error's ``remedy``
attribute, which the window's "Open with options" dialog fills its fields from.
"""

from __future__ import annotations

import inspect
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from torch import nn

from fxstudio.core.errors import TraceError

_TORCH_PARTS = ("/torch/", "/site-packages/", "/lib/python3", "<frozen", "<string>", "<eval_with_key>")


def _is_library(filename: str) -> bool:
    return any(part in filename.replace("\\", "/") for part in _TORCH_PARTS)


@dataclass(frozen=True)
class TraceRemedy:
    """The loading options that the diagnosis suggests, in the CLI's terms.

    ``concrete_args`` holds ``NAME=VALUE`` texts (as ``--concrete-arg`` takes them, VALUE in the
    argument syntax), ``leaf_modules`` submodule paths or class names, ``autowrap_functions`` names.
    """

    tracer: str
    concrete_args: tuple[str, ...] = ()
    leaf_modules: tuple[str, ...] = ()
    autowrap_functions: tuple[str, ...] = ()

    def options(self) -> dict:
        """The remedy as the window's open options (``tracer``, ``concrete_args``, ...), empty ones left out."""
        out: dict = {"tracer": self.tracer}
        for key in ("concrete_args", "leaf_modules", "autowrap_functions"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        return out


def _frames(exc: BaseException) -> list[tuple[traceback.FrameSummary, types.FrameType]]:
    pairs = []
    tb = exc.__traceback__
    summaries = traceback.extract_tb(tb)
    i = 0
    while tb is not None:
        pairs.append((summaries[i], tb.tb_frame))
        tb = tb.tb_next
        i += 1
    return pairs


def _pick_user_frame(frames, user_file: Path | None) -> traceback.FrameSummary | None:
    """The innermost frame in the model file; else the innermost frame outside torch and the stdlib."""
    if user_file is not None:
        target = str(Path(user_file).resolve())
        mine = [f for f, _ in frames if _resolved(f.filename) == target]
        if mine:
            return mine[-1]
    others = [f for f, _ in frames if not _is_library(f.filename) and "fxstudio/core" not in f.filename]
    return others[-1] if others else None


def _resolved(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, ValueError):
        return filename


def _innermost_module(frames, root: nn.Module) -> tuple[str, str] | None:
    """``(qualified name, class name)`` of the deepest submodule whose ``forward`` was running."""
    paths = {id(m): name for name, m in root.named_modules() if name}
    found = None
    for _, frame in frames:
        obj = frame.f_locals.get("self")
        if isinstance(obj, nn.Module) and id(obj) in paths:
            found = (paths[id(obj)], type(obj).__name__)
    return found


def _called_function(frames, user_frame) -> str | None:
    """The plain function (not a module's method) to wrap: the user's frame itself when it is one,
    else the function its line called into, if the failure happened inside that (non-torch) function.
    """
    index = next((i for i, (summary, _) in enumerate(frames) if summary is user_frame), None)
    if index is None:
        return None
    summary, frame = frames[index]
    if _is_plain_function(summary, frame):
        return summary.name
    for summary, frame in frames[index + 1 :]:
        if _is_library(summary.filename) or "fxstudio/core" in summary.filename:
            return None
        return summary.name if _is_plain_function(summary, frame) else None
    return None


def _is_plain_function(summary, frame) -> bool:
    return (
        not isinstance(frame.f_locals.get("self"), nn.Module)
        and not summary.name.startswith("<")
        and summary.name != "forward"
        and summary.name in frame.f_globals
    )


def _summary(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_data_dependent(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}"
    keys = (
        "cannot be used as inputs to control flow",
        "data-dependent",
        "GuardOnDataDependentSymNode",
        "Proxy object cannot be iterated",
        "symbolically traced variables",
    )
    return any(k in text for k in keys)


def trace_error(
    exc: BaseException, *, tracer: str, root: nn.Module, user_file: Path | None, display: str
) -> TraceError:
    """A ``TraceError`` for ``exc`` raised while tracing ``root`` (loaded from ``user_file``)."""
    frames = _frames(exc)
    user = _pick_user_frame(frames, user_file)
    where = ""
    if user is not None:
        code = (user.line or "").strip()
        where = f" at {user.filename}:{user.lineno}" + (f" in {user.name}" if user.name else "")
        where += f" (`{code}`)" if code else ""
    module = _innermost_module(frames, root)
    function = _called_function(frames, user) if user is not None else None
    flags = _flag_params(root)
    hf = _hf_remedy(exc, tracer, root, [name for name, _ in flags])
    if hf is not None:
        remedy, error_remedy = hf
    else:
        remedy = _remedy(exc, tracer, module, function, [name for name, _ in flags])
        error_remedy = suggested_options(exc, tracer, module, function, flags)
    error = TraceError(f"Tracing {display} with the {tracer} tracer failed{where}: {_summary(exc)}. {remedy}")
    error.remedy = error_remedy
    return error


def _is_hf_model(root: nn.Module) -> bool:
    """Whether ``root`` is or holds a Hugging Face ``transformers`` model (by its classes' modules;
    nothing is imported)."""
    return any(
        getattr(cls, "__module__", "").startswith("transformers.")
        for m in root.modules()
        for cls in type(m).__mro__
    )


def _hf_remedy(exc: BaseException, tracer: str, root: nn.Module, flags: list[str]) -> tuple[str, TraceRemedy] | None:
    """The concrete fix for a Hugging Face model (issue #15): a cache object in the output under
    export (``use_cache=True``), or fx's ``symbolic_trace``, which no longer traces transformers
    models (transformers 5 dropped its fx tracer). None when neither applies."""
    if not _is_hf_model(root):
        return None
    text = f"{type(exc).__name__} {exc}"
    has_flag = "use_cache" in flags
    option = "--concrete-arg use_cache=False"
    remedy = TraceRemedy("export", concrete_args=("use_cache=False",)) if has_flag else TraceRemedy("export")
    wrapper = ("or wrap the model in a module whose forward returns tensors "
               "(`return self.model(input_ids, use_cache=False).logits`)")
    if tracer == "export" and "Cache" in text and "output" in text:
        how = f"open it with {option}" if has_flag else "call it with use_cache=False"
        return (f"This Hugging Face transformers model returns its key/value cache (use_cache=True), which "
                f"torch.export cannot return as a graph output: {how} (the graph then returns the logits), "
                f"{wrapper}.", remedy)
    if tracer == "fx":
        how = f"--tracer export {option}" if has_flag else "--tracer export, calling the model with use_cache=False"
        return (f"torch.fx symbolic_trace cannot trace Hugging Face transformers models (transformers 5 has no "
                f"fx tracer); open it with the export tracer instead: {how} (a wrapper whose forward returns "
                "tensors does not make fx work: trace it with --tracer export too).", remedy)
    return None


def _flag_params(root: nn.Module) -> list[tuple[str, object]]:
    """Forward parameters with a default, with that default: the usual candidates for ``--concrete-arg``."""
    try:
        params = inspect.signature(root.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [(p.name, p.default) for p in params if p.default is not inspect.Parameter.empty]


def _concrete_value(default: object) -> str:
    """The value to suggest for a flag: its default when that is a plain literal (tracing the default
    behaviour), else ``True`` (a ``None`` default usually means "decide from the data")."""
    if isinstance(default, (bool, int, float, str)):
        from fxstudio.core.argsyntax import format_value

        return format_value(default)
    return "True"


def suggested_options(exc: BaseException, tracer: str, module, function: str | None,
                      flags: list[tuple[str, object]]) -> TraceRemedy:
    """The structured form of ``_remedy``'s advice: the same choice of fix, as option values."""
    if _is_data_dependent(exc):
        if flags:
            name, default = flags[0]
            return TraceRemedy(tracer, concrete_args=(f"{name}={_concrete_value(default)}",))
        if module and tracer == "fx":
            return TraceRemedy(tracer, leaf_modules=(module[0],))
        return TraceRemedy(tracer)
    if function and tracer == "fx":
        return TraceRemedy(tracer, autowrap_functions=(function,))
    if module and tracer == "fx":
        return TraceRemedy(tracer, leaf_modules=(module[0],))
    return TraceRemedy(tracer)


def _remedy(exc: BaseException, tracer: str, module, function: str | None, flags: list[str]) -> str:
    leaf = (
        f" or make the submodule that holds it a leaf module (--leaf-module {module[0]} or --leaf-module "
        f"{module[1]})"
        if module
        else " or move that code into a submodule and make it a leaf module (--leaf-module NAME)"
    )
    concrete = f"--concrete-arg {flags[0]}=VALUE" if flags else "--concrete-arg NAME=VALUE"
    if _is_data_dependent(exc):
        if tracer == "export":
            return (
                f"The code branches on a tensor's values, which tracing cannot see. Decide the branch before "
                f"tracing by passing the value of the forward argument that controls it ({concrete}), or rewrite the branch with torch.cond / torch.where; the fx tracer with "
                "concrete_args is another way."
            )
        return (
            "The code uses a traced value in Python control flow (an `if`, a loop, `len`, or a conversion "
            "to bool/int), which symbolic tracing cannot follow. Fix the value with concrete_args "
            f"({concrete} for the forward argument that decides it)" + leaf + "."
        )
    if function and tracer == "fx":
        return (
            f"The failure is inside the function `{function}`, which fx traced into. Keep it as one opaque "
            f"call: add torch.fx.wrap('{function}') at module level in the model file, or pass --autowrap "
            f"{function}."
        )
    if module and tracer == "fx":
        return (
            f"The failure is inside the submodule `{module[0]}` ({module[1]}). Make it a leaf module so fx "
            f"calls it without tracing its internals: --leaf-module {module[0]} (or --leaf-module {module[1]})."
        )
    if tracer == "export":
        return "torch.export could not capture this code; the fx tracer (--tracer fx) may, or see the export error above."
    return (
        "If a helper function cannot take traced values, wrap it with torch.fx.wrap; if a submodule's "
        "internals cannot be traced, make it a leaf module (--leaf-module NAME)."
    )
