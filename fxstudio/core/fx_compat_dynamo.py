"""The Dynamo (``torch.compile``) privates the capture backend relies on (``core/capture``): the
third part of ``fx_compat``'s door, under the same rule: each accessor names the private it reads
and its fallback, and ``tests/core/test_fx_compat.py`` allows torch privates in these modules only.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx

GUARDS_LOGGER = "torch._dynamo.guards.__guards"
"""The logger of Dynamo's ``guards`` artifact (``TORCH_LOGS=guards``), which prints each frame's guards."""


def dynamo_backend(name: str) -> Callable:
    """The Dynamo backend registered under ``name`` (``torch._dynamo.lookup_backend``, what
    ``torch.compile(backend="inductor")`` uses). No public fallback: ImportError or an unknown
    name raises, and the caller reports it."""
    from torch._dynamo import lookup_backend

    return lookup_backend(name)


def compile_reason(gm: torch.nn.Module) -> tuple[str, list[tuple[str, int, str, str]], bool] | None:
    """Why Dynamo ended the graph ``gm`` (``gm.compile_subgraph_reason``, the ``GraphCompileReason``
    Dynamo sets on each graph it hands a backend, which ``torch._dynamo.explain`` reads too):
    ``(reason, user frames as (file, line, function, code), graph_break)``. Fallback: None (the
    graph is recorded without a reason)."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    if reason is None:
        return None
    frames = []
    for frame in getattr(reason, "user_stack", None) or ():
        frames.append((str(frame.filename), int(frame.lineno or 0), str(frame.name), str(frame.line or "").strip()))
    return str(getattr(reason, "reason", "")), frames, bool(getattr(reason, "graph_break", False))


def graph_input_source(node: torch.fx.Node) -> str | None:
    """Where Dynamo took a placeholder's value from, e.g. ``L['self']._modules['lin']._parameters['weight']``
    (``node.meta["grapharg"].source.name``). Fallback: None."""
    source = getattr(node.meta.get("grapharg"), "source", None)
    if source is None:
        return None
    try:
        name = source.name
        return str(name() if callable(name) else name)
    except Exception:  # noqa: BLE001 - a source that cannot name itself is left unnamed
        return None


def current_compile_id() -> str | None:
    """The id (``"0/0"``) of the frame Dynamo is compiling now (``torch._guards.CompileContext``).
    Fallback: None (guards then go to the latest graph)."""
    try:
        from torch._guards import CompileContext

        value = CompileContext.current_compile_id()
    except (ImportError, AttributeError):
        return None
    return None if value is None else str(value)
