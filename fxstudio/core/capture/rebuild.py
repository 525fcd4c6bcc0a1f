"""A captured graph's data back to a ``torch.fx.GraphModule``, through the trust boundary.

Targets resolve only as edit scripts' do (``core/targets.py``: torch functions and ops,
``operator``, ``math``, reviewed builtins, public Tensor methods); arguments parse with the
argument syntax (``core/argsyntax.py``, no ``eval``); every name torch.fx would write into code
passes ``code_names.check_node_code_names`` as its node is made. Anything else refuses the whole
graph with one line, before any node runs. A ``call_module`` node refuses (a capture holds no
module objects; with ``inline_inbuilt_nn_modules``, torch's default, Dynamo lifts parameters as
inputs instead); a ``get_attr`` node reads a zero tensor of its recorded shape and dtype (the saved
tensor when inputs were saved), so the graph keeps its structure.

Every tensor made or read for the graph counts against one data budget (``core/budgets.py``), in
bytes over the whole graph, before it is made: inputs of recorded shapes, attribute tensors, the
saved tensors (their declared size, before they are read), then every node's output, evaluated on
fake tensors (``evaluate.py``) before anything real runs.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from fxstudio.core import budgets, fx_compat, trust
from fxstudio.core.argsyntax import parse_value
from fxstudio.core.capture.evaluate import evaluate_graph
from fxstudio.core.capture.fileformat import Capture, brief, printable
from fxstudio.core.gc_pause import collections_off
from fxstudio.core.code_names import check_node_code_names
from fxstudio.core.errors import FxStudioError, LoadError
from fxstudio.core.targets import resolve_function, resolve_method

MAX_NODES = 200_000
MAX_DIMS = 64
MAX_SIZE_PRODUCT = 1 << 62
"""Product of a recorded shape's non-zero sizes: past it a stride overflows int64 (torch refuses)."""
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}\Z")
_OPS = ("placeholder", "call_function", "call_method", "get_attr", "call_module", "output")
_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32,
    torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128)}
_DTYPES.update({"float": torch.float32, "double": torch.float64, "half": torch.float16, "long": torch.int64,
                "int": torch.int32, "short": torch.int16})
_MODULE_ATTRIBUTES = frozenset(dir(torch.nn.Module())) | frozenset(dir(torch.fx.GraphModule)) | {"meta"}
"""Names every graph module has (``forward``, ``training``, ``graph``, ``__class__``...): not a get_attr target."""

# The argument texts Dynamo writes most ("(%x,)", "(%add, -1)", "{}", "{'dim': 1}"), read without
# the full parser (a 200k-node graph spent most of its rebuild there); anything else is parsed by it.
_ATOM = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*|-?(?:0|[1-9][0-9]{0,17})|-?[0-9]{1,18}\.[0-9]{1,18}"
                   r"|True|False|None")
_KEY = re.compile(r"'[A-Za-z_][A-Za-z0-9_]*'")
_ONE_REF = re.compile(r"\(%([A-Za-z_][A-Za-z0-9_]*),\)\Z")
_CONSTANTS = {"True": True, "False": False, "None": None}


def _atom(text: str, env: dict[str, torch.fx.Node]) -> Any:
    """The value of a simple argument (``%name``, an int, a decimal, True/False/None); ``KeyError``
    when it is not one (the full parser then reads the whole text, and words its error)."""
    if not _ATOM.fullmatch(text):
        raise KeyError(text)
    if text[0] == "%":
        return env[text[1:]]
    if text in _CONSTANTS:
        return _CONSTANTS[text]
    return float(text) if "." in text else int(text)


def _parse_simple(text: str, env: dict[str, torch.fx.Node]) -> Any:
    """``text`` when it is a flat tuple of simple arguments or a dict of them under identifier
    keys; ``KeyError`` for anything else."""
    text = text.strip()
    if len(text) < 2 or len(text) > 2000:
        raise KeyError(text)
    inner = text[1:-1].strip()
    if text[0] == "(" and text[-1] == ")":
        if not inner:
            return ()
        parts = [p.strip() for p in inner.split(",")]
        if parts[-1] == "":
            parts.pop()
        elif len(parts) == 1:  # "(x)" is x, not a tuple
            raise KeyError(text)
        return tuple(_atom(p, env) for p in parts)
    if text[0] == "{" and text[-1] == "}":
        if not inner:
            return {}
        out = {}
        for item in inner.split(","):
            key, sep, value = item.partition(":")
            key = key.strip()
            if not sep or not _KEY.fullmatch(key) or key[1:-1] in out:
                raise KeyError(text)
            out[key[1:-1]] = _atom(value.strip(), env)
        return out
    raise KeyError(text)


