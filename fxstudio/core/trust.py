"""The trust boundary of target text (docs/notes/trust-boundary.md): which callables a name written in an edit script,
a journal or a text field may resolve to, and what such a call may cost.

Text resolves only through
* ``torch.ops.<namespace>.<op>[.<overload>]`` of tensor operators (no file I/O),
* real submodule paths of the allowed torch namespaces (``torch``, ``torch.nn.functional``,
  ``torch.special``, ``torch.linalg``, ``torch.fft``, ``torch.nn.init``) and ``torch.Tensor``
  methods: every module on the way must be the genuine submodule of the one before it
  (``mod.__name__ == parent.__name__ + "." + part``), so a re-export such as
  ``torch.nn.functional.torch`` or ``torch.fft.torch.os`` is refused,
* functions and classes defined in the opened model file (never what it imports),
* reviewed ``operator``, ``math`` and builtin functions that cannot reach an object's internals,
* the exact objects the traced graph already calls (``known``), by their formatted name only.

Names are looked up in module ``__dict__``s, never with ``getattr`` on a module, so no lazy
submodule import (``torch.__getattr__``) runs. Every refusal is one ``EditRefused`` line naming the
rule and the part of the path that broke it. No Qt here.
"""

from __future__ import annotations

import builtins
import math
import operator
import re
import types
from pathlib import Path
from typing import Any, Callable

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.errors import EditRefused

RULE_SYNTAX = "dotted identifier path"
RULE_PACKAGE = "allowed packages only"
RULE_SUBMODULE = "real submodule paths"
RULE_PRIVATE = "no private or dunder names"
RULE_DENIED = "no I/O, imports, process control or code execution"
RULE_MODEL = "definitions of the model file only"
RULE_BUILTINS = "reviewed builtins only"
RULE_OPS = "torch.ops tensor overloads only"
RULE_ATTRIBUTE = "getattr with a constant public attribute name"
RULE_COST = "bounded cost"
RULE_SIZE = "new submodule size budget"
RULE_RESULT = "bounded result size"
RULE_EDIT_BUDGET = "edit budget"
RULE_WORK = "bounded compute"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# torch namespaces a path may end in (plus ``torch.nn``, passed through on the way to the last two).
ALLOWED_TORCH_NAMESPACES = frozenset({
    "torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft", "torch.nn.init",
})
_PASS_THROUGH = frozenset({"torch.nn"})
# Where a public torch callable of those namespaces may be defined (its ``__module__``).
_TORCH_FN_MODULES = frozenset({
    "torch", "torch.functional", "torch.nn.functional", "torch.nn.init", "torch._C", "torch._C._nn",
    "torch._C._special", "torch._C._linalg", "torch._C._fft", "torch._C._VariableFunctions",
    "torch._linalg_utils", "torch._lowrank", "torch._lobpcg", "torch._tensor", "torch.special",
    "torch.linalg", "torch.fft",
})
# torch callables that read or write files, load code, change process-wide state, or call the
# callables they are given.
_TORCH_DENIED = frozenset({
    "load", "save", "from_file", "compile", "cond", "while_loop", "vmap", "fork", "wait",
    "import_ir_module", "import_ir_module_from_buffer", "parse_ir", "parse_schema", "parse_type_comment",
    "merge_type_from_type_comment", "unify_type_list", "get_file_path", "prepare_multiprocessing_environment",
    "classproperty", "manual_seed", "seed", "initial_seed", "get_rng_state", "thread_safe_generator",
    "from_numpy", "frombuffer", "from_dlpack", "to_dlpack", "get_device_module", "init_num_threads",
    "clear_autocast_cache", "autocast_decrement_nesting", "autocast_increment_nesting",
    "handle_torch_function", "boolean_dispatch",
})
_TORCH_DENIED_PREFIXES = ("set_", "use_", "import_", "parse_")
# Tensor methods that call Python callables, share memory through files, or expose storages.
TENSOR_METHODS_DENIED = frozenset({
    "apply_", "map_", "map2_", "register_hook", "register_post_accumulate_grad_hook", "set_",
    "share_memory_", "storage", "untyped_storage", "module_load", "record_stream",
})
# torch.ops: namespaces of tensor operators, and operators that touch files or print.
_OPS_NAMESPACES = frozenset({"aten", "prims", "quantized", "quantized_decomposed"})
_OPS_DENIED = frozenset({"from_file", "save", "load", "_print", "warn"})

