"""Whole-graph edits: ``run_pass`` and ``replace_pattern`` (issue #14), and the one primitive they
apply, ``SwapModule``.

A pass runs on a working copy of the edited module (``fxstudio.core.passes``). Its result is then
installed as one primitive: the edited module's graph and its submodule, parameter, buffer and
tensor-attribute tables are replaced by the result's, and put back on revert; both sides are kept,
so undo restores code and weights bit for bit and redo reinstalls the very same objects. Nodes are
matched before/after (``match_nodes``), so a node the pass kept keeps its stable id; unmatched old
nodes are reported removed, unmatched new ones added (fresh ids), matched ones whose call changed
changed. The edited module's own ``meta`` is swapped too (``prepare_fx`` keeps there what
``convert_fx`` reads).

A ``run_pass`` gets the model's example inputs (``example_inputs_of``: the pass may declare
``example_inputs``; its result must run on them) and the edit's ``kwargs``. A pass that leaves the
graph as it was but computes something per node (``ShapeProp``, a profiling Interpreter) is an
analysis: ``pass_analysis.SetNodeMeta`` records what it computed instead of a swap.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxstudio.core.edits.common import text_field
from fxstudio.core.edits.ledger import attach, ledger_of
from fxstudio.core.edits.work import node_cost
from fxstudio.core.edits.primitives import Primitive, Transaction
from fxstudio.core.edits.state import ID_KEY, Changes, EditState
from fxstudio.core import fx_compat
from fxstudio.core.errors import EditRefused
from fxstudio.core.same_computation import fetch_path
from fxstudio.core.edits.pass_analysis import analysis_edit, attach_analysis
from fxstudio.core.passes import (BUILTIN_PREFIX, DEFAULT_PASS_TRUST, RUN_META_KEY, PassInputs, PassRun, PassTrust,
                                  builtin_pass, load_pass, match_nodes, parse_pass_kwargs, root_tensor_attrs, run_pass,
                                  same_call)

_TABLES = fx_compat.MODULE_TABLES


@dataclass
class ModuleSide:
    """One side of a ``SwapModule``: a graph, the root's tables and tensor attributes, and the
    id/name indexes of that graph's nodes."""

    graph: torch.fx.Graph
    tables: dict[str, dict]
    attrs: dict[str, torch.Tensor]
    by_id: dict[int, torch.fx.Node]
    by_name: dict[str, torch.fx.Node]
    code: Any = None  # fx_compat.compiled_code installed with this side (new: compiled for its graph)
    root_meta: Any = None  # the GraphModule's own ``meta`` (prepare_fx keeps what convert_fx needs there)
    counts: Any = None  # the cost ledger's entries as they were when this side was last left (``Ledger.snapshot``)

    @classmethod
    def of(cls, gm: torch.fx.GraphModule, by_id: dict | None = None, code: Any = None) -> "ModuleSide":
        """The side ``gm`` holds now (``by_id`` default: from the nodes' ids)."""
        nodes = list(gm.graph.nodes)
        return cls(gm.graph, {t: dict(gm.__dict__[t]) for t in _TABLES}, root_tensor_attrs(gm),
                   dict(by_id) if by_id is not None else {n.meta[ID_KEY]: n for n in nodes},
                   {n.name: n for n in nodes}, code, gm.__dict__.get("meta"))


