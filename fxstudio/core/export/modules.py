"""Rebuilding a submodule in exported code: a constructor expression from the module's configuration.

Two strategies, each checked by building the candidate (on the meta device, so nothing is
allocated) and comparing it with the original: same class, same ``repr``, same parameter and buffer
names and shapes, and the same plain configuration attributes. The first is the module's own
``repr`` when it reads as a call with literal arguments (``Conv2d(3, 16, kernel_size=(3, 3))``);
the second reads each ``__init__`` parameter back from the attribute of the same name (``bias``
flags from whether the bias parameter exists). A module that neither strategy rebuilds exactly is
an ``ExportError`` naming it (``ConfigurationError``, with the reasons; ``module_writer`` then tries
restoring it from its class and state); weights are not part of the expression (they come from the
weights file). Also here: the names and imports of the generated file (``ImportNamer``) and the
literals it writes (``literal``, ``quoted``).
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import math
import types
from typing import Any, Callable

import torch
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.code_names import is_attribute_path, is_identifier
from fxstudio.core.errors import ExportError


def _activation_name(m: nn.Module) -> Any:
    """``"relu"``/``"gelu"`` for the functional activations a transformer layer accepts by name."""
    act = m.activation
    for name, fn in (("relu", torch.nn.functional.relu), ("gelu", torch.nn.functional.gelu)):
        if act is fn:
            return name
    return act  # a module or another callable: not a literal, so this strategy gives up


_TRANSFORMER_LAYER = {
    "d_model": lambda m: m.self_attn.embed_dim,
    "nhead": lambda m: m.self_attn.num_heads,
    "dim_feedforward": lambda m: m.linear1.out_features,
    "dropout": lambda m: m.dropout.p,
    "activation": _activation_name,
    "layer_norm_eps": lambda m: m.norm1.eps,
    "batch_first": lambda m: m.self_attn.batch_first,
    "bias": lambda m: m.linear1.bias is not None,
}

# Constructor parameters that are not stored under their own name.
_ALIASES: dict[type, dict[str, Callable[[nn.Module], Any]]] = {
    nn.MultiheadAttention: {
        "bias": lambda m: m.in_proj_bias is not None,
        "add_bias_kv": lambda m: m.bias_k is not None,
    },
    nn.TransformerEncoderLayer: _TRANSFORMER_LAYER,
    nn.TransformerDecoderLayer: _TRANSFORMER_LAYER,
}


def _rnn_signature(input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                   batch_first=False, dropout=0.0, bidirectional=False):
    """The documented constructor of ``nn.RNN``, whose ``__init__`` only declares ``*args, **kwargs``."""


# Classes whose ``__init__`` signature does not list their parameters.
_SIGNATURES = {nn.RNN: inspect.signature(_rnn_signature)}
_SKIPPED_PARAMETERS = {"device", "dtype"}
_META_ABOVE = 1_000_000  # elements of parameters and buffers
_CONFIG_TYPES = (int, float, str, bool, type(None), tuple, list, torch.dtype, torch.qscheme)
ANNOTATIONS = frozenset({"qconfig"})
"""Attributes a rebuilt module need not have: torch.ao's quantization annotation (``qconfig``), read
by its prepare/convert passes, never by ``forward``."""
_NAMED_CONSTANTS = (torch.dtype, torch.qscheme, torch.memory_format)  # written as ``torch.<name>``


class ImportNamer:
    """Gives each imported object one name in the generated file and collects the import lines."""

    def __init__(self, reserved: set[str], user_module: types.ModuleType | None, user_import: str | None):
        self.reserved = set(reserved)
        self.user_module = user_module
        self.user_import = user_import
        self.lines: dict[str, None] = {}
        self.user_names: list[str] = []
        self.other_modules: dict[str, None] = {}
        self._names: dict[int, str] = {}

    def claim(self, name: str) -> str:
        """Reserve ``name`` (or ``name_1``, ``name_2``...) and return the name reserved."""
        candidate, n = name, 0
        while candidate in self.reserved:
            n += 1
            candidate = f"{name}_{n}"
        self.reserved.add(candidate)
        return candidate

    def name_for(self, obj: Any, preferred: str | None = None) -> str:
        """The name under which ``obj`` (a class or function) is imported, adding its import line."""
        if id(obj) in self._names:
            return self._names[id(obj)]
        if isinstance(obj, type) and getattr(nn, obj.__name__, None) is obj:
            self.lines["from torch import nn"] = None
            self._names[id(obj)] = f"nn.{obj.__name__}"
            return self._names[id(obj)]
        module_name, attr = self._import_source(obj)
        if not is_attribute_path(module_name) or not is_identifier(attr) or not is_identifier(preferred or attr):
            raise ExportError(f"cannot import {module_name!r}.{attr!r} in the exported file: not an identifier path.")
        name = self.claim(preferred or attr)
        line = f"from {module_name} import {attr}" + (f" as {name}" if name != attr else "")
        self.lines[line] = None
        self._names[id(obj)] = name
        return name

    def _import_source(self, obj: Any) -> tuple[str, str]:
        """(module to import from, attribute name) for ``obj``, checked to resolve to ``obj``."""
        attr = getattr(obj, "__name__", None)
        qualname = getattr(obj, "__qualname__", attr)
        module_name = getattr(obj, "__module__", None)
        what = f"{module_name}.{qualname}" if module_name else repr(obj)
        if not attr or qualname != attr:
            raise ExportError(
                f"cannot import {what} in the exported file: it is not defined at the top level of a "
                "module (a nested function, lambda or method). Move it to the top level of the model file."
            )
        user = self.user_module
        in_user_file = user is not None and getattr(user, attr, None) is obj
        if user is not None and module_name == user.__name__:
            if not in_user_file:
                raise ExportError(
                    f"cannot import {attr} from the model file {self.user_import}.py: the name there "
                    "refers to another object. Give it its own top-level name in the model file."
                )
            return self._from_user_file(attr)
        if module_name == "_operator":
            module_name = "operator"
        found = None
        if module_name and module_name != "__main__":
            try:
                found = getattr(__import__(module_name, fromlist=[attr]), attr)
            except (ImportError, AttributeError):
                found = None
        if found is not obj:
            if in_user_file:  # e.g. imported into the model file from a module that cannot be imported by name
                return self._from_user_file(attr)
            if not module_name or module_name == "__main__":
                raise ExportError(
                    f"cannot import {what} in the exported file: it was defined in a script run as __main__, "
                    "not in an importable module. Define it in the model file."
                )
            raise ExportError(f"cannot import {what} in the exported file: `from {module_name} import {attr}` "
                              "does not give the same object.")
        if module_name.split(".")[0] not in ("torch", "math", "operator", "builtins"):
            self.other_modules[module_name] = None
        return module_name, attr


    def snapshot(self) -> tuple:
        """The namer's state, for ``restore`` when a strategy that named things gives up."""
        return (set(self.reserved), dict(self.lines), list(self.user_names), dict(self.other_modules),
                dict(self._names))

    def restore(self, saved: tuple) -> None:
        """Forget the names and imports claimed since ``snapshot``."""
        reserved, lines, user_names, other_modules, names = saved
        self.reserved, self.lines, self.user_names = set(reserved), dict(lines), list(user_names)
        self.other_modules, self._names = dict(other_modules), dict(names)

    def _from_user_file(self, attr: str) -> tuple[str, str]:
        if attr not in self.user_names:
            self.user_names.append(attr)
        return self.user_import, attr


