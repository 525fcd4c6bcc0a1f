"""What a node-by-node run reports: a row per edited node, the failure that stopped it, and how a
node's target and an exception are written for the user."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxstudio.core.errors import RunError
from fxstudio.core.node_text import META_SOURCE
from fxstudio.core.node_text import target_text as format_target  # noqa: F401 - divergence*.py import it from here


class RunCancelled(RunError):
    """The user cancelled a run; nothing is reported."""


@dataclass
class NodeDivergence:
    """One edited node's value against its original counterpart.

    ``status``: ``"equal"`` (bitwise, or equal non-tensors), ``"close"`` (within tolerance),
    ``"diverged"`` (beyond tolerance, another shape, ...), ``"no_counterpart"`` (inserted by an
    edit), ``"error"`` (the node raised). ``score`` is ``max |e - o| / (atol + rtol |o|)``; the
    value is within tolerance exactly when ``score <= 1``. ``shared``: equal by construction
    (same computation on equal inputs, upstream of every edit), computed once, not compared.
    """

    index: int
    node_id: int | None
    name: str
    op: str
    target: str
    counterpart: str | None
    status: str
    max_abs: float | None = None
    score: float | None = None
    note: str = ""
    shared: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (infinite figures become null, with the note saying why)."""
        return {
            "index": self.index, "id": self.node_id, "name": self.name, "op": self.op,
            "target": self.target, "counterpart": self.counterpart, "status": self.status,
            "max_abs": _finite(self.max_abs), "score": _finite(self.score), "note": self.note,
            "shared": self.shared,
        }


@dataclass
class NodeFailure:
    """An exception raised while running a node (``graph`` is ``"edited"`` or ``"original"``)."""

    graph: str
    node_name: str
    node_id: int | None
    op: str
    target: str
    message: str
    out_of_memory: bool = False
    source: str = ""

    def describe(self) -> str:
        """One paragraph for the user: which graph, which node, what it raised."""
        what = "ran out of memory" if self.out_of_memory else "raised an error"
        where = f" ({self.source})" if self.source else ""
        return (f"The {self.graph} graph {what} at node {self.node_name} ({self.op} {self.target}){where}: "
                f"{self.message}")


@dataclass
class DivergenceResult:
    """What the lockstep run found: a row per edited node, the original nodes no longer there,
    the first node beyond tolerance, and the failure that stopped the run, if any."""

    nodes: list[NodeDivergence] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    first: NodeDivergence | None = None
    failure: NodeFailure | None = None


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    if isinstance(exc, MemoryError):
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _failure(graph: str, node: torch.fx.Node, exc: BaseException, node_id: int | None) -> NodeFailure:
    message = str(exc).strip().split("\n\nWhile executing")[0].strip() or type(exc).__name__
    if len(message) > 600:
        message = message[:600] + " ..."
    source = ""
    src = node.meta.get(META_SOURCE)
    if isinstance(src, dict) and src.get("file"):
        source = f"{src['file']}:{src.get('line', '?')}"
    return NodeFailure(graph, node.name, node_id, node.op, format_target(node),
                       f"{type(exc).__name__}: {message}", _is_oom(exc), source)
