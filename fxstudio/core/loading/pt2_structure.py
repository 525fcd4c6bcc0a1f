"""The structure of a ``.pt2`` program, read from its checked JSON before torch rebuilds it (issue #15).

``structure_model`` turns the archive's serialized graph (already parsed and checked by
``pt2_archive``) into a view-only ``LoadedModel``: the same nodes, with the same names and edges,
that the full open shows (weights as ``get_attr`` nodes named after their paths, as ``ep.module()``
unlifts them), over a module whose weights are ``meta`` tensors of the stored shapes (no memory,
nothing read from the archive's weights). The window draws it at once while the program
deserializes in the worker, then swaps in the editable document. A program this reader does not
understand (higher-order operators, symbolic sizes) gives ``None``: the window then waits for the
full open, as before.
"""

from __future__ import annotations

import functools
import keyword
from pathlib import Path
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.budgets import BudgetExceeded, DataBudget
from fxstudio.core.loading import pt2_values
from fxstudio.core.loading.pt2_limits import SCALAR_TYPES as _DTYPES
from fxstudio.core.metadata import annotate
from fxstudio.core.model import LoadedModel

POSITIONAL, KEYWORD = 1, 2  # schema.ArgumentKind of a serialized node input
_LITERALS = ("as_int", "as_float", "as_bool", "as_string", "as_ints", "as_floats", "as_bools", "as_strings")
VIEW_ONLY_NOTE = "view only while the weights load"


class _Unsupported(pt2_values.Unsupported):
    """A part of the program the structure reader leaves to the full open."""


def structure_model(path: Path, program: dict) -> LoadedModel | None:
    """A view-only ``LoadedModel`` of the checked program JSON ``program``, or None (see the module)."""
    try:
        gm, inputs = _graph_module(program, DataBudget(str(path)))
    except (_Unsupported, BudgetExceeded, KeyError, TypeError, ValueError, AttributeError, IndexError, RuntimeError):
        return None  # inputs past the data budget: the full open refuses them, naming the input
    # The inputs: zeros of the program's input shapes and its recorded constants (the shapes are
    # known, nothing asks for them); the weights stay meta tensors, so nothing computes on them.
    return LoadedModel(path=path, kind="pt2", module=gm, graph_module=gm, example_inputs=inputs, tracer="export",
                       entry="", user_module=None, exported_program=None, notes=[VIEW_ONLY_NOTE])


