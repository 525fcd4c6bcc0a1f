"""Read-only facts about a node for the panel and the dialogs (Qt-free): whether a target text
resolves, its submodule's repr, the nodes that may legally feed it (with their shape text, from
``fxstudio.core.node_text``), and what analysis passes computed for it."""

from __future__ import annotations

from collections import deque

import torch
import torch.fx

from fxstudio.core.errors import FxStudioError
from fxstudio.core.node_text import shape_text
from fxstudio.core.passes import ANALYSIS_KEY
from fxstudio.core.targets import parse_target

REPR_LINE_LIMIT = 30


def validate_target(doc, op: str, text: str) -> str | None:
    """The reason ``text`` is not a valid target for an ``op`` node of ``doc``, or None."""
    try:
        parse_target(op, text.strip(), doc.edited, doc.loaded.user_module)
    except FxStudioError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - shown as the field's message, never raised
        return f"{type(exc).__name__}: {exc}"
    return None


def module_repr(doc, node: torch.fx.Node) -> str:
    """The submodule's repr for ``call_module``, a tensor summary for ``get_attr``, else ``""``."""
    if node.op not in ("call_module", "get_attr"):
        return ""
    try:
        obj = doc.edited.get_submodule(str(node.target)) if node.op == "call_module" else \
            _get_attr(doc.edited, str(node.target))
    except AttributeError:
        return ""
    if isinstance(obj, torch.Tensor):
        kind = "Parameter" if isinstance(obj, torch.nn.Parameter) else "Tensor"
        dims = "×".join(str(d) for d in obj.shape) or "scalar"
        return f"{kind} {dims} {str(obj.dtype).replace('torch.', '')}"
    lines = repr(obj).splitlines()
    if len(lines) > REPR_LINE_LIMIT:
        lines = lines[:REPR_LINE_LIMIT] + [f"… ({len(lines) - REPR_LINE_LIMIT} more lines)"]
    return "\n".join(lines)


def _get_attr(root: torch.nn.Module, path: str):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def descendants(node: torch.fx.Node) -> set[torch.fx.Node]:
    """Every node that depends on ``node`` (its users, their users, ...), ``node`` excluded."""
    seen: set[torch.fx.Node] = set()
    queue = deque(node.users)
    while queue:
        n = queue.popleft()
        if n not in seen:
            seen.add(n)
            queue.extend(n.users)
    return seen


def feeder_names(doc, node: torch.fx.Node) -> list[str]:
    """Names of every node that may feed ``node`` without a cycle, in graph order (see below)."""
    banned = descendants(node)
    banned.add(node)
    return [n.name for n in doc.edited.graph.nodes if n.op != "output" and n not in banned]


def feeder_candidates(doc, node: torch.fx.Node) -> list[tuple[str, str]]:
    """(name, shape) of every node that may feed ``node`` without a cycle, in graph order.

    Equivalent to asking ``doc.would_cycle(node, other)`` for every other node, in one walk: a node
    may feed ``node`` unless it is ``node``, the output, or depends on ``node``.
    """
    banned = descendants(node)
    banned.add(node)
    return [
        (n.name, shape_text(n)) for n in doc.edited.graph.nodes
        if n.op != "output" and n not in banned
    ]


ANALYSIS_LINE_LIMIT = 20


def analysis_sections(node: torch.fx.Node) -> list[tuple[str, str]]:
    """``(pass label, text)`` of each analysis pass run on ``node`` (``run_pass`` of ShapeProp, a
    profiling Interpreter…), oldest first; ``text`` is one ``key: summary`` line per value it computed."""
    analyses = node.meta.get(ANALYSIS_KEY)
    if not isinstance(analyses, dict):
        return []
    sections = []
    for label, values in analyses.items():
        if not isinstance(values, dict) or not values:
            continue
        lines = [f"{key}: {text}" for key, text in list(values.items())[:ANALYSIS_LINE_LIMIT]]
        if len(values) > ANALYSIS_LINE_LIMIT:
            lines.append(f"… ({len(values) - ANALYSIS_LINE_LIMIT} more)")
        sections.append((str(label), "\n".join(lines)))
    return sections
