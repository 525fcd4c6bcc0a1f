"""Which fx nodes may draw random numbers, and one random-number state per graph.

The node-by-node run (``divergence``) interleaves two graphs. A random op (training-mode dropout,
``torch.rand_like``, ``bernoulli``...) draws from torch's one default generator, so run in
lockstep the edited graph would draw the numbers after the original's: two identical dropouts
would never agree. ``GraphGenerators`` keeps one generator state per graph and swaps it in
around the nodes that may draw, so each graph sees the sequence it sees when run alone from the
seed. Saving a state copies ~5 KB (CPU), so only nodes that may draw get the swap:

- ``call_function``/``call_method`` of an op torch tags ``nondeterministic_seeded`` (the aten
  ops: ``dropout``, ``bernoulli``, ``rand_like``, ``uniform_``, ``scaled_dot_product_attention``...;
  torch's Python functions and Tensor methods are matched by the aten op of their name), plus the
  few Python-level functions in torch that draw through ops of other names (``dropout2d``,
  ``gumbel_softmax``, ``fractional_max_pool2d``, ``torch.nn.init``...). An argument that switches
  the draw off as a literal (``training=False``, ``dropout_p=0.0``, or such a default) makes the
  node deterministic: traced eval-mode code holds ``F.dropout(x, p, False)``.
- ``call_module`` of a module whose subtree holds a random layer that draws in its current mode
  (``Dropout*`` and ``RReLU`` in training mode, ``MultiheadAttention`` and the RNNs with dropout
  in training mode, ``FractionalMaxPool*`` always).
- Conservatively, code torch cannot vouch for: a call of a function or module class not defined
  in torch (a user's wrapped function or leaf module), a module with hooks or its own
  ``forward``, a TorchScript module, a nested ``GraphModule`` with such a node. User code may call
  ``torch.rand`` itself; a swap costs ~2 us while such a call costs several, and a plain
  ``torch.nn`` layer, the common case, is never swapped around.

What a graph calls through other means (an explicit ``generator=`` object, Python's ``random``)
is not separated.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat

_SEEDED = torch.Tag.nondeterministic_seeded

# torch functions that draw through ops of other names (no aten op of their own name is tagged).
_DRAWING_NAMES = frozenset({
    "dropout1d", "dropout2d", "dropout3d", "gumbel_softmax", "multi_head_attention_forward",
    "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices", "trunc_normal_", "xavier_uniform_", "xavier_normal_",
    "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    # They set or read the generator's state: they see their own graph's.
    "manual_seed", "seed", "get_rng_state", "set_rng_state",
})

# Arguments that switch the draw off when given (or defaulted) as a literal: ``train``/``training``
# False, ``dropout_p``/``dropout`` zero.
_SWITCHES = {"train": False, "training": False, "dropout_p": 0, "dropout": 0}

# Functions from these modules never touch torch's generators.
_PLAIN_MODULES = frozenset({"_operator", "operator", "builtins", "math", "cmath"})

# Methods of Python containers and numbers called on values in a graph (``d.items()``).
_PLAIN_METHODS = frozenset(name for cls in (dict, list, tuple, str, int, float) for name in dir(cls))

_UNKNOWN = object()


@functools.lru_cache(maxsize=None)
def _seeded_name(name: str) -> bool:
    """Whether torch's function or Tensor method called ``name`` may draw random numbers."""
    if name in _DRAWING_NAMES:
        return True
    packet = _aten_packet(name)
    return packet is not None and _packet_seeded(packet)


def _aten_packet(name: str) -> Any:
    if name.startswith("__"):
        return None
    try:
        return getattr(torch.ops.aten, name)
    except (AttributeError, RuntimeError):
        return None


def _packet_seeded(packet: Any) -> bool:
    return any(_SEEDED in getattr(packet, o).tags for o in packet.overloads())


def _schema_switches(schema: Any) -> tuple:
    """``(name, position or None, default or _UNKNOWN)`` of each switch argument of an aten schema."""
    out = []
    positional = 0
    for arg in schema.arguments:
        pos = None if arg.kwarg_only else positional
        if not arg.kwarg_only:
            positional += 1
        if arg.name in _SWITCHES:
            default = arg.default_value if arg.has_default_value() else _UNKNOWN
            out.append((arg.name, pos, default))
    return tuple(out)


