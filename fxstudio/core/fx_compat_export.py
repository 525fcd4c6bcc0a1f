"""The ``torch.export`` privates fxstudio relies on to open ``.pt2`` archives quickly: the other
half of ``fx_compat``'s door (same rule: each accessor names the private it reads and its
fallback; ``tests/core/test_fx_compat.py`` allows torch privates in these two modules only).

Issue #15: on a 10k-node program ``torch.export.load`` spends most of its time in
``serialize._dict_to_dataclass`` (one ``typing.get_type_hints`` per object) and ``ep.module()`` in
``unflatten._assign_attr`` (a regular-expression scan of a module's children for every weight:
quadratic in a ``Sequential``'s length). Both are replaced here by walks that build the same objects.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


def payload_config(config_json: Any) -> Any:
    """An archive's parsed weights/constants configuration as ``schema.PayloadConfig`` (what
    ``_package._load_payload_config`` builds, by ``program_schema``'s faster walk)."""
    return program_schema(config_json, "PayloadConfig")


def program_schema(model_json: Any, type_name: str = "ExportedProgram") -> Any:
    """The archive's parsed program JSON as torch's ``schema.ExportedProgram`` dataclasses.

    torch's ``serialize._dict_to_dataclass`` calls ``typing.get_type_hints`` for every object it
    builds (two thirds of ``torch.export.load`` on a 10k-node program, issue #15); this is the same
    walk with the hints looked up once per class. Fallback (a torch without ``_dict_to_dataclass``'s
    helpers, ``_resolve_schema_cls`` and ``union._Union``): torch's own ``_dict_to_dataclass``."""
    from torch._export.serde import schema

    try:
        from torch._export.serde.serialize import _resolve_schema_cls
        from torch._export.serde.union import _Union
    except ImportError:
        from torch._export.serde.serialize import _dict_to_dataclass

        return _dict_to_dataclass(getattr(schema, type_name), model_json)
    return _SchemaDecoder(schema, _resolve_schema_cls, _Union).convert(getattr(schema, type_name), model_json)


class _SchemaDecoder:
    """``serialize._dict_to_dataclass`` compiled once per schema type: a converter per type
    expression, with its type hints and fields looked up once (same checks, same objects)."""

    def __init__(self, schema, resolve, union_base):
        import dataclasses
        import types
        import typing

        self.schema, self.resolve, self.union_base = schema, resolve, union_base
        self.dataclasses, self.typing, self.union_types = dataclasses, typing, (typing.Union, types.UnionType)
        self.plans: dict[Any, Callable] = {}

    def convert(self, cls, data):
        """``data`` (parsed JSON) as an instance of the schema type ``cls``, as torch builds it."""
        return self.plan(cls)(data)

    def plan(self, cls) -> Callable:
        """The converter of one type expression (built on first use; recursive types resolve lazily)."""
        try:
            return self.plans[cls]
        except KeyError:
            pass
        except TypeError:  # an unhashable type expression: no cache
            return self._build(cls)
        cell: list[Callable] = []
        self.plans[cls] = lambda data: cell[0](data)  # stands in while a recursive type builds
        cell.append(self._build(cls))
        self.plans[cls] = cell[0]
        return cell[0]

    def _build(self, cls) -> Callable:
        typing, plan = self.typing, self.plan
        cls = self.resolve(cls)
        if isinstance(cls, str):
            raise AssertionError(f"Unresolved class type: '{cls}'.")
        origin = typing.get_origin(cls)
        if origin is typing.Annotated:
            return plan(cls.__origin__)
        if origin in self.union_types and type(None) in typing.get_args(cls):
            args = typing.get_args(cls)
            if len(args) != 2:
                raise AssertionError(f"expected 2 type args, got {len(args)}")
            inner = plan(args[0])
            return lambda data: None if data is None else inner(data)
        if isinstance(cls, type) and issubclass(cls, self.union_base):
            hints = typing.get_type_hints(cls, globalns=vars(self.schema))

            def union(data):
                if not isinstance(data, dict) or len(data) != 1:
                    raise AssertionError(f"expected a dict with 1 key, got {type(data).__name__}")
                key, value = next(iter(data.items()))
                if not isinstance(key, str):
                    raise AssertionError(f"expected str key, got {type(key).__name__}")
                return cls.create(**{key: plan(hints[key])(value)})
            return union
        if self.dataclasses.is_dataclass(cls):
            hints = typing.get_type_hints(cls, globalns=vars(self.schema))
            fields = [(f.name, hints[f.name]) for f in self.dataclasses.fields(cls)]
            return lambda data: cls(**{name: plan(hint)(data[name]) for name, hint in fields if name in data})
        args = typing.get_args(cls)

        def other(data):
            if isinstance(data, list):
                return [plan(args[0])(d) for d in data] if data else data
            if isinstance(data, dict):
                return {k: plan(args[1])(v) for k, v in data.items()}
            if cls is float:
                return float(data)
            return data
        return other


