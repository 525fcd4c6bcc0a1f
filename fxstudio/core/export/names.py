"""Node names across an export round trip.

Tracing an exported file names each node after its target (``add``, ``my_relu``, ``layer1_0_conv1``),
so an edited graph whose nodes were renamed, inserted under a chosen name, or renumbered by erasing
comes back under other names. An export of an edited graph therefore ends with three constants: the
node names, a signature of the graph's structure (ops, targets and wiring, names left out), and the
structure itself, one token per node (``FXSTUDIO_NODE_STRUCTURE``, below). When fxstudio opens the
file and the traced graph has that same signature, every name is put back by position. Otherwise
(``torch.export`` turns an inserted ``torch.mul`` into ``aten.mul.Tensor``; fx drops an attribute
read nothing uses) the traced graph is paired with the recorded structure by what each node computes
(``compare.pair_items``, handed in by the loader) and each paired node gets its recorded name;
the others keep theirs. Files written before the structure was recorded restore by signature
only. Plain torch ignores the constants.

A structure token is ``CODE:STEM:INPUTS:CONSTANTS``: the op (``p`` placeholder, ``g`` get_attr, ``f``
call_function, ``m`` call_method, ``c`` call_module, ``o`` output), the target's stem (the function's
name without overload, ``mul`` for ``torch.mul`` and ``aten.mul.Tensor``; the method name; the module
or attribute path), the positions of the nodes it reads (comma-separated, in the order of the names)
and a short hash of its constant arguments. The format is persisted: keep it stable.
"""

from __future__ import annotations

import hashlib
import keyword
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.code_names import check_identifier

NAMES_VARIABLE = "FXSTUDIO_NODE_NAMES"
SIGNATURE_VARIABLE = "FXSTUDIO_GRAPH_SIGNATURE"
STRUCTURE_VARIABLE = "FXSTUDIO_NODE_STRUCTURE"
FILE_VARIABLES = (NAMES_VARIABLE, SIGNATURE_VARIABLE, STRUCTURE_VARIABLE)
"""The module-level names an exported file defines for the round trip of names."""

EXACT_NOTE = "node names restored from the fxstudio export (FXSTUDIO_NODE_NAMES)"
_OP_CODES = {"placeholder": "p", "get_attr": "g", "call_function": "f", "call_method": "m",
             "call_module": "c", "output": "o"}
_STEM_CHARS = re.compile(r"[^A-Za-z0-9_.]")


def _target_text(node: torch.fx.Node) -> str:
    """The target as the graph signature stored in exported files spells it: not a presentation
    (``node_text.target_text``) but a persisted format, kept byte-stable so older exports verify."""
    target = node.target
    if callable(target):
        return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}"
    return str(target)


def _ordered(graph: torch.fx.Graph) -> list[torch.fx.Node]:
    """Nodes in a tracer-independent order: everything but ``get_attr`` in graph order, then the
    ``get_attr`` nodes by target (tracers place attribute reads differently)."""
    nodes = list(graph.nodes)
    attrs = sorted((n for n in nodes if n.op == "get_attr"), key=lambda n: (str(n.target), nodes.index(n)))
    return [n for n in nodes if n.op != "get_attr"] + attrs