def _parse(text: Any, env: dict[str, torch.fx.Node], at: str, what: str) -> Any:
    if not isinstance(text, str):
        raise LoadError(f"{at}: its {what} are not text; the capture is refused.")
    if text == "{}":
        return {}
    one = _ONE_REF.match(text)
    if one and one.group(1) in env:
        return (env[one.group(1)],)
    try:
        return _parse_simple(text, env)
    except KeyError:
        return parse_value(text, env)


def _name(where: str, value: Any, what: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value) or keyword.iskeyword(value):
        raise LoadError(f"{where}: {what} {printable(brief(value), 80)} is not an identifier; the capture is refused.")
    return value


def _dtype(where: str, text: Any) -> torch.dtype:
    dtype = _DTYPES.get(text) if isinstance(text, str) else None
    if dtype is None:
        raise LoadError(f"{where}: dtype {printable(brief(text), 40)} is not one fxstudio knows; "
                        "the capture is refused.")
    return dtype


def _shape(where: str, shape: Any) -> tuple[int, ...] | None:
    """A recorded shape as ints (None when a size is symbolic); refuses anything else."""
    if not isinstance(shape, list) or len(shape) > MAX_DIMS:
        raise LoadError(f"{where}: a recorded shape must be a list of at most {MAX_DIMS} sizes.")
    if any(isinstance(d, str) for d in shape):
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d for d in shape):
        raise LoadError(f"{where}: a recorded shape holds {printable(brief(shape), 80)}, not sizes.")
    product = 1
    for d in shape:
        product *= max(d, 1)
        if product > MAX_SIZE_PRODUCT:
            raise LoadError(f"{where}: a recorded shape's sizes multiply past 2**62; no tensor has that shape.")
    return tuple(shape)


def _tensor_of(where: str, rec: Any, generator: torch.Generator, random: bool,
               budget: budgets.DataBudget) -> torch.Tensor:
    """A tensor of the shape and dtype ``rec`` records (random floats, else zeros), counted first."""
    if not isinstance(rec, dict) or rec.get("kind") != "tensor":
        raise LoadError(f"{where}: no tensor shape was recorded for it.")
    shape = _shape(where, rec.get("shape"))
    if shape is None:
        raise LoadError(f"{where}: its recorded shape {printable(brief(rec.get('shape')), 120)} is symbolic; save "
                        "the capture with save_inputs=True to open it.")
    dtype = _dtype(where, rec.get("dtype"))
    _take(budget, budgets.tensor_nbytes(shape, dtype), f"{where.rpartition(': ')[2]} ({_shape_text(shape, dtype)})")
    try:
        if random and (dtype.is_floating_point or dtype.is_complex):
            return torch.randn(shape, generator=generator, dtype=dtype)
        return torch.zeros(shape, dtype=dtype)
    except (RuntimeError, ValueError, MemoryError) as exc:
        raise LoadError(f"{where}: no tensor of its recorded shape can be made ({type(exc).__name__}: "
                        f"{printable((str(exc).strip().splitlines() or [''])[0], 160)}).") from None


def _shape_text(shape: tuple, dtype: torch.dtype) -> str:
    return "×".join(str(d) for d in shape) + " " + str(dtype).removeprefix("torch.") if shape else \
        "scalar " + str(dtype).removeprefix("torch.")


def _take(budget: budgets.DataBudget, nbytes: int, item: str) -> None:
    try:
        budget.take(nbytes, item)
    except budgets.BudgetExceeded as exc:
        raise LoadError(exc.message) from None


def _input_value(where: str, rec: Any, saved: torch.Tensor | None, generator: torch.Generator,
                 budget: budgets.DataBudget) -> Any:
    if saved is not None:
        return saved
    if isinstance(rec, dict) and rec.get("kind") in ("int", "float", "bool") and "value" in rec:
        value = rec["value"]
        kinds = {"int": int, "float": float, "bool": bool}
        if type(value) is not kinds[rec["kind"]] and not (rec["kind"] == "float" and type(value) is int):
            raise LoadError(f"{where}: its recorded value {printable(brief(value), 40)} is not a {rec['kind']}.")
        return value
    return _tensor_of(where, rec, generator, True, budget)


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


class _Targets:
    """Targets resolved once per text (a graph repeats a few hundred targets over its nodes)."""

    def __init__(self):
        self.functions: dict[str, Any] = {}
        self.methods: dict[str, str] = {}

    def function(self, text: str) -> Any:
        if text not in self.functions:
            self.functions[text] = resolve_function(text, None, ())
        return self.functions[text]

    def method(self, text: str) -> str:
        if text not in self.methods:
            self.methods[text] = resolve_method(text)
        return self.methods[text]


