"""The ``.fxcap`` file: a zip holding ``capture.json`` (the graphs as data) and, when inputs were
saved, ``inputs/graph_<k>.pt`` (a dict of tensors, read with ``torch.load(weights_only=True)``).

``capture.json`` starts ``{"format": "fxstudio-capture", "version": 1, ...}``. The file is
rewritten atomically (``core/fileio.py``) after each graph, so a program that dies half way leaves
a readable capture of the graphs so far. Reading never extracts a member to disk and reads only
the member names above, each within a bound (``members.py``): the manifest at most
``budgets.MANIFEST_BYTES``, a graph's saved tensors within its data budget, both checked on the
declared size before a byte is read. Anything malformed is one ``LoadError`` line, and every string
from the file is shown escaped (``printable``): a note cannot drive the terminal.
"""

from __future__ import annotations

import io
import json
import re
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from fxstudio.core import budgets
from fxstudio.core.gc_pause import collections_off
from fxstudio.core.capture.members import (  # noqa: F401 - brief and printable: re-exported
    brief, check_declared_size, check_json_size, member_info, open_zip, printable, read_member,
    shown_path,
)
from fxstudio.core.errors import LoadError
from fxstudio.core.fileio import atomic_write_bytes

FORMAT = "fxstudio-capture"
VERSION = 1
MANIFEST = "capture.json"
SUFFIX = ".fxcap"
_INPUTS = re.compile(r"inputs/graph_(\d{1,6})\.pt\Z")
_SELECTOR = re.compile(r"(?:graph_)?([0-9]{1,6})\Z")  # ASCII digits only: "²".isdigit() is True


def inputs_member(index: int) -> str:
    """The zip member that holds graph ``index``'s saved tensors."""
    return f"inputs/graph_{index}.pt"


def tensor_bytes(tensors: dict[str, torch.Tensor]) -> bytes:
    """``tensors`` in torch's tensor format, readable back with ``torch.load(weights_only=True)``."""
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu().clone() for k, v in tensors.items()}, buffer)
    return buffer.getvalue()


class CaptureWriter:
    """Writes a capture file from the graphs recorded so far (the saved tensors kept as bytes)."""

    def __init__(self, path: Path, backend: str):
        self.path = Path(path)
        self.backend = backend
        self.tensors: dict[int, bytes] = {}

    def write(self, graphs: list[dict], notes: list[str], *, index: int | None = None,
              tensors: dict[str, torch.Tensor] | None = None) -> None:
        """Rewrite the file atomically with ``graphs``; ``tensors`` are graph ``index``'s inputs."""
        if index is not None and tensors:
            self.tensors[index] = tensor_bytes(tensors)
        manifest = {"format": FORMAT, "version": VERSION, "torch": torch.__version__,
                    "backend": self.backend, "notes": list(notes), "graphs": graphs}
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, indent=1))
            for k, data in sorted(self.tensors.items()):
                zf.writestr(inputs_member(k), data)
        atomic_write_bytes(self.path, buffer.getvalue())


