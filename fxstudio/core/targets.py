"""Target syntax (docs/edit-scripts.md): the text of a node's target, and resolving such text back.

* ``call_function``: a dotted path (``torch.relu``, ``operator.add``, ``torch.ops.aten.add.Tensor``,
  ``torch.nn.functional.gelu``, ``getattr``) or ``<file stem>.fn`` for a function of the opened
  model file (``model_file.fn`` is accepted as an alias).
* ``call_method``: a method name of ``torch.Tensor`` (``reshape``).
* ``call_module``: an existing submodule path, or a whitelisted ``torch.nn`` constructor with
  literal arguments (``torch.nn.Dropout(p=0.1)``), which yields a ``NewSubmodule`` to add.
* ``get_attr``: an attribute path of the module (parameter, buffer, constant or submodule).

Resolution walks attributes of modules already imported; nothing is imported or evaluated.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import re
import types
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core import trust
from fxstudio.core.argsyntax import format_value, parse_value
from fxstudio.core.errors import EditRefused
from fxstudio.core.node_text import callable_text as format_callable  # noqa: F401 - the name the edit engine uses
from fxstudio.core.node_text import target_text as format_target  # noqa: F401 - the name the edit engine uses
from fxstudio.core.node_text import user_module_stem

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MODEL_FILE_ALIAS = "model_file"
_MAX_NEW_PARAMETERS = 100_000_000
_RESERVED_NAMES = frozenset({"self", "torch", "operator", "math", "builtins", "fx_pytree", "pytree", "inf", "nan"})


@dataclass(frozen=True)
class NewSubmodule:
    """A ``call_module`` target written as a constructor: the module to add and its source text."""

    text: str
    module: nn.Module

    @property
    def base_name(self) -> str:
        """Snake-case attribute name for the new submodule (``Dropout`` → ``dropout``)."""
        name = type(self.module).__name__
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# ----------------------------------------------------------------------------------------- parse


def parse_target(op: str, text: str, gm: torch.nn.Module | None = None,
                 user_module: types.ModuleType | None = None, known: Any = None) -> Any:
    """Resolve target text for a node of kind ``op``; raises ``EditRefused`` saying why not.

    ``known``: functions the traced graph calls, allowed even outside the usual namespaces
    (default: the ``call_function`` targets of ``gm``'s graph).
    """
    if known is None:
        graph = getattr(gm, "graph", None)
        known = [n.target for n in graph.nodes if n.op == "call_function"] if graph is not None else ()
    if not isinstance(text, str) or not text.strip():
        raise EditRefused("A target must be non-empty text, e.g. torch.relu.")
    text = text.strip()
    if op == "call_function":
        return resolve_function(text, user_module, known)
    if op == "call_method":
        return resolve_method(text)
    if op == "call_module":
        if "(" in text:
            return parse_constructor(text)
        _resolve_attr_path(gm, text, want_module=True)
        return text
    if op == "get_attr":
        _resolve_attr_path(gm, text, want_module=False)
        return text
    raise EditRefused(f"A {op} node has no target that can be set.")


def resolve_function(text: str, user_module: types.ModuleType | None = None, known: Any = ()) -> Any:
    """The callable named by a dotted path, through the trust boundary of ``fxstudio.core.trust``:
    ``torch.X`` (and its functional namespaces and ``torch.ops``), ``operator.X``, ``math.X``, a few
    builtins, a function of the model file, or a function the traced graph already calls
    (``known``, matched by its exact name). Nothing is imported."""
    stem = user_module_stem(user_module)
    roots = (MODEL_FILE_ALIAS, stem, user_module.__name__) if user_module is not None else ()
    return trust.resolve_function_text(text, user_module, known, roots,
                                       lambda fn: format_callable(fn, user_module))


def resolve_method(text: str) -> str:
    """A ``call_method`` target: the name of a public ``torch.Tensor`` method (trust-checked)."""
    trust.check_method_name(text)
    if not callable(getattr(torch.Tensor, text, None)):
        raise EditRefused(f"torch.Tensor has no method {text!r}.")
    return text


_ATTR_VALUE_TYPES = (torch.Tensor, nn.Module, torch.ScriptObject, int, float, bool, complex, str, type(None))


def _resolve_attr_path(gm: torch.nn.Module | None, path: str, *, want_module: bool) -> Any:
    if gm is None:
        raise EditRefused(f"Cannot resolve {path!r} without a module.")
    if not all(re.fullmatch(r"\w+", p) for p in path.split(".")):
        raise EditRefused(f"{path!r} is not an attribute path like layer1.0.conv1.")
    obj: Any = gm
    what = "submodule" if want_module else "attribute"
    for part in path.split("."):
        trust.check_attribute_part(path, part)
        if not isinstance(obj, nn.Module):  # only modules are walked: nothing below a tensor or a value
            raise trust.refuse(path, trust.RULE_SUBMODULE, f"{part!r} is below a {type(obj).__name__}, not a module.")
        children, parameters, buffers = (fx_compat.module_children(obj), fx_compat.module_parameters(obj),
                                         fx_compat.module_buffers(obj))
        if part in children:
            obj = children[part]
        elif part in parameters:
            obj = parameters[part]
        elif part in buffers:
            obj = buffers[part]
        elif part in vars(obj) and isinstance(vars(obj)[part], _ATTR_VALUE_TYPES):
            obj = vars(obj)[part]
        else:
            raise EditRefused(f"The module has no {what} {path!r}.")
    if want_module and not isinstance(obj, nn.Module):
        raise EditRefused(f"{path!r} is a {type(obj).__name__}, not a submodule.")
    return obj


def parse_constructor(text: str) -> NewSubmodule:
    """A new submodule from a whitelisted ``torch.nn`` constructor with literal arguments."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise EditRefused(f"Cannot parse the constructor {text!r}: {exc.msg}.") from None
    if not isinstance(tree, ast.Call):
        raise EditRefused(f"{text!r} is not a constructor call like torch.nn.Dropout(p=0.1).")
    path = ast.unparse(tree.func)
    name = path.split(".")[-1]
    if path not in (f"torch.nn.{name}", f"nn.{name}"):
        raise EditRefused(f"{path} is not allowed: new submodules come from torch.nn constructors (torch.nn.Dropout).")
    if name.startswith("_"):
        raise trust.refuse(path, trust.RULE_PRIVATE, f"{name!r} is private.")
    cls = vars(nn).get(name)  # the namespace's own entry: no lazy import, no re-exported module
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise EditRefused(f"torch.nn has no module class {name!r}.")
    if not cls.__module__.startswith("torch.nn.modules."):
        raise trust.refuse(path, trust.RULE_SUBMODULE, f"torch.nn.{name} is defined in {cls.__module__}, "
                           "not in torch.nn.modules.")
    if any(isinstance(a, ast.Starred) for a in tree.args) or any(k.arg is None for k in tree.keywords):
        raise EditRefused(f"{text!r}: '*' and '**' are not allowed in a constructor.")
    try:
        args = [parse_value(ast.unparse(a)) for a in tree.args]
        kwargs = {k.arg: parse_value(ast.unparse(k.value)) for k in tree.keywords}
    except EditRefused as exc:
        raise EditRefused(f"{text!r}: constructor arguments must be literal values; {exc.message}") from None
    call = f"torch.nn.{name}{_call_text(args, kwargs)}"
    _check_constructor_counts(cls, call, args, kwargs)
    try:
        with torch.device("meta"):  # size check first: a typo must not allocate gigabytes
            probe = cls(*args, **kwargs)
            numel = sum(p.numel() for p in probe.parameters()) + sum(b.numel() for b in probe.buffers())
        if numel > _MAX_NEW_PARAMETERS:
            raise trust.refuse(call, trust.RULE_SIZE, f"it would hold {numel:,} parameter and buffer values "
                               f"(more than {_MAX_NEW_PARAMETERS:,}).")
        module = cls(*args, **kwargs)
    except EditRefused:
        raise
    except Exception as exc:  # noqa: BLE001 - any constructor failure is the user's argument error
        raise EditRefused(f"{call} failed: {exc}") from None
    return NewSubmodule(call, module)


_MAX_LAYERS = 1000


def _check_constructor_counts(cls: type, call: str, args: list, kwargs: dict) -> None:
    """Layer counts are loops even on the meta device: ``torch.nn.RNN(1, 1, num_layers=10**9)``
    would never finish building, so they are bounded before anything is constructed."""
    try:
        bound = inspect.signature(cls).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = dict(kwargs)
    if issubclass(cls, nn.RNNBase) and len(args) > 2:  # RNN(*args): (input_size, hidden_size, num_layers, ...)
        bound = {**bound, "num_layers": args[2]}
    for key, value in bound.items():
        if "layers" in key and isinstance(value, int) and value > _MAX_LAYERS:
            raise trust.refuse(call, trust.RULE_SIZE, f"{key}={trust.count_text(value)} (more than {_MAX_LAYERS:,}).")


def _call_text(args: list, kwargs: dict) -> str:
    parts = [format_value(a) for a in args] + [f"{k}={format_value(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def check_node_name(name: Any) -> str:
    """A valid new node name, or ``EditRefused`` saying why not (identifier, not a keyword/builtin)."""
    if not isinstance(name, str) or not _IDENT.match(name):
        raise EditRefused(f"{name!r} is not a valid node name (letters, digits and _, not starting with a digit).")
    if keyword.iskeyword(name) or hasattr(builtins, name):
        raise EditRefused(f"{name!r} is a Python keyword or builtin; choose another node name.")
    if name.startswith("__fxsref__") or name in _RESERVED_NAMES:
        raise EditRefused(f"{name!r} is reserved in generated code; choose another node name.")
    return name
