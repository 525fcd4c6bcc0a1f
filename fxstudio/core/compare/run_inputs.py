"""Inputs for a run: the model's example inputs, seeded random tensors from editable shapes, or a
``.pt`` file of tensors; and moving them (and a module) to the run's device and dtype.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fxstudio.core.budgets import BudgetExceeded, DataBudget
from fxstudio.core.errors import RunError
from fxstudio.core.node_text import dtype_name

RUN_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
"""The dtypes a run can be cast to, by the names the CLI and the run pane show."""

_INPUT_DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32, "int16": torch.int16,
    "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


def parse_run_dtype(name: str | torch.dtype | None) -> torch.dtype | None:
    """The run dtype for a name (``float32``/``float16``/``bfloat16``, also ``fp16``/``bf16``), or None."""
    if name is None or isinstance(name, torch.dtype):
        return name
    key = name.strip().lower().removeprefix("torch.")
    key = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16", "float": "float32"}.get(key, key)
    if key in ("", "none", "as-is", "model"):
        return None
    if key not in RUN_DTYPES:
        raise RunError(f"Unknown run dtype {name!r}: choose one of {', '.join(RUN_DTYPES)}.")
    return RUN_DTYPES[key]


@dataclass(frozen=True)
class InputSpec:
    """Shape and dtype of one random input; integer inputs are drawn from ``[low, high)``."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    low: int = 0
    high: int = 10

    def text(self) -> str:
        """The editable form, e.g. ``1,3,32,32:float32`` (``2,16:int64[0,100)`` for integers)."""
        dims = ",".join(str(d) for d in self.shape)
        rng = f"[{self.low},{self.high})" if not _is_float_name(self.dtype) and self.dtype != "bool" else ""
        return f"{dims}:{self.dtype}{rng}"


def _is_float_name(name: str) -> bool:
    return name.startswith(("float", "bfloat"))


_SPEC = re.compile(r"^\s*\(?\s*([0-9,\sx×]*?)\s*\)?\s*(?::\s*([a-z0-9]+)\s*(?:\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\)\s*)?)?$")


def parse_input_spec(text: str) -> InputSpec:
    """Parse ``1,3,32,32``, ``1x3x32x32:float16`` or ``2,16:int64[0,100)`` into an InputSpec."""
    match = _SPEC.match(text.strip().lower())
    if not match:
        raise RunError(f"Cannot read the input shape {text!r}: write it like 1,3,32,32 or 2,16:int64[0,100).")
    dims_text, dtype, low, high = match.groups()
    compact = re.sub(r"\s+", "", dims_text or "")
    if compact and not re.fullmatch(r"\d+([,x×]\d+)*,?", compact):
        raise RunError(f"Cannot read the input shape {text!r}: write it like 1,3,32,32 or 2,16:int64[0,100).")
    parts = [p for p in re.split(r"[,x×]", compact) if p]
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise RunError(f"Cannot read the input shape {text!r}: dimensions must be integers.") from None
    if any(d < 0 for d in shape):
        raise RunError(f"The input shape {text!r} has a negative dimension.")
    dtype = dtype or "float32"
    dtype = {"float": "float32", "half": "float16", "long": "int64", "int": "int64"}.get(dtype, dtype)
    if dtype not in _INPUT_DTYPES:
        raise RunError(f"Unknown input dtype {dtype!r} in {text!r}: use one of {', '.join(_INPUT_DTYPES)}.")
    spec = InputSpec(shape, dtype)
    if low is not None:
        if int(high) <= int(low):
            raise RunError(f"The integer range in {text!r} is empty.")
        spec = InputSpec(shape, dtype, int(low), int(high))
    return spec


def specs_from_inputs(inputs: tuple[Any, ...]) -> list[InputSpec]:
    """Editable specs matching example inputs (integer ranges cover the example's values)."""
    specs = []
    for value in inputs:
        if not isinstance(value, torch.Tensor):
            raise RunError(
                f"An example input is a {type(value).__name__}, not a tensor: random inputs can only "
                "replace tensor inputs. Use the example inputs or a .pt file instead."
            )
        name = dtype_name(value.dtype)
        if value.is_floating_point() or value.dtype == torch.bool or value.numel() == 0 or value.is_meta:
            specs.append(InputSpec(tuple(value.shape), name))
        else:
            low = min(0, int(value.min()))
            specs.append(InputSpec(tuple(value.shape), name, low, max(int(value.max()) + 1, low + 1)))
    return specs


class InputsTooLarge(RunError):
    """Random inputs whose bytes pass the data budget; nothing was made (bad input: exit 2)."""

    exit_code = 2


