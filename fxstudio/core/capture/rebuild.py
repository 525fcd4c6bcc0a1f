"""A captured graph's data back to a ``torch.fx.GraphModule``, through the trust boundary.

Targets resolve only as edit scripts' do (``core/targets.py``: torch functions and ops,
``operator``, ``math``, reviewed builtins, public Tensor methods); arguments parse with the
argument syntax (``core/argsyntax.py``, no ``eval``). Anything else refuses the whole graph with
one line, before any node runs. A ``call_module`` node refuses (a capture holds no module
objects; with ``inline_inbuilt_nn_modules``, torch's default, Dynamo lifts parameters as
inputs instead); a ``get_attr`` node reads a zero tensor of its recorded shape and dtype
(the saved tensor when inputs were saved), so the graph keeps its structure.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import torch
import torch.fx

from fxstudio.core import trust
from fxstudio.core.argsyntax import parse_value
from fxstudio.core.capture.fileformat import Capture
from fxstudio.core.errors import FxStudioError, LoadError
from fxstudio.core.targets import resolve_function, resolve_method

MAX_NODES = 200_000
MAX_DIMS = 64
MAX_ELEMENTS = 2**32
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}\Z")
_OPS = ("placeholder", "call_function", "call_method", "get_attr", "call_module", "output")
_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32,
    torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128)}
_DTYPES.update({"float": torch.float32, "double": torch.float64, "half": torch.float16, "long": torch.int64,
                "int": torch.int32, "short": torch.int16})


def _name(where: str, value: Any, what: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value) or keyword.iskeyword(value):
        raise LoadError(f"{where}: {what} {str(value)[:80]!r} is not an identifier; the capture is refused.")
    return value


def _dtype(where: str, text: Any) -> torch.dtype:
    dtype = _DTYPES.get(str(text))
    if dtype is None:
        raise LoadError(f"{where}: dtype {str(text)[:40]!r} is not one fxstudio knows; the capture is refused.")
    return dtype


def _shape(where: str, shape: Any) -> tuple[int, ...] | None:
    """A recorded shape as ints (None when a size is symbolic); refuses anything else."""
    if not isinstance(shape, list) or len(shape) > MAX_DIMS:
        raise LoadError(f"{where}: a recorded shape must be a list of at most {MAX_DIMS} sizes.")
    if any(isinstance(d, str) for d in shape):
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in shape):
        raise LoadError(f"{where}: a recorded shape holds {shape!r}, not sizes.")
    count = 1
    for d in shape:
        count *= d
    if count > MAX_ELEMENTS:
        raise LoadError(f"{where}: a recorded tensor of {count:,} elements is more than {MAX_ELEMENTS:,}.")
    return tuple(shape)


def _tensor_of(where: str, rec: Any, generator: torch.Generator, random: bool) -> torch.Tensor:
    if not isinstance(rec, dict) or rec.get("kind") != "tensor":
        raise LoadError(f"{where}: no tensor shape was recorded for it.")
    shape = _shape(where, rec.get("shape"))
    if shape is None:
        raise LoadError(f"{where}: its recorded shape {rec.get('shape')} is symbolic; save the capture with "
                        "save_inputs=True to open it.")
    dtype = _dtype(where, rec.get("dtype"))
    if random and dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=dtype)
    return torch.zeros(shape, dtype=dtype)


def _input_value(where: str, rec: Any, saved: torch.Tensor | None, generator: torch.Generator) -> Any:
    if saved is not None:
        return saved
    if isinstance(rec, dict) and rec.get("kind") in ("int", "float", "bool") and "value" in rec:
        value = rec["value"]
        kinds = {"int": int, "float": float, "bool": bool}
        if type(value) is not kinds[rec["kind"]] and not (rec["kind"] == "float" and type(value) is int):
            raise LoadError(f"{where}: its recorded value {str(value)[:40]!r} is not a {rec['kind']}.")
        return value
    return _tensor_of(where, rec, generator, random=True)


def _value_of(records: dict[str, Any]):
    def value_of(node: torch.fx.Node) -> Any:
        """A recorded node's value for the cost checks: a tensor, a small literal, or unknown."""
        rec = records.get(node.name)
        if isinstance(rec, dict):
            if rec.get("kind") == "tensor":
                return trust.TENSOR_LIKE
            if rec.get("kind") in ("int", "float", "bool") and "value" in rec:
                return rec["value"]
        return trust.UNKNOWN
    return value_of