@dataclass
class Capture:
    """A capture file read back: its graphs as data (validated when one is rebuilt)."""

    path: Path
    graphs: list[dict]
    backend: str = ""
    torch_version: str = ""
    notes: list[str] = field(default_factory=list)
    members: frozenset[str] = frozenset()

    def saved_tensors(self, index: int, budget: budgets.DataBudget | None = None) -> dict[str, torch.Tensor] | None:
        """Graph ``index``'s saved input tensors by position (``"0"``, ``"1"``...), or None.

        The member's declared size is taken from ``budget`` (default: a fresh data budget) before
        it is read, and the tensors' own sizes on top where they describe more than it holds.
        """
        member = inputs_member(index)
        if member not in self.members:
            return None
        where = f"{printable(self.path.name, 200)}::{index}"
        budget = budget or budgets.DataBudget(where)
        with open_zip(self.path) as zf:
            info = member_info(zf, self.path, member)
            _take(budget, info.file_size, f"the saved tensors ({member}, {info.file_size:,} bytes once decompressed)")
            data = read_member(zf, self.path, info)
        try:
            with warnings.catch_warnings():  # torch's note on an unusual pickle protocol: a second stderr line
                warnings.simplefilter("ignore")
                value = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as exc:  # noqa: BLE001 - any failure of the restricted reader is a refusal
            raise LoadError(f"{shown_path(self.path)}: {member} is not a tensor file fxstudio can read safely "
                            f"({type(exc).__name__}: {printable(_first_line(exc), 160)}).") from None
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                  for k, v in value.items()):
            raise LoadError(f"{shown_path(self.path)}: {member} must hold a dict of tensors.")
        if len(value) > MAX_SAVED_TENSORS:
            raise LoadError(f"{shown_path(self.path)}: {member} holds {len(value):,} tensors, more than "
                            f"{MAX_SAVED_TENSORS:,}.")
        # A tensor may be a view describing more than its storage holds (an expand, stride 0): what
        # runs on it later may materialize it, so the excess counts too.
        described = sum(budgets.tensor_nbytes(v.shape, v.dtype) for v in value.values())
        if described > info.file_size:
            _take(budget, described - info.file_size, f"the saved tensors' described sizes ({where})")
        return value


MAX_SAVED_TENSORS = 100_000


def _take(budget: budgets.DataBudget, nbytes: int, item: str) -> None:
    try:
        budget.take(nbytes, item)
    except budgets.BudgetExceeded as exc:
        raise LoadError(exc.message) from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def read_capture(path: str | Path) -> Capture:
    """The capture file at ``path``; ``LoadError`` (one line) for anything that is not a version-1 capture."""
    path = Path(path)
    with open_zip(path) as zf:
        names = frozenset(zf.namelist())
        if MANIFEST not in names:
            raise LoadError(f"{shown_path(path)}: not a capture file (it has no {MANIFEST}).")
        info = member_info(zf, path, MANIFEST)
        check_declared_size(path, info, budgets.MANIFEST_BYTES, "a capture's manifest")
        text = read_member(zf, path, info)
    check_json_size(text, path, MANIFEST)
    try:
        with collections_off():
            data = json.loads(text)
    except (ValueError, RecursionError, MemoryError):
        raise LoadError(f"{shown_path(path)}: {MANIFEST} is not valid JSON; the file is damaged.") from None
    del text
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LoadError(f"{shown_path(path)}: not a capture file (its format is not {FORMAT!r}).")
    version = data.get("version")
    if version != VERSION:
        raise LoadError(f"{shown_path(path)}: capture format version {brief(version)} is not supported "
                        f"(this fxstudio reads version {VERSION}).")
    graphs = data.get("graphs")
    if not isinstance(graphs, list) or not all(isinstance(g, dict) for g in graphs):
        raise LoadError(f"{shown_path(path)}: {MANIFEST} has no list of graphs.")
    for k, graph in enumerate(graphs):
        if not isinstance(graph.get("nodes"), list) or not all(isinstance(n, dict) for n in graph["nodes"]):
            raise LoadError(f"{shown_path(path)}: graph {k} has no list of nodes.")
    notes = [n for n in data.get("notes") or [] if isinstance(n, str)] if isinstance(data.get("notes"), list) else []
    members = frozenset(n for n in names if n == MANIFEST or _INPUTS.match(n))
    return Capture(path=path, graphs=graphs, backend=_text(data.get("backend")),
                   torch_version=_text(data.get("torch")), notes=notes, members=members)


