"""Running a pass on a copy of the edited module, with its failures contained.

The pass gets a *working copy*: its own graph (a deep copy, node metadata shallow-copied), its own
``GraphModule`` class (recompiling it changes nobody else's code; compiling is deferred, so the pass's
own ``recompile()`` is free and the result is compiled once, after the pass) and its own module objects, so
replacing a submodule, a parameter or a buffer changes the copy only. Tensors are shared with the
document for the built-in passes (none writes into a tensor). A user's pass gets clones, since code
such as ``conv.weight.data.mul_(2)`` would otherwise write into the loaded model; after the pass,
every clone still bitwise equal to its original is swapped back for it, so only the tensors the pass
changed stay copies (copy on write, as seen from the document).

Whatever goes wrong (the pass raises, returns something that is not a module, leaves a graph that
fails ``lint()`` or does not recompile, changes the number, order or kind of the model's inputs, or
gives a result that does not run on the model's example inputs) is an ``EditRefused`` naming the
pass, the exception and the line of the pass file; the document is never touched. How a pass is
called (its kinds, ``example_inputs``, keyword arguments) is ``calling``; the result's trial run
and the shapes it records are ``trial``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.pass_base import PassResult

from fxstudio.core import heavy_imports
from fxstudio.core.threads import choose_for, torch_threads
from fxstudio.core.gc_pause import collections_off
from fxstudio.core import fx_compat
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import user_frame
from fxstudio.core.module_state import CannotCopy, run_copy
from fxstudio.core.passes.calling import PassInputs, call_pass
from fxstudio.core.passes.trial import (has_unfolded_constants, placeholder_kinds, record_shapes, restore_input_names,
                                        trial_run)


@dataclass
class WorkingCopy:
    """A copy of a graph module for a pass to change, and the original of every cloned tensor
    (``clones``: id of the clone -> (clone, original))."""

    module: torch.fx.GraphModule
    clones: dict[int, tuple[torch.Tensor, torch.Tensor]]


def root_tensor_attrs(gm: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The plain tensor attributes of ``gm`` itself (not parameters or buffers), by name."""
    return {k: v for k, v in vars(gm).items() if isinstance(v, torch.Tensor)}


