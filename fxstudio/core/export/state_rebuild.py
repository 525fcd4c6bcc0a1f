"""Restoring a submodule from its class and its state, for modules a configuration does not rebuild.

Passes leave modules that no ``__init__`` call rebuilds: torch.ao's observers (``HistogramObserver``
holds its statistics in buffers, its ``qscheme`` is not an ``__init__`` literal), fused modules that
are ``Sequential`` subclasses (``ConvReLU2d(conv, relu)``), quantized Conv/Linear whose weights live
in packed parameters, a ``Linear`` whose weight optimum widened, ``ParameterList`` containers. Such a
module is written as a call of the exported file's ``_restore`` helper (``RESTORE_HELPER``)::

    _restore(HistogramObserver, {"dtype": torch.quint8, "qscheme": torch.per_tensor_affine, ...},
             buffers={"histogram": torch.empty(2048), ...})

which makes the instance without calling ``__init__`` (``cls.__new__`` and ``nn.Module.__init__``),
sets its plain attributes (literals only: numbers, strings, dtypes, qschemes...), registers its
parameters and buffers as empty tensors of their shapes and dtypes, and adds its submodules, each
rebuilt the same way as a called module (by configuration first). The values come from the
weights file, loaded by ``load_state_dict`` (``weights_only=True``): a module with its own
``_load_from_state_dict`` rebuilds there what it derives from its state (quantized modules' packed
parameters), so such attributes need not be literals. Nothing is pickled as code.

The round trip is proven at export time: the same recipe builds a candidate in this process, loads
the original's ``state_dict`` into it, and the candidate must match the original module by module:
class, attributes (the literal ones by value, the others by type), parameter and buffer shapes,
dtypes and flags, and the state dict entry by entry. The class must be importable by name. Left
out: ``training`` (``get_model`` sets it) and ``qconfig``, torch.ao's quantization annotation, read
by its prepare/convert passes and never by ``forward``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.errors import ExportError
from fxstudio.core.export.modules import ANNOTATIONS, ImportNamer, is_literal, literal, quoted

RESTORE_HELPER = '''
def _restore(cls, attributes: dict, parameters: dict | None = None, buffers: dict | None = None,
             children: dict | None = None) -> nn.Module:
    """A ``cls`` module made without calling its ``__init__``: its plain attributes, its parameters
    and buffers as empty tensors of their shapes (``get_model`` loads their values from WEIGHTS_FILE;
    a module with its own ``_load_from_state_dict`` rebuilds there what it derives from them, such as
    packed weights) and its submodules."""
    module = cls.__new__(cls)
    nn.Module.__init__(module)
    module.__dict__.update(attributes)
    for name, value in (parameters or {}).items():
        module.register_parameter(name, value)
    for name, value in (buffers or {}).items():
        module.register_buffer(name, value)
    for name, child in (children or {}).items():
        module.add_module(name, child)
    return module
'''


_WIDTH = 88
_META_ABOVE = 1_000_000  # elements of the state: above this the candidate's own tensors are on the meta device
_BASE_KEYS: frozenset[str] | None = None


@dataclass
class Rebuilt:
    """How the exported file makes a submodule: ``expr`` (source, maybe several lines) and ``build``,
    the same recipe in this process (a fresh module whose weights are not loaded yet)."""

    expr: str
    build: Callable[[], nn.Module]


class NotRestorable(Exception):
    """Why a module cannot be restored from its class and state (one clause of a message)."""


def base_keys() -> frozenset[str]:
    """The ``__dict__`` entries every ``nn.Module`` has (its tables, hooks and ``training``)."""
    global _BASE_KEYS
    if _BASE_KEYS is None:
        _BASE_KEYS = frozenset(vars(nn.Module()))
    return _BASE_KEYS


def own_attributes(module: nn.Module) -> dict[str, Any]:
    """``module``'s own ``__dict__`` entries, without those of ``nn.Module`` and the annotations."""
    keys = base_keys()
    return {k: v for k, v in vars(module).items() if k not in keys and k not in ANNOTATIONS}


