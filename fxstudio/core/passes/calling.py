"""How a pass object is called: the kinds of pass fxstudio runs, and the arguments a pass may declare.

Kinds (``call_pass``):

- a function (or any callable object, e.g. a ``PassBase`` instance) ``f(gm, ...)``;
- a ``torch.fx.Transformer`` subclass: ``T(gm, ...).transform()``;
- a ``torch.fx.Interpreter`` subclass that is not a Transformer (an analysis such as ``ShapeProp`` or
  a profiler): ``I(gm, ...).run(*example_inputs)``; its public attributes that are dicts keyed by
  ``Node`` are the analysis it computed (``node_analysis``);
- a ``PassBase`` subclass: ``P(...)(gm)``;
- any other class whose instances are callable passes (optimum's ``Transformation``s):
  ``C(...)(gm, ...)``.

Arguments: a parameter named ``example_inputs`` (of the function, of the constructor, or of the
instance's ``__call__``) receives copies of the model's example inputs, as a tuple. A ``run_pass``
edit may carry ``kwargs``: ``{"name": "value text"}``, each value in fxstudio's argument syntax
(``fxstudio.core.argsyntax``, parsed, never evaluated); each name must be a parameter the
constructor or the call declares (or take a ``**kwargs``).
"""

from __future__ import annotations

import inspect
import keyword
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassBase

from fxstudio.core import fx_compat
from fxstudio.core.argsyntax import parse_value, short_repr
from fxstudio.core.errors import EditRefused

EXAMPLE_INPUTS = "example_inputs"
"""The parameter name through which a pass receives the model's example inputs."""

MAX_PASS_KWARGS = 32
_P = inspect.Parameter
_NAMED = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
_INTERPRETER_OWN = frozenset({"env", "user_to_last_uses", "submodules", "args_iter"})


@dataclass(frozen=True)
class PassInputs:
    """What a pass may receive besides the module: the model's example inputs (None: the model has
    none) and the edit's keyword arguments, parsed (``parse_pass_kwargs``)."""

    example_inputs: tuple | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name.isidentifier():
        return f"{short_repr(name, 40)} is not an argument name."
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword, not an argument name."
    if unicodedata.normalize("NFKC", name) != name:
        return f"Python reads the argument name {name!r} as {unicodedata.normalize('NFKC', name)!r}; write that."
    if name == EXAMPLE_INPUTS:
        return "'example_inputs' is given by fxstudio (the model's example inputs), not by kwargs."
    return None


def kwargs_problem(raw: Any) -> str | None:
    """Why a ``run_pass`` edit's ``kwargs`` field is malformed (not an object of argument names to
    value texts), or None. Values are not parsed here."""
    if not isinstance(raw, dict):
        return f"'kwargs' of run_pass must be an object {{\"name\": \"value text\"}}, not {short_repr(raw, 60)}."
    if len(raw) > MAX_PASS_KWARGS:
        return f"'kwargs': {len(raw)} arguments is more than the {MAX_PASS_KWARGS} a pass may take."
    for name, text in raw.items():
        problem = _name_problem(name)
        if problem:
            return f"'kwargs': {problem}"
        if not isinstance(text, str):
            return f"'kwargs': the value of {name!r} must be text in the argument syntax, not {short_repr(text, 40)}."
    return None


def parse_pass_kwargs(raw: Any) -> dict[str, Any]:
    """The ``kwargs`` of a ``run_pass`` edit (``{"name": "value text"}``, or None) parsed with the
    argument syntax; ``EditRefused`` (one line) for a bad name or value."""
    if raw is None:
        return {}
    problem = kwargs_problem(raw)
    if problem:
        raise EditRefused(problem)
    parsed = {}
    for name, text in raw.items():
        try:
            parsed[name] = parse_value(text)
        except EditRefused as exc:
            raise EditRefused(f"The pass argument {name}={short_repr(text, 60)}: {exc.message}") from None
    return parsed


