"""Reading a ``torch.export`` archive (``.pt2``) and finding example inputs for it."""

from __future__ import annotations

import weakref
from pathlib import Path

import torch

from fxstudio.core.budgets import BudgetExceeded, DataBudget
from fxstudio.core.errors import LoadError
from fxstudio.core.loading.inputs import inputs_from_shapes
from fxstudio.core.loading.pt2_limits import shape_text

# The data budget each program was read under: its example inputs are counted against the same
# one (the whole graph's), after what the archive described rather than stored (``pt2_archive``).
_BUDGETS: "weakref.WeakKeyDictionary[object, DataBudget]" = weakref.WeakKeyDictionary()


def load_exported_program(path: Path, *, trust: bool = False, on_structure=None, editable: bool = False):
    """The archive's ``ExportedProgram`` and notes; without ``trust`` nothing in it runs (``pt2_archive``).

    ``on_structure``: called with a view-only ``LoadedModel`` of the program's graph (``pt2_structure``)
    as soon as its JSON is checked, before the weights are read and torch rebuilds the program.
    ``editable`` (issue #28): where ``pt2_editable`` reads the program, an ``EditableProgram`` (the
    module ``ep.module()`` would give, built without torch's rebuild) instead of the program."""
    from fxstudio.core.loading.pt2_archive import load_archive

    on_checked = None
    if on_structure is not None:
        from fxstudio.core.loading.pt2_structure import structure_model

        def on_checked(program):
            preview = structure_model(path, program)
            if preview is not None:
                on_structure(preview)
    budget = DataBudget(str(path))
    ep, notes = load_archive(path, trust=trust, on_checked=on_checked, budget=budget,
                             editable=_editable_program if editable else None)
    try:
        _BUDGETS[ep.facts if isinstance(ep, EditableProgram) else ep] = budget
    except TypeError:  # not weakly referable: the inputs get a budget of their own
        pass
    return ep, notes


class EditableProgram:
    """An archive opened without torch's rebuild: ``module`` (what ``ep.module()`` gives) and
    ``facts`` (what ``program_example_inputs`` reads of a program)."""

    def __init__(self, module, facts):
        self.module = module
        self.facts = facts


def _editable_program(program: dict, payloads: tuple[dict, dict], sample) -> EditableProgram | None:
    from fxstudio.core.loading.pt2_editable import ProgramFacts, editable_module

    module = editable_module(program, sample, payloads)
    return None if module is None else EditableProgram(module, ProgramFacts(program, module, sample))


def program_example_inputs(ep, path: Path, input_shapes) -> tuple[tuple, str]:
    """Positional inputs for ``ep.module()``: given shapes, else the program's stored example inputs
    (keyword ones included, put in their positional slots), else random values of its input shapes.

    Non-tensor inputs the program recorded (``use_cache=False``: constants of its signature) are
    always used as recorded; ``--input-shape`` gives the tensor inputs only. Inputs made from shapes
    are counted against the program's data budget before any is made (``LoadError`` past it).
    """
    budget = _BUDGETS.get(ep) or DataBudget(str(path))
    specs = [s for s in ep.graph_signature.input_specs
             if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    constant = torch.export.graph_signature.ConstantArgument
    if input_shapes:
        tensors = [s for s in specs if not isinstance(s.arg, constant)]
        _check_shapes(path, input_shapes, [vals.get(s.arg.name) for s in tensors])
        given = iter(inputs_from_shapes(input_shapes, budget=budget))
        leaves = [s.arg.value if isinstance(s.arg, constant) else next(given) for s in specs]
        return _positional(ep, leaves), "--input-shape"
    stored = getattr(ep, "example_inputs", None)
    if stored:
        args, kwargs = stored
        found = _stored_positional(ep, tuple(args), dict(kwargs or {}))
        if found is not None:
            how = " (keyword inputs passed in their positional slots)" if kwargs else ""
            return found, f"the program's stored example inputs{how}"
    gen = torch.Generator().manual_seed(0)
    tensors = [s for s in specs if not isinstance(s.arg, constant)]
    shapes = {s.arg.name: _shape_of(path, s.arg.name, vals.get(s.arg.name)) for s in tensors}
    for s in tensors:  # all counted before any is made
        if shapes[s.arg.name] is not None:
            _take(budget, s.arg.name, shapes[s.arg.name], vals[s.arg.name].dtype)
    leaves = [s.arg.value if isinstance(s.arg, constant)
              else _value_like(path, s.arg.name, vals.get(s.arg.name), shapes[s.arg.name], gen) for s in specs]
    return _positional(ep, leaves), "random values of the program's input shapes"


def _shape_of(path: Path, name: str, val) -> list[int] | None:
    """The sizes of a tensor input's recorded value (symbolic ones at their hints); None for others."""
    if not isinstance(val, torch.Tensor):
        return None
    shape = [_size(s) for s in val.shape]
    if any(s < 0 for s in shape):
        raise LoadError(f"{path}: the program's input {name!r} is recorded with a negative size "
                        f"({', '.join(map(str, shape))}); give the inputs with --input-shape.")
    return shape


def _take(budget: DataBudget, name: str, shape: list[int], dtype: torch.dtype) -> None:
    """Count input ``name``'s random values against ``budget``; ``LoadError`` past it."""
    what = f"input {name!r} (random values of its recorded shape, {shape_text(shape)} {_dtype_name(dtype)})"
    try:
        budget.take_tensor(shape, dtype, what)
    except BudgetExceeded as exc:
        raise LoadError(exc.message) from None


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _value_like(path: Path, name: str, val, shape: list[int] | None, gen: torch.Generator):
    """A value for an input of the program's recorded ``meta['val']`` (seeded random floats), of
    ``shape`` (``_shape_of``, already counted against the budget)."""
    if isinstance(val, (bool, int, float, str)) or val is None:
        return val
    if isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool):
        hint = getattr(getattr(val, "node", None), "hint", None)
        return hint if hint is not None else 1
    if not isinstance(val, torch.Tensor) or shape is None:
        raise LoadError(
            f"{path}: the program does not store example inputs and its input '{name}' is a "
            f"{type(val).__name__}, not a tensor of known shape; give the inputs with --input-shape."
        )
    try:
        if val.dtype.is_floating_point:
            return torch.randn(shape, generator=gen, dtype=val.dtype)
        return torch.zeros(shape, dtype=val.dtype)
    except (RuntimeError, TypeError, ValueError) as exc:  # a dtype randn or zeros cannot make
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise LoadError(f"{path}: cannot make a {_dtype_name(val.dtype)} value for the program's input {name!r} "
                        f"({reason}); give the inputs with --input-shape.") from None