def graph_index(capture: Capture, selector: str | None) -> int:
    """The graph a spec's ``::2`` / ``::graph_2`` names (default 0); ``LoadError`` when there is none."""
    if not capture.graphs:
        raise LoadError(f"{shown_path(capture.path)}: the capture holds no graphs (did the program call the "
                        "compiled model?).")
    if selector is None or selector == "":
        return 0
    match = _SELECTOR.match(selector)
    if not match:
        raise LoadError(f"{shown_path(capture.path)}::{printable(selector, 40)}: name a graph by its number, "
                        "e.g. ::0 or ::graph_0.")
    index = int(match.group(1))
    if index >= len(capture.graphs):
        raise LoadError(f"{shown_path(capture.path)}::{selector}: the capture has {len(capture.graphs)} graph(s), "
                        f"numbered 0 to {len(capture.graphs) - 1}.")
    return index


def _text(value: object) -> str:
    """A string field of the manifest ('' when absent or not a scalar), unescaped: for ``printable``."""
    if value is None or isinstance(value, (list, dict)):
        return ""
    return value if isinstance(value, str) else brief(value)


def break_text(graph: dict) -> str:
    """One line on why the graph ended: the break reason's first line and the user's ``file:line``
    (escaped for a terminal)."""
    brk = graph.get("break") if isinstance(graph.get("break"), dict) else {}
    reason = _text(brk.get("reason"))[:20_000].strip().splitlines()
    first = reason[0] if reason else ""
    for line in reason[1:]:  # Dynamo's first line is a title ("Failed to trace builtin operator")
        if line.strip().startswith("Explanation:"):
            first = f"{first}: {line.strip().removeprefix('Explanation:').strip()}"
            break
    if first.startswith("generic_jump"):  # Dynamo's name for a jump on a tensor value
        first = f"data-dependent branch (an if or while on a tensor value; {first})"
    if not brk.get("graph_break"):
        first = f"end of frame ({first})" if first else "end of frame"
    where = brk.get("user_frame") if isinstance(brk.get("user_frame"), dict) else None
    if where and where.get("file"):
        return (f"{printable(first, 300)} at {printable(_text(where.get('file')), 400)}:"
                f"{printable(_text(where.get('line')), 12)}")
    return printable(first, 300)


def input_text(graph: dict) -> str:
    """The graph's inputs' shapes, e.g. ``2×4 float32, 4×4 float32 (param)`` (escaped for a terminal)."""
    parts = []
    inputs = graph.get("inputs")
    for rec in inputs[:256] if isinstance(inputs, list) else []:
        if not isinstance(rec, dict):
            continue
        shape = rec.get("shape")
        if rec.get("kind") == "tensor" and isinstance(shape, list):
            dims = "×".join(printable(d, 20) for d in shape[:64]) or "scalar"
            parts.append(f"{dims} {printable(rec.get('dtype'), 20)}" + (" (param)" if rec.get("parameter") else ""))
        elif "value" in rec:
            parts.append(printable(brief(rec["value"]), 40))
        else:
            parts.append(printable(rec.get("kind", "?"), 20))
    return ", ".join(parts)[:2000]


def summary_lines(capture: Capture) -> list[str]:
    """The listing ``fxstudio inspect run.fxcap`` prints: one block per graph (every string from the
    file escaped)."""
    lines = [f"{printable(capture.path.name, 400)}: {len(capture.graphs)} graph(s) captured by torch.compile "
             f"(backend {printable(capture.backend, 80) or '?'}, torch {printable(capture.torch_version, 80) or '?'})"]
    breaks = sum(1 for g in capture.graphs if isinstance(g.get("break"), dict) and g["break"].get("graph_break"))
    lines.append(f"graph breaks: {breaks}")
    for k, graph in enumerate(capture.graphs):
        nodes = graph.get("nodes") or []
        count = sum(1 for n in nodes if n.get("op") not in ("placeholder", "output"))
        lines.append(f"  [{k}] graph_{k}: {count} op(s), inputs: {input_text(graph) or 'none'}")
        lines.append(f"      ends: {break_text(graph)}")
    lines.extend(f"note: {printable(n, 2000)}" for n in capture.notes)
    return lines
