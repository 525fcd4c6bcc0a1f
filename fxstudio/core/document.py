"""The document: the original traced module, the edited copy, stable node ids, undoable validated
commands, change events and the recorded edit script (docs/CONTRACTS.md, "Document").

Every edit is validated and applied as one transaction of primitive changes (``fxstudio.core.edits``);
a refused edit is rolled back and changes nothing. Recompiling the edited module is deferred to
``module()``, so a burst of edits on a large graph costs one recompile, not one per edit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.fx

from fxstudio.core.edits import (FORMAT, ID_KEY, OPS, Changes, EditState, PreparedEdit, Primitive, ReplayReport,
                                 ShapeRefresher, Transaction, check_fields, compute_outcome, cycle_path, fake_check, load_script,
                                 new_script, replay_into, save_script, validate_script)
from fxstudio.core.errors import EditRefused
from fxstudio.core.model import LoadedModel
from fxstudio.core.module_state import share_graph_module
from fxstudio.core.node_checks import Fit, GraphVerdict, NodeProblem, graph_verdict, node_problem, rejected_nodes, replaced_input

__all__ = ["Document", "DocumentEvent", "EditResult", "FORMAT", "ReplayReport", "load_script", "replay", "replay_into",
           "save_script"]


@dataclass(frozen=True)
class DocumentEvent:
    """What changed: ``kind`` is "edited", "undone", "redone", "reset" or "saved"; ids are node ids.
    ``rejected``: the nodes among those added or changed that torch now rejects (fake-tensor
    propagation raised there: a run would fail), in graph order; ``Document.problems()`` lists all."""

    kind: str
    label: str
    added: frozenset[int] = frozenset()
    removed: frozenset[int] = frozenset()
    changed: frozenset[int] = frozenset()
    rejected: tuple[NodeProblem, ...] = ()


@dataclass(frozen=True)
class EditResult:
    """What an applied edit (or compound command) changed: its History ``label`` and the node ids it
    ``added``, ``removed`` and ``changed``, the sets its "edited" ``DocumentEvent`` carries."""

    label: str
    added: frozenset[int] = frozenset()
    removed: frozenset[int] = frozenset()
    changed: frozenset[int] = frozenset()


@dataclass(frozen=True)
class StagedEdit:
    """An edit applied to the graph but not yet a command (``Document.stage_edit``): valid while the
    document's state is still ``serial``."""

    serial: int
    tx: Transaction
    labels: list[str]
    records: list[dict]


@dataclass
class Command:
    """One undoable step: its label, the primitives it applied and the edits it records."""

    label: str
    primitives: list[Primitive]
    records: list[dict] = field(default_factory=list)