def quoted(text: str) -> str:
    """``text`` as a Python string literal, checked to read back as ``text`` (names never splice into code)."""
    if not isinstance(text, str):
        raise ExportError(f"internal: {text!r} is not a string")
    literal_text = json.dumps(text)  # double quotes, every quote, backslash and control character escaped
    if ast.literal_eval(literal_text) != text:
        raise ExportError(f"internal: cannot write {literal_text} as a string literal")
    return literal_text


def literal(value: Any) -> str:
    """Python source that reads back as ``value``, of the same type (plain numbers, strings, tuples,
    lists and dicts of those, dtypes, qschemes, memory formats, devices, sizes); ``TypeError`` for
    anything else (callers check with ``is_literal``)."""
    kind = type(value)
    if kind is float:
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    if kind in (bool, int, str, type(None)):
        return repr(value)
    if kind in _NAMED_CONSTANTS:
        text = str(value)  # torch.float32, torch.per_tensor_affine, torch.channels_last
        if not text.startswith("torch.") or getattr(torch, text[len("torch."):], None) != value:
            raise TypeError(kind.__name__)
        return text
    if kind is torch.device:
        return f"torch.device({literal(str(value))})"
    if kind is torch.Size:
        return f"torch.Size({literal(list(value))})"
    if kind is tuple:
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is list:
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if kind is dict:
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(kind.__name__)


def is_literal(value: Any) -> bool:
    """Whether ``literal(value)`` can write ``value``."""
    try:
        literal(value)
    except TypeError:
        return False
    return True


