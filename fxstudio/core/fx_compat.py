"""Every private torch name fxstudio relies on, behind one door.

torch.fx and torch keep useful state under private names (a graph's name bookkeeping, a node's
input dict, the line map of generated code, the operator classes, ...). Each accessor here names
the private it reads and the public fallback used when a torch release drops it (AttributeError
or ImportError): the fallback gives the same answer, only slower, or takes the caller's existing
"cannot do it the fast way" path (a full code regeneration, a real shape run, a refusal). No
other module of fxstudio names a torch private (``tests/core/test_fx_compat.py`` checks that).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
import torch.fx
from torch import nn
from torch.fx.passes.shape_prop import TensorMetadata


# torch's own pytree code warns about its own deprecated LeafSpec check when it copies a program's
# tree specs (every .pt2 open printed it on stderr); it says nothing to an fxstudio user.
warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning)

try:
    import torch.utils._pytree as _pytree
except ImportError:
    _pytree = None
try:
    from torch.fx.node import _get_qualified_name
except ImportError:
    _get_qualified_name = None
try:
    from torch.fx.passes.shape_prop import _extract_tensor_metadata
except ImportError:
    _extract_tensor_metadata = None
try:
    from torch.fx.graph_module import _CodeOnlyModule
except ImportError:
    _CodeOnlyModule = None
try:
    from torch.fx._lazy_graph_module import _LazyGraphModule
except ImportError:
    _LazyGraphModule = None

# Names and generated code: fx_compat_names.py (importing it installs the code-name guard).
from fxstudio.core.fx_compat_names import (  # noqa: F401, E402 - re-exported
    fake_tensor_logs_off,
    quiet_fx_call_errors,
    used_names,
    reserve_names,
    rename_in_namespace,
    namespace_snapshot,
    namespace_restore,
    name_never_used,
    namespace_mark,
    namespace_rewind,
    op_definitions,
)

# ----------------------------------------------------------------------------- nodes


def node_input_nodes(node: torch.fx.Node) -> Iterable[torch.fx.Node]:
    """The nodes ``node`` reads, in order (``Node._input_nodes``, a dict without a copy).
    Fallback: ``node.all_input_nodes`` (a list; same nodes, same order)."""
    try:
        return node._input_nodes
    except AttributeError:
        return node.all_input_nodes


def node_args(node: torch.fx.Node) -> tuple:
    """``node``'s argument tuple itself (``Node._args``, no property call). Fallback: ``node.args``
    (the property returns that very tuple)."""
    try:
        return node._args
    except AttributeError:
        return node.args


def node_kwargs(node: torch.fx.Node) -> dict:
    """``node``'s keyword dict itself (``Node._kwargs``). Fallback: ``node.kwargs`` (the very dict)."""
    try:
        return node._kwargs
    except AttributeError:
        return node.kwargs


def node_erased(node: torch.fx.Node) -> bool:
    """Whether ``node`` was erased from its graph (``Node._erased``). Fallback: whether the graph's
    node list still holds it (a scan)."""
    try:
        return node._erased
    except AttributeError:
        return node not in node.graph.nodes


# ----------------------------------------------------------------------------- generated code


def graph_codegen(graph: torch.fx.Graph) -> Any:
    """The code generator of ``graph`` (``Graph._codegen``). Fallback: None (callers then treat the
    graph as having a custom generator and take their full-regeneration path)."""
    try:
        return graph._codegen
    except AttributeError:
        return None


def set_graph_codegen(graph: torch.fx.Graph, codegen: Any) -> None:
    """Give ``graph`` the code generator ``codegen`` (``Graph._codegen``). Fallback:
    ``graph.set_codegen``."""
    if hasattr(graph, "_codegen"):
        graph._codegen = codegen
    else:
        graph.set_codegen(codegen)


def is_standard_codegen(codegen: Any) -> bool:
    """Whether ``codegen`` writes fx's standard code: ``CodeGen._gen_python_code`` not overridden
    and no ``_body_transformer``. Fallback: False (the caller regenerates in full, i.e. recompiles)."""
    try:
        return (codegen is not None
                and type(codegen)._gen_python_code is torch.fx.graph.CodeGen._gen_python_code
                and codegen._body_transformer is None)
    except AttributeError:
        return False


