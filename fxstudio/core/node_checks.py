"""What torch's own checks say about the nodes of an edited graph, in one place for every view.

After each edit the shape refresh (``edits/shapes.py``) runs the touched nodes on fake tensors. When
torch raises at a node (``operator.mul`` of a tensor and ``'hello'``, a ``Linear(4→3)`` fed a
``2×3`` input), the edit still applies, but the node is *rejected*: a run would fail there. Its
message is kept in ``node.meta`` (``node_text.META_SHAPE_ERROR``) and every node after it reads
"unknown" (``node_text.META_SHAPE_UNKNOWN``). This module lists them (:func:`rejected_nodes`),
gives the verdict the CLI's lint line and the window's status bar show (:func:`graph_verdict`:
never "ok" while a node is rejected or a shape is unknown), and the ``Fit`` of a candidate input
before a rewire (``Document.input_fit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core.node_text import (META_HIDDEN, META_ID, META_SHAPE, META_SHAPE_ERROR, META_SHAPE_UNKNOWN,
                                     REJECTED_PREFIX, rejection_text)

__all__ = ["CheckState", "Fit", "GraphVerdict", "NodeProblem", "fit_key", "graph_verdict", "node_problem",
           "rejected_nodes", "replaced_input", "unknown_nodes"]


@dataclass(frozen=True)
class NodeProblem:
    """A node torch rejects: its stable id (None outside a document), name, and ``message``
    (``"torch rejects this node: TypeError: ..."``)."""

    node_id: int | None
    name: str
    message: str

    @property
    def detail(self) -> str:
        """Torch's own one-line message (``TypeError: ...``), without the prefix."""
        return self.message.removeprefix(REJECTED_PREFIX)

    @property
    def line(self) -> str:
        """``torch rejects %mul: TypeError: ...``: one line for stderr or a status bar."""
        return f"torch rejects %{self.name}: {self.detail}"


def node_problem(node: torch.fx.Node) -> NodeProblem | None:
    """The ``NodeProblem`` of ``node`` when torch rejects it, else None."""
    message = rejection_text(node)
    if not message:
        return None
    return NodeProblem(node.meta.get(META_ID), node.name, message)


def rejected_nodes(gm: torch.fx.GraphModule | torch.fx.Graph) -> list[NodeProblem]:
    """Every node of the graph torch rejects, in graph order (one pass over the nodes' metadata)."""
    graph = gm.graph if isinstance(gm, torch.fx.GraphModule) else gm
    return [p for p in (node_problem(n) for n in graph.nodes if META_SHAPE_ERROR in n.meta) if p is not None]


def unknown_nodes(gm: torch.fx.GraphModule | torch.fx.Graph) -> list[torch.fx.Node]:
    """The nodes whose shape an edit left unknown (downstream of a rejected node, or untold by fake
    tensors), in graph order."""
    graph = gm.graph if isinstance(gm, torch.fx.GraphModule) else gm
    return [n for n in graph.nodes if n.meta.get(META_SHAPE_UNKNOWN) and n.meta.get(META_SHAPE) is None]


@dataclass(frozen=True)
class GraphVerdict:
    """``graph.lint()`` and torch's checks together: ``status`` is "ok", "failed" (lint raised),
    "rejected" (torch rejects a node) or "unknown" (some shapes cannot be told, so torch's checks
    did not run there); ``message`` says what, ``rejected`` lists the rejected nodes."""

    status: str
    message: str
    rejected: tuple[NodeProblem, ...] = ()

    @property
    def ok(self) -> bool:
        """True only when lint passes and torch's checks ran on every node and accept it."""
        return self.status == "ok"

    @property
    def line(self) -> str:
        """The lint line of ``fxstudio inspect`` / ``apply``: ``lint: ok — ...``, ``lint: FAILED — ...``,
        ``lint: REJECTED — ...`` or ``lint: unknown — ...``."""
        word = {"ok": "ok", "failed": "FAILED", "rejected": "REJECTED"}.get(self.status, "unknown")
        return f"lint: {word} — {self.message}"


def _names(nodes: list[str], most: int = 3) -> str:
    shown = ", ".join(f"%{n}" for n in nodes[:most])
    return shown + (f" and {len(nodes) - most} more" if len(nodes) > most else "")