OPERATOR_DENIED = frozenset({"attrgetter", "itemgetter", "methodcaller", "call"})
MATH_DENIED = frozenset()
REVIEWED_BUILTINS = frozenset({"getattr", "len", "abs", "min", "max", "sum", "round", "pow", "divmod", "all", "any"})
# Attribute names that lead to frames, code, globals, storages or hooks, even without an underscore.
ATTRIBUTES_DENIED = frozenset({
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code", "cr_frame", "cr_code",
    "ag_frame", "ag_code", "tb_frame", "tb_next", "co_code", "func_globals", "mro",
    *TENSOR_METHODS_DENIED, "from_file", "from_buffer", "apply", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_backward_hook", "register_module", "add_module", "load_state_dict",
})

# Cost bounds on Python values (the shape refresh and every real run would otherwise compute them).
MAX_INT_BITS = 1 << 16
MAX_SEQUENCE = 1_000_000
MAX_ROUND_DIGITS = 10_000


def serialized_op_allowed(target: str) -> bool:
    """Whether an operator named in a serialized program (``torch.ops.aten.from_file.default``,
    a ``.pt2`` node target) avoids the operators refused as edit targets: file and process I/O."""
    return not any(part in _OPS_DENIED for part in re.split(r"[.:#]", target))


def refuse(text: str, rule: str, detail: str) -> EditRefused:
    """The one-line refusal of ``text`` under ``rule``."""
    return EditRefused(f"{text!r} is not allowed as a target (rule: {rule}): {detail}")


# ----------------------------------------------------------------------------- function targets


def resolve_function_text(text: str, user_module: types.ModuleType | None, known: Any,
                          model_roots: tuple[str, ...], format_known: Callable[[Any], str]) -> Any:
    """The callable a ``call_function`` target text names, or ``EditRefused`` naming the rule.

    ``model_roots``: the names under which the model file's definitions are written;
    ``format_known``: how a known target is written (``format_callable``).
    """
    parts = text.split(".")
    if not all(_IDENT.match(p) for p in parts):
        raise refuse(text, RULE_SYNTAX, "write a dotted function path like torch.relu or operator.add.")
    for k in known:  # the traced graph's own objects, by the exact name they are shown under
        try:
            if format_known(k) == text:
                return k
        except Exception:  # noqa: BLE001 - an odd callable that cannot be named is never matched
            continue
    if len(parts) == 1:
        if text in REVIEWED_BUILTINS:
            return vars(builtins)[text]
        raise EditRefused(f"{text!r} is not a function target (rule: {RULE_BUILTINS}: "
                          f"{', '.join(sorted(REVIEWED_BUILTINS))}); write a dotted path like torch.{text}"
                          f" or operator.{text} (a call_method node takes a bare method name).")
    root, rest = parts[0], parts[1:]
    if user_module is not None and root in model_roots:
        return _resolve_model(text, user_module, rest)
    if root in ("operator", "_operator", "math", "builtins"):
        return _resolve_stdlib(text, root, rest)
    if root == "torch":
        if rest[0] == "ops":
            return resolve_op(text, rest[1:])
        if rest[0] == "Tensor":
            return _resolve_tensor_function(text, rest[1:])
        return _resolve_torch(text, rest)
    if root == "model_file":
        raise refuse(text, RULE_MODEL, "this model has no model file.")
    raise refuse(text, RULE_PACKAGE, f"{root!r} is not an allowed package "
                 "(torch, operator, math, builtins and the model file are).")


def _check_public(text: str, part: str, where: str) -> None:
    if part.startswith("_"):
        raise refuse(text, RULE_PRIVATE, f"{part!r} in {where} is private.")