@dataclass
class SwapModule(Primitive):
    """Replace the edited module's graph and tables by ``new`` (revert: by ``old``), reporting the
    node ids the swap adds, removes and changes."""

    old: ModuleSide
    new: ModuleSide
    added: tuple[int, ...]
    removed: tuple[int, ...]
    changed: tuple[int, ...]  # matched nodes whose call (target, args, kwargs, submodule) changed
    touched: tuple[int, ...]  # nodes whose users or name changed
    renamed: tuple[int, ...] = ()  # matched nodes the pass gave another name
    redone: bool = False  # applied before (the new side's shapes are computed)

    def _install(self, state: EditState, side: ModuleSide) -> None:
        gm = state.gm
        for name in root_tensor_attrs(gm):
            del gm.__dict__[name]
        for table in _TABLES:
            gm.__dict__[table] = dict(side.tables[table])
        gm.__dict__.update(side.attrs)
        if isinstance(side.root_meta, dict):
            gm.__dict__["meta"] = side.root_meta
        gm.__dict__["_graph"] = side.graph
        side.graph.owning_module = gm
        if side.code is not None:  # the code it had (stale or not), or the code compiled for it
            fx_compat.install_code(gm, side.code)
        elif self.new.code is not None:  # no code to go back to: compile (a rollback needs code matching)
            gm.recompile()
        state.graph = side.graph
        state.by_id = dict(side.by_id)
        state.by_name = dict(side.by_name)
        ledger = ledger_of(gm)
        if ledger is not None:  # another graph: its counts as it was left, or what it adds or changes counted afresh
            other = self.old if side is self.new else self.new
            other.counts = ledger.snapshot()
            if side.counts is not None:
                ledger.restore(side.counts)
            else:
                ledger.recount(side.graph, gm, only={*self.added, *self.removed, *self.changed})

    def _report(self, changes: Changes, gone: tuple[int, ...], come: tuple[int, ...], compute: bool) -> None:
        for node_id in gone:
            changes.remove(node_id)
        for node_id in come:
            changes.add(node_id)
        for node_id in self.changed:
            if compute:
                changes.compute(node_id)
            else:
                changes.change(node_id)
        changes.change(*self.touched)

    @property
    def compiled(self) -> bool:
        """Whether ``apply`` installs code compiled for the new graph: the edited module is then
        not stale after a command that ends with this swap (``Document``)."""
        return self.new.code is not None

    def settle(self) -> None:
        """The command is committed: drop the compiled code kept for a rollback (megabytes on a
        large graph); undo and redo then leave the module stale, to be recompiled on use."""
        self.old.code = self.new.code = None

    def apply(self, state: EditState, changes: Changes) -> None:
        # Only the first time: the changed nodes' shapes are then computed (and kept in their own
        # metadata, which no other graph shares), so a redo, like an undo, evaluates nothing.
        first = self.new.counts is None and not self.redone
        self._install(state, self.new)
        self._report(changes, self.removed, self.added, compute=first)
        self.redone = True

    def revert(self, state: EditState, changes: Changes) -> None:
        self._install(state, self.old)
        self._report(changes, self.added, self.removed, compute=False)

    def summary(self) -> str:
        """``2 added, 1 removed, 3 changed`` (nodes)."""
        text = f"{len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed"
        return text + (f", {len(self.renamed)} renamed" if self.renamed else "")


def _module_signature(m: Any) -> Any:
    """What makes two submodules compute the same: class, configuration and the very tensors."""
    if not isinstance(m, torch.nn.Module):
        return ("obj", id(m))
    try:
        config = m.extra_repr()
    except Exception:  # noqa: BLE001 - a broken extra_repr: compare by identity
        config = id(m)
    return (type(m), config, tuple((k, id(t)) for k, t in m.state_dict(keep_vars=True).items()))


class _Paths:
    """``fetch_path(root, path)`` with every prefix walked once (10k ``get_attr`` nodes share a few
    thousand submodules)."""

    def __init__(self, root: torch.nn.Module):
        self.root = root
        self.found: dict[str, Any] = {}

    def get(self, path: str) -> Any:
        """``root.<path>``, or None where a step is missing."""
        try:
            return self.found[path]
        except KeyError:
            pass
        parent, _, last = path.rpartition(".")
        base = self.get(parent) if parent else self.root
        obj = self.found[path] = getattr(base, last, None) if base is not None else None
        return obj


def _plain_lookup(m: Any) -> bool:
    """Whether ``getattr(m, name)`` finds a parameter, buffer or child in ``nn.Module``'s tables."""
    cls = type(m)
    return (isinstance(m, torch.nn.Module) and cls.__getattr__ is torch.nn.Module.__getattr__
            and cls.__getattribute__ is object.__getattribute__)


def _same_tensor_paths(old_root: torch.nn.Module, new_root: torch.nn.Module) -> set[str]:
    """Dotted paths of the parameters and buffers that are the very same tensor in both trees,
    found by walking the two trees' tables side by side (a few microseconds a module, where
    resolving each ``get_attr`` target on both sides costs more). Only entries ``getattr`` resolves
    to (not shadowed by an instance or class attribute) count; any other path is left to
    ``_same_attr``."""
    same: set[str] = set()
    stack = [("", old_root, new_root)]
    while stack:
        prefix, a, b = stack.pop()
        if not (_plain_lookup(a) and _plain_lookup(b)):
            continue
        da, db = a.__dict__, b.__dict__
        ca, cb = type(a), type(b)
        for table in ("_parameters", "_buffers"):
            ta = da.get(table) or {}
            for k, v in (db.get(table) or {}).items():
                if v is not None and ta.get(k) is v and k not in da and k not in db \
                        and not hasattr(ca, k) and not hasattr(cb, k):
                    same.add(prefix + k)
        ma = da.get("_modules") or {}
        for k, child in (db.get("_modules") or {}).items():
            twin = ma.get(k)
            if twin is not None and child is not None and k not in da and k not in db:
                stack.append((f"{prefix}{k}.", twin, child))
    return same