def _build(where: str, nodes: list, recorded_inputs: list) -> tuple[torch.fx.Graph, dict[str, Any], list[Any]]:
    """The graph of ``nodes`` (checked node by node), the get_attr targets' records and the
    record of each input (the graph's ``inputs`` entry, else its placeholder's ``value``)."""
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    records: dict[str, Any] = {}
    attrs: dict[str, Any] = {}
    placeholders: list[Any] = []
    targets = _Targets()
    value_of = _value_of(records)
    seen_output = False
    for i, data in enumerate(nodes):
        op = data.get("op")
        at = f"{where}: node {i}"
        if op not in _OPS:
            raise LoadError(f"{at}: op {printable(brief(op), 40)} is not a graph op; the capture is refused.")
        if seen_output:
            raise LoadError(f"{at}: nodes follow the output; the capture is refused.")
        name = _name(at, data.get("name"), "node name")
        if name in env:
            raise LoadError(f"{at}: node name {name!r} appears twice; the capture is refused.")
        target_text = data.get("target")
        if not isinstance(target_text, str):
            raise LoadError(f"{at}: its target is not text; the capture is refused.")
        if op == "call_module":
            raise LoadError(f"{at} ({name}) calls the submodule {printable(target_text, 80)!r}: a capture holds no "
                            "module objects, so this graph cannot be rebuilt (capture with torch's default "
                            "inline_inbuilt_nn_modules=True so parameters become inputs).")
        try:
            args = _parse(data.get("args", "()"), env, at, "args")
            kwargs = _parse(data.get("kwargs", "{}"), env, at, "kwargs")
            if not isinstance(args, tuple) or not isinstance(kwargs, dict) \
                    or not all(isinstance(k, str) for k in kwargs):
                raise LoadError(f"{at} ({name}): its args must be a tuple and its kwargs a dict.")
            if op in ("placeholder", "get_attr") and (args or kwargs) or op == "output" and (len(args) != 1 or kwargs):
                # torch.fx writes a placeholder's argument as a default value, evaluated when forward is defined
                takes = "one argument" if op == "output" else "no arguments"
                raise LoadError(f"{at} ({name}): a {op} node takes {takes}; the capture is refused.")
            if op == "call_function":
                target: Any = targets.function(target_text)
            elif op == "call_method":
                target = targets.method(target_text)
                if not args:
                    raise LoadError(f"{at} ({name}): a call_method node needs the object it calls "
                                    f"{target!r} on as its first argument; the capture is refused.")
            elif op == "output":
                target = "output"
                seen_output = True
            else:
                target = _name(at, target_text, "target")
            if op == "get_attr" and target in _MODULE_ATTRIBUTES:
                raise LoadError(f"{at} ({name}): get_attr target {target!r} names an attribute every module has; "
                                "the capture is refused.")
            if op == "placeholder":
                k = len(placeholders)
                rec = recorded_inputs[k] if k < len(recorded_inputs) and isinstance(recorded_inputs[k], dict) \
                    else data.get("value")
                placeholders.append(rec)
                records[name] = rec  # the value the graph will get, not the node's own record
            else:
                records[name] = data.get("value")
            trust.check_call_args(op, target, args, kwargs, value_of)
        except LoadError:
            raise
        except FxStudioError as exc:
            raise LoadError(f"{at} ({name}): {printable(exc.message, 600)} The capture is refused; "
                            "nothing was run.") from None
        # Arguments set after the node is made: create_node walks them for symbolic sizes (which parsed
        # text never holds) at a third of a 200k-node rebuild's time; the setters are torch.fx's own.
        node = graph.create_node(op, target, (), {}, name=name)
        if args:
            node.args = args
        if kwargs:
            node.kwargs = kwargs
        check_node_code_names(node, f"{at} ({name})")
        stack = data.get("stack_trace")
        if isinstance(stack, str):  # shown in the window and --json: control characters escaped, lines kept
            node.meta["stack_trace"] = "\n".join(printable(line, 4000) for line in stack[-4000:].split("\n"))
        source = data.get("source")
        if op == "placeholder" and isinstance(source, str):
            node.meta["fxs_capture_source"] = printable(source, 400)
        if op == "get_attr":
            attrs[target] = data.get("value")
        env[name] = node
    if not seen_output:
        raise LoadError(f"{where}: the graph has no output node; the capture is refused.")
    return graph, attrs, placeholders