def _resolve_model(text: str, user_module: types.ModuleType, rest: list[str]) -> Any:
    name = user_module.__name__
    obj = vars(user_module).get(rest[0])
    if obj is None:
        file = Path(getattr(user_module, "__file__", None) or name).name
        raise refuse(text, RULE_MODEL, f"the model file {file} has no attribute {rest[0]!r}.")
    if isinstance(obj, types.ModuleType) or getattr(obj, "__module__", None) != name:
        raise refuse(text, RULE_MODEL, f"{rest[0]!r} is not defined in the model file "
                     f"(it comes from {getattr(obj, '__name__', None) or getattr(obj, '__module__', '?')}).")
    if len(rest) > 2 or (len(rest) == 2 and not isinstance(obj, type)):
        raise refuse(text, RULE_MODEL, f"{'.'.join(rest[:2])} walks into another object; name a function "
                     "of the model file, or a method of a class it defines.")
    if len(rest) == 2:
        _check_public(text, rest[1], rest[0])
        if rest[1] not in vars(obj):
            raise refuse(text, RULE_MODEL, f"class {rest[0]} defines no {rest[1]!r}.")
        obj = getattr(obj, rest[1])
        if not callable(obj) or isinstance(obj, type):
            raise EditRefused(f"{text!r} is not a function (it is a {type(obj).__name__}).")
    return obj


def _resolve_stdlib(text: str, root: str, rest: list[str]) -> Any:
    if len(rest) != 1:
        raise refuse(text, RULE_SUBMODULE, f"{root}.{rest[0]} is not a module of {root}; name one function.")
    name = rest[0]
    _check_public(text, name, root)
    if root == "builtins":
        if name not in REVIEWED_BUILTINS:
            raise refuse(text, RULE_BUILTINS, f"builtins.{name} is not a reviewed builtin.")
        return vars(builtins)[name]
    module = operator if root in ("operator", "_operator") else math
    denied = OPERATOR_DENIED if module is operator else MATH_DENIED
    if name in denied:
        raise refuse(text, RULE_DENIED, f"{root}.{name} builds or calls other callables.")
    obj = vars(module).get(name)
    if obj is None:
        raise EditRefused(f"{text!r}: {root} has no attribute {name!r}.")
    if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
        raise EditRefused(f"{text!r} is not a function (it is a {type(obj).__name__}).")
    return obj


def _torch_name_denied(name: str) -> bool:
    return name in _TORCH_DENIED or name.startswith(_TORCH_DENIED_PREFIXES)


def _resolve_torch(text: str, rest: list[str]) -> Any:
    module: types.ModuleType = torch
    for part in rest[:-1]:
        _check_public(text, part, module.__name__)
        child = vars(module).get(part)
        if not isinstance(child, types.ModuleType):
            raise refuse(text, RULE_SUBMODULE, f"{module.__name__}.{part} is not a module "
                         f"({type(child).__name__ if child is not None else 'no such name'}).")
        expected = f"{module.__name__}.{part}"
        if child.__name__ != expected:
            raise refuse(text, RULE_SUBMODULE, f"{expected} is the module {child.__name__!r} re-exported, "
                         f"not a submodule of {module.__name__}.")
        if child.__name__ not in ALLOWED_TORCH_NAMESPACES | _PASS_THROUGH:
            raise refuse(text, RULE_PACKAGE, f"{child.__name__} is not an allowed namespace "
                         f"({', '.join(sorted(ALLOWED_TORCH_NAMESPACES))}).")
        module = child
    name = rest[-1]
    _check_public(text, name, module.__name__)
    if module.__name__ not in ALLOWED_TORCH_NAMESPACES:
        raise refuse(text, RULE_PACKAGE, f"{module.__name__} is not an allowed namespace.")
    if _torch_name_denied(name):
        raise refuse(text, RULE_DENIED, f"{module.__name__}.{name} does I/O, loads code, changes "
                     "process-wide state or calls other callables.")
    obj = vars(module).get(name)
    if obj is None:
        raise EditRefused(f"{text!r}: {module.__name__} has no attribute {name!r}.")
    if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
        raise EditRefused(f"{text!r} is not a function (it is a {type(obj).__name__}).")
    origin = getattr(obj, "__module__", None)
    if origin not in _TORCH_FN_MODULES:
        raise refuse(text, RULE_DENIED, f"{module.__name__}.{name} is defined in {origin}, "
                     "outside the reviewed torch namespaces.")
    return obj