def _python_switches(fn: Callable) -> tuple | None:
    """The switch arguments of a Python function's signature; None when it has none to read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    out = []
    positional = 0
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        pos = None if p.kind == p.KEYWORD_ONLY else positional
        if pos is not None:
            positional += 1
        if p.name in _SWITCHES:
            out.append((p.name, pos, _UNKNOWN if p.default is p.empty else p.default))
    return tuple(out)


def _packet_switches(packet: Any) -> tuple:
    """The switch arguments shared by every overload of an aten op (none when they disagree)."""
    layouts = {_schema_switches(fx_compat.op_schema(getattr(packet, o))) for o in packet.overloads()}
    return layouts.pop() if len(layouts) == 1 else ()


# Verdicts on torch's own callables (a user's function is not kept: the cache would keep its module alive).
_target_info: dict[Any, tuple[bool, tuple]] = {}


def _function_info(target: Any) -> tuple[bool, tuple]:
    """``(may draw, switch arguments)`` of a ``call_function`` target."""
    try:
        return _target_info[target]
    except (KeyError, TypeError):
        pass
    info = _classify_function(target)
    if info != _USER_CODE:
        try:
            _target_info[target] = info
        except TypeError:  # an unhashable target
            pass
    return info


_USER_CODE = (True, ())


def _classify_function(target: Any) -> tuple[bool, tuple]:
    if isinstance(target, fx_compat.OpOverload):
        return _SEEDED in target.tags, _schema_switches(fx_compat.op_schema(target))
    if isinstance(target, fx_compat.OpOverloadPacket):
        return _packet_seeded(target), _packet_switches(target)
    if isinstance(target, fx_compat.HigherOrderOperator):
        return True, ()  # runs subgraphs of its own
    module = getattr(target, "__module__", None)
    if module is None:  # a method descriptor: torch.Tensor.uniform_
        module = getattr(getattr(target, "__objclass__", None), "__module__", None)
    if module in _PLAIN_MODULES:
        return False, ()
    name = getattr(target, "__name__", None)
    if not (isinstance(module, str) and (module == "torch" or module.startswith("torch."))):
        return _USER_CODE  # a user's function: it may draw itself
    if not isinstance(name, str) or not _seeded_name(name):
        return False, ()
    switches = _python_switches(target)
    if switches is None:  # a builtin: the aten op of its name has its signature
        packet = _aten_packet(name)
        switches = _packet_switches(packet) if packet is not None else ()
    return True, switches


def _switched_off(node: torch.fx.Node, switches: tuple) -> bool:
    """Whether a literal argument (or its default) turns the node's draw off."""
    args, kwargs = node.args, node.kwargs
    for name, pos, default in switches:
        if name in kwargs:
            value = kwargs[name]
        elif pos is not None and pos < len(args):
            value = args[pos]
        else:
            value = default
        if type(value) in (bool, int, float) and value == _SWITCHES[name]:
            return True
    return False


def function_may_draw(node: torch.fx.Node) -> bool:
    """Whether a ``call_function`` or ``call_method`` node may draw random numbers."""
    if node.op == "call_method":
        name = node.target
        if not isinstance(name, str):
            return True
        if hasattr(torch.Tensor, name):
            return _seeded_name(name)
        return not (name.startswith("__") or name in _PLAIN_METHODS)
    if node.op != "call_function":
        return False
    draws, switches = _function_info(node.target)
    return draws and not (switches and _switched_off(node, switches))


_RANDOM_IN_TRAINING = (fx_compat.DROPOUT_CLASSES, nn.RReLU)
_RANDOM_WITH_DROPOUT = (nn.MultiheadAttention, nn.RNNBase)  # in training mode with dropout > 0
_RANDOM_ALWAYS = (nn.FractionalMaxPool2d, nn.FractionalMaxPool3d)

# Kinds of torch's classes (a user's class, or a GraphModule's per-instance class, is not kept).
_class_kinds: dict[type, str] = {}


def _class_kind(cls: type) -> str:
    """``"plain"``, ``"training"`` (draws in training mode), ``"dropout"`` (... with dropout > 0),
    ``"always"``, ``"graph"`` (a GraphModule: its nodes decide) or ``"opaque"`` (code torch does
    not vouch for)."""
    kind = _class_kinds.get(cls)
    if kind is None:
        module = getattr(cls, "__module__", "") or ""
        if issubclass(cls, torch.jit.ScriptModule):
            kind = "opaque"
        elif issubclass(cls, torch.fx.GraphModule):
            kind = "graph"
        elif not module.startswith(("torch.nn.", "torch.ao.nn.")):
            kind = "opaque"
        elif issubclass(cls, _RANDOM_ALWAYS):
            kind = "always"
        elif issubclass(cls, _RANDOM_IN_TRAINING):
            kind = "training"
        elif issubclass(cls, _RANDOM_WITH_DROPOUT):
            kind = "dropout"
        else:
            kind = "plain"
        if kind != "graph" and module.startswith("torch."):
            _class_kinds[cls] = kind
    return kind


def _one_may_draw(module: Any) -> bool:
    """Whether calling this module itself (not its children) may draw random numbers now."""
    if not isinstance(module, nn.Module):
        return True
    d = module.__dict__
    if d.get("_forward_hooks") or d.get("_forward_pre_hooks") or "forward" in d:
        return True
    kind = _class_kind(type(module))
    if kind == "plain":
        return False
    if kind == "training":
        return bool(d.get("training", True))
    if kind == "dropout":
        dropout = d.get("dropout", 0.0)
        return bool(d.get("training", True)) and not (type(dropout) in (int, float) and dropout == 0)
    if kind == "graph":
        return bool(drawing_positions(list(module.graph.nodes), dict(module.named_modules())))
    return True  # "always", "opaque"


