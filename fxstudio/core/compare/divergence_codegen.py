"""The lockstep node-by-node run as one generated Python function.

``run_divergence`` steps the original and the edited graph together and compares every matched
node. Stepping two ``torch.fx.Interpreter`` instances costs several microseconds of Python per
node on top of the op, more than a small model's ops themselves. Here the whole lockstep schedule
is written out once as straight-line code, as ``GraphModule`` does for a plain forward: each node
is one line with plain local variables, the original is advanced up to each edited node's
counterpart before that node runs (the order the Interpreter run keeps), each
matched pair is handed to a comparison right after the edited node, and ``del`` drops every
value at the point the Interpreter run releases it (so peak memory is the same). A node shared
with the original (``same_computation``) is an alias of the original's variable.
Around the nodes that may draw random numbers the program swaps in its graph's own generator
state (``random_ops.GraphGenerators``), so each graph draws what it draws when run alone.

Callables, submodules, attributes and constants that are not literals come in through a table
read from the graphs at each call, so a cached program never holds stale objects. Schedules and
their programs are cached on the edited graph, keyed by a fingerprint of both graphs (every
node's op, target, argument objects, name and id) and the run's options; an edit changes the
fingerprint. The structural half of ``same_computation`` is cached with them, the weights part is
checked at every run (``shared_positions``).

A node that raises is found from the traceback's line number (one line per node). What the
generator cannot express (method names that are not identifiers, keyword names that are not,
duplicated match keys, a missing submodule or attribute, in-place ops) raises ``Unsupported``
and the caller uses the Interpreter path.
"""

from __future__ import annotations

import itertools
import keyword
import math
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from fxstudio.core import fx_compat
from fxstudio.core.compile_aside import compile_code
from fxstudio.core.compare import module_inline
from fxstudio.core.inplace_ops import clone_tensors
from fxstudio.core.compare.module_inline import Recipe
from fxstudio.core.compare.divergence_schedule import _CACHE_ATTR, _MISSING, Schedule, Unsupported, fetch_attr  # noqa: F401 (_CACHE_ATTR re-exported)

_counter = itertools.count()

@dataclass
class Program:
    """A compiled lockstep function and how to read it: the table of objects it takes and which
    node each line runs."""

    fn: Callable[..., None]
    code: Any
    source: str
    slots: list[tuple]                     # how to fetch each table entry from the graphs
    owners: dict[int, tuple[str, int, int]]  # line -> (graph, node position, edited index being run)
    rng: bool = False                      # takes a random_ops.GraphGenerators as its last argument
    writes: frozenset[int] | None = None   # generate's ``writes``: a graph may write in place


def _identifier(name: Any) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


class _Emitter:
    """Turns node arguments into Python expressions; anything not a literal goes into the table."""

    def __init__(self, slots: list[tuple]):
        self.slots = slots
        self.by_id: dict[tuple, str] = {}

    def slot(self, how: tuple, obj: Any, dedupe: bool = True) -> str:
        key = (how[0], id(obj)) if dedupe else None
        if key is not None and key in self.by_id:
            return self.by_id[key]
        name = f"t{len(self.slots)}"
        self.slots.append(how)
        if key is not None:
            self.by_id[key] = name
        return name

    def expr(self, value: Any, names: dict[torch.fx.Node, str], where: tuple) -> str:
        """``value`` as source: Nodes by variable, literals inline, containers rebuilt (as the
        Interpreter's ``map_arg`` does), other objects through the table (``where`` finds them)."""
        t = type(value)
        if t is torch.fx.Node:
            return names[value]
        if value is None or t is bool or t is int or t is str:
            return repr(value)
        if t is float:
            return repr(value) if math.isfinite(value) else self.slot(("const",) + where, value, dedupe=False)
        if isinstance(value, tuple):
            items = [self.expr(v, names, where + (i,)) for i, v in enumerate(value)]
            if hasattr(value, "_fields"):  # a namedtuple keeps its type, as map_aggregate does
                return f"{self.slot(('type',) + where, type(value), dedupe=False)}({', '.join(items)})"
            return "(" + "".join(f"{i}, " for i in items) + ")"
        if isinstance(value, list):
            return "[" + ", ".join(self.expr(v, names, where + (i,)) for i, v in enumerate(value)) + "]"
        if isinstance(value, dict):
            parts = []
            for k, v in value.items():
                if type(k) not in (str, int, bool) and k is not None:
                    raise Unsupported("a dict argument with a key that is not a literal")
                parts.append(f"{k!r}: {self.expr(v, names, where + (k,))}")
            return "{" + ", ".join(parts) + "}"
        if isinstance(value, slice):
            parts = [self.expr(getattr(value, a), names, where + (a,)) for a in ("start", "stop", "step")]
            return f"slice({', '.join(parts)})"
        return self.slot(("const",) + where, value, dedupe=False)