def code_line_map(python_code: Any) -> tuple[int, dict[int, int | None]] | None:
    """``(prologue_start, lineno_map)`` of a ``PythonCode`` (``_prologue_start``, ``_lineno_map``:
    the node index of each generated line). Fallback: None, and the caller takes its
    recompile path (``gm.recompile()`` / a full ``python_code``) instead of patching lines."""
    try:
        start, lines = python_code._prologue_start, python_code._lineno_map
    except AttributeError:
        return None
    return None if lines is None else (start, lines)


def qualified_name(fn: Any) -> str:
    """The dotted name fx writes for ``fn`` (``torch.fx.node._get_qualified_name``). Fallback:
    ``f"{fn.__module__}.{fn.__qualname__}"``."""
    if _get_qualified_name is None:
        return f"{fn.__module__}.{fn.__qualname__}"
    return _get_qualified_name(fn)


# ----------------------------------------------------------------------------- GraphModule state


class _PlainCodeOnlyModule(nn.Module):
    """An ``nn.Module`` whose ``__dict__`` is ``body`` (what ``torch.fx.graph_module._CodeOnlyModule`` is)."""

    def __init__(self, body: dict):
        super().__init__()
        self.__dict__ = body


def code_only_module(body: dict) -> nn.Module:
    """A module whose ``__dict__`` is ``body``, as a ``GraphModule`` root that carries over every
    child, parameter and buffer by reference (``torch.fx.graph_module._CodeOnlyModule``).
    Fallback: an equivalent two-line ``nn.Module`` subclass."""
    if _CodeOnlyModule is None:
        return _PlainCodeOnlyModule(body)
    return _CodeOnlyModule(body)


def deepcopy_init(gm: torch.fx.GraphModule) -> Callable:
    """The ``__init__`` ``GraphModule.__deepcopy__`` calls (``gm._deepcopy_init()``). Fallback:
    ``torch.fx.GraphModule.__init__``."""
    method = getattr(gm, "_deepcopy_init", None)
    return method() if method is not None else torch.fx.GraphModule.__init__


# What GraphModule.recompile() leaves besides the class's forward; a class defining one of
# _CODE_MEMBERS compiles its own way: its code is neither deferred nor handed over.
_CODE_STATE = ("_code", "_lineno_map", "_prologue_start", "_in_spec", "_out_spec")
_CODE_MEMBERS = {"recompile", "forward", "code", "__str__", "__reduce__", "__reduce_package__", "__deepcopy__",
                 "_deepcopy_init", "__call__"}


def _plain_base(gm: torch.fx.GraphModule) -> type | None:
    """The class ``GraphModule.__new__`` made ``gm``'s class from, if it compiles as ``GraphModule`` does."""
    base = next(c for c in type(gm).__mro__ if c.__qualname__.split(".")[-1] != "GraphModuleImpl"
                and c is not _LazyGraphModule)
    between = base.__mro__[:base.__mro__.index(torch.fx.GraphModule)]
    return None if any(_CODE_MEMBERS & vars(c).keys() for c in between) else base


def own_graph_module_class(gm: torch.fx.GraphModule) -> tuple[type, bool]:
    """A new class of its own for a copy of ``gm`` (as ``GraphModule.__new__`` makes one: recompiling
    the copy changes no other module's code), and whether it defers compiling: ``recompile()`` then
    only marks the code stale, compiled when first used (``.code``, a call, pickling; torch's
    ``torch.fx._lazy_graph_module._LazyGraphModule``). Fallback (no such class, or ``gm``'s class
    compiles its own way): a class that compiles at once, and False (the caller recompiles)."""
    base = _plain_base(gm)
    if _LazyGraphModule is None or base is None:
        cls, deferred = torch.fx.GraphModule.__new__(type(gm)).__class__, False
    elif base is torch.fx.GraphModule:
        cls, deferred = torch.fx.GraphModule.__new__(_LazyGraphModule).__class__, True
    else:
        cls, deferred = type("GraphModuleImpl", (_LazyGraphModule, base), {}), True
    cls.__name__ = type(gm).__name__
    return cls, deferred


def deferred_graph_module(root: nn.Module, graph: torch.fx.Graph, class_name: str) -> torch.fx.GraphModule:
    """``GraphModule(root, graph, class_name)`` that generates its code when first used
    (``torch.fx._lazy_graph_module._LazyGraphModule``). Fallback: a plain ``GraphModule``."""
    cls = torch.fx.GraphModule if _LazyGraphModule is None else _LazyGraphModule
    return cls(root, graph, class_name=class_name)