def call_text(func: str, parts: list[str]) -> str:
    """``func(part, ...)`` on one line, or one part a line when that is too long."""
    one = f"{func}({', '.join(parts)})"
    if len(one) <= _WIDTH and "\n" not in one:
        return one
    return f"{func}(\n" + "".join(_indented(p) + ",\n" for p in parts) + ")"


def mapping_text(items: list[tuple[str, str]]) -> str:
    """A dict display of (key source, value source) pairs, one entry a line when too long."""
    one = "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if len(one) <= _WIDTH and "\n" not in one:
        return one
    return "{\n" + "".join(_indented(f"{k}: {v}") + ",\n" for k, v in items) + "}"


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def tensor_decl(value: torch.Tensor) -> str:
    """``torch.empty(<shape>[, dtype=...])``: a tensor of ``value``'s shape and dtype, values to be loaded."""
    shape = ", ".join(str(d) for d in value.shape) or "()"
    dtype = "" if value.dtype == torch.float32 else f", dtype={value.dtype}"
    return f"torch.empty({shape}{dtype})"


def _tensor_problem(kind: str, name: str, value: Any) -> str | None:
    if value is None:
        return None
    wanted = nn.Parameter if kind == "parameter" else torch.Tensor
    if type(value) is not wanted:
        return f"its {kind} '{name}' is a {type(value).__name__}"
    if value.is_quantized or value.layout != torch.strided:
        return f"its {kind} '{name}' is a {'quantized' if value.is_quantized else str(value.layout)} tensor"
    return None


def restore_call(module: nn.Module, path: str, namer: ImportNamer,
                 rebuild_child: Callable[[nn.Module, str], Rebuilt]) -> Rebuilt:
    """The ``_restore(...)`` call for ``module`` (at ``path``), proven to give back the same module;
    ``NotRestorable`` says why not. ``rebuild_child(child, child_path)`` rebuilds each submodule."""
    cls = type(module)
    if isinstance(module, torch.fx.GraphModule):
        raise NotRestorable("it is a traced GraphModule")
    hooks = sorted(k for k in base_keys() if "hook" in k and isinstance(vars(module).get(k), dict) and vars(module)[k])
    if hooks:
        raise NotRestorable(f"it has hooks ({', '.join(hooks)}), which its state does not hold")
    attributes = own_attributes(module)
    plain = {k: v for k, v in attributes.items() if is_literal(v)}
    for key, value in attributes.items():
        if key not in plain and not fx_compat.own_state_dict_methods(module):
            raise NotRestorable(f"its attribute '{key}' holds a {type(value).__name__}, not a literal")
    parameters = dict(fx_compat.module_parameters(module))
    buffers = dict(fx_compat.module_buffers(module))
    transient = set(vars(module).get("_non_persistent_buffers_set", ()))  # nn.Module's own table, by key
    for name in buffers:
        if name in transient:
            raise NotRestorable(f"its buffer '{name}' is not persistent: the state dict does not hold its value")
    for kind, table in (("parameter", parameters), ("buffer", buffers)):
        for name, value in table.items():
            problem = _tensor_problem(kind, name, value)
            if problem:
                raise NotRestorable(problem)
    children: dict[str, Rebuilt | None] = {}
    for name, child in fx_compat.module_children(module).items():
        if child is None:
            children[name] = None
            continue
        try:
            children[name] = rebuild_child(child, f"{path}.{name}")
        except ExportError as exc:
            raise NotRestorable(f"its submodule '{name}' cannot be written ({str(exc).rstrip('.')})") from None
    try:
        class_name = namer.name_for(cls)
    except ExportError as exc:
        raise NotRestorable(f"its class cannot be imported by name ({exc})") from None

    def build() -> nn.Module:
        """The ``_restore`` call's recipe, in this process."""
        made = cls.__new__(cls)
        nn.Module.__init__(made)
        made.__dict__.update(copy.deepcopy(plain))
        for name, value in parameters.items():
            made.register_parameter(name, None if value is None else nn.Parameter(
                torch.empty(value.shape, dtype=value.dtype), requires_grad=value.requires_grad))
        for name, value in buffers.items():
            made.register_buffer(name, None if value is None else torch.empty(value.shape, dtype=value.dtype))
        for name, child in children.items():
            made.add_module(name, None if child is None else child.build())
        return made

    problem = prove(module, build)
    if problem:
        raise NotRestorable(problem)
    parts = [class_name, mapping_text([(quoted(k), literal(v)) for k, v in plain.items()])]
    if parameters:
        parts.append("parameters=" + mapping_text([(quoted(k), _parameter_text(v)) for k, v in parameters.items()]))
    if buffers:
        parts.append("buffers=" + mapping_text([(quoted(k), "None" if v is None else tensor_decl(v))
                                                for k, v in buffers.items()]))
    if children:
        parts.append("children=" + mapping_text([(quoted(k), "None" if c is None else c.expr) for k, c in children.items()]))
    return Rebuilt(call_text("_restore", parts), build)