def _size(dim) -> int:
    """A dimension's size: itself, or a symbolic size's example value (its hint)."""
    if isinstance(dim, int):
        return dim
    hint = getattr(getattr(dim, "node", None), "hint", None)
    return int(hint) if hint is not None else 2


def _call_structure(ep) -> tuple[int, list[str]] | None:
    """(number of positional args, keyword names in order) of the program's ``in_spec``, or None
    when its inputs are nested beyond one level of positional and keyword arguments."""
    spec = ep.call_spec.in_spec
    if spec is None:
        return None
    from fxstudio.core import fx_compat

    try:
        args, kwargs = fx_compat.tree_unflatten(list(range(spec.num_leaves)), spec)
    except Exception:  # noqa: BLE001 - an unusual spec: keep the leaves as they are
        return None
    return len(args), list(kwargs)


def _positional(ep, leaves: list) -> tuple:
    """The flat input ``leaves`` (in the program's input order) as the positional arguments of
    ``ep.module()``, whose forward takes the positional then the keyword arguments, in order."""
    spec = ep.call_spec.in_spec
    if spec is None or _call_structure(ep) is None:
        return tuple(leaves)
    from fxstudio.core import fx_compat

    args, kwargs = fx_compat.tree_unflatten(list(leaves), spec)
    return tuple(args) + tuple(kwargs.values())


def _stored_positional(ep, args: tuple, kwargs: dict) -> tuple | None:
    """The stored ``(args, kwargs)`` as positional arguments of ``ep.module()``; None when they do
    not fit the program's signature."""
    if not kwargs:
        return args
    structure = _call_structure(ep)
    if structure is None or structure[0] != len(args) or set(structure[1]) != set(kwargs):
        return None
    return args + tuple(kwargs[k] for k in structure[1])


def _check_shapes(path: Path, shapes, vals) -> None:
    """Refuse ``--input-shape`` values that the program's static input sizes rule out."""
    expected = [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in vals]
    if len(shapes) != len(expected):
        raise LoadError(
            f"{path}: the program takes {len(expected)} input(s); --input-shape was given {len(shapes)} time(s)."
        )
    for i, (given, want) in enumerate(zip(shapes, expected)):
        if want is None:
            continue
        fits = len(given) == len(want) and all(
            not isinstance(w, int) or int(g) == w for g, w in zip(given, want)
        )
        if not fits:
            text = "×".join(str(w) for w in want)
            raise LoadError(
                f"{path}: input {i + 1} was exported with shape {text}; --input-shape "
                f"{','.join(map(str, given))} does not fit it (only dynamic sizes may differ)."
            )