def copy_class(module: nn.Module) -> type:
    """The class for an attribute-by-attribute copy of ``module``: ``type(module)``, except for a
    graph module whose deferred code is not generated yet, whose copy gets a deferring class of its
    own (one class shared by both would hand the first to compile its code without the other's
    pytree specs and line map)."""
    cls = type(module)
    if _LazyGraphModule is None or not isinstance(module, _LazyGraphModule) or not cls._needs_recompile():
        return cls
    return own_graph_module_class(module)[0]


def ensure_code(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm`` with its code generated: a deferring class (``_LazyGraphModule``) generates it now if
    it has not, so that ``gm.forward`` is the generated function. Others: as they are."""
    if _LazyGraphModule is not None and isinstance(gm, _LazyGraphModule):
        gm.real_recompile()
    return gm


def compile_now(gm: torch.fx.GraphModule) -> None:
    """Generate and compile ``gm``'s code now (``GraphModule.recompile``), also when its class defers it."""
    if _LazyGraphModule is not None and isinstance(gm, _LazyGraphModule):
        torch.fx.GraphModule.recompile(gm)
    else:
        gm.recompile()


def compiled_code(gm: torch.fx.GraphModule) -> Any:
    """``gm``'s compiled code (its class's ``forward``; ``_code``, line map, pytree specs) for a module
    over the same graph (``install_code``); None when its class has no compiled forward of its own."""
    forward = vars(type(gm)).get("forward")
    if forward in (None, getattr(_LazyGraphModule, "_lazy_forward", None)) or "_code" not in gm.__dict__ \
            or _plain_base(gm) is None:
        return None
    return forward, {k: gm.__dict__[k] for k in _CODE_STATE if k in gm.__dict__}


def install_code(gm: torch.fx.GraphModule, code: Any) -> None:
    """Give ``gm`` the ``compiled_code`` of a module compiled for the very graph ``gm`` holds now, not
    recompiling. Fallback (no ``code``, or ``gm``'s class compiles its own way): ``gm.recompile()``."""
    cls = type(gm)
    if code is None or _plain_base(gm) is None or not {"forward", "_wrapped_call"} <= vars(cls).keys():
        gm.recompile()
        return
    for key in _CODE_STATE:
        gm.__dict__.pop(key, None)
    gm.__dict__.update(code[1])
    cls.forward = code[0]


def _own_dict(module: nn.Module, private: str, named: Callable, **options) -> dict:
    """``module``'s live dict ``private`` (one of ``nn.Module``'s), or, when torch dropped it, a
    copy built from the public ``named(**options)`` iterator of the same entries."""
    try:
        return getattr(module, private)
    except AttributeError:
        return dict(named(**options))


MODULE_TABLES = ("_modules", "_parameters", "_buffers")
"""The names of ``nn.Module``'s own tables (children, parameters, buffers) in its ``__dict__``: code
that swaps a module's whole state (a pass's result and its undo) replaces these three entries."""


def module_children(module: nn.Module) -> dict[str, nn.Module | None]:
    """``module``'s own submodules by name, the live dict (``nn.Module._modules``). Fallback:
    a dict of ``named_children()`` (a copy)."""
    return _own_dict(module, "_modules", module.named_children)


def module_parameters(module: nn.Module) -> dict[str, torch.Tensor | None]:
    """``module``'s own parameters by name, the live dict (``nn.Module._parameters``). Fallback:
    ``named_parameters(recurse=False)`` as a dict (a copy)."""
    return _own_dict(module, "_parameters", module.named_parameters, recurse=False, remove_duplicate=False)


def module_buffers(module: nn.Module) -> dict[str, torch.Tensor | None]:
    """``module``'s own buffers by name, the live dict (``nn.Module._buffers``). Fallback:
    ``named_buffers(recurse=False)`` as a dict (a copy)."""
    return _own_dict(module, "_buffers", module.named_buffers, recurse=False, remove_duplicate=False)


def own_state_dict_methods(module: nn.Module) -> bool:
    """Whether ``module``'s class saves or loads its state its own way: it overrides
    ``nn.Module._save_to_state_dict`` or ``_load_from_state_dict`` (torch.ao's quantized Linear and
    Conv rebuild their packed weights there). Fallback: False (such a module is then not restored)."""
    cls = type(module)
    try:
        return (cls._save_to_state_dict is not nn.Module._save_to_state_dict
                or cls._load_from_state_dict is not nn.Module._load_from_state_dict)
    except AttributeError:
        return False


def state_dict_metadata(state: dict) -> dict:
    """The per-module versions a ``state_dict()`` carries (``state._metadata``, read by each module's
    ``_load_from_state_dict``). Fallback: ``{}`` (modules then load as from an unversioned state)."""
    metadata = getattr(state, "_metadata", None)
    return dict(metadata) if isinstance(metadata, dict) else {}


def with_state_dict_metadata(state: dict, metadata: dict) -> dict:
    """``state`` as an ``OrderedDict`` carrying ``metadata`` the way ``state_dict()`` does
    (``_metadata``; ``torch.save``/``torch.load(weights_only=True)`` keep it)."""
    from collections import OrderedDict

    out = OrderedDict(state)
    out._metadata = OrderedDict(metadata)
    return out


def batch_norm_input_check(module: nn.Module) -> Callable[[torch.Tensor], None]:
    """A batch norm module's input-rank check (``_BatchNorm._check_input_dim``). Fallback: a check
    that accepts every input (the functional call then reports a wrong rank itself)."""
    try:
        return module._check_input_dim
    except AttributeError:
        return lambda _input: None


def global_module_hooks() -> bool:
    """Whether any process-wide module hook is registered (``torch.nn.modules.module``'s
    ``_global_*_hooks``). Fallback: True (callers then keep every module call as it is)."""
    from torch.nn.modules import module as _module

    try:
        return bool(_module._global_backward_pre_hooks or _module._global_backward_hooks
                    or _module._global_forward_hooks or _module._global_forward_pre_hooks)
    except AttributeError:
        return True


def _base_class(public: tuple[type, ...], private_name: str, module_path: str) -> type | tuple[type, ...]:
    try:
        return getattr(__import__(module_path, fromlist=["_"]), private_name)
    except (ImportError, AttributeError):
        return public


DROPOUT_CLASSES: type | tuple[type, ...] = _base_class(
    (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout),
    "_DropoutNd", "torch.nn.modules.dropout")
"""The dropout layers, for ``isinstance`` (``torch.nn.modules.dropout._DropoutNd``). Fallback: a
tuple of the public dropout classes."""

NORM_CLASSES: type | tuple[type, ...] = _base_class(
    (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm, nn.InstanceNorm1d, nn.InstanceNorm2d,
     nn.InstanceNorm3d, nn.LazyBatchNorm1d, nn.LazyBatchNorm2d, nn.LazyBatchNorm3d, nn.LazyInstanceNorm1d,
     nn.LazyInstanceNorm2d, nn.LazyInstanceNorm3d),
    "_NormBase", "torch.nn.modules.batchnorm")
"""The batch and instance norm layers, for ``isinstance`` (``torch.nn.modules.batchnorm._NormBase``).
Fallback: a tuple of the public classes."""


# ----------------------------------------------------------------------------- operators

def _op_type(private_name: str, public: Callable[[], type]) -> type:
    try:
        return getattr(torch._ops, private_name)
    except AttributeError:
        return public()


OpOverload: type = _op_type("OpOverload", lambda: type(torch.ops.aten.add.Tensor))
"""The class of one operator overload, ``torch.ops.aten.add.Tensor`` (``torch._ops.OpOverload``).
Fallback: ``type(torch.ops.aten.add.Tensor)``."""
OpOverloadPacket: type = _op_type("OpOverloadPacket", lambda: type(torch.ops.aten.add))
"""The class of an operator with its overloads, ``torch.ops.aten.add`` (``torch._ops.OpOverloadPacket``).
Fallback: ``type(torch.ops.aten.add)``."""
OP_TYPES: tuple[type, type] = (OpOverload, OpOverloadPacket)
"""``(OpOverload, OpOverloadPacket)``, for ``isinstance``."""
HigherOrderOperator: type = _op_type("HigherOrderOperator", lambda: type(torch.ops.higher_order.cond).__mro__[1])
"""The base class of ``torch.ops.higher_order`` operators (``torch._ops.HigherOrderOperator``).
Fallback: the direct base of ``cond``'s class."""

TENSOR_BASE: type = getattr(torch._C, "TensorBase", None) or torch.Tensor.__mro__[1]
"""The C class that defines the built-in tensor methods (``torch._C.TensorBase``). Fallback:
``torch.Tensor``'s direct base."""


def op_schema(op: Any) -> Any:
    """The ``FunctionSchema`` of an ``OpOverload`` (``op._schema``), or None when ``op`` has none.
    Fallback: None (the trust checks then refuse, the callers that describe ops skip it)."""
    return getattr(op, "_schema", None)


def op_base_name(op: Any) -> str:
    """An overload's operator name without namespace, ``add`` (``op._schema.name``). Fallback: from
    the public ``op.name()``, ``aten::add.Tensor``."""
    schema = op_schema(op)
    if schema is not None:
        return schema.name.split("::")[-1]
    return op.name().split("::")[-1].split(".")[0]


def op_overload_name(op: Any) -> str:
    """An overload's own name, ``Tensor`` of ``aten.add.Tensor`` (``op._overloadname``). Fallback:
    what follows the operator name in ``op.__name__`` (``"default"`` when nothing does)."""
    try:
        return op._overloadname
    except AttributeError:
        _, _, overload = op.__name__.partition(".")
        return overload or "default"


def packet_qualified_name(packet: Any) -> str:
    """``namespace::name`` of an ``OpOverloadPacket`` (``packet._qualified_op_name``). Fallback:
    the public ``name()`` of its first overload, up to the overload."""
    try:
        return packet._qualified_op_name
    except AttributeError:
        return getattr(packet, packet.overloads()[0]).name().split(".")[0]


# ----------------------------------------------------------------------------- pytrees


def _map_leaves(fn: Callable[[Any], Any], value: Any) -> Any:
    if isinstance(value, tuple):
        items = [_map_leaves(fn, v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_map_leaves(fn, v) for v in value]
    if isinstance(value, dict):
        return type(value)((k, _map_leaves(fn, v)) for k, v in value.items())
    return fn(value)


def tree_map(fn: Callable[[Any], Any], value: Any) -> Any:
    """``fn`` applied to every leaf of nested tuples/lists/dicts (``torch.utils._pytree.tree_map``).
    Fallback: a walk of those containers (namedtuples and dict types kept)."""
    if _pytree is None:
        return _map_leaves(fn, value)
    return _pytree.tree_map(fn, value)


def tree_leaves(value: Any) -> list[Any]:
    """The leaves of nested containers, in order (``torch.utils._pytree.tree_leaves``). Fallback:
    collected by the same walk as ``tree_map``'s fallback."""
    if _pytree is None:
        leaves: list[Any] = []
        _map_leaves(leaves.append, value)
        return leaves
    return _pytree.tree_leaves(value)


def tree_unflatten(leaves: list[Any], spec: Any) -> Any:
    """Rebuild the structure ``spec`` describes from ``leaves`` (``torch.utils._pytree.tree_unflatten``).
    Fallback: ``spec.unflatten(leaves)`` (the method of the ``TreeSpec`` itself)."""
    if _pytree is None:
        return spec.unflatten(leaves)
    return _pytree.tree_unflatten(leaves, spec)


def pytree_type_registered(serialized_name: str) -> bool:
    """Whether torch's pytree reads a serialized TreeSpec ``type`` of that name (``_pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE``).
    Fallback: False, so the ``.pt2`` loader rebuilds that structure as a plain dict or tuple."""
    return serialized_name in (getattr(_pytree, "SERIALIZED_TYPE_TO_PYTHON_TYPE", None) or {})


# ----------------------------------------------------------------------------- shapes, fake tensors


def extract_tensor_metadata(value: torch.Tensor) -> Any:
    """The ``TensorMetadata`` of a tensor (``torch.fx.passes.shape_prop._extract_tensor_metadata``).
    Fallback: the same fields read from the tensor's public attributes."""
    if _extract_tensor_metadata is None:
        fmt = next((f for f in (torch.contiguous_format, torch.channels_last, torch.channels_last_3d)
                    if value.is_contiguous(memory_format=f)), None)
        fields = {"shape": value.shape, "dtype": value.dtype, "requires_grad": value.requires_grad,
                  "stride": value.stride(), "memory_format": fmt, "is_quantized": value.is_quantized, "qparams": {}}
        return TensorMetadata(**{k: fields.get(k) for k in TensorMetadata._fields})
    return _extract_tensor_metadata(value)


def fake_tensor_mode(**options: Any) -> Any:
    """A new ``FakeTensorMode`` (``torch._subclasses.fake_tensor``). There is no public fallback:
    without it this raises ImportError, and shape propagation takes its real-run path."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(**options)


@contextlib.contextmanager
def reparametrized(module: nn.Module, tensors: dict[str, torch.Tensor]) -> Iterator[None]:
    """Swap ``module``'s parameters and buffers for ``tensors`` by name while inside, tied weights
    following (``torch.nn.utils.stateless._reparametrize_module``, ``tie_weights=True``,
    ``strict=False``). Fallback: ``torch.func.functional_call``'s swap is not a context manager, so
    each tensor is put in its owner's dict here and put back after."""
    try:
        from torch.nn.utils.stateless import _reparametrize_module
    except ImportError:
        saved = []
        try:
            for name, tensor in tensors.items():
                owner_path, _, attr = name.rpartition(".")
                owner = module.get_submodule(owner_path)
                table = module_parameters(owner) if attr in module_parameters(owner) else module_buffers(owner)
                saved.append((table, attr, table[attr]))
                table[attr] = tensor
            yield
        finally:
            for table, attr, old in reversed(saved):
                table[attr] = old
        return
    with _reparametrize_module(module, tensors, tie_weights=True, strict=False):
        yield


# ----------------------------------------------------------------------------- .pt2 archives


def pt2_archive_reader(file: Any) -> Any:
    """A ``PT2ArchiveReader`` over ``file`` (imported from ``torch.export.pt2_archive._package``).
    Fallback: the public ``torch.export.pt2_archive.PT2ArchiveReader``."""
    try:
        from torch.export.pt2_archive._package import PT2ArchiveReader
    except ImportError:
        from torch.export.pt2_archive import PT2ArchiveReader
    return PT2ArchiveReader(file)


def pt2_payload_helpers() -> tuple[Callable, Callable]:
    """``(_build_file_map, _load_payload_config)`` of ``torch.export.pt2_archive._package``, which
    read an archive's weight/constant payload configuration. No public fallback: ImportError,
    reported by the loader as an archive torch cannot read."""
    from torch.export.pt2_archive._package import _build_file_map, _load_payload_config

    return _build_file_map, _load_payload_config


def tensor_layout_deserializers() -> tuple[Callable, Callable, Callable]:
    """``(deserialize_size, deserialize_storage_offset, deserialize_stride)`` of
    ``torch._export.serde.serialize``. No public fallback: ImportError (the archive is not read)."""
    from torch._export.serde.serialize import deserialize_size, deserialize_storage_offset, deserialize_stride

    return deserialize_size, deserialize_storage_offset, deserialize_stride


def deserialize_program(model_json: Any, state_dict: dict, constants: dict, sample: Any) -> Any:
    """The ``ExportedProgram`` of an archive's parsed JSON (``torch._export.serde``: ``schema``,
    ``ExportedProgramDeserializer``). No public fallback (``torch.export.load`` reads the whole
    archive unchecked): ImportError, reported as a program torch cannot rebuild."""
    from torch._export.serde.serialize import ExportedProgramDeserializer

    from fxstudio.core.fx_compat_export import program_schema

    serialized = program_schema(model_json)
    return ExportedProgramDeserializer(None).deserialize(serialized, state_dict, constants, sample)


def fused_module_class() -> type | None:
    """The base class of torch.ao's fused modules (``ConvReLU2d``, ``LinearReLU``...): private
    ``torch.ao.nn.intrinsic._FusedModule``; None when a torch release no longer has it (callers
    then recognise fused modules by ``fused_module_fallback``)."""
    try:
        from torch.ao.nn import intrinsic
    except ImportError:  # a build without torch.ao
        return None
    cls = getattr(intrinsic, "_FusedModule", None)
    return cls if isinstance(cls, type) else None


def fused_module_fallback(m: nn.Module) -> bool:
    """Public stand-in for ``isinstance(m, _FusedModule)``: a Sequential of torch.ao.nn.intrinsic."""
    return isinstance(m, nn.Sequential) and type(m).__module__.startswith("torch.ao.nn.intrinsic")


def placeholders(graph: torch.fx.Graph) -> list:
    """The graph's input nodes (``find_nodes``' index where torch has it, else a scan)."""
    find = getattr(graph, "find_nodes", None)
    if find is not None:
        try:
            return list(find(op="placeholder"))
        except Exception:  # noqa: BLE001 - an older torch: scan
            pass
    return [n for n in graph.nodes if n.op == "placeholder"]