def graph_signature(graph: torch.fx.Graph) -> str:
    """A short hash of the graph's ops, targets and wiring, independent of node names."""
    order = _ordered(graph)
    index = {n: i for i, n in enumerate(order)}
    lines = []
    for n in order:
        args = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: f"%{index[a]}")
        lines.append(f"{n.op} {_target_text(n)} {args!r}")
    return hashlib.sha1("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def _stem(node: torch.fx.Node) -> str:
    """The target's stem (module docstring): what stays when a tracer swaps a function for an overload."""
    target = node.target
    if isinstance(target, str):
        text = target
    else:
        text = (getattr(target, "__name__", None) or type(target).__name__).split(".")[0]
    return _STEM_CHARS.sub("_", text)[:120] or "_"


def _constants_hash(node: torch.fx.Node) -> str:
    """A short hash of ``node``'s constant arguments (node arguments as ``%``): tells apart nodes of
    one stem and inputs (``arange(1)``, ``arange(8)``); tensor constants count by shape and dtype."""
    def leaf(value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            return "%"
        if isinstance(value, torch.Tensor):
            return f"tensor{tuple(value.shape)}{value.dtype}"
        return value

    try:
        text = repr(torch.fx.node.map_aggregate((node.args, node.kwargs), leaf))
    except Exception:  # noqa: BLE001 - an unprintable constant: the hash of nothing
        text = "?"
    return hashlib.sha1(text.encode("utf-8", "backslashreplace")).hexdigest()[:6]


def _tokens(order: list[torch.fx.Node]) -> list[str]:
    """The structure token of every node of ``order`` (module docstring), inputs by position in it."""
    index = {n: i for i, n in enumerate(order)}
    tokens = []
    for n in order:
        inputs: list[str] = []
        torch.fx.node.map_arg((n.args, n.kwargs), lambda a: inputs.append(str(index[a])))
        tokens.append(f"{_OP_CODES.get(n.op, 'f')}:{_stem(n)}:{','.join(inputs)}:{_constants_hash(n)}")
    return tokens


def _wrapped(words: list[str]) -> list[str]:
    """``words`` joined by spaces as the lines of a parenthesized string literal (safe characters only)."""
    wrapped = textwrap.wrap(" ".join(words), width=92, break_long_words=False, break_on_hyphens=False)
    return [f'    "{chunk} "' for chunk in wrapped[:-1]] + [f'    "{wrapped[-1]}"']


def names_block(graph: torch.fx.Graph) -> list[str]:
    """Source lines of the three constants for ``graph`` (appended to an exported file)."""
    order = _ordered(graph)
    for node in order:
        check_identifier(node.name, "node name")
    return [
        "# fxstudio: the node names of the edited graph, restored when fxstudio opens this file (tracing",
        "# would name each node after its target); plain torch ignores these constants.",
        f"{NAMES_VARIABLE} = (",
        *_wrapped([n.name for n in order]),  # identifiers only (checked)
        ")",
        f'{SIGNATURE_VARIABLE} = "{graph_signature(graph)}"',
        f"{STRUCTURE_VARIABLE} = (  # per node: op:target stem:inputs:constants hash",
        *_wrapped(_tokens(order)),  # [A-Za-z0-9_.:,] only
        ")",
    ]


@dataclass(frozen=True)
class RestoredNames:
    """What ``restore_exported_names`` did: ``restored`` of the traced graph's ``total`` nodes took the name
    the file records for them (``recorded`` names in all); ``exact`` when the structure signature
    matched and every name went back by position."""

    restored: int
    total: int
    recorded: int
    exact: bool
    unmatched: tuple[str, ...] = ()  # traced nodes left with the names tracing gave them
    missing: tuple[str, ...] = ()    # recorded names no traced node took (fx drops unused attribute reads)

    def note(self) -> str:
        """The loader's note."""
        if self.exact:
            return EXACT_NOTE
        text = f"{EXACT_NOTE}, nodes matched by structure: {self.restored} of {self.total}"
        if self.unmatched:
            text += f"; not in the recorded graph, named by tracing: {_few(self.unmatched)}"
        if self.missing:
            text += f"; recorded, not in the traced graph: {_few(self.missing)}"
        return text


def _few(names: Sequence[str]) -> str:
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


PairFn = Callable[[Sequence[tuple], Sequence[tuple], Sequence[tuple]], "dict[int, int]"]
"""``compare.pair_items``: (recorded items, traced items, levels) -> traced index -> recorded index."""


def restore_exported_names(gm: torch.fx.GraphModule, module: Any, *, pair: PairFn | None = None) -> RestoredNames | None:
    """Rename the nodes of ``gm`` (traced from an exported file whose module is ``module``) to the
    names the file records: all by position when the structure signature matches; else, given
    ``pair`` (``compare.pair_items``: the loader passes it, export does not import compare), those
    paired with the recorded structure (module docstring). Returns what it did, or None (falsy)
    when no name was restored."""
    names_text = getattr(module, NAMES_VARIABLE, None)
    signature = getattr(module, SIGNATURE_VARIABLE, None)
    if not isinstance(names_text, str) or not isinstance(signature, str):
        return None
    names = names_text.split()
    if len(set(names)) != len(names) or not all(n.isidentifier() and not keyword.iskeyword(n) for n in names):
        return None
    order = _ordered(gm.graph)
    if len(names) == len(order) and graph_signature(gm.graph) == signature:
        _rename(gm, dict(zip(order, names)))
        return RestoredNames(len(order), len(order), len(names), True)
    canonical = _canonical_paths(gm)
    recorded = _recorded_items(getattr(module, STRUCTURE_VARIABLE, None), names, canonical)
    if recorded is None or pair is None:
        return None
    nodes = list(gm.graph.nodes)
    found = pair(recorded, _traced_items(nodes, order, canonical), _LEVELS)
    if not found:
        return None
    renamed = {nodes[j]: names[i] for j, i in found.items()}
    taken = set(found.values())
    missing = tuple(name for i, name in enumerate(names) if i not in taken)
    _rename(gm, renamed)
    unmatched = tuple(n.name for n in nodes if n not in renamed)
    return RestoredNames(len(found), len(nodes), len(names), False, unmatched, missing)


# The pairing levels of a restore, as ``compare.Level`` tuples (name, keyed by the paired inputs):
# stem, constants and inputs; then stem and inputs (a tracer may spell the constants otherwise).
_LEVELS = (("same computation", True), ("other arguments", True))


def _items(specs: list[tuple], canonical: Callable[[str], str]) -> list[tuple]:
    """Pairing items (``compare.Item`` tuples: name, position, inputs, heads, same_as) from
    ``(name, position, inputs, code, stem, constants hash)``: placeholders by position, the output
    with the output, attribute reads by ``canonical`` path (reads of one tied weight as one input
    of their users), calls by stem and constants, then by stem alone (a method call may come back
    as a function call, ``aten``'s)."""
    first_read: dict[str, int] = {}
    same_as: dict[int, int] = {}
    for i, (_, _, _, code, stem, _) in enumerate(specs):
        if code == "g":
            same_as[i] = first_read.setdefault(canonical(stem), i)
    items = []
    placeholders = 0
    for i, (name, pos, inputs, code, stem, chash) in enumerate(specs):
        if code == "p":
            heads: tuple = (("p", placeholders), None)
            placeholders += 1
        elif code == "o":
            heads = (("o",), None)
        elif code == "g":
            heads = (("g", canonical(stem)), None)
        else:
            kind = "c" if code == "c" else "call"
            heads = ((kind, stem, chash), (kind, stem))
        inputs = () if code in ("p", "o", "g") else tuple(same_as.get(k, k) for k in inputs)
        items.append((name, pos, inputs, heads, same_as.get(i, -1)))
    return items


def _recorded_items(text: Any, names: list[str], canonical: Callable[[str], str]) -> list[tuple] | None:
    """The recorded structure as pairing items (``_items``; names as recorded), or None when
    absent or malformed."""
    if not isinstance(text, str):
        return None
    tokens = text.split()
    if len(tokens) != len(names):
        return None
    specs = []
    for pos, (token, name) in enumerate(zip(tokens, names)):
        parts = token.split(":")
        if len(parts) != 4 or parts[0] not in _OP_CODES.values():
            return None
        code, stem, inputs_text, chash = parts
        try:
            inputs = tuple(int(i) for i in inputs_text.split(",")) if inputs_text else ()
        except ValueError:
            return None
        if any(not 0 <= i < len(tokens) for i in inputs):
            return None
        specs.append((name, pos, inputs, code, stem, chash))
    return _items(specs, canonical)


def _traced_items(nodes: list[torch.fx.Node], order: list[torch.fx.Node], canonical: Callable[[str], str]) -> list[tuple]:
    """The traced graph's nodes (graph order: inputs first) as pairing items, positioned as in ``order``."""
    index = {n: i for i, n in enumerate(nodes)}
    pos = {n: i for i, n in enumerate(order)}
    specs = []
    for n in nodes:
        inputs: list[int] = []
        torch.fx.node.map_arg((n.args, n.kwargs), lambda a: inputs.append(index[a]))
        specs.append((n.name, pos[n], tuple(inputs), _OP_CODES.get(n.op, "f"), _stem(n), _constants_hash(n)))
    return _items(specs, canonical)


def _canonical_paths(module: torch.nn.Module) -> Callable[[str], str]:
    """Per attribute path, the first name of its tensor (a tied weight is read under either name,
    and an export round trip may swap them); other paths as they are."""
    groups: dict[int, list[str]] = {}
    try:
        for path, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
            groups.setdefault(id(t), []).append(path)
    except Exception:  # noqa: BLE001 - a module that cannot list its state: paths as they are
        return lambda path: path
    first = {p: min(paths) for paths in groups.values() if len(paths) > 1 for p in paths}
    stems = {_STEM_CHARS.sub("_", p)[:120]: q for p, q in first.items()}  # as written in the tokens
    return lambda path: stems.get(path, path)


def _rename(gm: torch.fx.GraphModule, names: dict[torch.fx.Node, str]) -> None:
    """Give the nodes in ``names`` those names; any other node whose name one of them takes gets a
    fresh one (``mul`` -> ``mul_2``). Recompiles ``gm``."""
    given = set(names.values())
    others = [n for n in gm.graph.nodes if n not in names]
    taken = given | {n.name for n in others}
    final = dict(names)
    for node in others:
        if node.name in given:
            base, k = node.name, 1
            while f"{base}_{k}" in taken:
                k += 1
            final[node] = f"{base}_{k}"
            taken.add(final[node])
    for node, name in final.items():
        node.name = name
    fx_compat.reserve_names(gm.graph, list(final.values()))
    gm.recompile()
