"""The Python types a ``.pt2`` program's input and output structure names, made readable safely.

A program exported from a Hugging Face model returns a ``ModelOutput`` (``CausalLMOutputWith...``);
its archive records that as the type name ``transformers.modeling_outputs.CausalLM...`` in the
serialized pytree specs (``module_call_graph[*].signature.in_spec``/``out_spec``), and torch can only
rebuild a spec whose type is registered with its pytree in this process. For each type name that is
not registered, this module either

- imports the class, when its top-level package is an installed distribution (found by
  ``importlib.metadata``, its files under a site-packages folder: never a file beside the archive
  or in the working folder), no part of the module path starts with ``_``, and the class is a
  registered pytree type once its module is imported (``transformers`` registers every
  ``ModelOutput`` subclass when it is defined); or
- rewrites the spec to a plain container: a ``dict`` with the same keys when the spec's context is
  its list of keys (as for ``ModelOutput``), else a ``tuple``. The graph opens and runs either way.

The notes say which was done. Pytree contexts that name Python objects (``{"__enum__": ...}``,
which torch resolves by importing the module they name) are refused.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import re
import site
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from fxstudio.core import fx_compat
from fxstudio.core.code_names import shown

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_NAMEDTUPLE = "collections.namedtuple"
_TYPE_NAME = re.compile(r'"type": *"([^"]*)"')


def resolve_spec_types(program: dict, refuse: Callable[[str], Exception]) -> list[str]:
    """Make every pytree type that ``program`` (an archive's parsed ``model.json``) names readable.

    Imports what may be imported and rewrites the rest in ``program`` in place (see the module
    docstring); returns the notes. ``refuse(what)`` makes the error for a context that names code.
    """
    notes: dict[str, None] = {}
    graph_module = program.get("graph_module") if isinstance(program, dict) else None
    entries = graph_module.get("module_call_graph") if isinstance(graph_module, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        signature = entry.get("signature") if isinstance(entry, dict) else None
        if not isinstance(signature, dict):
            continue
        for key, role in (("in_spec", "input"), ("out_spec", "output")):
            text = signature.get(key)
            if not isinstance(text, str) or _all_known(text):
                continue
            try:
                protocol, schema = json.loads(text)
            except (ValueError, TypeError):
                continue  # torch reports a malformed spec itself
            if _fix_schema(schema, role, notes, refuse):
                signature[key] = json.dumps([protocol, schema])
    return list(notes)


def _all_known(text: str) -> bool:
    """Fast path (thousands of specs in a large program): every type named is registered, no enums."""
    if "__enum__" in text or "\\u" in text or _NAMEDTUPLE in text:  # escapes, enums, namedtuple classes: look closer
        return False
    return all(fx_compat.pytree_type_registered(n) for n in _TYPE_NAME.findall(text))


def _fix_schema(schema: Any, role: str, notes: dict[str, None], refuse) -> bool:
    """Walk one serialized TreeSpec; True when something in it was rewritten."""
    if not isinstance(schema, dict):
        return False
    changed = False
    name = schema.get("type")
    context = schema.get("context")
    children = schema.get("children_spec") if isinstance(schema.get("children_spec"), list) else []
    if isinstance(context, str) and _names_object(context):
        raise refuse(f"the {role} structure's pytree context {shown(context[:80])} names a Python object "
                     "(torch would import its module)")
    if isinstance(name, str):
        if name == _NAMEDTUPLE and isinstance(context, str):
            if not _make_registered(context, role, notes):
                notes[f"the {role} namedtuple {context} is not importable here: it is rebuilt as a tuple"] = None
                schema["type"], schema["context"] = "builtins.tuple", "null"
                changed = True
        elif not fx_compat.pytree_type_registered(name) and not _make_registered(name, role, notes):
            keys = _keys(context, len(children))
            if keys is not None:
                schema["type"] = "builtins.dict"
                notes[f"the {role} type {name} is not importable here (its package is not installed, or it is "
                      f"not a registered pytree type): the {role} is a dict with its keys ({', '.join(keys)})"] = None
            else:
                schema["type"], schema["context"] = "builtins.tuple", "null"
                notes[f"the {role} type {name} is not importable here: the {role} is a tuple of its parts"] = None
            changed = True
    for child in children:
        changed = _fix_schema(child, role, notes, refuse) or changed
    return changed


def _names_object(context: str) -> bool:
    """Whether the context, parsed as torch parses it, holds an ``{"__enum__": ...}`` object (torch's
    ``enum_object_hook`` imports the module such an object names)."""
    try:
        value = json.loads(context)
    except ValueError:
        return "__enum__" in context
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "__enum__" in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _keys(context: Any, count: int) -> list[str] | None:
    """The context as a list of ``count`` string keys (how dict-like types serialize it), else None."""
    try:
        keys = json.loads(context) if isinstance(context, str) else None
    except ValueError:
        return None
    if isinstance(keys, list) and len(keys) == count and all(isinstance(k, str) for k in keys):
        return keys
    return None


def _make_registered(name: str, role: str, notes: dict[str, None]) -> bool:
    """Import the class ``name`` names when the rules allow it; True when torch can then read it."""
    if fx_compat.pytree_type_registered(name):
        return True
    module_name, _, _ = name.rpartition(".")
    if not importable_package_module(module_name):
        return False
    try:
        importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - an installed package that fails to import: use the fallback
        return False
    if not fx_compat.pytree_type_registered(name):
        return False
    notes[f"the {role} type {name} was imported from the installed package {module_name.split('.')[0]} "
          "(a registered pytree type)"] = None
    return True


def importable_package_module(module_name: str) -> bool:
    """Whether ``module_name`` may be imported to read an archive: a dotted path of public names whose
    top-level package is an installed distribution living under a site-packages folder."""
    parts = module_name.split(".") if module_name else []
    if not parts or not all(_IDENT.match(p) for p in parts):
        return False
    top = parts[0]
    if top not in _installed_packages():
        return False
    try:
        spec = importlib.util.find_spec(top)  # for a top-level name: finds, does not import
    except (ImportError, ValueError):
        return False
    origin = getattr(spec, "origin", None) if spec is not None else None
    if not origin:
        return False
    where = Path(origin).resolve()
    return any(where.is_relative_to(root) for root in _site_roots())


@lru_cache(maxsize=1)
def _installed_packages() -> frozenset[str]:
    """Top-level import names of the installed distributions."""
    try:
        return frozenset(importlib.metadata.packages_distributions())
    except Exception:  # noqa: BLE001 - broken metadata: import nothing
        return frozenset()


def _site_roots() -> list[Path]:
    roots = set()
    for key in ("purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(Path(path).resolve())
    try:
        roots.update(Path(p).resolve() for p in site.getsitepackages())
    except AttributeError:  # virtualenv's old site module
        pass
    return sorted(roots)