def _parameter_text(value: torch.Tensor | None) -> str:
    if value is None:
        return "None"
    grad = "" if value.requires_grad else ", requires_grad=False"
    return f"nn.Parameter({tensor_decl(value)}{grad})"


def prove(module: nn.Module, build: Callable[[], nn.Module]) -> str | None:
    """Build the candidate, load ``module``'s state into it and compare; None when they match, else
    what differs."""
    state = module.state_dict()
    size = sum(v.numel() for v in state.values() if isinstance(v, torch.Tensor))
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta" if size > _META_ABOVE else "cpu"):
            candidate = build()
        candidate.load_state_dict(state, assign=True)
    except Exception as exc:  # noqa: BLE001 - a class's own loading code may raise anything
        return f"restored, it does not load its own state ({type(exc).__name__}: {str(exc)[:200]})"
    return differences(module, candidate)


def differences(original: nn.Module, candidate: nn.Module) -> str | None:
    """What differs between ``original`` and a loaded ``candidate`` (None: nothing): submodule
    classes, attributes, parameter and buffer layouts, and the state dict entry by entry."""
    ours = dict(original.named_modules(remove_duplicate=False))
    theirs = dict(candidate.named_modules(remove_duplicate=False))
    if list(ours) != list(theirs):
        return "restored, it has other submodules"
    for path, mine in ours.items():
        where = f" of '{path}'" if path else ""
        other = theirs[path]
        if type(other) is not type(mine):
            return f"restored, its submodule '{path}' is a {type(other).__name__}"
        a, b = own_attributes(mine), own_attributes(other)
        if set(a) != set(b):
            return f"restored, its attributes{where} differ ({', '.join(sorted(set(a) ^ set(b))[:3])})"
        for key, value in a.items():
            same = (literal(value) == literal(b[key]) and type(value) is type(b[key])) if is_literal(value) \
                else type(value) is type(b[key])
            if not same:
                return f"restored, its attribute '{key}'{where} differs"
        for kind, table in (("parameter", fx_compat.module_parameters), ("buffer", fx_compat.module_buffers)):
            if _layout(table(mine)) != _layout(table(other)):
                return f"restored, its {kind}s{where} differ in names, shapes, dtypes or flags"
        if set(vars(mine).get("_non_persistent_buffers_set", ())) != set(vars(other).get("_non_persistent_buffers_set", ())):
            return f"restored, its buffers{where} differ in persistence"
    mine_state, other_state = original.state_dict(), candidate.state_dict()
    if list(mine_state) != list(other_state):
        return "restored, its state dict has other entries"
    for key, value in mine_state.items():
        if not same_state(value, other_state[key]):
            return f"restored, its state entry '{key}' differs"
    return None


def _layout(table: dict) -> dict:
    return {k: None if v is None else (tuple(v.shape), v.dtype, v.requires_grad) for k, v in table.items()}


def same_state(a: Any, b: Any) -> bool:
    """Whether two state dict values are equal: tensors by dtype, shape, quantization and value
    (NaNs equal; a meta tensor by its layout only), tuples and lists item by item, others by ``==``."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape or a.is_quantized != b.is_quantized:
            return False
        if a.is_meta or b.is_meta:
            return True
        if a.is_quantized:
            return a.qscheme() == b.qscheme() and torch.equal(a, b)
        if torch.equal(a, b):
            return True
        return (a.is_floating_point() or a.is_complex()) and torch.equal(torch.isnan(a), torch.isnan(b)) \
            and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - arbitrary extra state
        return False