def _resolve_tensor_function(text: str, rest: list[str]) -> Any:
    if len(rest) != 1:
        raise refuse(text, RULE_SUBMODULE, "torch.Tensor.X names one method; nothing below it.")
    check_method_name(rest[0], text)
    obj = getattr(torch.Tensor, rest[0], None)
    if not callable(obj) or isinstance(obj, type):
        raise EditRefused(f"{text!r}: torch.Tensor has no method {rest[0]!r}.")
    return obj


def resolve_op(text: str, parts: list[str]) -> Any:
    """``torch.ops.<ns>.<op>[.<overload>]``: an operator of a tensor namespace whose every
    schema takes or returns a tensor, and that is not one of the file/print operators."""
    if len(parts) not in (2, 3):
        raise refuse(text, RULE_OPS, "write torch.ops.<namespace>.<op>.<overload>, e.g. torch.ops.aten.add.Tensor.")
    ns_name, op_name = parts[0], parts[1]
    if ns_name not in _OPS_NAMESPACES:
        raise refuse(text, RULE_OPS, f"torch.ops.{ns_name} is not a tensor operator namespace "
                     f"({', '.join(sorted(_OPS_NAMESPACES))}).")
    if op_name.startswith("__") or op_name in _OPS_DENIED:
        raise refuse(text, RULE_DENIED, f"torch.ops.{ns_name}.{op_name} touches files, prints or is internal.")
    namespace = getattr(torch.ops, ns_name)
    try:
        packet = getattr(namespace, op_name)
    except (AttributeError, RuntimeError):
        raise EditRefused(f"{text!r}: torch.ops.{ns_name} has no operator {op_name!r}.") from None
    if not isinstance(packet, fx_compat.OpOverloadPacket):
        raise refuse(text, RULE_OPS, f"torch.ops.{ns_name}.{op_name} is not an operator.")
    if len(parts) == 2:
        bad = [o for o in packet.overloads() if not _tensor_schema(fx_compat.op_schema(getattr(packet, o)))]
        if bad:
            raise refuse(text, RULE_OPS, f"the overload {bad[0]!r} takes no tensor; name a tensor overload "
                         f"such as {text}.{packet.overloads()[0]}.")
        return packet
    overload_name = parts[2]
    if overload_name.startswith("_") or overload_name not in packet.overloads():
        raise EditRefused(f"{text!r}: torch.ops.{ns_name}.{op_name} has no overload {overload_name!r}.")
    overload = getattr(packet, overload_name)
    if not _tensor_schema(fx_compat.op_schema(overload)):
        raise refuse(text, RULE_OPS, f"{ns_name}::{op_name}.{overload_name} neither takes nor returns a "
                     "tensor (plain Python arithmetic is refused here).")
    return overload


def _tensor_schema(schema: Any) -> bool:
    if schema is None:  # torch gave no schema (fx_compat.op_schema's fallback): refused, as no tensor
        return False
    types_ = [str(a.type) for a in schema.arguments] + [str(r.type) for r in schema.returns]
    return any("Tensor" in t for t in types_)


def check_method_name(name: str, text: str | None = None) -> str:
    """A ``call_method`` name: public, and not a method that calls callables or exposes storage."""
    text = text or name
    if not _IDENT.match(name):
        raise refuse(text, RULE_SYNTAX, "a call_method target is a name like reshape.")
    if name.startswith("_"):
        raise refuse(text, RULE_PRIVATE, f"{name!r} is private or a dunder method.")
    if name in TENSOR_METHODS_DENIED:
        raise refuse(text, RULE_DENIED, f"Tensor.{name} calls callables, shares memory or exposes storage.")
    return name


def check_attribute_part(path: str, part: str) -> None:
    """One part of a ``get_attr`` path: no dunder names (``_tensor_constant0`` is fine)."""
    if part.startswith("__") or part in ATTRIBUTES_DENIED:
        raise refuse(path, RULE_PRIVATE, f"{part!r} is an internal attribute.")