def rebuild_graph(capture: Capture, index: int) -> tuple[torch.fx.GraphModule, tuple, list[str]]:
    """Graph ``index`` of ``capture`` as ``(graph module, example inputs, notes)``.

    Inputs are the saved tensors when the capture has them, else random values (zeros for
    integer and bool tensors) of the recorded shapes and dtypes. ``LoadError`` (one line, nothing
    run) for a target outside the allow-list, a malformed node or a graph that needs module objects.
    """
    graph_data = capture.graphs[index]
    where = f"{capture.path.name}::{index}"
    nodes = graph_data.get("nodes") or []
    if len(nodes) > MAX_NODES:
        raise LoadError(f"{where}: {len(nodes):,} nodes is more than the {MAX_NODES:,} a graph may have.")
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    records: dict[str, Any] = {}
    attrs: dict[str, dict] = {}
    placeholders: list[dict] = []
    seen_output = False
    for i, data in enumerate(nodes):
        op = data.get("op")
        at = f"{where}: node {i}"
        if op not in _OPS:
            raise LoadError(f"{at}: op {str(op)[:40]!r} is not a graph op; the capture is refused.")
        if seen_output:
            raise LoadError(f"{at}: nodes follow the output; the capture is refused.")
        name = _name(at, data.get("name"), "node name")
        if name in env:
            raise LoadError(f"{at}: node name {name!r} appears twice; the capture is refused.")
        target_text = data.get("target")
        if not isinstance(target_text, str):
            raise LoadError(f"{at}: its target is not text; the capture is refused.")
        if op == "call_module":
            raise LoadError(f"{at} ({name}) calls the submodule {target_text[:80]!r}: a capture holds no module "
                            "objects, so this graph cannot be rebuilt (capture with torch's default "
                            "inline_inbuilt_nn_modules=True so parameters become inputs).")
        try:
            args = parse_value(str(data.get("args", "()")), env)
            kwargs = parse_value(str(data.get("kwargs", "{}")), env)
            if not isinstance(args, tuple) or not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
                raise LoadError(f"{at} ({name}): its args must be a tuple and its kwargs a dict.")
            if op == "call_function":
                target: Any = resolve_function(target_text, None, ())
            elif op == "call_method":
                target = resolve_method(target_text)
            elif op == "output":
                target = "output"
                seen_output = True
            else:
                target = _name(at, target_text, "target")
            trust.check_call_args(op, target, args, kwargs, _value_of(records))
        except LoadError:
            raise
        except FxStudioError as exc:
            raise LoadError(f"{at} ({name}): {exc.message} The capture is refused; nothing was run.") from None
        node = graph.create_node(op, target, args, kwargs, name=name)
        stack = data.get("stack_trace")
        if isinstance(stack, str):
            node.meta["stack_trace"] = stack[-4000:]
        source = data.get("source")
        if op == "placeholder":
            placeholders.append(data.get("value") if isinstance(data.get("value"), dict) else {})
            if isinstance(source, str):
                node.meta["fxs_capture_source"] = source[:400]
        if op == "get_attr":
            attrs[target] = data.get("value")
        records[name] = data.get("value")
        env[name] = node
    if not seen_output:
        raise LoadError(f"{where}: the graph has no output node; the capture is refused.")
    root = torch.nn.Module()
    notes = [f"graph {index} of a torch.compile capture ({capture.path.name}, {len(capture.graphs)} graph(s))"]
    generator = torch.Generator().manual_seed(0)
    saved = capture.saved_tensors(index) or {}
    for target, rec in attrs.items():
        tensor = saved.get(f"attr:{target}")
        root.register_buffer(target, tensor if tensor is not None else _tensor_of(f"{where}: {target}", rec, generator,
                                                                                   random=False))
    if attrs and not any(k.startswith("attr:") for k in saved):
        notes.append(f"{len(attrs)} attribute read(s) hold zero tensors of their recorded shapes (no values were saved)")
    try:
        gm = torch.fx.GraphModule(root, graph, class_name=f"Graph{index}")
        graph.lint()
    except Exception as exc:  # noqa: BLE001 - a malformed graph from a data file is refused, not shown
        raise LoadError(f"{where}: the recorded graph is not valid ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:160] if str(exc) else ''}).") from None
    recorded = graph_data.get("inputs") if isinstance(graph_data.get("inputs"), list) else []
    inputs = []
    for k, rec in enumerate(placeholders):
        rec = recorded[k] if k < len(recorded) and isinstance(recorded[k], dict) else rec
        inputs.append(_input_value(f"{where}: input {k}", rec, saved.get(str(k)), generator))
    notes.append("example inputs: the tensors saved in the capture" if saved
                 else "example inputs: random values of the recorded shapes and dtypes")
    return gm, tuple(inputs), notes
