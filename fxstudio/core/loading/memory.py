"""``load_in_memory``: a module that lives in the caller's process (no file) to a ``LoadedModel``.

This is how ``fxstudio.edit`` / ``show`` / ``apply`` (``fxstudio/api.py``) open a model: a
``GraphModule`` is used as it is, any other ``nn.Module`` is traced with the chosen tracer on the
example inputs. fxstudio works on a deep copy, so the caller's object is never changed: not its
graph, not its nodes' metadata, not its weights.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core.errors import LoadError
from fxstudio.core.metadata import annotate
from fxstudio.core.model import LoadedModel
from fxstudio.core.loading.load import SHAPES_UNKNOWN
from fxstudio.core.loading.tracing import trace_export, trace_fx

MEMORY_NAME = "<memory>"
"""What stands for the file name of an in-memory model in titles (``<memory>::Net``)."""


def load_in_memory(module: Any, inputs: tuple = (), tracer: str | None = None, *,
                   name: str | None = None) -> LoadedModel:
    """A deep copy of ``module`` as a ``LoadedModel`` of kind ``"memory"`` (no path, no file).

    A ``torch.fx.GraphModule`` is used as it is (``tracer`` is then only recorded; without
    ``inputs`` its shapes stay unknown); any other ``nn.Module`` is traced on ``inputs`` with
    ``tracer`` ("fx", the default, or "export"). ``name`` names it in titles (default: its class).
    Raises ``LoadError`` (not a module, a module that cannot be copied, an unknown tracer, missing
    inputs for export) or ``TraceError`` (the tracer failed; the message names the user's line).
    """
    if tracer not in (None, "fx", "export"):
        raise LoadError(f"unknown tracer '{tracer}': use fx or export.")
    if not isinstance(module, nn.Module):
        raise LoadError(
            f"fxstudio edits a torch.nn.Module or a torch.fx.GraphModule, not {type(module).__name__}."
        )
    inputs = tuple(inputs)
    entry = name or _class_name(module)
    original = _deep_copy(module)
    display = f"{MEMORY_NAME}::{entry}"
    notes: list[str] = ["an in-memory model: fxstudio works on a copy, the module in your program is unchanged"]
    ep = None
    if isinstance(original, torch.fx.GraphModule):
        gm = original
        exported = any("val" in n.meta for n in gm.graph.nodes)
        tracer = tracer or ("export" if exported else "fx")
        module_for_runs: nn.Module = gm  # the "original" the Run dock compares with: it only runs it
        if not inputs and any(n.op == "placeholder" for n in gm.graph.nodes):
            notes.append(f"{SHAPES_UNKNOWN}: no example inputs were given (running, comparing and verifying an "
                         "export need them too); pass them after the module, e.g. fxstudio.edit(gm, x)")
    else:
        tracer = tracer or "fx"
        module_for_runs = original
        if tracer == "export":
            if not inputs:
                raise LoadError(f"{entry}: torch.export runs the model, so it needs example inputs: "
                                "pass them after the module, e.g. fxstudio.edit(model, x, tracer=\"export\").")
            gm, ep = trace_export(original, inputs, display=display, user_file=None)
        else:
            gm = trace_fx(original, display=display, user_file=None)
        exported = tracer == "export"
    annotate(gm, inputs, user_file=None, notes=notes, exported=exported)
    if not inputs and any(n.op == "placeholder" for n in gm.graph.nodes):
        notes[:] = [n for n in notes if not n.startswith("no shapes:")]  # said above, without the run's error
    return LoadedModel(
        path=None, kind="memory", module=module_for_runs, graph_module=gm, example_inputs=inputs,
        tracer=tracer, entry=entry, user_module=None, exported_program=ep, notes=notes,
    )


def _class_name(module: nn.Module) -> str:
    name = type(module).__name__  # GraphModule(root, graph) makes a class named after the root
    return name if name.isidentifier() else "Model"


def _deep_copy(module: nn.Module) -> nn.Module:
    try:
        return copy.deepcopy(module)
    except Exception as exc:  # noqa: BLE001 - a module may hold anything (locks, open files, handles)
        raise LoadError(
            f"cannot copy the {type(module).__name__} to edit it ({type(exc).__name__}: {exc}). fxstudio works "
            "on a deep copy so that your module stays unchanged; remove what cannot be copied (open files, "
            "locks, hooks holding them) or save the model to a file and open that."
        ) from None
