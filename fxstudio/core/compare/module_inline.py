"""Functional forms of common ``torch.nn`` layers, for the generated lockstep run.

Calling a submodule goes through ``nn.Module.__call__`` (hook checks, ``_call_impl``) and its
``forward`` (attribute lookups through ``nn.Module.__getattr__``) before the op itself: about 5 us
per call, as much as a small layer's op. The generated lockstep program (``divergence_codegen``)
writes a ``call_module`` node of an exactly known layer class as the functional call its
``forward`` makes, with the same arguments read from the module at each run: the same op on the
same objects, so the same value, the same random draws and the same errors.

A module is written this way only while ``forward`` is what it was written from: its type is
exactly one of the classes below (not a subclass, so not a parametrized module), that class's
``forward`` is the one seen at import, the instance has no ``forward`` of its own, no hooks and no
compiled call, no global module hooks are set, no JIT trace is running, and the layer's own
conditions hold (zero padding, batch norm in eval mode with running statistics, embedding without
``max_norm``, which renormalises the weight in place). An ``inplace`` flag is passed on as the
module passes it; the run sees from the same flag that the node writes in place (``inplace_ops``). Anything else is called
as a module. ``inline_values`` checks this at every run; the program is cached per set of
inlined nodes.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from fxstudio.core import fx_compat

Key = tuple[str, int]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one per class, keys of program caches
class Recipe:
    """How one layer class is written as a functional call: ``fetch`` reads the values the call
    needs from a module (None when this module cannot be written so now), ``template`` is the
    call with ``{x}`` for the input and ``{0}``, ``{1}``... for the fetched values."""

    name: str
    forward: Callable[..., Any]
    fetch: Callable[[torch.nn.Module, dict], tuple | None]
    template: str

    @property
    def arity(self) -> int:
        """How many fetched values the template reads."""
        return sum(1 for _, field, _, _ in string.Formatter().parse(self.template) if field and field != "x")

    def expr(self, x: str, values: list[str]) -> str:
        """The source of the call on input expression ``x`` with the values' variable names."""
        return self.template.format(*values, x=x)


def batch_norm_eval(check: Callable[[torch.Tensor], None], x: torch.Tensor, running_mean: torch.Tensor,
                    running_var: torch.Tensor, weight: Any, bias: Any, factor: float, eps: float) -> torch.Tensor:
    """``_BatchNorm.forward`` in eval mode with running statistics: the input check, then
    ``F.batch_norm`` with the module's buffers, as the module calls it."""
    check(x)
    return F.batch_norm(x, running_mean, running_var, weight, bias, False, factor, eps)


NAMESPACE = {"_F": F, "_batch_norm_eval": batch_norm_eval}
"""The globals the templates use, added to the generated program's namespace."""


def _linear(m: torch.nn.Module, d: dict) -> tuple:
    p = d["_parameters"]
    return p["weight"], p["bias"]


def _layer_norm(m: torch.nn.Module, d: dict) -> tuple:
    p = d["_parameters"]
    return d["normalized_shape"], p["weight"], p["bias"], d["eps"]


def _gelu(m: torch.nn.Module, d: dict) -> tuple:
    return (d["approximate"],)


def _inplace_flag(m: torch.nn.Module, d: dict) -> tuple | None:
    flag = d.get("inplace")
    return (flag,) if type(flag) is bool else None


def _dropout(m: torch.nn.Module, d: dict) -> tuple | None:
    flag = d.get("inplace")
    return (d["p"], d["training"], flag) if type(flag) is bool else None


def _conv(m: torch.nn.Module, d: dict) -> tuple | None:
    if d["padding_mode"] != "zeros":
        return None
    p = d["_parameters"]
    return p["weight"], p["bias"], d["stride"], d["padding"], d["dilation"], d["groups"]


def _batch_norm(m: torch.nn.Module, d: dict) -> tuple | None:
    b = d["_buffers"]
    mean, var = b.get("running_mean"), b.get("running_var")
    if d["training"] or mean is None or var is None:
        return None
    p = d["_parameters"]
    momentum = d["momentum"]
    return fx_compat.batch_norm_input_check(m), mean, var, p["weight"], p["bias"], 0.0 if momentum is None else momentum, d["eps"]