def _graph_module(program: dict, budget: DataBudget, payloads: tuple[dict, dict] | None = None,
                  class_name: str = "StructureOnly") -> tuple[torch.fx.GraphModule, tuple]:
    """The program's graph over a module of its weights: ``meta`` tensors, or with ``payloads``
    (``(weights, constants)`` read from the archive) the real ones, registered as ``ep.module()``
    registers them, and every argument decoded as torch's deserializer decodes it."""
    real = payloads is not None
    module_json = program["graph_module"]
    graph_json, signature = module_json["graph"], module_json["signature"]
    tensors = graph_json.get("tensor_values") or {}
    graph = torch.fx.Graph()
    root = torch.nn.Module()
    env: dict[str, torch.fx.Node] = {}

    made: dict[tuple, torch.Tensor] = {}  # values of one shape and dtype share a meta tensor (no data)

    def meta_tensor(name: str) -> torch.Tensor | None:
        """A ``meta`` tensor of the stored shape and dtype of value ``name`` (None: symbolic sizes)."""
        info = tensors.get(name)
        if not isinstance(info, dict):
            return None
        sizes = []
        for size in info.get("sizes", []):
            if "as_int" not in size:
                return None
            sizes.append(int(size["as_int"]))
        key = (*sizes, info.get("dtype"))
        if key not in made:
            dtype = getattr(torch, _DTYPES.get(info.get("dtype"), "float32"), torch.float32)
            made[key] = torch.empty(sizes, dtype=dtype, device="meta")
        return made[key]

    # Weights first, as ep.module() puts its get_attr nodes, then the user inputs, in spec order.
    user_inputs = []
    for spec in signature["input_specs"]:
        (kind, body), = spec.items()
        if kind == "constant_input":  # a non-tensor input recorded in the program: a placeholder, no value
            user_inputs.append(("constant", body["name"], _literal(body.get("value") or {"as_none": True})))
            continue
        if kind == "user_input":
            arg = body["arg"]
            if "as_tensor" not in arg:  # a non-tensor user input: left to the full open
                raise _Unsupported("a non-tensor user input")
            user_inputs.append(arg["as_tensor"]["name"])
            continue
        if kind not in ("parameter", "buffer", "tensor_constant"):
            raise _Unsupported(kind)
        target = body.get("parameter_name") or body.get("buffer_name") or body.get("tensor_constant_name")
        name = body["arg"]["name"]
        tensor = meta_tensor(name)
        if tensor is None:
            raise _Unsupported("a weight of symbolic size")
        if real:
            _set_real(root, target, _payload(kind, body, target, tensor, payloads), kind, body.get("persistent", True))
        else:
            _set_path(root, target, tensor, parameter=kind == "parameter")
        env[name] = graph.get_attr(target)
        env[name].meta["val"] = tensor
    inputs = []
    for name in user_inputs:
        if isinstance(name, tuple):
            node = graph.placeholder(name[1])
            if real:  # the recorded constant, as torch's deserializer writes it
                node.meta["val"] = name[2]
            inputs.append(name[2])
        elif name is not None:
            env[name] = graph.placeholder(name)
            env[name].meta["val"] = value = meta_tensor(name)
            if value is not None:  # all the inputs within the data budget before any is made
                budget.take_tensor(value.shape, value.dtype, f"input {name!r}")
            inputs.append(value)
    # zeros of the inputs' shapes: real (the Run pane reads their values), never run here
    if not real:
        inputs = [torch.zeros(v.shape, dtype=v.dtype) if isinstance(v, torch.Tensor) and v.is_meta else v for v in inputs]
    for node in graph_json["nodes"]:
        target = _operator(node["target"])
        args, kwargs = _call_arguments(target, node["inputs"], env, real)
        outputs = node["outputs"]
        single = len(outputs) == 1 and "as_tensor" in outputs[0]
        name = outputs[0]["as_tensor"]["name"] if single else (node.get("name") or None)
        fx_node = graph.call_function(target, tuple(args), kwargs, name=name)
        _metadata(fx_node, node.get("metadata") or {})
        if single:
            env[outputs[0]["as_tensor"]["name"]] = fx_node
            fx_node.meta["val"] = meta_tensor(name)
            continue
        _unpack(graph, fx_node, outputs, env, meta_tensor)
        fx_node.meta["val"] = tuple(user.meta.get("val") for user in fx_node.users)
    for node in graph.nodes:  # values of symbolic size have no shape here
        if node.meta.get("val") is None:
            node.meta.pop("val", None)
    results = [_argument(out, env) for out in graph_json["outputs"]]
    out = graph.output(results[0] if len(results) == 1 and graph_json.get("is_single_tensor_return") else tuple(results))
    if all(isinstance(r, torch.fx.Node) and r.meta.get("val") is not None for r in results):
        out.meta["val"] = tuple(r.meta["val"] for r in results)  # as the deserializer records it
    # The module tree is handed over as built (a code-only root: its children by reference, not
    # rebuilt attribute by attribute), and the code is generated only if something asks for it.
    gm = fx_compat.deferred_graph_module(fx_compat.code_only_module(dict(root.__dict__)), graph, class_name)
    for spec in signature["input_specs"] if real else ():  # GraphModule() made buffers of these: as ep.module()
        (kind, body), = spec.items()
        if kind == "tensor_constant" or (kind == "buffer" and not body.get("persistent", True)):
            target = body.get("buffer_name") or body["tensor_constant_name"]
            owner = gm.get_submodule(target.rpartition(".")[0])
            value = getattr(owner, target.rpartition(".")[2])
            delattr(owner, target.rpartition(".")[2])
            _set_real(gm, target, value, kind, False)
    if not real:  # the editable open annotates with its example inputs (``load._load_pt2``'s way)
        # Shapes from the stored values, module frames with class names, export plumbing hidden and
        # weights folded into their cards: what the full open writes (``annotate``), nothing run.
        annotate(gm, (), user_file=None, notes=[], exported=True)
    return gm, tuple(inputs)


def _operator(target: str) -> Any:
    """``torch.ops.aten.linear.default`` (an operator name the archive checks allowed) as the op."""
    parts = target.split(".")
    if parts[:2] != ["torch", "ops"] or len(parts) != 5 or parts[2] in ("higher_order",):
        raise _Unsupported(target)
    op = torch.ops
    for part in parts[2:]:
        op = getattr(op, part)
    return op


def _call_arguments(target: Any, inputs: list, env: dict, real: bool) -> tuple[tuple, dict]:
    """A node's (args, kwargs), placed as torch's ``deserialize_inputs`` places them: in the
    operator's schema order, each where its recorded kind says (keywords that are Python keywords,
    and inputs without a kind, by the schema's defaults)."""
    values = {item["name"]: (_argument(item["arg"], env, real), item.get("kind")) for item in inputs}
    args, kwargs = [], {}
    for schema_arg in fx_compat.op_schema(target).arguments:
        name = schema_arg.name
        if name in values:
            value, kind = values[name]
            if kind == POSITIONAL:
                args.append(value)
                continue
            if kind == KEYWORD and not keyword.iskeyword(name):
                kwargs[name] = value
                continue
        if not schema_arg.has_default_value() and not schema_arg.kwarg_only:
            args.append(values[name][0])
        elif keyword.iskeyword(name):
            raise _Unsupported("a keyword argument named after a Python keyword")
        elif name in values:
            kwargs[name] = values[name][0]
    return tuple(args), kwargs