# ----------------------------------------------------------------------------- classification


def is_reviewed_stdlib(fn: Any) -> bool:
    """Whether ``fn`` is one of the reviewed operator, math or builtin functions."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return False
    if vars(operator).get(name) is fn:
        return name not in OPERATOR_DENIED and not name.startswith("_")
    if vars(math).get(name) is fn:
        return name not in MATH_DENIED
    return vars(builtins).get(name) is fn and name in REVIEWED_BUILTINS


def evaluable(fn: Any) -> bool:
    """Whether the shape refresh may call ``fn`` (on fake tensors, and on Python values after
    ``check_cost``): an allowed torch operator or function, a reviewed operator/math/builtin, or
    a Python function (the model file's or the traced graph's). Anything else, a C function of
    ``os`` for example, is never called before the user runs the model."""
    if isinstance(fn, fx_compat.OpOverload):
        return fn.namespace in _OPS_NAMESPACES and fx_compat.op_base_name(fn) not in _OPS_DENIED
    if isinstance(fn, fx_compat.OpOverloadPacket):
        return (fx_compat.packet_qualified_name(fn).split("::")[0] in _OPS_NAMESPACES
                and fn.__name__ not in _OPS_DENIED)
    if is_reviewed_stdlib(fn):
        return True
    origin = getattr(fn, "__module__", None)
    name = getattr(fn, "__name__", "")
    if origin in _TORCH_FN_MODULES:
        return isinstance(name, str) and not _torch_name_denied(name)
    if origin is None and getattr(fn, "__objclass__", None) is fx_compat.TENSOR_BASE:
        return name not in TENSOR_METHODS_DENIED
    if isinstance(fn, types.FunctionType):
        return (origin or "").split(".")[0] not in _SYSTEM_PACKAGES and not (origin or "").startswith("torch.")
    return False


_SYSTEM_PACKAGES = frozenset({"os", "posix", "nt", "sys", "subprocess", "importlib", "shutil", "pickle", "socket",
                              "ctypes", "runpy", "builtins", "io", "pathlib", "tempfile", "code", "codeop"})


# ----------------------------------------------------------------------------- call arguments

UNKNOWN = object()
"""A node operand whose value is not known before a run (see ``check_call_args``)."""
TENSOR_LIKE = object()
"""A node operand whose value is unknown but made by a torch operator or a submodule: a tensor."""


def makes_tensors(fn: Any) -> bool:
    """Whether ``fn`` is a torch operator or function (of the reviewed torch modules) whose results
    are tensors or small values, never Python ints or sequences grown without bound."""
    if isinstance(fn, fx_compat.OP_TYPES):
        return True
    return getattr(fn, "__module__", None) in _TORCH_FN_MODULES and getattr(fn, "__objclass__", None) is None

_POW = {builtins.pow, operator.pow, operator.ipow}
_MUL = {operator.mul, operator.imul}
_ADD = {operator.add, operator.iadd, operator.concat, operator.iconcat}
_SHIFT = {operator.lshift, operator.ilshift}
_MOD = {operator.mod, operator.imod}
_COMBINATORIC = {math.factorial, math.comb, math.perm}


def check_call_args(op: str, target: Any, args: tuple, kwargs: dict,
                    value_of: Callable[[torch.fx.Node], Any]) -> None:
    """Edit-time checks of a call's arguments: ``getattr``'s attribute name must be a constant
    public name, and the cost of a reviewed Python function on its operands must be bounded.

    ``value_of(node)`` gives an operand's value as far as it is known before a run: a tensor
    (fake), a Python value, or ``UNKNOWN``.
    """
    if op != "call_function":
        if op == "call_method" and isinstance(target, str):
            check_method_name(target)
        return
    if target is builtins.getattr:
        _check_getattr(args, kwargs)
    if target in (builtins.min, builtins.max) and "key" in kwargs:
        raise refuse(target.__name__, RULE_DENIED, "a key function would call a value of the graph.")
    if not is_reviewed_stdlib(target) or _float_operand_bounds(target, args, kwargs):
        return
    values = tuple(value_of(a) if isinstance(a, torch.fx.Node) else a for a in args)
    kw = {k: (value_of(v) if isinstance(v, torch.fx.Node) else v) for k, v in kwargs.items()}
    check_cost(target, values, kw, strict_unknown=True)


def _float_operand_bounds(target: Any, args: tuple, kwargs: dict) -> bool:
    """True for ``x * 1.5``, ``x + 0.5``, ``x ** 2.0``, ``x << 1.0``: a binary ``*``, ``+``, ``**``
    or ``<<`` with a float (or complex) literal operand, which ``check_cost`` accepts whatever the
    other operand's value (its result is a float, a tensor or a TypeError; no sequence or int can
    grow by a float). The operand's value is then not computed: that needs a fake-tensor mode, and
    making the first costs ~1 s (issue #25). ``%`` is not among them: a node's string value could
    format a float into a huge string."""
    if kwargs or len(args) != 2 or target not in _POW | _MUL | _ADD | _SHIFT:
        return False
    return any(type(a) in (float, complex) for a in args)


def _check_getattr(args: tuple, kwargs: dict) -> None:
    if kwargs or len(args) not in (2, 3):
        raise refuse("getattr", RULE_ATTRIBUTE, "write getattr(%node, 'name') or getattr(%node, 'name', default).")
    name = args[1]
    if not isinstance(name, str):
        raise refuse("getattr", RULE_ATTRIBUTE, "the attribute name must be a constant string, "
                     f"not {type(name).__name__ if not isinstance(name, torch.fx.Node) else '%' + name.name}.")
    if name.startswith("_") or name in ATTRIBUTES_DENIED:
        raise refuse("getattr", RULE_ATTRIBUTE, f"{name!r} is a private, dunder or internal attribute.")
    if not _IDENT.match(name):
        raise refuse("getattr", RULE_ATTRIBUTE, f"{name!r} is not an attribute name.")


def _bits(v: Any) -> int | None:
    if isinstance(v, bool):
        return 1
    if isinstance(v, int):
        return v.bit_length()
    return None


def _length(v: Any) -> int | None:
    return len(v) if isinstance(v, (str, bytes, bytearray, list, tuple)) else None


def _small(v: Any) -> bool:
    """A literal that cannot make a value grow when combined with another (floats, -1..1, tensors)."""
    if isinstance(v, (float, complex, torch.Tensor)) or v is None:
        return True
    return isinstance(v, int) and -1 <= v <= 1


def format_target_name(target: Any) -> str:
    """A short name of a target for messages: ``operator.mul``, ``torch.zeros``, ``reshape``."""
    if isinstance(target, str):
        return target
    origin = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None) or repr(target)
    if is_reviewed_stdlib(target):
        return _qualified(target)
    return f"{origin}.{name}" if origin and origin not in ("torch._C._VariableFunctions",) else f"torch.{name}"


def count_text(v: int) -> str:
    """``v`` with thousands separators, or its size when it is too big to print at all."""
    return f"{v:,}" if v.bit_length() < 64 else f"about 2**{v.bit_length() - 1}"


def _qualified(fn: Any) -> str:
    name = getattr(fn, "__name__", repr(fn))
    if vars(operator).get(name) is fn:
        return f"operator.{name}"
    if vars(math).get(name) is fn:
        return f"math.{name}"
    return name


def check_cost(fn: Any, args: tuple, kwargs: dict, *, strict_unknown: bool = False) -> None:
    """Refuse (``EditRefused``, rule "bounded cost") a call of a reviewed Python function whose
    result would be a huge int or sequence or take unbounded time: ``pow(10, 10**8)``,
    ``math.factorial(10**8)``, ``'a' * 10**10``, ``1 << 10**10``, ``'%*d' % (10**9, 1)``...

    ``strict_unknown``: an operand whose value is ``UNKNOWN`` makes a growing operation refused
    unless every other operand is small (repeating such edits could otherwise grow without bound).
    """
    name = _qualified(fn)
    values = list(args) + list(kwargs.values())
    if any(isinstance(v, torch.Tensor) or v is TENSOR_LIKE for v in values):
        return  # tensor arithmetic: bounded by the tensors' sizes
    unknown = any(v is UNKNOWN for v in values)
    growing = fn in _POW | _MUL | _SHIFT | _COMBINATORIC or fn is math.prod or fn is math.lcm
    if unknown:
        if strict_unknown and growing and not all(v is UNKNOWN or _small(v) for v in values):
            raise refuse(name, RULE_COST, "an operand's value is not known before a run, so the size of "
                         "the result cannot be bounded; use tensors, or literal values.")
        return

    def too_big(what: str) -> EditRefused:
        return refuse(name, RULE_COST, f"the result would be {what}.")

    if fn in _POW and len(args) >= 2:
        base, exp = args[0], args[1]
        mod = args[2] if len(args) > 2 else kwargs.get("mod")
        if mod is not None and _bits(exp) is not None and (_bits(mod) or 0) + _bits(exp) > 8192:
            raise too_big("a modular power with operands of more than 8,192 bits together")
        if _bits(base) is not None and _bits(exp) is not None and exp > 0 and mod is None:
            if max(_bits(base), 1) * exp > MAX_INT_BITS and abs(base) > 1:
                raise too_big(f"an integer of about {count_text(exp * _bits(base))} bits (more than {MAX_INT_BITS:,})")
    elif fn in _MUL and len(args) == 2:
        a, b = args
        if _bits(a) is not None and _bits(b) is not None:
            if _bits(a) + _bits(b) > MAX_INT_BITS:
                raise too_big(f"an integer of more than {MAX_INT_BITS:,} bits")
        for seq, n in ((a, b), (b, a)):
            if _length(seq) is not None and _bits(n) is not None and n > 0 and _length(seq) * n > MAX_SEQUENCE:
                raise too_big(f"a sequence of {count_text(_length(seq) * n)} items (more than {MAX_SEQUENCE:,})")
    elif fn in _ADD and len(args) == 2:
        if _length(args[0]) is not None and _length(args[1]) is not None \
                and _length(args[0]) + _length(args[1]) > MAX_SEQUENCE:
            raise too_big(f"a sequence of more than {MAX_SEQUENCE:,} items")
    elif fn in _SHIFT and len(args) == 2:
        if _bits(args[0]) is not None and _bits(args[1]) is not None and args[0] != 0 \
                and _bits(args[0]) + max(args[1], 0) > MAX_INT_BITS:
            raise too_big(f"an integer of more than {MAX_INT_BITS:,} bits")
    elif fn in _MOD and args and isinstance(args[0], (str, bytes)):
        raise refuse(name, RULE_COST, "string formatting with % can build strings of any size.")
    elif fn in _COMBINATORIC:
        n = args[0] if args else None
        if _bits(n) is not None and n > 5000:
            raise too_big(f"{name} of {count_text(n)} (more than 5,000)")
    elif fn is math.prod or fn is math.lcm or fn is builtins.sum:
        items = args[0] if fn is not math.lcm and args else args
        if isinstance(items, (list, tuple)) and sum(_bits(x) or 0 for x in items) > MAX_INT_BITS:
            raise too_big(f"an integer of more than {MAX_INT_BITS:,} bits")
        if fn is builtins.sum and isinstance(items, (list, tuple)) \
                and sum(_length(x) or 0 for x in items) > MAX_SEQUENCE:
            raise too_big(f"a sequence of more than {MAX_SEQUENCE:,} items")
    elif fn is builtins.round and len(args) == 2 and _bits(args[1]) is not None and abs(args[1]) > MAX_ROUND_DIGITS:
        raise refuse(name, RULE_COST, f"round to {count_text(args[1])} digits (more than {MAX_ROUND_DIGITS:,}).")
    for v in values:  # an operand already past the bounds (built by earlier nodes)
        if (_bits(v) or 0) > MAX_INT_BITS * 2 or (_length(v) or 0) > MAX_SEQUENCE * 2:
            raise refuse(name, RULE_COST, "an operand is already larger than the bounds.")