def rebuild_graph(capture: Capture, index: int, input_shapes: list[tuple[int, ...]] | None = None,
                  shaped_inputs: Callable[[list], tuple] | None = None,
                  ) -> tuple[torch.fx.GraphModule, tuple, list[str]]:
    """Graph ``index`` of ``capture`` as ``(graph module, example inputs, notes)``.

    Inputs are the saved tensors when the capture has them, else random values (zeros for
    integer and bool tensors) of the recorded shapes and dtypes, or ``shaped_inputs(input_shapes)``
    when shapes are given (``--input-shape``), each counted before any is made. Every node has been
    evaluated once on fake tensors within the data budget and carries its shape metadata
    (``tensor_meta``, ``type``, and the fake ``val``).
    ``LoadError`` (one line, nothing run) for a target outside the allow-list, a malformed node, a
    graph that needs module objects, or one whose data passes the budget.
    """
    with collections_off():
        return _rebuild(capture, index, input_shapes, shaped_inputs)


def _rebuild(capture: Capture, index: int, input_shapes: list | None,
             shaped_inputs: Callable[[list], tuple] | None) -> tuple[torch.fx.GraphModule, tuple, list[str]]:
    graph_data = capture.graphs[index]
    where = f"{printable(capture.path.name, 200)}::{index}"
    nodes = graph_data.get("nodes") or []
    if len(nodes) > MAX_NODES:
        raise LoadError(f"{where}: {len(nodes):,} nodes is more than the {MAX_NODES:,} a graph may have.")
    recorded = graph_data.get("inputs") if isinstance(graph_data.get("inputs"), list) else []
    graph, attrs, placeholders = _build(where, nodes, recorded)
    if input_shapes and len(input_shapes) != len(placeholders):
        raise LoadError(f"{where}: the graph takes {len(placeholders)} input(s); --input-shape was given "
                        f"{len(input_shapes)} time(s).")
    budget = budgets.DataBudget(where)
    root = torch.nn.Module()
    notes = [f"graph {index} of a torch.compile capture ({printable(capture.path.name, 200)}, "
             f"{len(capture.graphs)} graph(s))"]
    generator = torch.Generator().manual_seed(0)
    saved = capture.saved_tensors(index, budget) or {}
    for target, rec in attrs.items():
        tensor = saved.get(f"attr:{target}")
        if tensor is None:
            tensor = _tensor_of(f"{where}: {target}", rec, generator, False, budget)
        try:
            root.register_buffer(target, tensor)
        except (KeyError, TypeError, AttributeError) as exc:
            raise LoadError(f"{where}: get_attr target {target!r} cannot be an attribute "
                            f"({type(exc).__name__}); the capture is refused.") from None
    if attrs and not any(k.startswith("attr:") for k in saved):
        notes.append(f"{len(attrs)} attribute read(s) hold zero tensors of their recorded shapes "
                     "(no values were saved)")
    try:
        # code is generated when first used (an export), not for every open: a 200k-node graph's takes
        # seconds. No lint: the graph is built in order from names already made, its attributes registered.
        gm = fx_compat.deferred_graph_module(root, graph, f"Graph{index}")
    except Exception as exc:  # noqa: BLE001 - a malformed graph from a data file is refused, not shown
        raise LoadError(f"{where}: the recorded graph is not valid ({type(exc).__name__}: "
                        f"{printable((str(exc).strip().splitlines() or [''])[0], 160)}).") from None
    if input_shapes:
        for k, shape in enumerate(input_shapes):
            dims = [int(d) for d in shape]
            if all(d >= 0 for d in dims):  # a negative size is the maker's to refuse, before it makes anything
                _take(budget, budgets.tensor_nbytes(dims, torch.float32), f"--input-shape {k}")
        inputs = tuple((shaped_inputs or _random_inputs)(input_shapes))
        notes.append("inputs from --input-shape (random values) replace the recorded ones")
    else:
        inputs = tuple(_input_value(f"{where}: input {k}", rec, saved.get(str(k)), generator, budget)
                       for k, rec in enumerate(placeholders))
        notes.append("example inputs: the tensors saved in the capture" if saved
                     else "example inputs: random values of the recorded shapes and dtypes")
    evaluate_graph(gm, inputs, budget, where)
    return gm, inputs, notes


def _random_inputs(shapes: list) -> tuple[torch.Tensor, ...]:
    """Seeded random float32 tensors of ``shapes`` (what ``--input-shape`` makes)."""
    generator = torch.Generator().manual_seed(0)
    dims = [tuple(int(d) for d in shape) for shape in shapes]
    if any(d < 0 for shape in dims for d in shape):
        raise LoadError("--input-shape: sizes must not be negative.")
    return tuple(torch.randn(shape, generator=generator) for shape in dims)