# ----------------------------------------------------------------------------- torch.compile capture


def unlift(ep: Any) -> torch.nn.Module:
    """``ep.module()`` with ``torch.export._unlift._assign_attr`` (imported there from
    ``torch.export.unflatten``) replaced for the call by a direct walk down the weight's path.

    torch's version matches every child name of each module on the path against ``base(@N)?``
    (call names of a module used several times); when no name in the program holds an ``@``, the
    only match is the child named ``base`` itself, which the walk takes without the scan. Fallback
    (``_unlift`` without ``_assign_attr``, or a name with ``@``): plain ``ep.module()``."""
    try:
        import torch.export._unlift as unlift_module

        original = unlift_module._assign_attr
    except (ImportError, AttributeError):
        return ep.module()
    if _has_call_names(ep):
        return ep.module()

    def assign(from_obj, to_module, target, attr_kind, persistent=True):
        *prefix, field = target.split(".")
        for item in prefix:
            if not hasattr(to_module, item):
                setattr(to_module, item, torch.nn.Module())
            to_module = to_module._modules.get(item)
            if to_module is None:  # an attribute that is not a submodule: torch assigns nothing
                return
        original(from_obj, to_module, field, attr_kind, persistent)

    with _replaced(unlift_module, "_assign_attr", original, assign):
        return ep.module()


def _has_call_names(ep: Any) -> bool:
    """Whether a weight, constant or submodule name of ``ep`` holds an ``@`` (a call name)."""
    sig = ep.graph_signature
    names = [*ep.state_dict, *ep.constants, *sig.parameters, *sig.buffers, *sig.lifted_tensor_constants,
             *sig.lifted_custom_objs, *(name for name, _ in ep.graph_module.named_modules())]
    return any("@" in name for name in names)


@contextlib.contextmanager
def _replaced(module: Any, name: str, original: Any, replacement: Any) -> Iterator[None]:
    setattr(module, name, replacement)
    try:
        yield
    finally:
        setattr(module, name, original)



def archive_constants() -> Any:
    """The ``.pt2`` record names (``torch._C._export.pt2_archive_constants``, what
    ``torch.export.pt2_archive.constants`` re-exports) without importing that package, whose
    ``__init__`` imports the whole deserializer. Fallback: the public ``constants`` module."""
    try:
        from torch._C._export import pt2_archive_constants

        pt2_archive_constants.ARCHIVE_VERSION_PATH  # noqa: B018 - the names this reader needs
        return pt2_archive_constants
    except (ImportError, AttributeError):
        from torch.export.pt2_archive import constants

        return constants


def pytree_codegen(in_spec_text: str, out_spec_text: str | None, forward_arg_names: list[str] | None) -> Any:
    """The codegen ``ep.module()`` gives its graph (``torch.export._unlift._get_codegen``): a
    ``torch.fx.graph._PyTreeCodeGen`` over the archive's serialized specs (``torch.utils._pytree.
    treespec_loads``), built here because importing ``_unlift`` imports torch's deserializer and
    dynamo (about 1.5 s). No fallback: ImportError/AttributeError, and the caller opens the
    archive with torch's full load."""
    from torch.fx.graph import _PyTreeCodeGen, _PyTreeInfo
    from torch.utils._pytree import treespec_loads

    in_spec = treespec_loads(in_spec_text)
    out_spec = treespec_loads(out_spec_text) if out_spec_text else None
    if forward_arg_names:
        names = list(forward_arg_names)
    elif (in_spec.type is tuple and in_spec.num_children == 2 and in_spec.child(0).type is tuple
          and in_spec.child(1).type is dict):
        names = [f"arg_{i}" for i in range(in_spec.child(0).num_children)] + list(in_spec.child(1).context)
    else:
        names = [f"arg_{i}" for i in range(in_spec.num_children)]
    return _PyTreeCodeGen(_PyTreeInfo(names, in_spec, out_spec))
