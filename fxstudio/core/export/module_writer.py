"""How the exported file makes each submodule it keeps, strategy by strategy.

In order, each proven before it is used:

1. its configuration: a constructor call read from its ``repr`` or from the attributes named like
   its ``__init__`` parameters (``modules.constructor_call``), the readable form;
2. its class and state: ``_restore(cls, attributes, parameters=..., buffers=..., children=...)``
   with the values from the weights file (``state_rebuild.restore_call``), for modules a pass made
   or changed (observers, fused and quantized modules, a Linear with its bias folded in...);
3. the model file's own module at that path (``original.get_submodule(path)``), for a submodule of
   the model whose class the model file defines: tried before 2 for such a class.

A submodule that is itself a traced ``GraphModule`` becomes a generated class (``subgraphs``); that
is the caller's step, not this module's. Submodules of a restored module go through the same order.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from torch import nn

from fxstudio.core.errors import ExportError
from fxstudio.core.export.modules import ConfigurationError, ImportNamer, constructor_call, quoted, state_shapes
from fxstudio.core.export.state_rebuild import NotRestorable, Rebuilt, restore_call

_ORIGINAL_USE = "original.get_submodule("


@dataclass
class OriginalEntry:
    """The model file's entry (``Custom``, ``get_model`` or a ``model`` instance), from which the
    exported file takes submodules that cannot be rebuilt from their configuration."""

    name: str
    called: bool  # a class or factory, called with no arguments (else a module-level instance)
    module: nn.Module  # the original as loaded: paths and structure are checked against it


class ModuleWriter:
    """Writes the expression that makes a submodule in a generated ``__init__`` (see the module
    docstring for the order of strategies); ``finish`` adds what the chosen expressions need."""

    def __init__(self, namer: ImportNamer, original: OriginalEntry | None = None):
        self.namer = namer
        self.original = original if namer.user_import is not None else None

    def rebuild(self, module: nn.Module, path: str) -> Rebuilt:
        """How to make ``module`` (at ``path``), or an ``ExportError`` saying what was tried."""
        namer = self.namer
        try:  # names only what it uses, once it succeeds (a Sequential's first children aside: nn classes)
            expr, build = constructor_call(module, path, namer)
            return Rebuilt(expr, build)
        except ConfigurationError as exc:
            tried = [f"its configuration does not rebuild it ({'; '.join(exc.reasons)})"]
        cls = type(module)
        user_class = namer.user_module is not None and cls.__module__ == namer.user_module.__name__
        steps = (self._from_original, self._restore) if user_class else (self._restore, self._from_original)
        for step in steps:
            saved = namer.snapshot()
            try:
                got = step(module, path)
            except NotRestorable as exc:
                namer.restore(saved)
                tried.append(f"it cannot be restored from its class and state: {exc}")
                continue
            if got is not None:
                return got
            namer.restore(saved)
            if self.original is not None:
                tried.append(f"the model file's {self.original.name} has no such submodule")
        advice = (" Trace through it instead of keeping it as a leaf module, or store each __init__ argument "
                  "as an attribute of the same name.") if user_class else ""
        raise ExportError(f"cannot export submodule '{path}' ({cls.__module__}.{cls.__qualname__}): "
                          + "; ".join(tried) + "." + advice)

    def _restore(self, module: nn.Module, path: str) -> Rebuilt:
        return restore_call(module, path, self.namer, self.rebuild)

    def _from_original(self, module: nn.Module, path: str) -> Rebuilt | None:
        """``original.get_submodule(path)`` when the original model has that very submodule, else None."""
        original = self.original
        if original is None:
            return None
        try:
            there = original.module.get_submodule(path)
        except AttributeError:
            return None
        if type(there) is not type(module) or state_shapes(there) != state_shapes(module):
            return None
        build = lambda: copy.deepcopy(there)  # noqa: E731
        if original.called:
            return Rebuilt(f"{_ORIGINAL_USE}{quoted(path)})", build)
        return Rebuilt(f"copy.deepcopy({_ORIGINAL_USE}{quoted(path)}))", build)

    def finish(self, lines: list[str]) -> None:
        """Put the import and creation of the original model at the top of ``lines`` when an
        expression there takes a submodule from it."""
        original = self.original
        if original is None or not any(_ORIGINAL_USE in line for line in lines):
            return
        namer = self.namer
        name = namer.claim(original.name)
        namer.lines[f"from {namer.user_import} import {original.name}" + (f" as {name}" if name != original.name else "")] = None
        if original.name not in namer.user_names:
            namer.user_names.append(original.name)
        if not original.called:
            namer.lines["import copy"] = None
        lines[:0] = ["# The model as its file builds it: submodules that cannot be rebuilt from their",
                     "# configuration are taken from it (their weights then come from WEIGHTS_FILE).",
                     f"original = {name}()" if original.called else f"original = {name}"]