class Document:
    """An opened model being edited (see docs/CONTRACTS.md for the full API)."""

    def __init__(self, loaded: LoadedModel, *, adopt_graph: bool = False, view_only: str | None = None):
        """``adopt_graph``: the original takes ``loaded.graph_module``'s graph itself instead of a
        copy (one copy less; for a loaded model nothing else will read, such as a ``.pt2``'s
        structure preview). ``view_only``: the reason every edit is refused (``read_only``), set
        from the start: the edited module then shares the original's graph (no copy)."""
        self.loaded = loaded
        # Both graph modules get their own graph (and node.meta dicts) but share the loaded one's
        # submodules, parameters and buffers: the weights are held once. Nothing writes into them:
        # edits only change the graph and the edited root's own submodule table, shapes are
        # refreshed on fake copies, and runs/exports work on copies (fxstudio.core.module_state).
        self.original: torch.fx.GraphModule = share_graph_module(
            loaded.graph_module, loaded.graph_module.graph if adopt_graph else None)
        for i, node in enumerate(self.original.graph.nodes):
            node.meta[ID_KEY] = i
        # A view-only document never edits: its edited module shows the original's very graph.
        self.edited: torch.fx.GraphModule = share_graph_module(
            self.original, self.original.graph if view_only else None)
        self._state = EditState(self.edited, len(self.original.graph.nodes), loaded.user_module)
        self._state.example_inputs = loaded.example_inputs  # what a pass's result must run on (run_pass)
        self._commands: list[Command] = []
        self._index = 0
        self._saved_index: int | None = 0
        self._stale = False
        self._subscribers: list[Callable[[DocumentEvent], None]] = []
        self._shapes = ShapeRefresher(self.edited)
        self._serial = 0  # counts every change of the edited graph: a prepared pass is for one state
        self.read_only: str | None = view_only
        """When set, the reason every edit is refused (``fxstudio.show`` opens a view-only window)."""

    # ------------------------------------------------------------------ module and nodes

    def module(self) -> torch.fx.GraphModule:
        """The edited module, recompiled first if any edit happened since the last compile."""
        if self._stale:
            self.edited.graph.lint()
            self.edited.recompile()
            self._stale = False
        return self.edited

    @property
    def stale(self) -> bool:
        """Whether ``edited.code`` lags behind ``edited.graph`` (``module()`` fixes that)."""
        return self._stale

    def node(self, node_id: int) -> torch.fx.Node | None:
        """The live node with this id in the edited graph, or None (erased, or never existed)."""
        return self._state.by_id.get(node_id)

    def id_of(self, node: torch.fx.Node) -> int:
        """The stable id of a node of the edited (or original) graph."""
        try:
            return node.meta[ID_KEY]
        except KeyError:
            raise ValueError(f"{node!r} is not a node of this document") from None

    def find(self, name: str) -> torch.fx.Node | None:
        """The live node of the edited graph called ``name`` (``%`` prefix allowed), or None."""
        return self._state.find(name.removeprefix("%"))

    def original_node(self, node_id: int) -> torch.fx.Node | None:
        """The node with this id in the original graph, or None (added by an edit)."""
        for node in self.original.graph.nodes:
            if node.meta[ID_KEY] == node_id:
                return node
        return None

    # ------------------------------------------------------------------ node metadata (fxs_* keys)

    def module_path_of(self, node: torch.fx.Node) -> str:
        """Dotted path of the submodule ``node`` was traced in (``""`` at the top)."""
        from fxstudio.core import node_text

        return node.meta.get(node_text.META_MODULE_PATH) or ""

    def module_stack_of(self, node: torch.fx.Node) -> list[tuple[str, str]]:
        """``[(path, class_name), ...]`` of the submodules around ``node``, outermost first."""
        from fxstudio.core import node_text

        return list(node.meta.get(node_text.META_MODULE_STACK) or [])

    def source_of(self, node: torch.fx.Node) -> dict | None:
        """``{"file", "line", "code"}`` of the user's source line of ``node``, or None."""
        from fxstudio.core import node_text

        return node.meta.get(node_text.META_SOURCE) or None

    def shape_text_of(self, node: torch.fx.Node) -> str:
        """``"1×64×56×56 float32"`` for ``node``'s output, ``""`` when unknown."""
        from fxstudio.core import node_text

        return node_text.shape_text(node)

    def original_names_by_id(self) -> dict[int, str]:
        """Node name of every node of the original graph, by stable id."""
        return {n.meta.get(ID_KEY): n.name for n in self.original.graph.nodes}

    # ------------------------------------------------------------------ events

    def subscribe(self, callback: Callable[[DocumentEvent], None]) -> Callable[[], None]:
        """Call ``callback(event)`` after every change; returns a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    @property
    def serial(self) -> int:
        """Counts every change of the edited graph (edit, undo, redo): what a view computed ahead
        for one state of the graph holds while this is unchanged."""
        return self._serial

    def discard_staged(self, staged: StagedEdit) -> None:
        """Undo a staged edit that will not be committed (its pass was cancelled while installing)."""
        if staged.serial == self._serial:
            staged.tx.rollback()

    def _refresh_shapes(self, changes: Changes) -> None:
        """Recompute shapes of touched nodes (and downstream while they change); report them too."""
        by_id = self._state.by_id
        touched = [by_id[i] for i in changes.recompute if i in by_id]
        for node in self._shapes.refresh(touched):
            changes.change(node.meta[ID_KEY])

    @property
    def shapes_complete(self) -> bool:
        """False when an edit changed more shapes than are recomputed per edit: some nodes then
        show no shape until ``refresh_shapes()``."""
        return self._shapes.complete

    def refresh_shapes(self) -> None:
        """Recompute every shape of the edited graph (no budget); emits a "reset" event naming
        the nodes whose shape changed."""
        self._shapes.complete = True
        changed = self._shapes.refresh(list(self.edited.graph.nodes), budget=None)
        changes = Changes()
        changes.change(*(n.meta[ID_KEY] for n in changed))
        event = DocumentEvent("reset", "Shapes recomputed", frozenset(), frozenset(), frozenset(changes.changed),
                              self._rejected_among(changes.changed))
        for callback in list(self._subscribers):
            callback(event)

    def _rejected_among(self, ids) -> tuple[NodeProblem, ...]:
        """The ``NodeProblem``s of the live nodes among ``ids`` that torch rejects, in graph order."""
        found = []
        for node_id in ids:
            node = self._state.by_id.get(node_id)
            problem = node_problem(node) if node is not None else None
            if problem is not None:
                found.append((node, problem))
        if len(found) > 1:
            order = {n: i for i, n in enumerate(self.edited.graph.nodes)}
            found.sort(key=lambda pair: order.get(pair[0], 0))
        return tuple(p for _, p in found)

    def _emit(self, kind: str, label: str, changes: Changes | None = None, *, refreshed: bool = False) -> DocumentEvent:
        changes = changes or Changes()
        if kind in ("edited", "undone", "redone"):
            self._serial += 1
            if not refreshed:  # a staged edit's shapes were refreshed where it was staged
                self._refresh_shapes(changes)
        event = DocumentEvent(kind, label, frozenset(changes.added), frozenset(changes.removed),
                              frozenset(changes.changed), self._rejected_among(changes.added | changes.changed))
        for callback in list(self._subscribers):
            callback(event)
        return event

    # ------------------------------------------------------------------ torch's checks

    def problems(self) -> list[NodeProblem]:
        """Every node of the edited graph torch rejects (fake-tensor propagation after an edit raised
        there: a run would fail), in graph order, each with torch's one-line message. An undo that
        takes the cause back clears it."""
        return rejected_nodes(self.edited)

    def verdict(self) -> GraphVerdict:
        """``graph.lint()`` and torch's checks on the edited graph: never "ok" while a node is rejected
        or a shape is unknown (``node_checks.GraphVerdict``)."""
        return graph_verdict(self.edited)

    def input_fit(self, user: str, key: int | str, path: tuple[int, ...], src: str) -> Fit:
        """Whether torch would accept node ``user`` with ``src`` as its input at ``key`` (and ``path``
        inside a list argument), told before the edit by one fake-tensor call of ``user``'s target
        on the recorded shapes; nothing changes. "unknown" where shapes are not known."""
        u, n = self.find(user), self.find(src)
        if u is None or n is None:
            return Fit("unknown")
        try:
            args, kwargs = replaced_input(u, key, tuple(path), n)
        except (IndexError, KeyError, TypeError):
            return Fit("unknown")
        status, message = fake_check(self._shapes, u.op, u.target, args, kwargs)
        return Fit(status, message)

    # ------------------------------------------------------------------ edits

    def _run(self, edits: list[dict]) -> tuple[Transaction, list[str], list[dict]]:
        """Apply ``edits`` in one transaction; on refusal roll back and raise (prefixing the index)."""
        if self.read_only:
            raise EditRefused(self.read_only)
        tx = Transaction(self._state)
        labels, records = [], []
        for i, edit in enumerate(edits):
            try:
                op = check_fields(edit)
                label, record = OPS[op].handler(tx, edit)
            except Exception as exc:  # noqa: BLE001 - refused, or a bug: either way nothing may change
                tx.rollback()
                err = exc if isinstance(exc, EditRefused) else EditRefused(
                    f"The edit could not be applied ({type(exc).__name__}: {exc}); nothing was changed.")
                err.internal = not isinstance(exc, EditRefused)  # a bug of the engine, not a refusal
                if len(edits) > 1:
                    wrapped = EditRefused(f"Edit {i + 1} of {len(edits)}: {err.message}", hint=err.hint,
                                          internal=err.internal)
                    raise wrapped from (exc if err.internal else None)
                if err is exc:
                    raise
                raise err from exc
            labels.append(label)
            records.append(record)
        return tx, labels, records

    def apply_edit(self, edit: dict, prepared: PreparedEdit | None = None) -> EditResult:
        """Validate and apply one edit (docs/edit-scripts.md "Ops") as one undoable command and return what it
        changed; raises ``EditRefused`` (and changes nothing) when it is refused. ``prepared``: this
        edit's pass already run by :meth:`prepare_edit` (only its result is installed now)."""
        if prepared is None:
            return self.apply_edits([edit])
        if prepared.serial != self._serial or prepared.edit != edit:
            raise EditRefused("The graph changed while the pass ran; nothing was changed (run it again).")
        self._state.prepared_outcome = (edit, prepared.outcome)
        try:
            return self.apply_edits([edit])
        finally:
            self._state.prepared_outcome = None

    def prepare_edit(self, edit: dict) -> PreparedEdit:
        """Run the pass of a ``run_pass`` / ``replace_pattern`` edit on a working copy, changing nothing,
        so that ``apply_edit(edit, prepared)`` only installs it. Safe in a worker thread while no edit
        happens (the window waits, and may cancel: the copy is then dropped). Raises ``EditRefused``
        as ``apply_edit`` would."""
        if not isinstance(edit, dict) or edit.get("op") not in ("run_pass", "replace_pattern"):
            raise EditRefused("Only run_pass and replace_pattern edits run ahead of applying.")
        if self.read_only:
            raise EditRefused(self.read_only)
        check_fields(edit)
        return PreparedEdit(self._serial, dict(edit), compute_outcome(self._state, edit))

    def apply_edits(self, edits: list[dict], label: str | None = None) -> EditResult:
        """Apply several edits as one compound command (one undo step); all or nothing. Returns what
        the command changed (the sets of its "edited" event)."""
        if not edits:
            raise EditRefused("No edits to apply.")
        tx, labels, records = self._run(list(edits))
        return self._commit(tx, labels, records, label)

    def stage_edit(self, edit: dict, prepared: PreparedEdit) -> StagedEdit:
        """The graph work of ``apply_edit(edit, prepared)`` (the pass's result installed, its costs
        counted and shapes refreshed, the budgets checked) without its command and event: for the
        worker that ran :meth:`prepare_edit`, while the window waits and no other edit happens, so
        that the GUI thread only calls :meth:`commit_staged`. Raises ``EditRefused`` (nothing
        changed) as ``apply_edit`` would."""
        if prepared.serial != self._serial or prepared.edit != edit:
            raise EditRefused("The graph changed while the pass ran; nothing was changed (run it again).")
        self._state.prepared_outcome = (edit, prepared.outcome)
        try:
            tx, labels, records = self._run([edit])
        finally:
            self._state.prepared_outcome = None
        self._refresh_shapes(tx.changes)
        return StagedEdit(self._serial, tx, labels, records)

    def commit_staged(self, staged: StagedEdit) -> EditResult:
        """Make a staged edit the next command and tell the views (cheap: the GUI thread's part)."""
        if staged.serial != self._serial:
            staged.tx.rollback()
            raise EditRefused("The graph changed while the pass was installed; nothing was changed (run it again).")
        return self._commit(staged.tx, staged.labels, staged.records, None, refreshed=True)

    def _commit(self, tx: Transaction, labels: list[str], records: list[dict], label: str | None, *,
                refreshed: bool = False) -> EditResult:
        if label is None:
            label = labels[0] if len(labels) == 1 else f"{labels[0]} (+{len(labels) - 1} more)"
        del self._commands[self._index:]
        if self._saved_index is not None and self._saved_index > self._index:
            self._saved_index = None
        self._commands.append(Command(label, tx.done, records))
        self._index += 1
        # A command ending with a pass's swap installed code compiled for its graph: no recompile.
        self._stale = not (tx.done and getattr(tx.done[-1], "compiled", False))
        for primitive in tx.done:  # the code a swap kept for a rollback (undo and redo recompile)
            getattr(primitive, "settle", lambda: None)()
        event = self._emit("edited", label, tx.changes, refreshed=refreshed)
        return EditResult(event.label, event.added, event.removed, event.changed)

    def check_edit(self, edit: dict) -> str | None:
        """Why ``edit`` would be refused, or None if it would apply. Changes nothing either way."""
        try:
            tx, _, _ = self._run([edit])
        except EditRefused as exc:
            return exc.message
        tx.rollback()
        return None

    def would_cycle(self, user: str, new_input: str) -> list[str] | None:
        """If using ``new_input`` as an input of ``user`` closes a cycle, the cycle by node names
        (``[user, ..., new_input, user]``), else None."""
        u, n = self.find(user), self.find(new_input)
        if u is None or n is None:
            raise EditRefused(f"Unknown node {user if u is None else new_input!r}.")
        path = cycle_path(u, n)
        return None if path is None else [x.name for x in path] + [u.name]

    # ------------------------------------------------------------------ history

    @property
    def can_undo(self) -> bool:
        """Whether there is a command to undo."""
        return self._index > 0

    @property
    def can_redo(self) -> bool:
        """Whether there is an undone command to redo."""
        return self._index < len(self._commands)

    @property
    def history(self) -> list[str]:
        """Labels of all commands, oldest first (``history[:history_index]`` are applied)."""
        return [c.label for c in self._commands]

    @property
    def history_index(self) -> int:
        """Number of applied commands."""
        return self._index

    def _undo_one(self, changes: Changes) -> str:
        command = self._commands[self._index - 1]
        for primitive in reversed(command.primitives):
            primitive.revert(self._state, changes)
        self._index -= 1
        self._stale = True
        return command.label

    def _redo_one(self, changes: Changes) -> str:
        command = self._commands[self._index]
        for primitive in command.primitives:
            primitive.apply(self._state, changes)
        self._index += 1
        self._stale = True
        return command.label

    def undo(self) -> None:
        """Undo the last applied command (nothing happens when there is none)."""
        if self.can_undo:
            changes = Changes()
            label = self._undo_one(changes)
            self._emit("undone", label, changes)

    def redo(self) -> None:
        """Redo the next undone command (nothing happens when there is none)."""
        if self.can_redo:
            changes = Changes()
            label = self._redo_one(changes)
            self._emit("redone", label, changes)

    def go_to(self, index: int) -> None:
        """Undo or redo until ``history_index == index``; one event for the whole move."""
        if not isinstance(index, int) or not 0 <= index <= len(self._commands):
            raise EditRefused(f"History position {index!r} is outside 0..{len(self._commands)}.")
        if index == self._index:
            return
        kind = "undone" if index < self._index else "redone"
        changes = Changes()
        while self._index > index:
            self._undo_one(changes)
        while self._index < index:
            self._redo_one(changes)
        where = self._commands[index - 1].label if index else "the original graph"
        self._emit(kind, f"Go to {where}", changes)

    def rewind(self, index: int) -> None:
        """Go back to ``history_index == index`` and forget the commands after it (no redo): what a
        replay refused under the "stop" policy applied is then gone without a trace."""
        if not isinstance(index, int) or not 0 <= index <= self._index:
            raise EditRefused(f"History position {index!r} is outside 0..{self._index}.")
        self.go_to(index)
        del self._commands[index:]
        if self._saved_index is not None and self._saved_index > index:
            self._saved_index = None

    # ------------------------------------------------------------------ saving and scripts

    @property
    def dirty(self) -> bool:
        """Whether the applied edits differ from the last ``mark_saved``."""
        return self._saved_index != self._index

    def mark_saved(self) -> None:
        """Record that the current state is saved (clears ``dirty``)."""
        self._saved_index = self._index
        self._emit("saved", "Saved")

    def edit_script(self) -> dict:
        """The applied commands as an edit script (docs/edit-scripts.md; compound commands are flattened)."""
        return new_script([r for c in self._commands[: self._index] for r in c.records])

    def edit_groups(self) -> list[int]:
        """How many edits of :meth:`edit_script` each applied command holds (one per History row)."""
        return [len(c.records) for c in self._commands[: self._index]]

    def set_pass_trust(self, trust: "PassTrust") -> None:  # noqa: F821 - fxstudio.core.passes.PassTrust
        """Which pass files ``run_pass`` / ``replace_pattern`` may run from now on, and the folder a
        relative ``file`` is relative to (``fxstudio.core.passes.PassTrust``; default: no file runs)."""
        from fxstudio.core.passes import PassTrust

        if not isinstance(trust, PassTrust):
            raise TypeError(f"set_pass_trust needs a PassTrust, not {type(trust).__name__}")
        self._state.pass_trust = trust


def replay(loaded: LoadedModel, script: dict) -> Document:
    """A new document for ``loaded`` with the script's edits applied one command each.

    Raises ``ScriptError`` for a malformed script and ``EditRefused`` naming the first refused edit
    by its 1-based number, as History numbers edits (its ``index`` attribute is 0-based): the
    ``"stop"`` policy of ``replay_into``.
    """
    validate_script(script)
    doc = Document(loaded)
    replay_into(doc, script["edits"], "stop")
    return doc