def constructor_expression(module: nn.Module, path: str, namer: ImportNamer) -> str:
    """Source text that rebuilds ``module`` (found at ``path``) with its configuration, e.g.
    ``nn.Conv2d(3, 16, kernel_size=(3, 3), padding=(1, 1), bias=False)``; ``ExportError`` if no
    strategy rebuilds it exactly.
    """
    return constructor_call(module, path, namer)[0]


class ConfigurationError(ExportError):
    """No configuration rebuilds a module (``constructor_call``); ``reasons`` says why, clause by clause."""

    def __init__(self, message: str, reasons: list[str]):
        super().__init__(message)
        self.reasons = reasons


def constructor_call(module: nn.Module, path: str, namer: ImportNamer) -> tuple[str, Callable[[], nn.Module]]:
    """``constructor_expression`` and a function that makes the same call in this process (a fresh
    module with initial weights, for proving a rebuild that contains this one); ``ConfigurationError``."""
    cls = type(module)
    if cls is nn.Sequential and all(name == str(i) for i, name in enumerate(fx_compat.module_children(module))):
        calls = []
        for name, child in module.named_children():
            try:
                calls.append(constructor_call(child, f"{path}.{name}", namer))
            except ConfigurationError as exc:
                raise ConfigurationError(str(exc), [f"submodule '{name}': {r}" for r in exc.reasons]) from None
        builders = [build for _, build in calls]
        expr = f"{namer.name_for(nn.Sequential)}({', '.join(text for text, _ in calls)})"
        return expr, lambda: nn.Sequential(*(build() for build in builders))
    reasons = []
    for strategy in (_args_from_repr, _args_from_signature):
        try:
            args, kwargs = strategy(module)
        except _NotRebuildable as exc:
            reasons.append(str(exc))
            continue
        problem = _compare(module, cls, args, kwargs)
        if problem is None:
            short = _shorter(cls, args, kwargs)
            if short is not None and short != (args, kwargs) and _compare(module, cls, *short) is None:
                args, kwargs = short
            name = namer.name_for(cls)
            parts = [literal(a) for a in args] + [f"{k}={literal(v)}" for k, v in kwargs.items()]
            return f"{name}({', '.join(parts)})", lambda: cls(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        reasons.append(problem)
    reasons = list(dict.fromkeys(reasons))
    raise ConfigurationError(
        f"cannot rebuild submodule '{path}' ({cls.__module__}.{cls.__qualname__}) from its configuration: "
        + "; ".join(reasons)
        + ". Trace through it instead of keeping it as a leaf module, or store each __init__ argument "
        "as an attribute of the same name.", reasons
    )


def state_shapes(module: nn.Module, dtypes: bool = False) -> dict[str, Any]:
    """Each ``state_dict`` entry's shape (a tensor's, with its dtype if ``dtypes``) or type and value
    (a dtype, a qscheme, a tuple of tensors that quantized modules save), for comparing two modules'
    state layouts. (The weights file sets dtypes: a rebuild by configuration need not match them.)"""
    def layout(value: Any) -> Any:
        """One entry's layout: a tensor's shape (and dtype), else its type and value."""
        if isinstance(value, torch.Tensor):
            return (tuple(value.shape), value.dtype) if dtypes else tuple(value.shape)
        if isinstance(value, (tuple, list)):
            return type(value).__name__, tuple(layout(v) for v in value)
        return type(value).__name__, repr(value)

    return {k: layout(v) for k, v in module.state_dict().items()}


def _shorter(cls: type, args: list, kwargs: dict) -> tuple[list, dict] | None:
    """The same call without keywords equal to their defaults (``stride=(1, 1)`` for a default of
    ``1`` too) and with required keywords as positional arguments; None when nothing changes.
    The caller checks that the shorter call still rebuilds the module."""
    try:
        params = [p for p in inspect.signature(cls).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    kwargs = dict(kwargs)
    for p in params:
        if p.name in kwargs and p.default is not p.empty:
            value = kwargs[p.name]
            same = _equal(value, p.default) or (
                isinstance(value, tuple) and value and isinstance(p.default, int) and not isinstance(p.default, bool)
                and all(_equal(v, p.default) for v in value)
            )
            if same:
                del kwargs[p.name]
    args = list(args)
    for p in params[len(args):]:
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty or p.name not in kwargs:
            break
        args.append(kwargs.pop(p.name))
    return args, kwargs


class _NotRebuildable(Exception):
    pass


def _args_from_repr(module: nn.Module) -> tuple[list, dict]:
    """Constructor arguments read from a leaf module's one-line ``repr``."""
    if list(module.children()):
        raise _NotRebuildable("its repr spans its children")
    text = repr(module)
    try:
        call = ast.parse(text, mode="eval").body
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            raise _NotRebuildable("its repr is not a constructor call")
        if call.func.id != type(module).__name__:
            raise _NotRebuildable("its repr names another class")
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError, TypeError) as exc:
        raise _NotRebuildable(f"its repr `{text[:80]}` is not a call with literal arguments") from exc
    if len(kwargs) != len(call.keywords):
        raise _NotRebuildable("its repr uses ** arguments")
    return args, kwargs


def _args_from_signature(module: nn.Module) -> tuple[list, dict]:
    """Constructor arguments read back from the attributes named like the ``__init__`` parameters."""
    cls = type(module)
    try:
        if cls in _SIGNATURES:
            params = list(_SIGNATURES[cls].parameters.values())
        else:
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError) as exc:
        raise _NotRebuildable("its __init__ signature cannot be read") from exc
    aliases = next((v for k, v in _ALIASES.items() if cls is k), {})
    args: list = []
    kwargs: dict = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in _SKIPPED_PARAMETERS:
            continue
        has_default = p.default is not p.empty
        if p.name in aliases:
            value = aliases[p.name](module)
        elif p.name in module.__dict__ or hasattr(module, p.name):
            value = getattr(module, p.name)
            if isinstance(p.default, bool) and (value is None or isinstance(value, torch.Tensor)):
                value = value is not None  # e.g. bias=True/False stored as a Parameter or None
        elif has_default:
            continue
        else:
            raise _NotRebuildable(f"__init__ parameter '{p.name}' is not stored as an attribute")
        if not is_literal(value):
            raise _NotRebuildable(f"__init__ parameter '{p.name}' holds a {type(value).__name__}, not a literal")
        if has_default and _equal(value, p.default):
            continue
        if not has_default and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and not kwargs:
            args.append(value)
        else:
            kwargs[p.name] = value
    return args, kwargs