def _argument(arg: dict, env: dict[str, torch.fx.Node], real: bool = False) -> Any:
    (kind, value), = arg.items()
    if kind == "as_tensor":
        return env[value["name"]]
    if kind == "as_tensors":
        return [env[v["name"]] for v in value]
    if kind == "as_optional_tensors":
        return [None if "as_none" in v else env[v["as_tensor"]["name"]] for v in value]
    if kind == "as_none":
        return None
    if kind in _LITERALS:
        return value
    if kind in ("as_scalar_type", "as_layout", "as_memory_format", "as_device"):
        if real:
            return pt2_values.torch_value(kind, value)
        return None if kind != "as_device" else torch.device("meta")
    if real and kind == "as_complex" and isinstance(value, dict):
        return complex(value["real"], value["imag"])
    raise _Unsupported(kind)


def _literal(arg: dict) -> Any:
    """The Python value of a serialized constant input (``as_bool``, ``as_int``, ..., ``as_none``)."""
    (kind, value), = arg.items()
    if kind == "as_none":
        return None
    if kind in _LITERALS:
        return value
    raise _Unsupported(kind)


def _unpack(graph: torch.fx.Graph, node: torch.fx.Node, outputs: list, env: dict, meta_tensor) -> None:
    """The ``getitem`` nodes the deserializer makes for an operator's several outputs."""
    import operator

    if len(outputs) == 1 and "as_tensors" in outputs[0]:
        outputs = [{"as_tensor": t} for t in outputs[0]["as_tensors"]]
    for i, out in enumerate(outputs):
        if "as_tensor" in out:
            name = out["as_tensor"]["name"]
            env[name] = item = graph.call_function(operator.getitem, (node, i), name=name)
            item.meta.update({k: node.meta[k] for k in ("nn_module_stack", "stack_trace") if k in node.meta})
            item.meta["val"] = meta_tensor(name)
        elif "as_none" not in out:
            raise _Unsupported("an output kind")


def _set_path(root: torch.nn.Module, target: str, tensor: torch.Tensor, *, parameter: bool) -> None:
    *path, leaf = target.split(".")
    module = root
    for part in path:
        child = fx_compat.module_children(module).get(part)  # not nn.Module.__getattr__'s slow path
        if not isinstance(child, torch.nn.Module):
            child = torch.nn.Module()
            module.add_module(part, child)
        module = child
    if parameter:
        module.register_parameter(leaf, torch.nn.Parameter(tensor, requires_grad=False))
    else:
        module.register_buffer(leaf, tensor)


def _payload(kind: str, body: dict, target: str, expected: torch.Tensor, payloads: tuple[dict, dict]) -> torch.Tensor:
    """The archive's tensor for weight ``target`` (where ``ep.module()`` takes it: parameters and
    persistent buffers from the weights, the rest from the constants), checked against the shape
    and dtype the graph records for it (``_Unsupported`` otherwise: torch's load reports it)."""
    weights, constants = payloads
    source = weights if kind == "parameter" or (kind == "buffer" and body.get("persistent", True)) else constants
    value = source.get(target)
    if not isinstance(value, torch.Tensor) or value.shape != expected.shape or value.dtype != expected.dtype:
        raise _Unsupported(f"the stored {kind} does not match the graph's record of it")
    if (kind == "parameter") != isinstance(value, torch.nn.Parameter):
        raise _Unsupported(f"a {kind} stored as {type(value).__name__}")
    return value


def _set_real(root: torch.nn.Module, target: str, value: torch.Tensor, kind: str, persistent: bool) -> None:
    """Register ``value`` at ``target`` as ``ep.module()`` does: a parameter, a buffer (persistent
    or not), or a tensor constant as a plain attribute."""
    *path, leaf = target.split(".")
    module = root
    for part in path:
        child = fx_compat.module_children(module).get(part)
        if not isinstance(child, torch.nn.Module):
            child = torch.nn.Module()
            module.add_module(part, child)
        module = child
    if kind == "parameter":
        module.register_parameter(leaf, value)
    elif kind == "buffer":
        module.register_buffer(leaf, value, persistent=persistent)
    else:
        setattr(module, leaf, value)


def _metadata(node: torch.fx.Node, metadata: dict) -> None:
    """The stack trace and ``nn_module_stack`` (module frames) torch's deserializer would set."""
    if metadata.get("stack_trace"):
        node.meta["stack_trace"] = metadata["stack_trace"]
    text = metadata.get("nn_module_stack")
    if text:
        stack = _module_stack(text)
        if stack is not None:
            node.meta["nn_module_stack"] = dict(stack)


@functools.lru_cache(maxsize=16384)  # the nodes of one module share their stack's text
def _module_stack(text: str) -> tuple | None:
    stack = {}
    for item in text.split(";"):  # "key,path,type", the type may hold commas inside brackets
        parts = _split_top_level(item)   # cached: not changed here
        if len(parts) != 3:
            return None
        stack[parts[0]] = (parts[1], parts[2])
    return tuple(stack.items())


@functools.lru_cache(maxsize=16384)  # the items repeat across stacks (the root, a block's path)
def _split_top_level(text: str) -> list[str]:
    if "[" not in text and "(" not in text:
        return text.split(",")
    out, start, depth = [], 0, 0
    for i, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out
