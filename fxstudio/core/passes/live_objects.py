"""Judging a name of a module that is already imported from its objects, without calling any of their
code: module and class dictionaries and ``__mro__`` are read through ``ModuleType``'s and ``type``'s own
descriptors (no ``__getattr__``, ``__getattribute__``, property or metaclass hook runs), classes are
compared by identity, functions are read from their code objects. Used by ``imported.py`` where a
module's source says nothing (a compiled module, a name made at run time).
"""

from __future__ import annotations

import sys
import types

NOT_A_PASS = "not a pass"
UNRESOLVED = "unresolved"
CLASS_KINDS = {"Transformer": "transformer", "PassBase": "pass_class", "Interpreter": "interpreter"}
"""The kind of a class deriving from each pass base class."""


def dict_of_module(mod: object) -> dict | None:
    """A module object's dictionary, read without its ``__getattr__`` / ``__getattribute__``."""
    if not issubclass(type(mod), types.ModuleType):
        return None
    return types.ModuleType.__dict__["__dict__"].__get__(mod)


def _dict_of_class(cls: type) -> types.MappingProxyType:
    """A class's own ``__dict__``, read without its metaclass."""
    return type.__dict__["__dict__"].__get__(cls)


def type_name(cls: type) -> str:
    """A class's ``__name__``, read without its metaclass."""
    return type.__dict__["__name__"].__get__(cls)


def _mro(cls: type) -> tuple:
    """A class's ``__mro__``, read without its metaclass."""
    return type.__dict__["__mro__"].__get__(cls)


def code_takes_a_module(fn: types.FunctionType, *, method: bool = False) -> bool:
    """``imported.takes_a_module`` for a function object, from its code object (nothing of it runs)."""
    code = fn.__code__
    names = code.co_varnames
    positional = list(names[:code.co_argcount])
    kwonly = list(names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
    defaults = len(fn.__defaults__ or ())
    kwdefaults = fn.__kwdefaults__ or {}
    if method:
        if not positional:
            return False
        positional = positional[1:]
        defaults = min(defaults, len(positional))
    if "example_inputs" in positional or "example_inputs" in kwonly:
        return True
    required = len(positional) - defaults
    required_kw = sum(1 for k in kwonly if k not in kwdefaults)
    return not required_kw and (required == 1 or (required == 0 and bool(positional or code.co_flags & 0x04)))


def _pass_types() -> dict[str, type]:
    """The pass base classes, taken from modules already imported (nothing is imported here)."""
    found: dict[str, type] = {}
    fx = dict_of_module(sys.modules.get("torch.fx.interpreter")) or {}
    infra = dict_of_module(sys.modules.get("torch.fx.passes.infra.pass_base")) or {}
    nn = dict_of_module(sys.modules.get("torch.nn.modules.module")) or {}
    for key, d in (("Transformer", fx), ("Interpreter", fx), ("PassBase", infra), ("Module", nn)):
        if isinstance(d.get(key), type):
            found[key] = d[key]
    return found


def _class_object_kind(cls: type) -> str:
    bases = _pass_types()
    if any(cls is t for t in bases.values()):
        return NOT_A_PASS
    if _dict_of_class(cls).get("__abstractmethods__"):
        return NOT_A_PASS
    mro = _mro(cls)

    def derives(key: str) -> bool:
        return key in bases and any(c is bases[key] for c in mro)  # `is`: no metaclass __eq__ runs

    if derives("Module"):
        return NOT_A_PASS
    for key in ("Transformer", "PassBase", "Interpreter"):
        if derives(key):
            return CLASS_KINDS[key]
    for c in mro:
        if c is object or c is type:
            break
        fn = _dict_of_class(c).get("__call__")
        if fn is not None:
            ok = type(fn) is types.FunctionType and code_takes_a_module(fn, method=True)
            return "callable_class" if ok else NOT_A_PASS
    return NOT_A_PASS


def object_kind(module: str, name: str) -> str:
    """The kind of ``module.name`` when ``module`` is already imported, judged from its objects without
    calling any of their code (``UNRESOLVED`` when the module is not imported or has no such name)."""
    d = dict_of_module(sys.modules.get(module))
    if d is None or name not in d:
        return UNRESOLVED
    obj = d[name]
    kind = type(obj)
    if kind is types.FunctionType:
        return "function" if code_takes_a_module(obj) else NOT_A_PASS
    if issubclass(kind, types.ModuleType):
        return NOT_A_PASS
    if issubclass(kind, type):
        return _class_object_kind(obj)
    if _class_object_kind(kind) in ("pass_class", "callable_class"):
        return "instance"
    return NOT_A_PASS