def working_copy(gm: torch.fx.GraphModule, share_tensors: bool) -> WorkingCopy:
    """A copy of ``gm`` for a pass (see the module docstring); ``share_tensors=False`` clones
    every parameter, buffer and tensor attribute.

    What ``copy.deepcopy(gm)`` builds, less its cost: the graph is copied (node metadata shallow),
    the module tree object by object (``run_copy``), and the copy gets a class of its own whose
    ``recompile()`` defers compiling (``fx_compat.own_graph_module_class``): the pass's own
    ``recompile()`` is free and the runner compiles once, after the pass."""
    clones: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def clone(t: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            data = t.detach().clone()
        c = torch.nn.Parameter(data, requires_grad=t.requires_grad) if isinstance(t, torch.nn.Parameter) else data
        clones[id(c)] = (c, t)
        return c

    def keep(t: torch.Tensor) -> torch.Tensor:
        return t

    fn = keep if share_tensors else clone
    with collections_off():
        graph = copy.deepcopy(gm.graph)
        try:
            work = run_copy(gm, parameters=fn, buffers=fn)  # the root too: tied weights stay tied
        except CannotCopy as exc:
            raise EditRefused(f"Passes cannot run on this model: it holds a TorchScript submodule ({exc}).") from None
    cls, deferred = fx_compat.own_graph_module_class(gm)
    work.__class__ = cls
    work.__dict__["_graph"] = graph
    graph.owning_module = work
    if not deferred:
        fx_compat.compile_now(work)
    for hook in getattr(gm, "_deepcopy_hooks", ()):
        hook(work)
    return WorkingCopy(work, clones)


def _bitwise_same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if type(a) is not type(b) or a.dtype != b.dtype or a.device != b.device or a.shape != b.shape \
            or a.stride() != b.stride() or a.requires_grad != b.requires_grad:
        return False
    try:
        return bool(torch.equal(a, b))  # not differentiable: no detach needed
    except Exception:  # noqa: BLE001 - a tensor that cannot be compared stays a copy
        return False


def reshare(module: torch.nn.Module, clones: dict[int, tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Put back the original of every clone the pass left bitwise unchanged, in ``module``'s tree."""
    if not clones:
        return
    decided: dict[int, torch.Tensor] = {}

    def original(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or id(t) not in clones:
            return t
        if id(t) not in decided:
            c, orig = clones[id(t)]
            decided[id(t)] = orig if c is t and _bitwise_same(t, orig) else t
        return decided[id(t)]

    for m in module.modules():
        body = m.__dict__
        for values in (body["_parameters"], body["_buffers"], body):  # values replaced, no key added
            for k, t in values.items():
                if id(t) in clones and isinstance(t, torch.Tensor):
                    values[k] = original(t)


def _where(exc: BaseException, path: Path | None) -> str:
    if path is None:
        return ""
    frame = user_frame(exc.__traceback__, path)
    return f" at {path.name}:{frame.lineno} (`{(frame.line or '').strip()}`)" if frame else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""


@dataclass
class PassRun:
    """A pass's checked result: the module, the per-node analysis an Interpreter pass computed
    (attribute name -> {node of ``module``'s graph: value}), notes for the edit's label (the
    result's trial run skipped, constants folded, inputs renamed) and whether the pass worked on the
    graph it was given (``in_place``: its node metadata may then be compared with the document's)."""

    module: torch.fx.GraphModule
    analysis: dict[str, dict[torch.fx.Node, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    in_place: bool = False  # the result holds the working copy's own graph: its nodes are the ones it was given


def run_pass_object(obj: Any, gm: torch.fx.GraphModule, label: str, path: Path | None = None,
                    share_tensors: bool = False, inputs: PassInputs | None = None) -> torch.fx.GraphModule:
    """``run_pass(...).module``: the checked, recompiled result alone."""
    return run_pass(obj, gm, label, path, share_tensors, inputs).module


def run_pass(obj: Any, gm: torch.fx.GraphModule, label: str, path: Path | None = None,
             share_tensors: bool = False, inputs: PassInputs | None = None) -> PassRun:
    """Run the pass ``obj`` (a function ``f(gm) -> GraphModule | PassResult | None``, a Transformer,
    Interpreter or PassBase subclass, a PassBase instance, a class of callable passes: see
    ``calling``) on a working copy of ``gm`` and return the checked, recompiled result; ``gm`` is
    never changed. ``path``: the pass file, whose line a failure names. ``inputs``: the model's
    example inputs and the edit's keyword arguments; with example inputs the result must run on
    them once (``trial``), which also records the shapes it measured; None: no run (an API caller).
    No cyclic collection runs meanwhile (``collections_off``; the window's collector keeps it off
    on worker threads anyway). torch runs on the thread count ``threads.choose_for`` gives the graph:
    a pass that calibrates or profiles on the inputs runs them as a compare would."""
    heavy_imports.wait()  # a pass may import torch._dynamo: never while the window's warm-up does
    example = tuple((inputs.example_inputs if inputs is not None else None) or ())
    with collections_off(), torch_threads(choose_for(gm, example).count):
        return _run_checked(obj, gm, label, path, share_tensors, inputs)


def _run_checked(obj: Any, gm: torch.fx.GraphModule, label: str, path: Path | None,
                 share_tensors: bool, inputs: PassInputs | None) -> PassRun:
    working = working_copy(gm, share_tensors)
    work = working.module
    given = work.graph
    try:
        called = call_pass(obj, work, label, inputs or PassInputs())
    except KeyboardInterrupt:
        raise
    except EditRefused as exc:
        if path is None:
            raise
        raise EditRefused(f"The pass {label} refused{_where(exc, path)}: {exc.message}") from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        raise EditRefused(f"The pass {label} raised {type(exc).__name__}{_where(exc, path)}: {_first_line(exc)}; "
                          "nothing was changed.") from None
    out = called.out
    if isinstance(out, PassResult):
        out = out.graph_module
    if out is None:
        out = work
    if not isinstance(out, torch.fx.GraphModule):
        raise EditRefused(f"The pass {label} returned a {type(out).__name__}, not a GraphModule, a PassResult "
                          "or None (None: it changed the module in place); nothing was changed.")
    try:
        out.graph.lint()
    except Exception as exc:  # noqa: BLE001 - a broken graph
        raise EditRefused(f"The pass {label} left a graph that fails lint(): {_first_line(exc)}; "
                          "nothing was changed.") from None
    run = PassRun(out, called.analysis if out is work else {}, in_place=out.graph is given)
    _check_inputs(gm, out, label, run.notes)
    try:
        fx_compat.compile_now(out)  # the one compile (a working copy defers the pass's own recompile())
    except Exception as exc:  # noqa: BLE001 - code that does not compile
        raise EditRefused(f"The pass {label} left a graph whose code does not compile ({type(exc).__name__}: "
                          f"{_first_line(exc)}); nothing was changed.") from None
    example = inputs.example_inputs if inputs is not None else None
    metas = _trial(out, label, example, run.notes) if inputs is not None else None
    record_shapes(out, metas)
    reshare(out, working.clones)
    return run


def _check_inputs(gm: torch.fx.GraphModule, out: torch.fx.GraphModule, label: str, notes: list[str]) -> None:
    """Refuse a result whose inputs differ in count, order or kind (the example inputs would no
    longer fit); inputs only renamed (``make_fx`` calls them ``arg0_1``…) get their names back
    where no other node holds them, else keep the new ones (noted)."""
    before = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    after = [n.target for n in out.graph.nodes if n.op == "placeholder"]
    if before == after:
        return
    if placeholder_kinds(gm.graph) != placeholder_kinds(out.graph):
        raise EditRefused(f"The pass {label} changed the model's inputs ({', '.join(map(str, before)) or 'none'} → "
                          f"{', '.join(map(str, after)) or 'none'}): the example inputs would no longer fit; "
                          "nothing was changed.")
    if not restore_input_names(gm.graph, out.graph):
        notes.append(f"inputs renamed {', '.join(map(str, before))} → {', '.join(map(str, after))}")


def _trial(out: torch.fx.GraphModule, label: str, example: tuple | None, notes: list[str]) -> dict | None:
    """The trial run of a result (``trial.trial_run``): its node metadata, or None without example
    inputs (noted). A ``FoldedGraphModule`` whose folding has not run gets it (its own ``__call__``
    would, and the edited module will not have that ``__call__``). ``EditRefused`` when it does not run."""
    if example is None:
        if has_unfolded_constants(out):
            _fold(out, label, notes)
        notes.append("not run: the model has no example inputs")
        return None
    try:
        return trial_run(out, example)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the result raises, it is not installed
        failure = exc
    if has_unfolded_constants(out):
        _fold(out, label, notes)
        try:
            return trial_run(out, example)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001
            failure = exc
    raise EditRefused(f"The pass {label}'s result does not run on the example inputs ({type(failure).__name__}: "
                      f"{_first_line(failure)}); nothing was changed.")


def _fold(out: torch.nn.Module, label: str, notes: list[str]) -> None:
    try:
        out.run_folding()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        raise EditRefused(f"The pass {label}'s result could not fold its constants ({type(exc).__name__}: "
                          f"{_first_line(exc)}); nothing was changed.") from None
    notes.append("constants folded")