def graph_verdict(gm: torch.fx.GraphModule) -> GraphVerdict:
    """The verdict on ``gm`` (see ``GraphVerdict``); one pass over the nodes plus ``graph.lint()``."""
    try:
        gm.graph.lint()
    except Exception as exc:  # noqa: BLE001 - lint raises RuntimeError/AssertionError/...
        return GraphVerdict("failed", f"{type(exc).__name__}: {exc}")
    rejected = rejected_nodes(gm)
    if rejected:
        more = len(rejected) - 1
        others = f" (and {more} more node{'s' if more > 1 else ''})" if more else ""
        return GraphVerdict("rejected", f"{rejected[0].line}{others} (graph.lint() passes, but a run would fail there)",
                            tuple(rejected))
    unknown = [n.name for n in unknown_nodes(gm)]
    if unknown:
        return GraphVerdict("unknown", f"graph.lint() found no problems; torch's checks cannot tell the shape of "
                                       f"{len(unknown)} node{'s' if len(unknown) != 1 else ''} ({_names(unknown)})")
    if _shapes_missing(gm.graph):
        return GraphVerdict("unknown", "graph.lint() found no problems; shapes are unknown (no example inputs), "
                                       "so torch's checks did not run")
    return GraphVerdict("ok", "graph.lint() found no problems")


def _shapes_missing(graph: torch.fx.Graph) -> bool:
    inputs = [n for n in graph.nodes if n.op == "placeholder" and not n.meta.get(META_HIDDEN)]
    return bool(inputs) and not any("tensor_meta" in n.meta for n in inputs)


class CheckState:
    """Which nodes of a document torch rejects, and whose shape is unknown, now: made by ``reset``
    (one pass over the graph) and kept in step by ``update`` with each ``DocumentEvent`` at the cost
    of the nodes it names (a window's status bar reads it after every edit, whatever the graph's size).
    ``update`` may see the same event twice."""

    def __init__(self):
        self.rejected: dict[int, NodeProblem] = {}
        self.unknown: set[int] = set()
        self.no_shapes = False

    def reset(self, doc) -> None:
        """Read every node of ``doc``'s edited graph (None: nothing)."""
        self.rejected, self.unknown, self.no_shapes = {}, set(), False
        if doc is None:
            return
        graph = doc.edited.graph
        for node in graph.nodes:
            self._read(node.meta.get(META_ID), node)
        self.no_shapes = _shapes_missing(graph)

    def update(self, doc, event) -> None:
        """Follow one event of ``doc``: its added, changed and removed nodes are read again."""
        for node_id in event.added | event.changed | event.removed:
            self.rejected.pop(node_id, None)
            self.unknown.discard(node_id)
            node = doc.node(node_id)
            if node is not None:
                self._read(node_id, node)

    def _read(self, node_id, node: torch.fx.Node) -> None:
        problem = node_problem(node) if META_SHAPE_ERROR in node.meta else None
        if problem is not None:
            self.rejected[node_id] = problem
        elif node.meta.get(META_SHAPE_UNKNOWN) and node.meta.get(META_SHAPE) is None:
            self.unknown.add(node_id)

    @property
    def status(self) -> str:
        """"rejected", "unknown" (some shapes cannot be told, or none are known) or "ok"."""
        return "rejected" if self.rejected else "unknown" if self.unknown or self.no_shapes else "ok"

    def problems(self) -> list[NodeProblem]:
        """The rejected nodes, by id (the order of the original graph, then of the edits that added nodes)."""
        return [self.rejected[i] for i in sorted(self.rejected, key=lambda i: (i is None, i or 0))]


# ---------------------------------------------------------------------------- before a rewire


@dataclass(frozen=True)
class Fit:
    """Whether a candidate input fits a node, told on fake tensors before the edit: ``status`` is
    "fits", "rejected" (``message``: torch's one-line message) or "unknown"."""

    status: str
    message: str | None = None


def replaced_input(node: torch.fx.Node, key: int | str, path: tuple[int, ...], src: Any) -> tuple[tuple, dict]:
    """``node``'s ``(args, kwargs)`` with the input at ``key`` (and ``path`` inside a list or tuple
    argument) replaced by ``src``."""
    args, kwargs = list(node.args), dict(node.kwargs)
    value = args[key] if isinstance(key, int) else kwargs.get(key)

    def rebuild(v, rest):
        if not rest:
            return src
        items = list(v)
        items[rest[0]] = rebuild(items[rest[0]], rest[1:])
        return tuple(items) if isinstance(v, tuple) else items

    new = rebuild(value, tuple(path))
    if isinstance(key, int):
        args[key] = new
    else:
        kwargs[key] = new
    return tuple(args), kwargs


def fit_key(node: torch.fx.Node) -> tuple:
    """What the ``Fit`` of ``node`` as a candidate input depends on (the node being fed and the
    port staying the same): its recorded shape, stride and dtype, or its name when it has none. A
    drag checks each key once."""
    meta = node.meta.get("tensor_meta")
    if isinstance(meta, TensorMetadata):
        return ("T", tuple(meta.shape), tuple(meta.stride), meta.dtype)
    return ("N", node.name)
