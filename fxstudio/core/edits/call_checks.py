"""The checks every edit makes on a call before it touches the graph: the call signature
(``validation.check_call``), the trust boundary on its arguments (``trust.check_call_args``:
``getattr`` attribute names, bounded cost of Python arithmetic on the operands' known values), and
what the call would make and cost, computed on fake tensors (``torch.zeros(10**10)`` is refused).

Then, after each edit, the budgets of the whole graph (``check_budgets``): the bytes of every
node's output and the work of every node, summed over the graph (``edits/ledger.py``), may exceed
the sums of the graph as opened by at most ``budgets.edit_budget_bytes()`` and
``budgets.edit_work_budget()`` (or the model's own work, when that is more: ``work_allowed``). Only
what the edit changed is evaluated.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from fxstudio.core import trust
from fxstudio.core.budgets import byte_text, edit_budget_bytes, edit_work_budget, work_text
from fxstudio.core.edits.ledger import ledger_of
from fxstudio.core.edits.shapes import operand_values, prospective_call
from fxstudio.core.edits.state import ID_KEY, Changes
from fxstudio.core.edits.validation import check_call as check_signature
from fxstudio.core.edits.work import Shape, call_work
from fxstudio.core.errors import EditRefused

RULE_RESULT = trust.RULE_RESULT
RULE_BUDGET = trust.RULE_EDIT_BUDGET
RULE_WORK = trust.RULE_WORK

_RAISE = "FXSTUDIO_EDIT_BUDGET raises it"
_RAISE_WORK = "FXSTUDIO_EDIT_WORK raises it"


def check_call(kind: str, target: Any, args: tuple, kwargs: dict, gm: torch.nn.Module | None) -> str | None:
    """Why a ``kind`` node calling ``target`` on ``args``/``kwargs`` is refused, or None."""
    reason = check_signature(kind, target, args, kwargs, gm)
    if reason:
        return reason
    try:
        trust.check_call_args(kind, target, args, kwargs, operand_values(gm))
    except EditRefused as exc:
        return exc.message
    prospect = prospective_call(gm, kind, target, args, kwargs)
    if prospect is None:
        return None
    name = trust.format_target_name(target)
    limit = edit_budget_bytes()
    if prospect.nbytes > limit:
        return (f"{name!r} is not allowed here (rule: {RULE_RESULT}): its result would take "
                f"{byte_text(prospect.nbytes)}{_elements_text(prospect.out)}, more than fxstudio's edit budget of "
                f"{byte_text(limit)} ({_RAISE}); every run would allocate it.")
    module = None
    if kind == "call_module" and isinstance(gm, torch.nn.Module):
        try:
            module = gm.get_submodule(str(target))
        except AttributeError:
            module = None
    work = call_work(kind, target, prospect.args, prospect.kwargs, prospect.out, module)
    allowed = work_allowed(ledger_of(gm))
    if work > allowed:
        return (f"{name!r} is not allowed here (rule: {RULE_WORK}): it would cost about {work_text(work)} "
                f"per run, more than fxstudio's edit budget of {work_text(allowed)} ({_RAISE_WORK}).")
    return None


def work_allowed(ledger) -> int:
    """The work edits may add: ``budgets.edit_work_budget()``, or, for a model that itself costs more
    per run, as much again as the model as opened (never unbounded relative to the model)."""
    base = ledger.base_work if ledger is not None else 0
    return max(edit_work_budget(), base)


def _elements_text(out: Any) -> str:
    if isinstance(out, Shape):
        return f" ({out.numel:,} elements)"
    return ""


def settle_stale(tx) -> None:
    """Before an edit: evaluate the nodes a budgeted refresh (after an undo or redo) left without a
    shape, so the edit's checks see every shape and the ledger counts them (``Ledger.stale``)."""
    ledger, state = tx.ledger, tx.state
    if ledger.stale and state.shapes.enabled:
        ledger.stale.intersection_update(state.by_id)  # (nodes since erased)
        nodes = [state.by_id[i] for i in ledger.stale]
        changed = state.shapes.refresh(nodes, budget=None, journal=tx.save_meta)  # unmarks what it counts
        tx.changes.change(*(n.meta[ID_KEY] for n in changed if ID_KEY in n.meta))


def check_budgets(tx, changes: Changes, before: tuple[int, int]) -> None:
    """After an edit's primitives ran in ``tx``: evaluate the nodes it changed (and their users,
    as far as shapes change, with no evaluation budget), then refuse the edit (``EditRefused``; the
    transaction rolls it back) if it made the graph's bytes or work pass the budgets over the graph
    as opened, or made the size of a node's result impossible to tell before a run (a new node, or
    one whose shape was known, that fake tensors cannot evaluate: a data-dependent size).
    ``before``: the ledger's (bytes, work) before the edit; an edit that adds nothing is never
    refused for the budgets."""
    state = tx.state
    ledger = tx.ledger
    refresher = state.shapes
    if not refresher.enabled:
        return
    nodes = [state.by_id[i] for i in changes.recompute if i in state.by_id]
    if nodes:
        changed = refresher.refresh(nodes, budget=None, journal=tx.save_meta)
        ledger.fresh.update(n.meta[ID_KEY] for n in refresher.evaluated if ID_KEY in n.meta)
        changes.change(*(n.meta[ID_KEY] for n in changed if ID_KEY in n.meta))
        for node in refresher.unknown:
            if node.op != "output" and (node.meta.get(ID_KEY) in changes.added or tx.had_shape(node)):
                raise EditRefused(
                    f"the size of %{node.name}'s result cannot be told before a run (it depends on the data, "
                    "or on a call fxstudio does not evaluate on fake tensors), so what a run would allocate "
                    f"cannot be bounded (rule: {RULE_RESULT}).")
        nodes = list(dict.fromkeys([*nodes, *changed]))
    limit = edit_budget_bytes()
    if ledger.added_bytes > limit and ledger.spent_bytes > before[0]:
        weights = f" and {byte_text(ledger.module_bytes)} of new weights" if ledger.module_bytes else ""
        raise EditRefused(
            f"it would make the graph's node outputs take {byte_text(ledger.total_bytes)}{weights}, "
            f"{byte_text(ledger.added_bytes)} more than the graph as opened: over fxstudio's edit budget of "
            f"{byte_text(limit)} (rule: {RULE_BUDGET}; {_RAISE}){_largest(ledger, nodes, 0)}.")
    allowed = work_allowed(ledger)
    if ledger.added_work > allowed and ledger.total_work > before[1]:
        raise EditRefused(
            f"it would make every run of the graph cost about {work_text(ledger.added_work)} more than as opened: "
            f"over fxstudio's edit budget of {work_text(allowed)} (rule: {RULE_WORK}; {_RAISE_WORK})"
            f"{_largest(ledger, nodes, 1)}.")


def _largest(ledger, nodes: list[torch.fx.Node], which: int) -> str:
    """``; the largest of the nodes it changed is %x (3.0 GiB)``, or ''."""
    best, size = None, 0
    for node in nodes:
        entry = ledger.entry(node.meta.get(ID_KEY))
        if entry is not None and entry[which] > size:
            best, size = node, entry[which]
    if best is None:
        return ""
    text = byte_text(size) if which == 0 else work_text(size)
    return f"; the largest node it changed is %{best.name} ({text})"
