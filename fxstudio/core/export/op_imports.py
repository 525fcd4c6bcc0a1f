"""The imports that register the operator namespaces an exported graph calls.

FX writes an operator as ``torch.ops.<namespace>.<op>.<overload>``, which resolves only once the
namespace's operators are registered. ``aten``, ``prims`` and ``higher_order`` come with ``import
torch``; others are defined by Python modules (``torch.ops.quantized_decomposed`` by
``torch.ao.quantization.fx._decomposed``, ``torch.ops.torchao`` by several torchao modules) or by
C++ libraries. For each operator the graph calls this finds the imported module that defines it (a
``torch.library.Library`` or ``custom_op`` object among its globals that defines that operator)
and writes ``import <module>`` in the file. An operator no Python module defines must come with
``import torch`` alone (checked once per process in a fresh interpreter, e.g. torch's own
``torch.ops.quantized``); otherwise the export is refused, naming the namespace and the missing import.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
import tempfile
from collections.abc import Iterable

import torch
import torch.fx

from fxstudio.core.threads import subprocess_env
from fxstudio.core import fx_compat
from fxstudio.core.code_names import is_attribute_path, is_identifier, shown
from fxstudio.core.errors import ExportError
from fxstudio.core.export.modules import ImportNamer

BUILT_IN_NAMESPACES = frozenset({"aten", "prims", "higher_order"})
"""Namespaces that ``import torch`` registers (higher-order ops are checked by ``subgraphs``)."""
_DEFINING_KINDS = ("DEF", "FRAGMENT")
_plain_torch_has: dict[tuple[str, str], bool] = {}
_PROBE = r"""
import json, sys, torch
found = {}
for ns, name in json.loads(sys.argv[1]):
    try:
        getattr(getattr(torch.ops, ns), name)
        found[f"{ns}::{name}"] = True
    except (AttributeError, RuntimeError):
        found[f"{ns}::{name}"] = False
print(json.dumps(found))
"""


def called_ops(graph: torch.fx.Graph) -> dict[str, set[str]]:
    """The operators ``graph`` calls outside the built-in namespaces: namespace -> operator names."""
    out: dict[str, set[str]] = {}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if isinstance(target, fx_compat.OpOverload):
            namespace, name = target.namespace, fx_compat.op_base_name(target)
        elif isinstance(target, fx_compat.OpOverloadPacket):
            namespace, _, name = fx_compat.packet_qualified_name(target).partition("::")
        else:
            continue
        if namespace in BUILT_IN_NAMESPACES:
            continue
        if not is_identifier(namespace) or not is_identifier(name):
            raise ExportError(f"cannot export node {node.name}: its operator {shown(str(target))} is not "
                              "torch.ops.<identifier>.<identifier>.")
        out.setdefault(namespace, set()).add(name)
    return out


def _registrars(namespaces: set[str]) -> list[tuple[str, str, set[str] | None, bool]]:
    """(module name, namespace, operators it defines or None when unknown, whether a DEF library)
    for every imported module whose globals hold a defining ``Library`` or a ``custom_op``."""
    custom_op = getattr(torch.library, "CustomOpDef", None)
    found: list = []
    with warnings.catch_warnings():  # isinstance on deprecated module globals warns (torch.distributed.reduce_op)
        warnings.simplefilter("ignore")
        _scan_modules(namespaces, custom_op, found)
    return found


def _scan_modules(namespaces: set[str], custom_op: type | None, found: list) -> None:
    """``_registrars``' walk over ``sys.modules``, appending to ``found``."""
    for name, module in sorted(sys.modules.items()):
        table = getattr(module, "__dict__", None)
        if not isinstance(table, dict) or getattr(module, "__name__", None) != name or name == "__main__":
            continue
        for value in list(table.values()):
            try:
                is_library = isinstance(value, torch.library.Library)
                is_custom_op = custom_op is not None and isinstance(value, custom_op)
            except Exception:  # noqa: BLE001 - a module global whose __class__ raises
                continue
            if is_library:
                if value.kind in _DEFINING_KINDS and value.ns in namespaces:
                    found.append((name, value.ns, fx_compat.op_definitions(value), value.kind == "DEF"))
            elif is_custom_op:
                defs = fx_compat.op_definitions(value)
                for qualified in defs or ():
                    if qualified.partition("::")[0] in namespaces:
                        found.append((name, qualified.partition("::")[0], defs, True))


