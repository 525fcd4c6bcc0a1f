"""The targets a user may type for a node, in target syntax (docs/edit-scripts.md), for completion.

Qt-free: the property panel's target field and the insert dialog's picker both show these lists.
Each list is in the order a user expects to browse it: the common choices first, then the rest
alphabetically.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types

import torch
import torch.fx

OP_KINDS = ("call_function", "call_method", "call_module", "get_attr")
"""Op kinds a user can give a node (placeholders and the output are not made by hand)."""

COMMON_FUNCTIONS = (
    "torch.relu", "torch.nn.functional.gelu", "torch.sigmoid", "torch.tanh", "torch.add",
    "torch.mul", "torch.sub", "operator.add", "operator.mul", "torch.nn.functional.silu",
    "torch.nn.functional.dropout", "torch.clamp", "torch.flatten", "torch.cat",
)
COMMON_METHODS = ("relu", "reshape", "view", "flatten", "contiguous", "transpose", "permute", "float")
COMMON_MODULES = ("torch.nn.ReLU()", "torch.nn.Dropout(p=0.1)", "torch.nn.Identity()", "torch.nn.GELU()")

# Functions a model file defines for the loader (README, "Open a model"), not for its graph.
_LOADER_HOOKS = {"example_inputs", "get_model", "build_model"}

# Module classes that are containers or need a first forward to exist: no use as a new call target.
_NOT_CALLABLE_MODULES = {"Module", "Container", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}

# Operator functions that take no tensor operands and would only confuse a picker.
_SKIPPED_OPERATOR = {"attrgetter", "itemgetter", "methodcaller", "length_hint", "call"}


def _public_functions(namespace: types.ModuleType) -> list[str]:
    names = []
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        obj = getattr(namespace, name, None)
        if callable(obj) and not inspect.isclass(obj) and not isinstance(obj, types.ModuleType):
            names.append(name)
    return sorted(names)


@functools.lru_cache(maxsize=1)
def _library_functions() -> tuple[str, ...]:
    from fxstudio.core.errors import FxStudioError
    from fxstudio.core.targets import resolve_function

    names = [f"torch.{n}" for n in _public_functions(torch)]
    names += [f"torch.nn.functional.{n}" for n in _public_functions(torch.nn.functional)]
    names += [f"operator.{n}" for n in _public_functions(operator) if n not in _SKIPPED_OPERATOR]
    kept = []
    for name in names:  # offer only what the edit engine accepts (torch.save & co. are refused)
        try:
            resolve_function(name)
        except FxStudioError:
            continue
        kept.append(name)
    return tuple(kept)


@functools.lru_cache(maxsize=1)
def _tensor_methods() -> tuple[str, ...]:
    from fxstudio.core.trust import TENSOR_METHODS_DENIED

    return tuple(
        n for n in sorted(dir(torch.Tensor))
        if not n.startswith("_") and n not in TENSOR_METHODS_DENIED and callable(getattr(torch.Tensor, n, None))
    )


def _constructor_text(cls: type) -> str:
    """``torch.nn.Name(...)`` with the required parameters named, so the user sees what to fill in."""
    try:
        params = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return f"torch.nn.{cls.__name__}(…)"
    params = list(params)
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return f"torch.nn.{cls.__name__}(…)"  # e.g. GRU(*args): the arguments are not in the signature
    required = [
        p.name for p in params
        if p.name != "self" and p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    return f"torch.nn.{cls.__name__}({', '.join(required)})"


@functools.lru_cache(maxsize=1)
def _module_constructors() -> tuple[str, ...]:
    out = []
    for name in sorted(dir(torch.nn)):
        obj = getattr(torch.nn, name, None)
        if (inspect.isclass(obj) and issubclass(obj, torch.nn.Module) and not name.startswith(("_", "Lazy"))
                and name not in _NOT_CALLABLE_MODULES and obj.__module__.startswith("torch.nn.modules")):
            out.append(_constructor_text(obj))
    return tuple(out)


def user_functions(user_module: types.ModuleType | None) -> list[str]:
    """Functions defined in the opened model file, as ``<file stem>.<fn>`` (docs/edit-scripts.md "Target syntax")."""
    if user_module is None:
        return []
    from fxstudio.core.targets import user_module_stem

    prefix = user_module_stem(user_module)
    out = []
    for name, obj in sorted(vars(user_module).items()):
        if name.startswith("_") or name in _LOADER_HOOKS or not inspect.isfunction(obj):
            continue
        if getattr(obj, "__module__", None) == user_module.__name__:
            out.append(f"{prefix}.{name}")
    return out


def submodule_paths(gm: torch.nn.Module) -> list[str]:
    """Dotted paths of every submodule of ``gm`` (the root excluded), in definition order."""
    return [name for name, _ in gm.named_modules() if name]


def attribute_paths(gm: torch.nn.Module) -> list[str]:
    """Dotted paths of parameters, buffers and tensor constants a ``get_attr`` node may read."""
    names = [n for n, _ in gm.named_parameters()] + [n for n, _ in gm.named_buffers()]
    for name, value in vars(gm).items():
        if isinstance(value, torch.Tensor) and not name.startswith("__"):
            names.append(name)
    return list(dict.fromkeys(names))


def _common_first(common: tuple[str, ...], rest: list[str] | tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys([*common, *rest]))


def targets_for(op: str, gm: torch.nn.Module | None = None,
                user_module: types.ModuleType | None = None) -> list[str]:
    """Every target text offered for a node of kind ``op``; common choices and the file's own first.

    ``call_function``: the model file's functions, torch, torch.nn.functional and operator;
    ``call_method``: Tensor methods; ``call_module``: existing submodules, then ``torch.nn``
    constructors; ``get_attr``: parameters, buffers and constants. Anything else: nothing.
    """
    if op == "call_function":
        return _common_first(COMMON_FUNCTIONS + tuple(user_functions(user_module)), _library_functions())
    if op == "call_method":
        return _common_first(COMMON_METHODS, _tensor_methods())
    if op == "call_module":
        existing = submodule_paths(gm) if gm is not None else []
        return _common_first(tuple(existing) + COMMON_MODULES, _module_constructors())
    if op == "get_attr":
        return attribute_paths(gm) if gm is not None else []
    return []


def filter_targets(targets: list[str], text: str, limit: int | None = None) -> list[str]:
    """Targets matching ``text`` (case-insensitive substring), best first.

    A target whose last dotted component starts with the text ranks before one that merely
    contains it, so typing ``relu`` puts ``torch.relu`` above ``torch.nn.functional.rrelu``.
    """
    needle = text.strip().lower()
    if not needle:
        return targets[:limit] if limit else list(targets)
    head, prefix, inner = [], [], []
    for t in targets:
        low = t.lower()
        if needle not in low:
            continue
        last = low.split("(")[0].rsplit(".", 1)[-1]
        if last == needle:
            head.append(t)
        elif last.startswith(needle):
            prefix.append(t)
        else:
            inner.append(t)
    ranked = head + prefix + inner
    return ranked[:limit] if limit else ranked