def _walk(value: Any, path: tuple) -> Any:
    for step in path:
        value = getattr(value, step) if isinstance(value, slice) else value[step]
    return value


def fetch_modules(sched: Schedule, graphs: dict[str, torch.fx.GraphModule]) -> dict[tuple[str, int], Any]:
    """The submodule of every ``call_module`` node, by (graph, position); ``Unsupported`` when one
    is missing.

    The modules found last time are reused when every link of their paths still holds (each
    container's ``_modules`` entry is the same object): one dict lookup per path step instead of
    a walk down every dotted path."""
    found = None
    if sched.resolved is not None:
        roots, links, modules = sched.resolved
        if roots[0] is graphs["original"] and roots[1] is graphs["edited"] and all(
                fx_compat.module_children(parent).get(atom) is child for parent, atom, child in links):
            found = modules
    if found is None:
        found = _resolve_modules(sched, graphs)
    return found


def inplace_modules(modules: dict[tuple[str, int], Any], known: Container = ()) -> set[tuple[str, int]]:
    """The (graph, position) of the submodules with ``inplace`` set (``may_mutate``'s test for a
    ``call_module`` node), read now. For the modules in ``known`` (``module_inline``'s: exact torch
    classes, none with an ``inplace`` class attribute) only the instance's own flag is read."""
    found = set()
    for key, module in modules.items():
        if key in known:
            if module.__dict__.get("inplace") is True:
                found.add(key)
            continue
        attrs = getattr(module, "__dict__", None)
        flag = attrs.get("inplace", _MISSING) if attrs is not None else _MISSING
        if flag is True or (flag is _MISSING and _inplace(module)):
            found.add(key)
    return found


def _resolve_modules(sched: Schedule, graphs: dict[str, torch.fx.GraphModule]) -> dict[tuple[str, int], Any]:
    nodes = {"original": sched.onodes, "edited": sched.enodes}
    memos: dict[str, dict[str, Any]] = {"original": {}, "edited": {}}
    found = {}
    for side, pos in sched.module_nodes:
        found[side, pos] = fetch_attr(graphs[side], nodes[side][pos].target, memos[side])
    # The links to check next time: every path prefix that is a registered submodule.
    links: list[tuple] = []
    cacheable = True
    for side, memo in memos.items():
        for path, child in memo.items():
            parent_path, _, atom = path.rpartition(".")
            parent = memo[parent_path] if parent_path else graphs[side]
            if not isinstance(parent, torch.nn.Module) or fx_compat.module_children(parent).get(atom) is not child:
                cacheable = False  # reached by plain getattr: resolve again every time
            links.append((parent, atom, child))
    sched.resolved = ((graphs["original"], graphs["edited"]), links, found) if cacheable else None
    return found


def _inplace(module: Any) -> bool:
    """``getattr(module, "inplace", False) is True`` (``may_mutate``'s test) without the cost of a
    failed ``nn.Module.__getattr__`` (an exception per module) for the modules that have none."""
    attrs = getattr(module, "__dict__", None)
    if attrs is None or not isinstance(module, torch.nn.Module):
        return getattr(module, "inplace", False) is True
    found = attrs.get("inplace", _MISSING)
    if found is not _MISSING:
        return found is True
    return getattr(type(module), "inplace", False) is True