def _same_attr(old_paths: _Paths, new_paths: _Paths, node_old: torch.fx.Node, node_new: torch.fx.Node,
               same_tensors: set[str] = frozenset()) -> bool:
    if node_new.op not in ("call_module", "get_attr"):
        return True
    if node_new.op == "get_attr" and node_old.target == node_new.target and node_new.target in same_tensors:
        return True
    a, b = old_paths.get(str(node_old.target)), new_paths.get(str(node_new.target))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    return _module_signature(a) == _module_signature(b)


def _tree_signature(gm: torch.fx.GraphModule) -> Any:
    """The weights (by identity) and the called submodules' classes and configurations: what a
    pass may change besides the code (bare containers of a rebuilt tree do not count)."""
    called = {str(n.target) for n in gm.graph.nodes if n.op == "call_module"}
    return ({k: id(t) for k, t in gm.state_dict(keep_vars=True).items()},
            {k: _module_signature(fetch_path(gm, k))[:2] for k in called})


def swap_for(tx: Transaction, result: torch.fx.GraphModule, label: str,
             analysis: dict | None = None) -> Primitive:
    """The ``SwapModule`` that installs a pass's ``result`` (checked and recompiled by the runner)
    in the edited module: nodes matched, ids given, changes found. A result with the same graph and
    weights, from a pass that worked on the graph it was given (``analysis`` not None: what its
    Interpreter measured per node, maybe nothing) and wrote node metadata or measured something, is
    an analysis: a ``SetNodeMeta`` on the edited graph's nodes instead (``pass_analysis``). Refuses
    a pass that changed nothing. Takes fresh ids from the state (a rollback gives them back)."""
    state = tx.state
    gm = state.gm
    old_nodes = list(state.graph.nodes)
    new_nodes = list(result.graph.nodes)
    if result.graph is state.graph:
        raise EditRefused(f"The pass {label} returned the edited graph itself; nothing was changed.")
    matched = match_nodes(old_nodes, new_nodes)
    ids: dict[torch.fx.Node, int] = {}
    metas: set[int] = set()
    for node in new_nodes:
        meta = node.meta
        if id(meta) in metas:  # a pass may give two nodes one dict; each needs its own id
            meta = node.meta = dict(meta)
        metas.add(id(meta))
        twin = matched.get(node)
        if twin is not None:  # what fxstudio knows of the node (shapes, module path), under the pass's
            for key, value in twin.meta.items():
                if key not in meta and key != RUN_META_KEY:  # a run's record holds for its own graph only
                    meta[key] = value
            ids[node] = twin.meta[ID_KEY]
        else:
            ids[node] = state.new_id()
        node.meta[ID_KEY] = ids[node]
    old_key = lambda n: n.meta[ID_KEY]  # noqa: E731
    new_key = ids.__getitem__
    kept = {old_key(old) for old in matched.values()}
    removed = tuple(old_key(n) for n in old_nodes if old_key(n) not in kept)
    added = tuple(ids[n] for n in new_nodes if n not in matched)
    changed, touched, renamed = [], set(), []
    old_paths, new_paths, same_tensors = _Paths(gm), _Paths(result), _same_tensor_paths(gm, result)
    for node in new_nodes:
        twin = matched.get(node)
        if twin is None:
            touched.update(ids[i] for i in node.all_input_nodes)
            continue
        if not (same_call(twin, node, old_key, new_key) and _same_attr(old_paths, new_paths, twin, node, same_tensors)):
            changed.append(ids[node])
        if twin.name != node.name:
            touched.add(ids[node])
            renamed.append(ids[node])
    gone = set(removed)
    for node in old_nodes:
        if old_key(node) in gone:
            touched.update(old_key(i) for i in node.all_input_nodes)
    touched -= gone | set(added)
    if not (added or removed or changed or touched):  # maybe moved nodes or swapped weights, maybe nothing
        old_code = state.graph.python_code(root_module="self").src
        if old_code == result.code and _tree_signature(gm) == _tree_signature(result):
            meta_edit = analysis_edit(matched, label, analysis) if analysis is not None else None
            if meta_edit is None:
                raise EditRefused(f"The pass {label} changed nothing.")
            return meta_edit
    attach_analysis(new_nodes, label, analysis or {})
    old_side = ModuleSide.of(gm, state.by_id, fx_compat.compiled_code(gm))
    new_side = ModuleSide.of(result, {ids[n]: n for n in new_nodes}, fx_compat.compiled_code(result))
    swap = SwapModule(old_side, new_side, added, removed, tuple(changed), tuple(sorted(touched)), tuple(renamed))
    return swap


