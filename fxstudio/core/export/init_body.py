"""The ``__init__`` of a generated class and the weights file's entries for it.

For each submodule the graph calls (``call_module``) the class makes that submodule
(``module_writer.ModuleWriter``: its configuration, its class and state, or the model file's own;
a traced ``GraphModule`` becomes a nested generated class, ``subgraphs``); for each attribute the
graph reads (``get_attr``) it declares a parameter, buffer or tensor constant of the right shape,
makes a module read as a whole (``nn.ParameterList``, ``ModuleList``, ``ModuleDict``) the same way
as a called one, or creates the nested class of a higher-order op's graph. Modules the graph never
reaches (a pass's leftovers such as const_fold's ``const_subgraph_module``) are left out. The
weights are the state dict of what is made, under the same paths, with the per-module versions
``state_dict()`` records (quantized modules read them when they load). Paths are written as checked
string literals (``_attach(self, "trunk.block1-0", ...)``), never spliced as code.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.errors import ExportError
from fxstudio.core.export.module_writer import ModuleWriter, OriginalEntry
from fxstudio.core.export.modules import ImportNamer, quoted
from fxstudio.core.export.state_rebuild import tensor_decl

_CONSTANT_NAME = re.compile(r"(^|\.)(_tensor_constant\d+|lifted_tensor_\d+|_frozen_param\d+)$")

ATTACH_HELPER = '''
def _attach(root: nn.Module, path: str, value) -> None:
    """Set ``root.<path> = value``, creating empty container modules along the dotted path."""
    *parents, name = path.split(".")
    for part in parents:
        if part not in root._modules:
            root.add_module(part, nn.Module())
        root = root._modules[part]
    if isinstance(value, nn.Parameter):
        root.register_parameter(name, value)
    elif isinstance(value, torch.Tensor):
        root.register_buffer(name, value)
    else:
        root.add_module(name, value)
'''

TIE_HELPER = '''
def _tie(model: nn.Module, name: str, same_as: str) -> None:
    """Make ``name`` the very tensor ``same_as`` is: they were one tensor (tied) in the source model."""
    home, _, key = same_as.rpartition(".")
    source = model.get_submodule(home)
    value = source._parameters[key] if key in source._parameters else source._buffers[key]
    owner, _, attr = name.rpartition(".")
    target = model.get_submodule(owner)
    (target._parameters if attr in target._parameters else target._buffers)[attr] = value
'''


@dataclass
class InitBody:
    """A generated ``__init__``'s lines (after ``super().__init__()``) and what they need."""

    lines: list[str] = field(default_factory=list)
    weights: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, dict] = field(default_factory=dict)  # per-module state versions, by path
    tied: list[tuple[str, str]] = field(default_factory=list)  # (name, same_as): one tensor, two names
    subtrees: list[str] = field(default_factory=list)  # paths made whole, as in the graph module
    shells: list[str] = field(default_factory=list)  # paths of nested generated classes (their own flags)

    def uses(self, helper: str) -> bool:
        """Whether a line calls the file's helper function ``helper`` (``_attach``, ``_restore``)."""
        return any(f"{helper}(" in line for line in self.lines)

    def merge(self, other: InitBody, prefix: str) -> None:
        """Take a nested class's weights, versions, ties and paths, under ``prefix``."""
        self.weights.update((f"{prefix}.{k}", v) for k, v in other.weights.items())
        self.metadata.update((f"{prefix}.{k}" if k else prefix, v) for k, v in other.metadata.items())
        self.tied.extend((f"{prefix}.{a}", f"{prefix}.{b}") for a, b in other.tied)
        self.subtrees.extend(f"{prefix}.{p}" for p in other.subtrees)
        self.shells.extend([prefix] + [f"{prefix}.{p}" for p in other.shells])

    def state_weights(self) -> dict[str, Any]:
        """The weights with their versions attached the way ``state_dict()`` attaches them."""
        return fx_compat.with_state_dict_metadata(self.weights, self.metadata) if self.metadata else dict(self.weights)


class TensorCopies:
    """Detached copies of the weights, one per tensor object: a tensor held under two names (tied
    weights) is stored once in the weights file and tied again by ``get_model``."""

    def __init__(self):
        self._copies: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def of(self, value: torch.Tensor) -> torch.Tensor:
        """The copy of ``value`` (the same copy for the same tensor object)."""
        got = self._copies.get(id(value))
        if got is None:
            got = self._copies[id(value)] = (value, value.detach().clone())  # keeps ``value`` alive: ids stay unique
        return got[1]

    def entry(self, value: Any) -> Any:
        """A state dict value for the weights file: tensors copied (inside tuples and lists too), other
        values (a dtype, a qscheme that quantized modules save) as they are."""
        if isinstance(value, torch.Tensor):
            return self.of(value)
        if type(value) in (tuple, list):
            return type(value)(self.entry(v) for v in value)
        return value

    @staticmethod
    def tied(weights: dict[str, Any]) -> list[tuple[str, str]]:
        """(name, same_as) for every name whose copy an earlier name already holds."""
        first: dict[int, str] = {}
        out = []
        for name, copy in weights.items():
            if not isinstance(copy, torch.Tensor):
                continue
            if id(copy) in first:
                out.append((name, first[id(copy)]))
            else:
                first[id(copy)] = name
        return out