def fetch_table(prog: Program, sched: Schedule, graphs: dict[str, torch.fx.GraphModule],
                modules: dict[tuple[str, int], Any],
                inlined: dict[tuple[str, int], tuple[Recipe, tuple]] | None = None) -> list[Any]:
    """The objects a program's table holds, read from the graphs as they are now (``inlined``:
    ``module_inline.inline_values`` of the modules, for the nodes the program inlines)."""
    nodes = {"original": sched.onodes, "edited": sched.enodes}
    memos: dict[str, dict[str, Any]] = {"original": {}, "edited": {}}
    out = []
    for how in prog.slots:
        kind, side, pos = how[0], how[1], how[2]
        node = nodes[side][pos]
        if kind == "target":
            out.append(node.target)
        elif kind == "module":
            out.append(modules[side, pos])
        elif kind == "inline":
            out.append(inlined[side, pos][1][how[3]])
        elif kind == "attr":
            out.append(fetch_attr(graphs[side], node.target, memos[side]))
        elif kind == "const":
            out.append(_walk(node.args if how[3] == "args" else node.kwargs, how[4:]))
        elif kind == "type":
            out.append(type(_walk(node.args if how[3] == "args" else node.kwargs, how[4:])))
        else:  # "default": a placeholder's default value
            out.append(node.args[0])
    return out


_NO_DEFAULT = object()


def next_input(inputs: Any, default: Any, target: str) -> Any:
    """``Interpreter.placeholder``: the next input, else the default, else an error."""
    try:
        return next(inputs)
    except StopIteration as stop:
        if default is not _NO_DEFAULT:
            return default
        raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!") from stop


def _finished(nodes: list[torch.fx.Node]) -> list[list[torch.fx.Node]]:
    """Per position: the inputs whose last reader it is, plus itself if nothing reads it (not output)."""
    last_use: dict[torch.fx.Node, torch.fx.Node] = {}
    freed_after: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for node in reversed(nodes):
        for inp in fx_compat.node_input_nodes(node):
            if inp not in last_use:
                last_use[inp] = node
                freed_after.setdefault(node, []).append(inp)
    return [freed_after.get(n, []) + ([n] if n not in last_use and n.op != "output" else []) for n in nodes]


