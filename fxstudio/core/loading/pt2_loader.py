"""Reading a ``torch.export`` archive (``.pt2``) and finding example inputs for it."""

from __future__ import annotations

from pathlib import Path

import torch

from fxstudio.core.errors import LoadError
from fxstudio.core.loading.inputs import inputs_from_shapes


def load_exported_program(path: Path, *, trust: bool = False):
    """The archive's ``ExportedProgram`` and notes; without ``trust`` nothing in it runs (``pt2_archive``)."""
    from fxstudio.core.loading.pt2_archive import load_archive

    return load_archive(path, trust=trust)


def program_example_inputs(ep, path: Path, input_shapes) -> tuple[tuple, str]:
    """Inputs for an exported program: given shapes, else the program's own, else random of its input specs."""
    user_inputs = [
        spec.arg.name
        for spec in ep.graph_signature.input_specs
        if spec.kind == torch.export.graph_signature.InputKind.USER_INPUT
    ]
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    if input_shapes:
        _check_shapes(path, input_shapes, [vals.get(name) for name in user_inputs])
        return inputs_from_shapes(input_shapes), "--input-shape"
    stored = getattr(ep, "example_inputs", None)
    if stored:
        args, kwargs = stored
        if not kwargs:
            return tuple(args), "the program's stored example inputs"
    inputs = []
    gen = torch.Generator().manual_seed(0)
    for name in user_inputs:
        val = vals.get(name)
        if not isinstance(val, torch.Tensor):
            raise LoadError(
                f"{path}: the program does not store example inputs and its input '{name}' is not a tensor "
                "of known shape; give the inputs with --input-shape."
            )
        shape = [int(s) for s in val.shape]
        if val.dtype.is_floating_point:
            inputs.append(torch.randn(shape, generator=gen, dtype=val.dtype))
        elif val.dtype == torch.bool:
            inputs.append(torch.zeros(shape, dtype=torch.bool))
        else:
            inputs.append(torch.zeros(shape, dtype=val.dtype))
    return tuple(inputs), "random values of the program's input shapes"


def _check_shapes(path: Path, shapes, vals) -> None:
    """Refuse ``--input-shape`` values that the program's static input sizes rule out."""
    expected = [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in vals]
    if len(shapes) != len(expected):
        raise LoadError(
            f"{path}: the program takes {len(expected)} input(s); --input-shape was given {len(shapes)} time(s)."
        )
    for i, (given, want) in enumerate(zip(shapes, expected)):
        if want is None:
            continue
        fits = len(given) == len(want) and all(
            not isinstance(w, int) or int(g) == w for g, w in zip(given, want)
        )
        if not fits:
            text = "×".join(str(w) for w in want)
            raise LoadError(
                f"{path}: input {i + 1} was exported with shape {text}; --input-shape "
                f"{','.join(map(str, given))} does not fit it (only dynamic sizes may differ)."
            )