def random_inputs(specs: list[InputSpec], seed: int = 0, *, budget: DataBudget | None = None) -> tuple[torch.Tensor, ...]:
    """Seeded random tensors for ``specs``: normal floats, uniform integers, fair booleans.

    Their bytes (and those of the float32 draw that other floating and boolean inputs are made
    from), summed, are counted against ``budget`` (a fresh ``DataBudget`` when None) before any is
    made: ``InputsTooLarge`` past it.
    """
    budget = budget if budget is not None else DataBudget("random inputs")
    for i, spec in enumerate(specs, 1):
        dtype = _INPUT_DTYPES[spec.dtype]
        try:
            budget.take_tensor(spec.shape, dtype, f"input {i} ({spec.text()})")
            if dtype != torch.float32 and (dtype.is_floating_point or dtype == torch.bool):
                budget.take_tensor(spec.shape, torch.float32, f"input {i}'s float32 draw ({spec.text()})")
        except BudgetExceeded as exc:
            raise InputsTooLarge(exc.message) from None
    gen = torch.Generator().manual_seed(int(seed))
    out = []
    for spec in specs:
        dtype = _INPUT_DTYPES[spec.dtype]
        if dtype.is_floating_point:
            out.append(torch.randn(spec.shape, generator=gen, dtype=torch.float32).to(dtype))
        elif dtype == torch.bool:
            out.append(torch.rand(spec.shape, generator=gen) < 0.5)
        else:
            out.append(torch.randint(spec.low, spec.high, spec.shape, generator=gen, dtype=dtype))
    return tuple(out)


def load_inputs_file(path: str | Path, placeholder_names: list[str] | None = None) -> tuple[Any, ...]:
    """Tensors from a ``.pt`` file (``torch.load(weights_only=True)``) as positional inputs.

    The file holds a tensor, a tuple/list of tensors, or a dict keyed by the graph's input names
    (``placeholder_names``, in order).
    """
    path = Path(path)
    if not path.is_file():
        raise RunError(f"The inputs file {path} does not exist.")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is the file's fault
        raise RunError(
            f"Cannot read inputs from {path}: {exc}. Save them with torch.save(tensor_or_tuple, path); "
            "only tensors and plain containers can be loaded safely."
        ) from None
    if isinstance(data, torch.Tensor):
        return (data,)
    if isinstance(data, (tuple, list)):
        return tuple(data)
    if isinstance(data, dict):
        if placeholder_names is None:
            return tuple(data.values())
        missing = [n for n in placeholder_names if n not in data]
        if missing:
            raise RunError(f"The inputs file {path} has no value for {', '.join(missing)}; it holds {', '.join(map(str, data))}.")
        return tuple(data[n] for n in placeholder_names)
    raise RunError(f"The inputs file {path} holds a {type(data).__name__}; expected a tensor, a tuple/list or a dict of tensors.")


def _convert(value: Any, device: torch.device, dtype: torch.dtype | None) -> Any:
    if isinstance(value, torch.Tensor):
        if dtype is not None and value.is_floating_point():
            return value.to(device=device, dtype=dtype)
        return value.to(device=device)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_convert(v, device, dtype) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_convert(v, device, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _convert(v, device, dtype) for k, v in value.items()}
    return value


def inputs_for_run(inputs: tuple[Any, ...], device: str | torch.device, dtype: torch.dtype | None) -> tuple[Any, ...]:
    """``inputs`` on ``device``, floating tensors cast to ``dtype`` (integers and others unchanged)."""
    return tuple(_convert(v, torch.device(device), dtype) for v in inputs)


def module_for_run(module: torch.nn.Module, device: str | torch.device, dtype: torch.dtype | None,
                   *, memo: dict[int, Any] | None = None) -> torch.nn.Module:
    """``module`` itself when it already lives on ``device`` in ``dtype``, else a moved deep copy.

    The caller's module is never changed: the document's modules stay where the user left them.
    (Running ``module`` itself may still write into its buffers: ``compare_models`` decides when
    a run needs a copy.) ``memo``, shared by several calls, is ``copy.deepcopy``'s: modules that
    share weights (a document's original and edited graphs, the model as loaded) then share the
    moved weights too, which are moved once.
    """
    device = torch.device(device)
    tensors = list(module.parameters()) + list(module.buffers())
    tensors += [t for _, _, t in _plain_tensor_attrs(module)]
    on_device = all(_same_device(t.device, device) for t in tensors)
    right_dtype = dtype is None or all(t.dtype == dtype for t in tensors if t.is_floating_point())
    if on_device and right_dtype:
        return module
    moved = copy.deepcopy(module, memo if memo is not None else {})
    moved = moved.to(device=device, dtype=dtype) if dtype is not None else moved.to(device=device)
    # Tensor constants that tracing stored as plain attributes (``_tensor_constant0``) are neither
    # parameters nor buffers, so ``.to`` leaves them behind.
    for owner, name, value in _plain_tensor_attrs(moved):
        cast = dtype if dtype is not None and value.is_floating_point() else value.dtype
        setattr(owner, name, value.to(device=device, dtype=cast))
    return moved


def _plain_tensor_attrs(module: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.Tensor]]:
    found = []
    for sub in module.modules():
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                found.append((sub, name, value))
    return found


def _same_device(a: torch.device, b: torch.device) -> bool:
    if a.type != b.type:
        return False
    return a.index == b.index or a.type == "cpu" or (a.index or 0) == (b.index or 0)