def generate(sched: Schedule, shared: frozenset[int], progress: bool, cancel: bool,
             inline: dict[tuple[str, int], Recipe] | None = None,
             draws: tuple[frozenset[int], frozenset[int]] = (frozenset(), frozenset()), follow: int = -1,
             writes: frozenset[int] | None = None) -> Program:
    """Write and compile the lockstep function for ``sched``.

    ``shared``: edited positions that take their counterpart's value. With ``progress``,
    ``_progress(fraction, name)`` is called after every ``n // 100``-th edited node and the last,
    as the Interpreter run does; with ``cancel``, ``_cancel()`` (which raises to cancel) runs
    before those nodes. The function is
    ``f(_oin, _ein, _T, _cmp, _dif, _cmpt, _dift, _re, _cancel, _progress)``: input iterators, the
    table, the comparison of a pair expected equal and of one expected to differ (``(index,
    original value, edited value)``), the same two recording whether the pair was of plain tensors
    of one shape, the comparison of a rearranging node (``(index, source index, original, edited)``,
    see ``_rearranges``), and the callbacks. ``inline``: the ``call_module`` nodes (by graph and
    position) written as their layer's functional call (``module_inline``), when called on one input.

    ``draws``: the positions of the nodes that may draw random numbers, in (original, edited)
    (``random_ops``). When there are any, the function takes one more argument, ``_rng`` (a
    ``random_ops.GraphGenerators``), and ``_rng.enter(graph)`` comes before a drawing node whenever
    the other graph drew last; ``_rng.follow()`` comes after original node ``follow``
    (``random_ops.limit_sharing``). Without drawing nodes the program is what it was before.

    ``writes``: when a graph may write in place, the positions of the original's nodes that may
    (None: neither graph writes). Then, as in the Interpreter run, an original value still awaiting
    its comparison is copied (``_clone``) before such a node runs and the copy is compared; every
    comparison is made (no ``_re`` reuse: a value may have changed since its source was compared);
    the caller gives each graph its own copy of the inputs and shares no node.
    """
    inline = inline or {}
    onodes, enodes = sched.onodes, sched.enodes
    slots: list[tuple] = []
    emit = _Emitter(slots)
    onames = {n: f"o{i}" for i, n in enumerate(onodes)}
    enames = {n: f"e{i}" for i, n in enumerate(enodes)}
    rng = bool(draws[0] or draws[1])
    lines = ["def _lockstep(_oin, _ein, _T, _cmp, _dif, _cmpt, _dift, _re, _cancel, _progress"
             + (", _rng):" if rng else "):")]
    drawing = {"original": draws[0], "edited": draws[1]}
    owner = [None]  # the graph whose state the generators hold as the program runs
    owners: dict[int, tuple[str, int, int]] = {}
    body: list[str] = []
    table_line = len(body)
    body.append("")  # the table unpacking, filled in at the end

    snapshots: dict[torch.fx.Node, str] = {}  # original values copied before an in-place op

    def node_line(side: str, pos: int, node: torch.fx.Node, names: dict, index: int) -> None:
        var = names[node]
        if writes is not None and side == "original" and pos in writes:
            for inp in fx_compat.node_input_nodes(node):
                if inp in pending and inp not in snapshots:
                    snapshots[inp] = "s" + names[inp][1:]  # o12 -> s12
                    body.append(f"{snapshots[inp]} = _clone({names[inp]})")
        op = node.op
        if op == "placeholder":
            target = node.target
            if not isinstance(target, str):
                raise Unsupported("a placeholder without a name")
            src = "_oin" if side == "original" else "_ein"
            if target.startswith("*"):
                code = f"list({src})"
            else:
                default = emit.slot(("default", side, pos), None, dedupe=False) if node.args else "_NO_DEFAULT"
                code = f"_next_input({src}, {default}, {target!r})"
        elif op == "get_attr":
            code = emit.slot(("attr", side, pos), None, dedupe=False)
        elif op == "output":
            code = emit.expr(node.args[0], names, (side, pos, "args", 0))
        else:
            args = [emit.expr(a, names, (side, pos, "args", i)) for i, a in enumerate(node.args)]
            for k, v in node.kwargs.items():
                if not _identifier(k):
                    raise Unsupported(f"keyword argument {k!r}")
                args.append(f"{k}={emit.expr(v, names, (side, pos, 'kwargs', k))}")
            if op == "call_function":
                if isinstance(node.target, str):
                    raise Unsupported("a call_function with a string target")
                fn = emit.slot(("target", side, pos), node.target)
                code = f"{fn}({', '.join(args)})"
            elif op == "call_method":
                if not _identifier(node.target) or not node.args:
                    raise Unsupported(f"method {node.target!r}")
                code = f"{args[0]}.{node.target}({', '.join(args[1:])})"
            elif op == "call_module":
                if not isinstance(node.target, str):
                    raise Unsupported("a call_module with a non-string target")
                recipe = inline.get((side, pos))
                if recipe is not None and len(node.args) == 1 and not node.kwargs:
                    values = [emit.slot(("inline", side, pos, i), None, dedupe=False)
                              for i in range(recipe.arity)]
                    code = recipe.expr(args[0], values)
                else:
                    mod = emit.slot(("module", side, pos), None, dedupe=False)
                    code = f"{mod}({', '.join(args)})"
            else:
                raise Unsupported(f"op {op}")
        if pos in drawing[side] and owner[0] != side:
            body.append(f"_rng.enter({side!r})")
            owner[0] = side
        owners[len(body)] = (side, pos, index)
        body.append(f"{var} = {code}")
        if side == "original" and pos == follow:
            body.append("_rng.follow()")

    ofinished = _finished(onodes)
    efinished = _finished(enodes)
    # Comparisons whose result a rearranging node reuses record whether they were of two plain
    # tensors of one shape (``_cmpt``/``_dift``).
    tracked = {j for i, j in enumerate(sched.rearranges) if j >= 0 and j not in shared and i not in shared}
    pending = {onodes[p] for p in sched.counter_pos if p >= 0}  # originals awaiting comparison
    uses_done: set[torch.fx.Node] = set()
    opos = 0
    total = len(enodes)
    every = max(1, total // 100)
    for index, enode in enumerate(enodes):
        checkpoint = index % every == 0 or index == total - 1
        if cancel and index % every == 0:
            body.append("_cancel()")
        cpos = sched.counter_pos[index]
        counterpart = onodes[cpos] if cpos >= 0 else None
        if counterpart is not None:
            # The original first, up to the counterpart (each graph draws from its own state).
            while cpos >= opos:
                node_line("original", opos, onodes[opos], onames, index)
                done = ofinished[opos]
                uses_done.update(done)
                dead = [onames[n] for n in done if n not in pending]
                if dead:
                    body.append(f"del {', '.join(dead)}")
                opos += 1
        dead = []
        if index in shared:
            body.append(f"{enames[enode]} = {onames[counterpart]}")
        else:
            node_line("edited", index, enode, enames, index)
            if counterpart is not None:
                source = sched.rearranges[index]
                reference = snapshots.pop(counterpart, onames[counterpart])
                if source >= 0 and source not in shared and writes is None:
                    body.append(f"_re({index}, {source}, {reference}, {enames[enode]})")
                else:
                    how = "_cmp" if sched.expect_equal[index] else "_dif"
                    if index in tracked and writes is None:
                        how += "t"
                    body.append(f"{how}({index}, {reference}, {enames[enode]})")
                if reference != onames[counterpart]:
                    body.append(f"del {reference}")
        if counterpart is not None:
            pending.discard(counterpart)
            if counterpart in uses_done:
                dead.append(onames[counterpart])
        dead += [enames[n] for n in efinished[index]]
        if dead:
            body.append(f"del {', '.join(dead)}")
        if progress and checkpoint:
            body.append(f"_progress({(index + 1) / total!r}, {enode.name!r})")
    if slots:
        body[table_line] = ", ".join(f"t{i}" for i in range(len(slots))) + ", = _T"
    else:
        body[table_line] = "pass"
    source = "\n".join(lines + ["    " + b for b in body]) + "\n"
    filename = f"<fxstudio lockstep {next(_counter)}>"
    code = compile_code(source, filename)   # in a worker: off the interpreter lock (the window's Run)
    namespace: dict[str, Any] = {"_next_input": next_input, "_NO_DEFAULT": _NO_DEFAULT, "_clone": clone_tensors,
                                 **module_inline.NAMESPACE}
    exec(code, namespace)  # noqa: S102 - our own generated source
    fn = namespace["_lockstep"]
    # Line numbers in the function: the "def" line is 1, body[i] is line i + 2.
    return Program(fn, fn.__code__, source, slots, {i + 2: owner for i, owner in owners.items()}, rng,
                   writes)


def failing_line(prog: Program, exc: BaseException) -> tuple[str, int, int] | None:
    """The (graph, node position, edited index) whose line raised ``exc``, None when it came from
    elsewhere (a comparison, a callback); the generated frame's values are released either way."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is prog.code:
            owner = prog.owners.get(tb.tb_lineno)
            try:
                tb.tb_frame.clear()
            except RuntimeError:  # still executing: cannot happen once the exception left it
                pass
            return owner
        tb = tb.tb_next
    return None