def _in_plain_torch(ops: list[tuple[str, str]]) -> dict[tuple[str, str], bool]:
    """Whether ``import torch`` alone defines each (namespace, operator): asked once per process of a
    fresh ``python -I`` (nothing else imported there)."""
    todo = [op for op in ops if op not in _plain_torch_has]
    if todo:
        with tempfile.TemporaryDirectory(prefix="fxstudio-ops-") as folder:
            try:
                proc = subprocess.run([sys.executable, "-I", "-c", _PROBE, json.dumps(todo)], cwd=folder,
                                      capture_output=True, text=True, timeout=120, env=subprocess_env(1))
                answer = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
            except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
                answer = {}
        for ns, name in todo:
            if f"{ns}::{name}" in answer:
                _plain_torch_has[(ns, name)] = bool(answer[f"{ns}::{name}"])
    return {op: _plain_torch_has.get(op, False) for op in ops}


def add_registration_imports(graphs: Iterable[torch.fx.Graph], namer: ImportNamer) -> None:
    """Add to ``namer`` the import of each module that defines an operator the graphs call;
    ``ExportError`` for an operator that neither an imported module nor ``import torch`` defines."""
    wanted: dict[str, set[str]] = {}
    for graph in graphs:
        for ns, names in called_ops(graph).items():
            wanted.setdefault(ns, set()).update(names)
    if not wanted:
        return
    registrars = _registrars(set(wanted))
    unknown = []
    for ns in sorted(wanted):
        for name in sorted(wanted[ns]):
            module = _defining_module(registrars, ns, name)
            if module is None:
                unknown.append((ns, name))
            else:
                _add_import(namer, module, ns)
    missing = [op for op, there in _in_plain_torch(unknown).items() if not there]
    if missing:
        ns, name = missing[0]
        raise ExportError(
            f"cannot export this graph: it calls torch.ops.{ns}.{name}, and no imported Python module "
            f"registers that operator of the namespace '{ns}' (nor does `import torch` alone), so the "
            f"exported file would miss the import that registers torch.ops.{ns}. Define the operator with "
            "torch.library in an importable module (or the model file) and import it before exporting."
        )


def _defining_module(registrars: list, ns: str, name: str) -> str | None:
    """The module that defines ``ns::name``: the one whose library lists it; else, when libraries do
    not say what they define, the first module with a DEF library of the namespace, then any."""
    qualified = f"{ns}::{name}"
    exact = [mod for mod, space, defs, _ in registrars if space == ns and defs is not None and qualified in defs]
    if exact:
        return exact[0]
    unsure = sorted(((not is_def, len(mod), mod) for mod, space, defs, is_def in registrars if space == ns and defs is None))
    return unsure[0][2] if unsure else None


def _add_import(namer: ImportNamer, module: str, ns: str) -> None:
    user = namer.user_module
    if user is not None and module == user.__name__:
        if namer.user_import is None:
            raise ExportError(f"cannot export this graph: torch.ops.{ns} is registered by the model file, "
                              "which the exported file cannot import.")
        module = namer.user_import
        if f"torch.ops.{ns}" not in namer.user_names:
            namer.user_names.append(f"torch.ops.{ns}")
    if not is_attribute_path(module):
        raise ExportError(f"cannot export this graph: torch.ops.{ns} is registered by the module {module!r}, "
                          "whose name cannot be imported.")
    namer.lines[f"import {module}  # noqa: F401 - registers torch.ops.{ns}"] = None
    if module.split(".")[0] != "torch" and (user is None or module != namer.user_import):
        namer.other_modules[module] = None
