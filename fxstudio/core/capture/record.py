"""The capture backend: each graph Dynamo hands it becomes data (nodes, input metadata, the break
reason, the guards' text), written to the capture file, then the wrapped backend compiles it.

Nothing of the graph is pickled: targets are written in target syntax (``torch.relu``,
``operator.add``, a Tensor method name) and arguments in the argument syntax of
docs/edit-scripts.md, ``%name`` for a node (``core/argsyntax.py``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable

import torch
import torch.fx

from fxstudio.core import fx_compat_dynamo
from fxstudio.core.argsyntax import format_value
from fxstudio.core.capture.fileformat import CaptureWriter
from fxstudio.core.node_text import callable_text, dtype_name

MAX_STACK_CHARS = 4000  # a node's stack trace kept for its source link
_LIBRARY_PARTS = ("/torch/", "/site-packages/", "/lib/python3", "<frozen", "fxstudio/core/")


def _value_record(value: Any) -> dict | None:
    """Shape and dtype of a (fake or real) tensor, an int/float/bool value, or None."""
    if isinstance(value, torch.Tensor):
        shape = [int(s) if isinstance(s, int) or _concrete(s) else str(s) for s in value.shape]
        return {"kind": "tensor", "shape": shape, "dtype": dtype_name(value.dtype),
                "requires_grad": bool(value.requires_grad)}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"kind": "symbol", "text": str(value)}
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return {"kind": type(value).__name__, "value": value}
    if isinstance(value, (tuple, list)):
        items = [_value_record(v) for v in value]
        return {"kind": "tuple", "items": items}
    return None


def _concrete(size: Any) -> bool:
    try:
        int(size)
        return not isinstance(size, torch.SymInt) or size.node.is_constant()
    except Exception:  # noqa: BLE001 - a symbolic size that cannot be read as a number
        return False


def _user_frame(frames: list[tuple[str, int, str, str]]) -> dict | None:
    """The innermost frame in the user's code (not torch, not the standard library)."""
    mine = [f for f in frames if not any(p in f[0].replace("\\", "/") for p in _LIBRARY_PARTS)]
    chosen = (mine or frames or [None])[-1]
    if chosen is None:
        return None
    file, line, name, code = chosen
    return {"file": file, "line": line, "function": name, "code": code}


def graph_record(gm: torch.fx.GraphModule, example_inputs: list, index: int) -> dict:
    """The data of one graph Dynamo compiled: nodes, inputs, break reason (docs/notes/capture.md)."""
    nodes = []
    for node in gm.graph.nodes:
        record: dict[str, Any] = {"op": node.op, "name": node.name}
        if node.op == "call_function":
            record["target"] = callable_text(node.target)
        else:
            record["target"] = str(node.target)
        record["args"] = format_value(tuple(node.args))
        record["kwargs"] = format_value(dict(node.kwargs))
        value = node.meta.get("example_value")
        meta = _value_record(value) if value is not None else None
        if meta is not None:
            record["value"] = meta
        stack = node.meta.get("stack_trace")
        if isinstance(stack, str) and stack:
            record["stack_trace"] = stack[-MAX_STACK_CHARS:]
        if node.op == "placeholder":
            source = fx_compat_dynamo.graph_input_source(node)
            if source:
                record["source"] = source
        nodes.append(record)
    inputs = []
    for value in example_inputs:
        rec = _value_record(value) or {"kind": "unknown", "type": type(value).__name__}
        if isinstance(value, torch.nn.Parameter):
            rec["parameter"] = True
        inputs.append(rec)
    reason = fx_compat_dynamo.compile_reason(gm)
    brk: dict[str, Any] = {"reason": "", "graph_break": False, "frames": [], "user_frame": None}
    if reason is not None:
        text, frames, is_break = reason
        brk = {"reason": text, "graph_break": is_break,
               "frames": [{"file": f, "line": ln, "function": fn, "code": c} for f, ln, fn, c in frames],
               "user_frame": _user_frame(frames)}
    compile_id = gm.meta.get("dynamo_compile_id") if isinstance(getattr(gm, "meta", None), dict) else None
    return {
        "index": index,
        "name": f"graph_{index}",
        "compile_id": None if compile_id is None else str(compile_id),
        "nodes": nodes,
        "inputs": inputs,
        "break": brk,
        "guards": "",
        "saved_inputs": False,
    }


_LOGGER_STATE: list = [logging.NOTSET, True]  # the guards logger's level and propagation before any capture


class _GuardsHandler(logging.Handler):
    """Collects the text of Dynamo's ``guards`` log artifact for the capture that installed it."""

    def __init__(self, sink: Callable[[str | None, str], None]):
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        """Hand the record's text, with the id of the frame being compiled, to the capture."""
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a log record that cannot format itself is skipped
            return
        if text.startswith("Guard eval latency"):
            return
        self.sink(fx_compat_dynamo.current_compile_id(), text)