def _trust(state: EditState) -> PassTrust:
    return getattr(state, "pass_trust", None) or DEFAULT_PASS_TRUST


def _pass_file(state: EditState, edit: dict):
    """The trusted, existing pass file ``edit["file"]`` names (resolved against the trust's base dir)."""
    trust = _trust(state)
    path = trust.resolve(text_field(edit, "file"))
    if not path.is_file():
        raise EditRefused(f"There is no pass file {path}.")
    trust.check(path)
    return trust, path


@dataclass(frozen=True)
class PassOutcome:
    """A pass computed on a working copy but not installed: the checked result module, the label, the
    edit to record, the label's detail (e.g. how many matches a pattern replaced, the result's trial
    run skipped) and the per-node analysis of an Interpreter pass (nodes of ``result``)."""

    result: torch.fx.GraphModule
    label: str
    record: dict
    detail: str = ""
    analysis: dict | None = None  # None: the pass built another graph (its node metadata is no analysis)

    @classmethod
    def of(cls, run: PassRun, label: str, record: dict, detail: str = "") -> "PassOutcome":
        """The outcome of a runner's ``PassRun`` (its notes join the detail)."""
        notes = "".join(f"{note}; " for note in run.notes)
        return cls(run.module, label, record, detail + notes, run.analysis if run.in_place else None)


@dataclass(frozen=True)
class PreparedEdit:
    """A pass edit run ahead (``Document.prepare_edit``): valid only for the document state ``serial``
    it was computed on and for exactly this ``edit``."""

    serial: int
    edit: dict
    outcome: PassOutcome


def compute_outcome(state: EditState, edit: dict) -> PassOutcome:
    """Run the pass of a ``run_pass`` / ``replace_pattern`` edit on a working copy of ``state.gm``;
    changes nothing of the document, so it may run in a worker thread while the document waits
    (``Document.prepare_edit``)."""
    attach(state.gm)  # the cost ledger's baseline, if the document has none yet: counted in the worker
    if edit.get("op") == "replace_pattern":
        return _pattern_outcome(state, edit)
    return _pass_outcome(state, edit)


def example_inputs_of(state: EditState) -> tuple | None:
    """The document's example inputs (``Document`` sets ``state.example_inputs`` from the loaded
    model), or None when the model has none: no inputs while the graph has an input without default."""
    inputs = getattr(state, "example_inputs", None)
    if inputs is None:
        return None
    inputs = tuple(inputs)
    if not inputs and any(n.op == "placeholder" and not n.args for n in state.graph.nodes):
        return None
    return inputs


def _pass_outcome(state: EditState, edit: dict) -> PassOutcome:
    name = text_field(edit, "name").strip()
    sha256 = _sha256_field(edit)
    record: dict = {"op": "run_pass"}
    kwargs = parse_pass_kwargs(edit.get("kwargs"))
    inputs = PassInputs(example_inputs_of(state), kwargs)
    if edit.get("file") is None:
        if not name.startswith(BUILTIN_PREFIX):
            raise EditRefused(f"run_pass needs a 'file' (the pass file defining {name!r}), or the name of a "
                              f"built-in pass ({BUILTIN_PREFIX}…).")
        if sha256 is not None:
            raise EditRefused(f"{name} is a built-in pass: 'sha256' is only for pass files.")
        obj, path, label, share = builtin_pass(name), None, name, True
        record["name"] = name
    else:
        trust, path = _pass_file(state, edit)
        loaded = load_pass(path, name, sha256, allow_changed=trust.allow_changed)
        obj, label, share = loaded.obj, f"{path.name}::{name}", False
        record.update(file=edit["file"], name=name, sha256=loaded.sha256)
    if kwargs:
        record["kwargs"] = dict(edit["kwargs"])
    if path is not None:
        return PassOutcome.of(run_pass(obj, state.gm, label, path, share, inputs), label, record)
    with _costs_for_the_run(state):
        run = run_pass(obj, state.gm, label, path, share, inputs)
    for node in run.module.graph.nodes:
        node.meta.pop(COST_KEY, None)
    return PassOutcome.of(run, label, record)