def copy_inputs(inputs: tuple) -> tuple:
    """Copies of example inputs: every tensor cloned, containers rebuilt (a pass or a run may write
    into what it gets)."""
    def one(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            with torch.no_grad():
                copy = value.detach().clone()
            return copy.requires_grad_() if value.requires_grad else copy
        return value

    return tuple(fx_compat.tree_map(one, tuple(inputs)))


@dataclass
class _Params:
    """The parameters a callable takes besides the module: by name, whether it takes ``**kwargs``,
    the names it requires, and whether its signature is known at all."""

    where: str
    named: dict[str, inspect.Parameter] = field(default_factory=dict)
    var_keyword: bool = False
    required: list[str] = field(default_factory=list)
    known: bool = True


def _params(fn: Any, where: str, skip: int) -> _Params:
    """The parameters of ``fn`` after its first ``skip`` positional ones (self, the module)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _Params(where, known=False)
    out = _Params(where)
    for p in sig.parameters.values():
        if skip and p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
            skip -= 1
            continue
        if p.kind is _P.VAR_POSITIONAL:
            skip = 0
        elif p.kind is _P.VAR_KEYWORD:
            out.var_keyword = True
        elif p.kind in _NAMED:
            out.named[p.name] = p
            if p.default is p.empty:
                out.required.append(p.name)
        elif p.default is p.empty:  # positional-only, after the module: cannot be given
            out.required.append(p.name)
    return out


def _defines_call(cls: type) -> bool:
    return any("__call__" in vars(c) for c in cls.__mro__ if c is not object)


def _bind(label: str, targets: list[_Params], inputs: PassInputs) -> list[dict[str, Any]]:
    """The keyword arguments each of ``targets`` (constructor, call) gets; ``EditRefused`` for an
    argument nobody takes, a required one missing, or example inputs the model does not have."""
    given: list[dict[str, Any]] = [{} for _ in targets]
    for name, value in inputs.kwargs.items():
        slot = next((i for i, t in enumerate(targets) if name in t.named), None)
        if slot is None:
            slot = next((i for i in reversed(range(len(targets))) if targets[i].var_keyword), None)
        if slot is None:
            takes = sorted({n for t in targets for n in t.named if n != EXAMPLE_INPUTS})
            raise EditRefused(f"The pass {label} takes no argument {name!r} "
                              f"({'it takes: ' + ', '.join(takes) if takes else 'it takes none'}).")
        given[slot][name] = value
    for i, target in enumerate(targets):
        if EXAMPLE_INPUTS in target.named:
            if inputs.example_inputs is None:
                raise EditRefused(f"The pass {label} needs the model's example inputs, and this model has none "
                                  "(define example_inputs() in the model file or give --input-shape).")
            given[i][EXAMPLE_INPUTS] = copy_inputs(inputs.example_inputs)
        missing = [n for n in target.required if n not in given[i]]
        if missing:
            raise EditRefused(f"The pass {label} needs the argument{'s' if len(missing) > 1 else ''} "
                              f"{', '.join(missing)} of its {target.where} (give them as NAME=VALUE).")
    return given


@dataclass
class PassCall:
    """What calling a pass gave: its return value and, for an Interpreter, the per-node analysis."""

    out: Any
    analysis: dict[str, dict[torch.fx.Node, Any]] = field(default_factory=dict)


def call_pass(obj: Any, work: torch.fx.GraphModule, label: str, inputs: PassInputs) -> PassCall:
    """Call the pass ``obj`` on the working copy ``work`` as its kind asks (module docstring); what
    the pass raises propagates (the runner contains it)."""
    if isinstance(obj, type):
        if issubclass(obj, torch.fx.Transformer):
            (ctor,) = _bind(label, [_params(obj, "constructor", 1)], inputs)
            return PassCall(obj(work, **ctor).transform())
        if issubclass(obj, torch.fx.Interpreter):
            return _interpret(obj, work, label, inputs)
        if issubclass(obj, PassBase):
            (ctor,) = _bind(label, [_params(obj, "constructor", 0)], inputs)
            return PassCall(obj(**ctor)(work))
        if not _defines_call(obj):
            raise _not_a_pass(label, obj)
        ctor, call = _bind(label, [_params(obj, "constructor", 0), _params(obj.__call__, "call", 2)], inputs)
        return PassCall(obj(**ctor)(work, **call))
    if not callable(obj):
        raise _not_a_pass(label, obj)
    (call,) = _bind(label, [_params(obj, "call", 1)], inputs)
    return PassCall(obj(work, **call))


def _not_a_pass(label: str, obj: Any) -> EditRefused:
    what = f"the class {obj.__name__}, whose instances are not callable" if isinstance(obj, type) \
        else f"a {type(obj).__name__}"
    return EditRefused(f"{label} is {what}, not a pass: a pass is a function f(gm), a torch.fx.Transformer, "
                       "Interpreter or PassBase subclass, a PassBase instance, or a class of callable passes.")


def _interpret(cls: type, work: torch.fx.GraphModule, label: str, inputs: PassInputs) -> PassCall:
    """Run an Interpreter subclass on the example inputs; its Node-keyed dicts are the analysis."""
    if inputs.example_inputs is None:
        raise EditRefused(f"The pass {label} is a torch.fx.Interpreter: it runs the model on its example inputs, "
                          "and this model has none (define example_inputs() in the model file or give --input-shape).")
    (ctor,) = _bind(label, [_params(cls, "constructor", 1)], inputs)
    interpreter = cls(work, **ctor)
    with torch.no_grad():
        interpreter.run(*copy_inputs(inputs.example_inputs))
    return PassCall(None, node_analysis(interpreter, work))


def node_analysis(interpreter: Any, work: torch.fx.GraphModule) -> dict[str, dict[torch.fx.Node, Any]]:
    """The public attributes of ``interpreter`` that are non-empty dicts keyed by ``Node`` (e.g. the
    torch.fx docs' profiler's ``runtimes_sec``), with their keys mapped to ``work``'s nodes (an
    interpreter may re-trace the module: its nodes are then found by name and op)."""
    nodes = {n.name: n for n in work.graph.nodes}
    found: dict[str, dict[torch.fx.Node, Any]] = {}
    for name, value in vars(interpreter).items():
        if name.startswith("_") or name in _INTERPRETER_OWN or not isinstance(value, dict) or not value:
            continue
        if not all(isinstance(k, torch.fx.Node) for k in value):
            continue
        mapped = {}
        for node, v in value.items():
            mine = nodes.get(node.name)
            if mine is not None and mine.op == node.op:
                mapped[mine] = v
        if mapped:
            found[name] = mapped
    return found


def split_pass_arguments(text: str) -> dict[str, str]:
    """``"n=3, dtype=torch.float16, shape=(1, 2)"`` (what the window's Run Pass dialog takes) →
    ``{"n": "3", "dtype": "torch.float16", "shape": "(1, 2)"}``: NAME=VALUE items separated by
    commas outside brackets and strings, each value's text as written (checked, not evaluated, by
    ``parse_pass_kwargs``); ``EditRefused`` for anything else. Empty text: no arguments."""
    import ast

    source = (text or "").strip()
    if not source:
        return {}
    if len(source) > 100_000:
        raise EditRefused("The pass arguments are longer than 100,000 characters.")
    call = f"f({source})"
    try:
        tree = ast.parse(call, mode="eval")
    except SyntaxError as exc:
        raise EditRefused(f"Cannot read the pass arguments {short_repr(source, 60)}: {exc.msg} "
                          "(write NAME=VALUE, separated by commas).") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise EditRefused(f"Cannot read the pass arguments {short_repr(source, 60)}: {exc}.") from None
    node = tree.body
    if not isinstance(node, ast.Call) or node.args or any(k.arg is None for k in node.keywords):
        raise EditRefused(f"Cannot read the pass arguments {short_repr(source, 60)}: write NAME=VALUE, "
                          "separated by commas.")
    found: dict[str, str] = {}
    for kw in node.keywords:
        if kw.arg in found:
            raise EditRefused(f"The pass argument {kw.arg} is given twice.")
        found[kw.arg] = ast.get_source_segment(call, kw.value) or ""
    return found
