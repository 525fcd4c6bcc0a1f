"""What ``fxstudio inspect`` shows: an aligned node table and a JSON record of every node.

Arguments are written in the argument syntax of docs/edit-scripts.md (``%name`` for node references).
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core.argsyntax import format_value
from fxstudio.core.metadata import normalized_arguments
from fxstudio.core.model import LoadedModel
from fxstudio.core.node_checks import graph_verdict
from fxstudio.core.node_text import (META_DTYPE, META_HIDDEN, META_MODULE_PATH, META_MODULE_STACK, META_SHAPE, META_SOURCE,
                                     dims_text, dtype_name, rejection_text, shape_text, target_text, unknown_text)

INSPECT_FORMAT = "fxstudio.inspect/1"
TABLE_COLUMNS = ("name", "op", "target", "args", "kwargs", "shape", "dtype")
_CELL_LIMIT = 60


def lint_verdict(gm: torch.fx.GraphModule) -> tuple[bool, str]:
    """``(ok, message)`` from ``graph.lint()``."""
    try:
        gm.graph.lint()
    except Exception as exc:  # noqa: BLE001 - lint raises RuntimeError/AssertionError/...
        return False, f"{type(exc).__name__}: {exc}"
    return True, "graph.lint() found no problems"


def _tensor_meta_record(meta) -> dict | list | None:
    if isinstance(meta, TensorMetadata):
        return {
            "shape": [int(s) if str(s).lstrip("-").isdigit() else str(s) for s in meta.shape],
            "dtype": dtype_name(meta.dtype),
            "stride": [int(s) if str(s).lstrip("-").isdigit() else str(s) for s in meta.stride],
            "requires_grad": bool(meta.requires_grad),
            "memory_format": str(meta.memory_format).removeprefix("torch.") if meta.memory_format else None,
        }
    if isinstance(meta, (list, tuple)) and meta:
        return [_tensor_meta_record(m) for m in meta]
    return None


def node_record(node: torch.fx.Node, loaded: LoadedModel) -> dict:
    """Everything about one node, as JSON-ready values (issue 2 item 6)."""
    normalized, note = normalized_arguments(node)
    record = {
        "name": node.name,
        "op": node.op,
        "target": target_text(node, loaded.user_module),
        "args": format_value(tuple(node.args)),
        "kwargs": format_value(dict(node.kwargs)),
        "normalized": {k: format_value(v) for k, v in normalized.items()} if normalized is not None else None,
        "normalized_note": note,
        "inputs": [n.name for n in node.all_input_nodes],
        "users": [n.name for n in node.users],
        "tensor_meta": _tensor_meta_record(node.meta.get("tensor_meta")),
        "shape": _jsonable(node.meta.get(META_SHAPE)),
        "dtype": node.meta.get(META_DTYPE),
        "shape_text": shape_text(node),
        "rejected": rejection_text(node) or None,  # torch rejects the node: a run would fail there
        "shape_unknown": unknown_text(node) or None,
        "module_path": node.meta.get(META_MODULE_PATH, ""),
        "module_stack": [list(item) for item in node.meta.get(META_MODULE_STACK, [])],
        "source": node.meta.get(META_SOURCE),
        "hidden": bool(node.meta.get(META_HIDDEN, False)),
    }
    if node.op == "call_module":
        try:
            record["module_repr"] = repr(loaded.graph_module.get_submodule(str(node.target)))
        except AttributeError:
            record["module_repr"] = None
    return record


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def inspect_record(loaded: LoadedModel) -> dict:
    """The whole ``--json`` document: model facts, notes, lint verdict (``lint``: ``graph.lint()``
    alone; ``checks``: with torch's checks, ``node_checks.GraphVerdict``) and every node."""
    gm = loaded.graph_module
    ok, message = lint_verdict(gm)
    verdict = graph_verdict(gm)
    nodes = [node_record(n, loaded) for n in gm.graph.nodes]
    return {
        "format": INSPECT_FORMAT,
        "model": loaded.display_name,
        "path": str(loaded.path) if loaded.path else None,
        "kind": loaded.kind,
        "tracer": loaded.tracer,
        "entry": loaded.entry,
        "example_inputs": [_input_text(v) for v in loaded.example_inputs],
        "notes": list(loaded.notes),
        "lint": {"ok": ok, "message": message},
        "checks": {"status": verdict.status, "message": verdict.message,
                   "rejected": [{"node": p.name, "message": p.message} for p in verdict.rejected]},
        "node_count": len(nodes),
        "hidden_count": sum(1 for n in nodes if n["hidden"]),
        "nodes": nodes,
    }


def _input_text(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{dims_text(tuple(value.shape))} {dtype_name(value.dtype)}"
    return format_value(value)


def _clip(text: str) -> str:
    return text if len(text) <= _CELL_LIMIT else text[: _CELL_LIMIT - 1] + "…"


def table_rows(loaded: LoadedModel, *, show_hidden: bool = False) -> list[tuple[str, ...]]:
    """One row of ``TABLE_COLUMNS`` per node (hidden export plumbing left out unless asked)."""
    rows = []
    for node in loaded.graph_module.graph.nodes:
        if node.meta.get(META_HIDDEN) and not show_hidden:
            continue
        shape = node.meta.get(META_SHAPE)
        dtype = node.meta.get(META_DTYPE)
        if isinstance(shape, list):
            shape_cell = shape_text(node)
            dtype_cell = ", ".join(d or "?" for d in dtype) if isinstance(dtype, list) else ""
        else:
            shape_cell = dims_text(shape) if shape is not None else shape_text(node)  # "rejected by torch", "unknown"
            dtype_cell = dtype or ""
        rows.append(
            (
                node.name,
                node.op,
                _clip(target_text(node, loaded.user_module)),
                _clip(format_value(tuple(node.args))),
                _clip(format_value(dict(node.kwargs))) if node.kwargs else "",
                shape_cell,
                dtype_cell,
            )
        )
    return rows


def render_table(loaded: LoadedModel, *, show_hidden: bool = False) -> str:
    """The readable report: a header, the aligned node table, notes and the lint verdict."""
    rows = table_rows(loaded, show_hidden=show_hidden)
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(TABLE_COLUMNS)]
    gm = loaded.graph_module
    total = len(gm.graph.nodes)
    inputs = ", ".join(_input_text(v) for v in loaded.example_inputs) or "none"
    if not loaded.example_inputs and any(n.op == "placeholder" for n in gm.graph.nodes):
        inputs += " (shapes unknown: give --input-shape)"  # issue #15 defect 5: traced without inputs
    lines = [f"{loaded.display_name} — {loaded.tracer} tracer, {total} nodes, inputs: {inputs}", ""]
    lines.append("  ".join(c.ljust(w) for c, w in zip(TABLE_COLUMNS, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    lines.append("")
    hidden = total - len(rows)
    if hidden:
        lines.append(
            f"{hidden} export plumbing nodes hidden (parameter reads, _guards_fn); --all shows them."
        )
    for note in loaded.notes:
        lines.append(f"note: {note}")
    lines.append(graph_verdict(gm).line)  # never "ok" while torch rejects a node or a shape is unknown
    return "\n".join(lines) + "\n"