class CaptureBackend:
    """A Dynamo backend that records every graph it is given to ``path``, then compiles it with
    ``backend`` (a backend name or callable; ``"inductor"`` by default, ``"eager"`` when inductor
    cannot compile here). See :func:`capture`."""

    def __init__(self, path: str | Path = "run.fxcap", backend: str | Callable = "inductor",
                 save_inputs: bool = False, guards: bool = True):
        self.path = Path(path)
        self.backend = backend
        self.save_inputs = save_inputs
        self.graphs: list[dict] = []
        self.notes: list[str] = []
        self._lock = threading.RLock()  # guards may be logged from inside a compile
        self._writer = CaptureWriter(self.path, backend if isinstance(backend, str) else callable_text(backend))
        self._handler: _GuardsHandler | None = None
        if guards:
            self._watch_guards()
        self._writer.write(self.graphs, self.notes)

    # -- guards --------------------------------------------------------------------------------

    def _watch_guards(self) -> None:
        logger = logging.getLogger(fx_compat_dynamo.GUARDS_LOGGER)
        self._handler = _GuardsHandler(self._guards_seen)
        if not any(isinstance(h, _GuardsHandler) for h in logger.handlers):  # the first capture open
            _LOGGER_STATE[:] = [logger.level, logger.propagate]
        if not logger.isEnabledFor(logging.DEBUG):  # not asked for by TORCH_LOGS: keep stderr quiet
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
        logger.addHandler(self._handler)

    def _guards_seen(self, compile_id: str | None, text: str) -> None:
        with self._lock:
            if not self.graphs:
                return
            frame = (compile_id or "").split("_")[0]
            if frame and any(g["compile_id"] for g in self.graphs):
                # a frame with no graph of its own (nothing to compile) has guards too: not filed
                target = next((g for g in reversed(self.graphs) if g["compile_id"] == frame), None)
                if target is None:
                    return
            else:
                target = self.graphs[-1]
            target["guards"] = (target["guards"] + ("\n" if target["guards"] else "") + text.strip("\n"))[-200_000:]
            self._writer.write(self.graphs, self.notes)

    def flush(self) -> None:
        """Write the capture file again (after notes were added outside a compile)."""
        with self._lock:
            self._writer.write(self.graphs, self.notes)

    def close(self) -> None:
        """Stop collecting guards (the capture file is already complete after each graph)."""
        if self._handler is not None:
            logger = logging.getLogger(fx_compat_dynamo.GUARDS_LOGGER)
            logger.removeHandler(self._handler)
            self._handler = None
            if not any(isinstance(h, _GuardsHandler) for h in logger.handlers):  # the last capture open
                logger.setLevel(_LOGGER_STATE[0])
                logger.propagate = _LOGGER_STATE[1]

    # -- the backend -----------------------------------------------------------------------------

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        """Record ``gm`` and return the wrapped backend's compiled callable."""
        return self._record(gm, example_inputs, self.backend)

    def wrapping(self, backend: str | Callable) -> Callable:
        """A backend that records into this capture but compiles with ``backend`` (the one a
        script's own ``torch.compile(..., backend=...)`` names)."""
        if backend == self.backend:
            return self

        def recording_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
            """Record ``gm`` into this capture; compile it with the script's own backend."""
            return self._record(gm, example_inputs, backend)

        return recording_backend

    def _record(self, gm: torch.fx.GraphModule, example_inputs: list, backend: str | Callable) -> Callable:
        with self._lock:
            index = len(self.graphs)
            record = graph_record(gm, list(example_inputs), index)
            tensors = None
            if self.save_inputs:
                tensors = {str(i): v for i, v in enumerate(example_inputs) if isinstance(v, torch.Tensor)}
                record["saved_inputs"] = True
            compiled, used, note = self._compile(gm, example_inputs, backend)
            record["backend"] = used
            if note:
                record["note"] = note
                if note not in self.notes:
                    self.notes.append(note)
            self.graphs.append(record)
            self._writer.write(self.graphs, self.notes, index=index, tensors=tensors)
        return compiled

    @staticmethod
    def _compile(gm: torch.fx.GraphModule, example_inputs: list, backend: str | Callable) -> tuple[Callable, str, str | None]:
        name = backend if isinstance(backend, str) else callable_text(backend)
        if backend == "eager":
            return gm.forward, "eager", None
        try:
            fn = fx_compat_dynamo.dynamo_backend(backend) if isinstance(backend, str) else backend
            return fn(gm, example_inputs), name, None
        except Exception as exc:  # noqa: BLE001 - no compiler here: the program still runs, eagerly
            if backend != "inductor":
                raise
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            return gm.forward, "eager", f"inductor could not compile here ({type(exc).__name__}: {first}); ran eagerly"


def capture(path: str | Path = "run.fxcap", backend: str | Callable = "inductor",
            save_inputs: bool = False) -> CaptureBackend:
    """A ``torch.compile`` backend that records each graph Dynamo captures to ``path`` (a ``.fxcap``
    file, rewritten atomically after each graph), then compiles it with ``backend`` so the program
    still runs compiled: ``torch.compile(model, backend=fxstudio.capture("run.fxcap"))``.

    ``save_inputs``: also save the real example tensors each graph was compiled for (inputs, and
    parameters Dynamo lifts as inputs); otherwise only their shapes and dtypes are kept.
    """
    return CaptureBackend(path, backend, save_inputs)