def module_may_draw(module: Any) -> bool:
    """Whether calling ``module`` may draw random numbers, in its current mode (any submodule)."""
    children = getattr(module, "__dict__", {}).get("_modules")
    if not children:
        return _one_may_draw(module)
    return any(_one_may_draw(m) for m in module.modules())


def drawing_modules(modules: Mapping[Any, Any], known: Container[Any] = ()) -> list[Any]:
    """The keys of the modules that may draw random numbers now (``module_may_draw``). A leaf
    ``torch.nn`` layer of a deterministic class without hooks is passed over in a few lookups, one
    in ``known`` (a module whose call is known to be its class's own ``forward``: no hooks, no
    ``forward`` of its own; ``module_inline``) by its class alone."""
    kinds = _class_kinds
    out = []
    for key, module in modules.items():
        if kinds.get(type(module)) == "plain":
            if key in known:
                continue
            d = getattr(module, "__dict__", None)
            if (d is not None and not d.get("_modules") and not d.get("_forward_hooks")
                    and not d.get("_forward_pre_hooks") and "forward" not in d):
                continue
        if module_may_draw(module):
            out.append(key)
    return out


def node_may_draw(node: torch.fx.Node, modules: Mapping[str, Any]) -> bool:
    """Whether running ``node`` may draw random numbers (``modules``: the graph's submodules by
    path, as ``named_modules`` gives them)."""
    if node.op == "call_module":
        module = modules.get(node.target) if isinstance(node.target, str) else None
        return module is None or module_may_draw(module)
    return function_may_draw(node)


def drawing_positions(nodes: Sequence[torch.fx.Node], modules: Mapping[str, Any]) -> frozenset[int]:
    """The positions of the nodes that may draw random numbers (see ``node_may_draw``)."""
    return frozenset(i for i, n in enumerate(nodes) if n.op in _CALLS and node_may_draw(n, modules))


_CALLS = frozenset({"call_function", "call_method", "call_module"})


def limit_sharing(shared: Iterable[int], inputs: Callable[[int], Iterable[int]], edraw: frozenset[int],
                  odraw: frozenset[int], counter_pos: Sequence[int]) -> tuple[frozenset[int], int]:
    """The shared edited positions that stay shared with random draws in the graphs, and the
    original position after which the edited graph's state must follow the original's (-1: none).

    A shared node takes its counterpart's value instead of running. For a node that may draw that
    is right only while the edited graph's state equals the original's: while the drawing nodes
    so far pair up, in order, as shared counterparts (the common prefix of the two draw
    sequences). The edited graph's later drawing nodes run themselves, from the state the
    original reached after the prefix's last draw; nodes reading an unshared one are not shared
    either. ``inputs(i)``: the edited positions node ``i`` reads.
    """
    shared = frozenset(shared)
    if not edraw:
        return shared, -1
    ordered_o = sorted(odraw)
    kept: set[int] = set()
    paired = 0
    alive = True
    for i in sorted(shared | edraw):
        ok = i in shared and all(k in kept for k in inputs(i))
        if i in edraw:
            ok = ok and alive and paired < len(ordered_o) and counter_pos[i] == ordered_o[paired]
            if not ok:
                alive = False
                continue
            paired += 1
        if ok:
            kept.add(i)
    follow = ordered_o[paired - 1] if 0 < paired < len(edraw) else -1
    return frozenset(kept), follow


class GraphGenerators:
    """One random-number state per graph of a lockstep run, in torch's default generators.

    The generators start in the state they have at construction (just after the run's reseed),
    for both graphs. ``enter(side)`` before a node of ``side`` ("original" or "edited") that may
    draw saves the live state as the other graph's and puts ``side``'s in, when the other graph
    drew last; ``follow()`` gives the edited graph the original's current state. The generators
    are the CPU one and, for inputs on a CUDA device, that device's (and the current one's).
    """

    def __init__(self, device: torch.device | str = "cpu"):
        self.generators: list[torch.Generator] = [torch.default_generator]
        device = torch.device(device)
        if device.type == "cuda" and torch.cuda.is_available():
            torch.cuda.init()
            indices = {device.index if device.index is not None else torch.cuda.current_device(),
                       torch.cuda.current_device()}
            self.generators += [torch.cuda.default_generators[i] for i in sorted(indices)]
        start = self._state()
        self.states = {"original": start, "edited": start}
        self.owner: str | None = None
        self.swaps = 0

    def _state(self) -> list[torch.Tensor]:
        return [g.get_state() for g in self.generators]

    def enter(self, side: str) -> None:
        """Make ``side``'s state the live one (a node of that graph is about to draw)."""
        owner = self.owner
        if owner == side:
            return
        if owner is not None:
            self.states[owner] = self._state()
            for g, state in zip(self.generators, self.states[side]):
                g.set_state(state)
            self.swaps += 1
        self.owner = side

    def follow(self) -> None:
        """The edited graph's state becomes the original's live one (its shared draws are done)."""
        if self.owner == "edited":  # cannot happen: the edited graph has not drawn by itself yet
            raise RuntimeError("the edited graph's state cannot follow the original's after drawing")
        self.states["edited"] = self._state()
