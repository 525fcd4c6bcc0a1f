"""Sharing a model's weights between the modules of a document, and copies to run without touching them.

A document holds three views of one model: the module as loaded, the original traced graph and the
edited graph. ``share_graph_module`` builds the graph modules over the loaded one's submodules,
parameters and buffers (one copy of the weights, not three). Whatever could write into that shared
state works on a copy made for the occasion:

- a run (``compare_models``): ``run_copy`` gives fresh module objects (so ``.eval()`` changes
  nobody else's mode) with cloned buffers (batch-norm statistics, counters) and cloned parameters
  where the graph writes into them in place; other parameters stay shared, read-only under
  ``torch.no_grad``. ``tensors_written_by`` finds the tensors a graph may write into.
- shape refresh under ``FakeTensorMode`` (``fxstudio.core.edits.shapes``): ``run_copy`` with
  every tensor mapped to a fake one.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.same_computation import fetch_path

__all__ = ["share_graph_module", "run_copy", "copy_to_run", "tensors_written_by", "written_paths", "writes_buffers",
           "tensors_at", "state_tensors", "CannotCopy"]

# State-dict hooks and fx hooks that GraphModule.__deepcopy__ carries over (its __init__ drops them).
_PRESERVED_ATTRS = ("_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                    "_replace_hooks", "_create_node_hooks", "_erase_node_hooks", "_deepcopy_hooks")


_CONTAINERS = frozenset({dict, OrderedDict, list, set})
_TABLE_KEYS = frozenset(fx_compat.MODULE_TABLES)
_IMMUTABLE = frozenset({bool, int, float, str, type(None), tuple})


class CannotCopy(TypeError):
    """``run_copy`` cannot rebuild this module object by object (a TorchScript module)."""


def share_graph_module(gm: torch.fx.GraphModule, graph: torch.fx.Graph | None = None) -> torch.fx.GraphModule:
    """A new ``GraphModule`` of ``gm``'s class over ``graph`` (default: a copy of ``gm.graph``) that
    shares ``gm``'s submodules, parameters and buffers.

    It is what ``copy.deepcopy(gm)`` builds (same class name, children, mode, metadata and hooks;
    its own root, graph and code, generated when first used) without copying the state: adding or removing a
    top-level submodule of the result leaves ``gm`` as it was, while both see the same weights.
    """
    if graph is None:
        graph = copy.deepcopy(gm.graph)
    # A class of its own that generates code when first used (a call, ``.code``): a document builds
    # two of these per open, and a 10k-node graph's code takes ~0.3 s each to generate (issue #15).
    cls, _deferred = fx_compat.own_graph_module_class(gm)
    res = torch.nn.Module.__new__(cls)
    body = dict(gm.__dict__)
    body["_graph"] = graph
    init = fx_compat.deepcopy_init(gm)
    # A _CodeOnlyModule root makes GraphModule.__init__ carry over every child, parameter and
    # buffer by reference, not only those the graph names (as deepcopy does, minus the copying).
    init(res, fx_compat.code_only_module(body), graph)
    for attr in _PRESERVED_ATTRS:
        if attr in gm.__dict__:
            setattr(res, attr, copy.copy(gm.__dict__[attr]))
    res.meta = copy.copy(getattr(gm, "meta", {}))
    preserved = res.meta.get(getattr(torch.fx.graph_module, "_USER_PRESERVED_ATTRIBUTES_KEY", None) or "", None)
    if isinstance(preserved, dict):
        for name, value in preserved.items():
            setattr(res, name, value)
    for hook in getattr(gm, "_deepcopy_hooks", ()):
        hook(res)
    return res


def state_tensors(module: torch.nn.Module) -> list[torch.Tensor]:
    """Every parameter, buffer and plain tensor attribute of ``module`` and its submodules (each once)."""
    seen: dict[int, torch.Tensor] = {}
    for m in module.modules():
        for t in (*fx_compat.module_parameters(m).values(), *fx_compat.module_buffers(m).values()):
            if t is not None:
                seen.setdefault(id(t), t)
        for value in vars(m).values():
            if isinstance(value, torch.Tensor):
                seen.setdefault(id(value), value)
    return list(seen.values())


def _clone(t: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return t.detach().clone()


def run_copy(module: torch.nn.Module, *, clone: frozenset[int] | set[int] = frozenset(),
             parameters: Callable[[torch.Tensor], torch.Tensor] | None = None,
             buffers: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.nn.Module:
    """A copy of ``module`` to run (or to evaluate under a fake mode) without changing ``module``.

    Every module object is new (its own mode, hooks table and attribute dicts); graph modules
    keep their graph and compiled code (nothing is recompiled). Tensors are mapped once each, so
    tied weights stay tied: parameters by ``parameters`` (default: shared, except those whose
    ``id`` is in ``clone``), buffers and plain tensor attributes by ``buffers`` (default: cloned).
    Raises ``CannotCopy`` for a TorchScript module.
    """
    def default_parameter(p: torch.Tensor) -> torch.Tensor:
        if id(p) not in clone:
            return p
        return torch.nn.Parameter(_clone(p), requires_grad=p.requires_grad)

    map_parameter = parameters or default_parameter
    map_buffer = buffers or _clone
    tensors: dict[int, torch.Tensor] = {}
    modules: dict[int, torch.nn.Module] = {}

    def tensor(t: torch.Tensor | None, fn: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor | None:
        if t is None:
            return None
        out = tensors.get(id(t))
        if out is None:
            out = tensors[id(t)] = fn(t)
        return out

    def copy_module(m: torch.nn.Module) -> torch.nn.Module:
        done = modules.get(id(m))
        if done is not None:
            return done
        if isinstance(m, torch.jit.ScriptModule):
            raise CannotCopy(f"{type(m).__name__} is a TorchScript module")
        # object.__new__: no __init__ runs (a GraphModule's class holds its compiled forward,
        # which the copy shares; nothing is traced or recompiled; code not generated yet is
        # generated by each when first used).
        new = object.__new__(fx_compat.copy_class(m))
        modules[id(m)] = new
        body = {}
        for key, value in vars(m).items():
            kind = type(value)
            if key in _TABLE_KEYS:
                if key == "_parameters":
                    value = {k: tensor(p, map_parameter) for k, p in value.items()}
                elif key == "_buffers":
                    value = {k: tensor(b, map_buffer) for k, b in value.items()}
                else:
                    value = {k: copy_module(c) if c is not None else None for k, c in value.items()}
            elif kind in _CONTAINERS:  # hook tables and small caches: the copy's own
                value = kind() if not value else value.copy()
            elif kind in _IMMUTABLE:
                pass
            elif isinstance(value, torch.Tensor):
                value = tensor(value, map_parameter if isinstance(value, torch.nn.Parameter) else map_buffer)
            elif isinstance(value, (dict, list, set)):
                value = copy.copy(value)
            body[key] = value
        new.__dict__.update(body)
        return new

    return copy_module(module)


def tensors_written_by(gm: torch.fx.GraphModule, mutating: set[torch.fx.Node]) -> set[int]:
    """Ids of the parameters, buffers and tensor attributes of ``gm`` that running it may write
    into: those read by a ``get_attr`` upstream of a node in ``mutating`` (in-place ops, see
    ``fxstudio.core.inplace_ops.mutating_nodes``). Conservative: any upstream ``get_attr`` counts,
    since a view of a weight carries writes back to it."""
    if not mutating:
        return set()
    written: set[int] = set()
    seen: set[torch.fx.Node] = set()
    stack = [inp for node in mutating for inp in fx_compat.node_input_nodes(node)]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op == "get_attr":
            value = fetch_path(gm, str(node.target))
            if isinstance(value, torch.Tensor):
                written.add(id(value))
        stack.extend(fx_compat.node_input_nodes(node))
    return written


def written_paths(module: torch.nn.Module) -> set[str]:
    """Attribute paths (``get_attr`` targets) of the tensors a graph module may write into in place
    when it runs (see ``tensors_written_by``); empty for other modules."""
    if not isinstance(module, torch.fx.GraphModule):
        return set()
    from fxstudio.core.inplace_ops import mutating_nodes  # the in-place heuristic the runs use

    mutating = mutating_nodes(module)
    if not mutating:
        return set()
    ids = tensors_written_by(module, mutating)
    return {str(n.target) for n in module.graph.nodes
            if n.op == "get_attr" and id(fetch_path(module, str(n.target))) in ids}


def writes_buffers(module: torch.nn.Module) -> bool:
    """Whether running ``module`` may update buffers without an in-place op in a graph: a batch
    norm in training mode keeps running statistics, and a module of the user's own (not torch's,
    not a graph) that holds buffers or tensor attributes runs code nobody has looked at."""
    for m in module.modules():
        if isinstance(m, fx_compat.NORM_CLASSES):
            if m.training and m.track_running_stats:
                return True
        elif not isinstance(m, torch.fx.GraphModule) and not type(m).__module__.startswith("torch."):
            if fx_compat.module_buffers(m) or any(isinstance(v, torch.Tensor) for v in vars(m).values()):
                return True
    return False


def tensors_at(module: torch.nn.Module, paths: set[str]) -> set[int]:
    """Ids of the tensors of ``module`` at these attribute paths (paths it lacks are skipped)."""
    return {id(t) for t in (fetch_path(module, p) for p in paths) if isinstance(t, torch.Tensor)}


def copy_to_run(module: torch.nn.Module, *, written: set[str] | None = None, force: bool = False) -> torch.nn.Module:
    """``module`` itself when running it cannot change its state, else a ``run_copy`` that owns
    whatever the run may write: its buffers, and the weights at ``written`` (default:
    ``written_paths(module)``). ``force`` copies anyway (e.g. to switch the copy to eval mode).
    A TorchScript module is deep-copied instead."""
    clone = tensors_at(module, written_paths(module) if written is None else written)
    if not (force or clone or writes_buffers(module)):
        return module
    try:
        return run_copy(module, clone=clone)
    except CannotCopy:
        return copy.deepcopy(module)