def _adaptive_avg_pool(m: torch.nn.Module, d: dict) -> tuple:
    return (d["output_size"],)


def _max_pool(m: torch.nn.Module, d: dict) -> tuple:
    return d["kernel_size"], d["stride"], d["padding"], d["dilation"], d["ceil_mode"], d["return_indices"]


def _embedding(m: torch.nn.Module, d: dict) -> tuple | None:
    if d["max_norm"] is not None:
        return None
    return d["_parameters"]["weight"], d["padding_idx"], d["norm_type"], d["scale_grad_by_freq"], d["sparse"]


def _flatten(m: torch.nn.Module, d: dict) -> tuple:
    return d["start_dim"], d["end_dim"]


def _recipes() -> dict[type, Recipe]:
    nn = torch.nn
    table: list[tuple[type, Callable, str]] = [
        (nn.Linear, _linear, "_F.linear({x}, {0}, {1})"),
        (nn.LayerNorm, _layer_norm, "_F.layer_norm({x}, {0}, {1}, {2}, {3})"),
        (nn.GELU, _gelu, "_F.gelu({x}, approximate={0})"),
        (nn.ReLU, _inplace_flag, "_F.relu({x}, inplace={0})"),
        (nn.Dropout, _dropout, "_F.dropout({x}, {0}, {1}, {2})"),
        (nn.Conv1d, _conv, "_F.conv1d({x}, {0}, {1}, {2}, {3}, {4}, {5})"),
        (nn.Conv2d, _conv, "_F.conv2d({x}, {0}, {1}, {2}, {3}, {4}, {5})"),
        (nn.Conv3d, _conv, "_F.conv3d({x}, {0}, {1}, {2}, {3}, {4}, {5})"),
        (nn.BatchNorm1d, _batch_norm, "_batch_norm_eval({0}, {x}, {1}, {2}, {3}, {4}, {5}, {6})"),
        (nn.BatchNorm2d, _batch_norm, "_batch_norm_eval({0}, {x}, {1}, {2}, {3}, {4}, {5}, {6})"),
        (nn.BatchNorm3d, _batch_norm, "_batch_norm_eval({0}, {x}, {1}, {2}, {3}, {4}, {5}, {6})"),
        (nn.AdaptiveAvgPool2d, _adaptive_avg_pool, "_F.adaptive_avg_pool2d({x}, {0})"),
        (nn.MaxPool2d, _max_pool, "_F.max_pool2d({x}, {0}, {1}, {2}, {3}, ceil_mode={4}, return_indices={5})"),
        (nn.Embedding, _embedding, "_F.embedding({x}, {0}, {1}, None, {2}, {3}, {4})"),
        (nn.Flatten, _flatten, "{x}.flatten({0}, {1})"),
    ]
    return {cls: Recipe(cls.__name__, cls.forward, fetch, template) for cls, fetch, template in table}


RECIPES = _recipes()


def inline_values(modules: dict[Key, Any]) -> dict[Key, tuple[Recipe, tuple]]:
    """The modules (by graph and node position) that can be written as a functional call now,
    with their recipe and the values the call reads; see the module docstring for when."""
    if fx_compat.global_module_hooks() or torch.jit.is_tracing():
        return {}
    found: dict[Key, tuple[Recipe, tuple]] = {}
    for key, module in modules.items():
        cls = type(module)
        recipe = RECIPES.get(cls)
        if recipe is None or cls.forward is not recipe.forward:
            continue
        d = module.__dict__
        if (d.get("_forward_hooks") or d.get("_forward_pre_hooks") or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks") or d.get("_compiled_call_impl") is not None or "forward" in d):
            continue
        try:
            values = recipe.fetch(module, d)
        except KeyError:  # an attribute kept somewhere unusual (deleted, set as a plain attribute)
            continue
        if values is not None:
            found[key] = (recipe, values)
    return found
