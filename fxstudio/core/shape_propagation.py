"""Shape propagation: under ``FakeTensorMode`` first (no real activations are allocated), falling
back to a real forward run when fake execution fails; either way ``node.meta["tensor_meta"]``.
"""

from __future__ import annotations

import warnings

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp


def propagate_shapes(gm: torch.fx.GraphModule, example_inputs: tuple, notes: list[str]) -> str:
    """Fill ``tensor_meta`` on every node of ``gm``; returns ``"fake"``, ``"real"`` or ``"none"``.

    A fallback or a failure is explained in ``notes`` (shown to the user).
    """
    try:
        _run_fake(gm, example_inputs)
        return "fake"
    except Exception as exc:  # noqa: BLE001 - any op may lack a fake kernel
        fake_error = f"{type(exc).__name__}: {_first_line(exc)}"
    _clear(gm)
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*example_inputs)
        notes.append(
            f"shapes come from a real forward run: fake-tensor propagation failed ({fake_error})"
        )
        return "real"
    except Exception as exc:  # noqa: BLE001 - the user's model may fail on these inputs
        _clear(gm)
        notes.append(
            "no shapes: running the model on its example inputs failed "
            f"({type(exc).__name__}: {_first_line(exc)}); fake-tensor propagation failed too ({fake_error})"
        )
        return "none"


def _run_fake(gm: torch.fx.GraphModule, example_inputs: tuple) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ShapeProp(gm, fake_mode=mode).propagate(*example_inputs)


def _clear(gm: torch.fx.GraphModule) -> None:
    for node in gm.graph.nodes:
        node.meta.pop("tensor_meta", None)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else ""