COST_KEY = "fxs_cost"
"""``node.meta`` key of a node's (bytes, work) estimate, given to the nodes for a built-in pass's
run: ``fxstudio.passes.fold_constants`` sums them to stay inside the edit budgets."""


@contextlib.contextmanager
def _costs_for_the_run(state: EditState):
    """Give every node of the edited graph its cost estimate (``COST_KEY``, from its shape metadata)
    while a built-in pass runs on a working copy (whose node metadata is a shallow copy); taken
    away again afterwards."""
    gm = state.gm
    nodes = list(state.graph.nodes)
    try:
        for node in nodes:
            node.meta[COST_KEY] = node_cost(node, gm)
        yield
    finally:
        for node in nodes:
            node.meta.pop(COST_KEY, None)


def _sha256_field(edit: dict) -> str | None:
    """The pass file's recorded sha256 (``run_pass`` and ``replace_pattern`` alike), or None."""
    sha256 = edit.get("sha256")
    if sha256 is not None and not isinstance(sha256, str):
        raise EditRefused(f"Field 'sha256' must be the pass file's sha256 as text, not {sha256!r}.")
    return sha256


def _pattern_outcome(state: EditState, edit: dict) -> PassOutcome:
    pattern = text_field(edit, "pattern").strip()
    replacement = text_field(edit, "replacement").strip()
    sha256 = _sha256_field(edit)
    trust, path = _pass_file(state, edit)
    pat = load_pass(path, pattern, sha256, allow_changed=trust.allow_changed)
    rep = load_pass(path, replacement, sha256, allow_changed=trust.allow_changed)
    for fn, field in ((pat.obj, pattern), (rep.obj, replacement)):
        if not callable(fn) or isinstance(fn, type):
            raise EditRefused(f"{path.name}::{field} is a {type(fn).__name__}; replace_pattern needs two functions.")
    found: list[int] = []

    def rewrite(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
        found.append(len(torch.fx.subgraph_rewriter.replace_pattern(gm, pat.obj, rep.obj)))
        return gm

    label = f"{path.name}::{pattern} → {replacement}"
    run = run_pass(rewrite, state.gm, label, path, True, PassInputs(example_inputs_of(state)))
    if not found or not found[0]:
        raise EditRefused(f"The pattern {path.name}::{pattern} matches nothing in the graph; nothing was changed.")
    n = found[0]
    record = {"op": "replace_pattern", "file": edit["file"], "pattern": pattern, "replacement": replacement,
              "sha256": pat.sha256}
    return PassOutcome.of(run, label, record, f"{n} match{'es' if n != 1 else ''}; ")


def _install(tx: Transaction, edit: dict, verb: str) -> tuple[str, dict]:
    """Install the edit's outcome: the one prepared for it in a worker if there is one, else computed now."""
    prepared = tx.state.prepared_outcome
    tx.state.prepared_outcome = None
    outcome = prepared[1] if prepared is not None and prepared[0] == edit else compute_outcome(tx.state, edit)
    swap = swap_for(tx, outcome.result, outcome.label, outcome.analysis)
    tx.do(swap)
    return f"{verb} {outcome.label} ({outcome.detail}{swap.summary()})", outcome.record


def op_run_pass(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "run_pass", "name", "file"?, "sha256"?, "kwargs"?}``: run a pass of a trusted file (or a
    built-in ``fxstudio.passes.<name>`` without a file) on a copy of the edited module, with the edit's
    keyword arguments (``{"name": "value text"}``) and the model's example inputs where it declares
    ``example_inputs``, and install the result (or, for an analysis, what it computed per node)."""
    return _install(tx, edit, "Run pass")


def op_replace_pattern(tx: Transaction, edit: dict) -> tuple[str, dict]:
    """``{"op": "replace_pattern", "file", "pattern", "replacement", "sha256"?}``: ``torch.fx.subgraph_rewriter
    .replace_pattern`` with two functions of a trusted file (refused when its bytes differ from a recorded
    ``sha256``, as for ``run_pass``); refused when the pattern matches nothing."""
    return _install(tx, edit, "Replace pattern")