def _owner_has(gm: nn.Module, target: str, kind: str) -> bool:
    owner_path, _, name = target.rpartition(".")
    try:
        owner = gm.get_submodule(owner_path) if owner_path else gm
    except AttributeError:
        return False
    return name in getattr(owner, kind)


def _get_attr(gm: nn.Module, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _covered(path: str, module_paths: set[str]) -> str | None:
    """The module made (if any) that ``path`` lies inside."""
    parts = path.split(".")
    return next((p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p in module_paths), None)


def _assign(path: str, expr: str) -> list[str]:
    """The lines that set ``self.<path> = expr`` (the path a string literal unless it is one identifier)."""
    if "." not in path and path.isidentifier() and not keyword.iskeyword(path):
        text = f"self.{path} = {expr}"
    else:
        text = f"_attach(self, {quoted(path)}, {expr})"
    return text.splitlines()


def init_body(gm: torch.fx.GraphModule, graph: torch.fx.Graph, namer: ImportNamer,
              original: OriginalEntry | None = None, subgraphs: Any = None, prefix: str = "") -> InitBody:
    """The ``__init__`` of the class for ``graph`` (of ``gm``; ``prefix`` names a nested class's
    place in messages). Nested graphs become classes of ``subgraphs`` (a ``subgraphs.SubgraphWriter``)."""
    body = InitBody()
    copies = TensorCopies()
    writer = ModuleWriter(namer, original)
    made: set[str] = set()

    def nested(value: torch.fx.GraphModule, target: str, called: bool) -> None:
        """Make the traced graph module at ``target`` as a nested generated class."""
        if subgraphs is None:
            raise ExportError(f"cannot export '{prefix}{target}': it is itself a traced GraphModule.")
        sub_class, sub_body = subgraphs.class_for(value, target, called=called, where=f"{prefix}{target}")
        body.lines.extend(_assign(target, f"{sub_class}()"))
        body.merge(sub_body, target)
        made.add(target)

    def whole(module: nn.Module, target: str) -> None:
        """Make the module at ``target`` (``ModuleWriter``) and take its whole state as weights."""
        body.lines.extend(_assign(target, writer.rebuild(module, f"{prefix}{target}").expr))
        state = module.state_dict(keep_vars=True)
        for key, value in state.items():
            body.weights[f"{target}.{key}"] = copies.entry(value)
        for key, version in fx_compat.state_dict_metadata(state).items():
            body.metadata[f"{target}.{key}" if key else target] = version
        body.subtrees.append(target)
        made.add(target)

    for node in graph.nodes:
        if node.op != "call_module" or node.target in made or _covered(node.target, made):
            continue
        module = gm.get_submodule(node.target)
        if isinstance(module, torch.fx.GraphModule):
            nested(module, node.target, called=True)
        else:
            whole(module, node.target)

    reads = list(dict.fromkeys(n.target for n in graph.nodes if n.op == "get_attr"))
    values = {target: _get_attr(gm, target) for target in reads}
    # Modules read whole first (outermost first), so that tensors read inside them find them made.
    reads.sort(key=lambda t: (0, t.count(".")) if isinstance(values[t], nn.Module) else (1, 0))
    for target in reads:
        value = values[target]
        if target in made or (_covered(target, made) and (isinstance(value, nn.Module) or target in body.weights)):
            continue
        if isinstance(value, torch.fx.GraphModule):
            nested(value, target, called=False)
            continue
        if isinstance(value, nn.Module):
            whole(value, target)
            continue
        if not isinstance(value, torch.Tensor):
            raise ExportError(
                f"cannot export attribute '{prefix}{target}' read by the graph: it is a {type(value).__name__}, "
                "not a tensor or a module; only tensors are stored in the weights file."
            )
        if isinstance(value, nn.Parameter):
            grad = "" if value.requires_grad else ", requires_grad=False"
            body.lines.extend(_assign(target, f"nn.Parameter({tensor_decl(value)}{grad})"))
        else:
            is_buffer = _owner_has(gm, target, "_buffers")
            if not is_buffer or _CONSTANT_NAME.search(target):
                body.lines.append("# A tensor constant captured when the graph was traced; its value is in the weights file.")
            if "." not in target and target.isidentifier():
                body.lines.append(f"self.register_buffer({quoted(target)}, {tensor_decl(value)})")
            else:
                body.lines.extend(_assign(target, tensor_decl(value)))
        body.weights[target] = copies.of(value)
    writer.finish(body.lines)
    body.tied = copies.tied(body.weights) + body.tied
    return body