def _equal(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - comparing arbitrary defaults
        return False


def _config(module: nn.Module) -> dict[str, Any]:
    """Plain configuration attributes of a module (and its children), for comparing rebuilds."""
    out = {}
    for prefix, m in module.named_modules():
        for k, v in vars(m).items():
            if k.startswith("_") or k == "training" or k in ANNOTATIONS or not isinstance(v, _CONFIG_TYPES):
                continue
            out[f"{prefix}.{k}"] = v
    return out


_compare_cache: dict[tuple, str | None] = {}


def _compare(module: nn.Module, cls: type, args: list, kwargs: dict) -> str | None:
    """None if ``cls(*args, **kwargs)`` has the same structure and configuration as ``module``
    (remembered for modules alike in class, repr, shapes and configuration, e.g. repeated blocks)."""
    key = (cls, repr(module), repr(args), repr(kwargs), repr(state_shapes(module)), repr(sorted(_config(module).items())))
    if key not in _compare_cache:
        if len(_compare_cache) > 4096:
            _compare_cache.clear()
        _compare_cache[key] = _compare_built(module, cls, args, kwargs)
    return _compare_cache[key]


def _compare_built(module: nn.Module, cls: type, args: list, kwargs: dict) -> str | None:
    """``_compare`` without the memory: build the candidate and compare."""
    # Big modules are built on the meta device (nothing allocated); small ones on the CPU, which
    # avoids the seconds the first meta construction of some modules spends importing meta kernels.
    size = sum(v.numel() for v in module.state_dict().values() if isinstance(v, torch.Tensor))
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta" if size > _META_ABOVE else "cpu"):
            candidate = cls(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - user constructors may raise anything
        return f"calling it with {args} {kwargs} raised {type(exc).__name__}: {exc}"
    if type(candidate) is not cls:
        return "its constructor returns another class"
    if repr(candidate) != repr(module):
        return f"rebuilt as `{repr(candidate)[:80]}`, not `{repr(module)[:80]}`"
    if state_shapes(module) != state_shapes(candidate):
        return "the rebuilt module has other parameters or buffers"
    config, rebuilt_config = _config(module), _config(candidate)
    differing = [k for k in config if not _equal(config[k], rebuilt_config.get(k, object()))]
    if differing:
        return f"the rebuilt module differs in {', '.join(sorted(differing)[:3])}"
    return None
