"""The ops of the edit-script format (``docs/edit-scripts.md``), each declared once.

To add an op: write its handler (``handler(tx, edit) -> (label, recorded edit)``, in ``ops_args.py``,
``ops_nodes.py`` or a module of its own) and add ONE ``declare(...)`` call below. Nothing else:
``check_fields``, ``validate_script`` (field types), ``Document`` (dispatch) and the doc check
(``tests/core/edits/test_edit_script_doc.py``, which then asks for the op's section in the doc)
all read ``OPS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fxstudio.core.argsyntax import short_repr
from fxstudio.core.edits.ops_args import op_del_kwarg, op_replace_uses, op_set_arg, op_set_target
from fxstudio.core.edits.ops_nodes import op_duplicate, op_eliminate_dead_code, op_erase, op_insert, op_rename
from fxstudio.core.edits.call_checks import check_budgets, settle_stale
from fxstudio.core.edits.primitives import Transaction
from fxstudio.core.edits.state import Changes
from fxstudio.core.edits.validation import bulk_fields_problem
from fxstudio.core.edits.whole_graph import op_replace_pattern, op_run_pass
from fxstudio.core.errors import EditRefused
from fxstudio.core.passes import kwargs_problem

Handler = Callable[[Transaction, dict], tuple[str, dict]]


@dataclass(frozen=True)
class OpSpec:
    """One op: its fields, which of them are JSON strings (``text_fields``, in the order scripts are
    checked) or booleans, its handler and a one-line summary. ``script_check(edit)`` says why a
    script edit of this op is malformed beyond its field types (``validate_script`` reports it),
    or returns None; it is the per-op hook (``del_kwarg``'s key must be a keyword name)."""

    name: str
    required: frozenset[str]
    optional: frozenset[str]
    text_fields: tuple[str, ...]
    handler: Handler
    summary: str
    bool_fields: frozenset[str] = frozenset()
    script_check: Callable[[dict], str | None] | None = None

    @property
    def fields(self) -> frozenset[str]:
        """Every field the op takes (besides ``op``)."""
        return self.required | self.optional


OPS: dict[str, OpSpec] = {}
"""Every op by name, in declaration order (the order error messages list them in)."""


def declare(name: str, handler: Handler, summary: str, *, required: tuple[str, ...] = (),
            optional: tuple[str, ...] = (), texts: tuple[str, ...] = (), bools: tuple[str, ...] = (),
            script_check: Callable[[dict], str | None] | None = None) -> OpSpec:
    """Add the op ``name`` to ``OPS``: its ``required`` and ``optional`` fields, those of them that are
    texts (node names, argument or target syntax) and those that are true/false (``bools``)."""
    if name in OPS:
        raise ValueError(f"op {name!r} is declared twice")
    fields = frozenset(required) | frozenset(optional)
    if not set(texts) | set(bools) <= fields or set(texts) & set(bools):
        raise ValueError(f"op {name!r}: text and bool fields must be distinct fields of the op")
    spec = OpSpec(name, frozenset(required), frozenset(optional), tuple(texts), budgeted(handler), summary,
                  frozenset(bools), script_check)
    OPS[name] = spec
    return spec


def budgeted(handler: Handler) -> Handler:
    """``handler`` followed by the budget check of what it changed (``call_checks.check_budgets``):
    the transaction's ``changes`` of this edit alone are checked, then merged into the command's."""
    @functools.wraps(handler)
    def run(tx: Transaction, edit: dict) -> tuple[str, dict]:
        settle_stale(tx)
        outer = tx.changes
        tx.changes = Changes()
        before = (tx.ledger.spent_bytes, tx.ledger.total_work)
        try:
            result = handler(tx, edit)
            check_budgets(tx, tx.changes, before)
        finally:
            inner, tx.changes = tx.changes, outer
            _merge(outer, inner)
        return result

    return run


def _merge(outer: Changes, inner: Changes) -> None:
    """Add what one edit changed (``inner``) to what its command changed so far (``outer``)."""
    for node_id in inner.removed:
        outer.remove(node_id)
    for node_id in inner.added:
        outer.add(node_id)
    outer.change(*inner.changed)
    for node_id in inner.recompute:
        if node_id not in outer.recompute:
            outer.compute(node_id)


def _keyword_key(edit: dict) -> str | None:
    return None if isinstance(edit.get("key"), str) else "'key' must be a keyword name."


# "node"/"match" and "before"/"after" are alternatives checked by the op itself.
# "key" is an int (position) or a string (keyword), checked by validate_script.
declare("set_arg", op_set_arg, "set one argument of a node (a rewire when the value references nodes)",
        required=("node", "key", "value"), texts=("node", "value"))
declare("del_kwarg", op_del_kwarg, "remove a keyword argument of a node",
        required=("node", "key"), texts=("node",), script_check=_keyword_key)
declare("insert", op_insert, "insert a new node before or after another, or after (before) each matching node",
        required=("kind", "target"),
        optional=("before", "after", "before_each", "after_each", "args", "kwargs", "name", "reroute", "sites"),
        texts=("before", "after", "kind", "target", "args", "kwargs", "name"), bools=("reroute",),
        script_check=bulk_fields_problem)
declare("erase", op_erase, "remove a node, optionally pointing its users at another",
        required=("node",), optional=("replace_uses_with",), texts=("node", "replace_uses_with"))
declare("replace_uses", op_replace_uses, "make every user of a node use another node instead",
        required=("node", "with"), texts=("node", "with"))
declare("set_target", op_set_target, "change the target of one node, or of every node calling a target or module class",
        required=("target",), optional=("node", "match", "sites", "dropped_kwargs"), texts=("node", "target", "match"),
        script_check=bulk_fields_problem)
declare("duplicate", op_duplicate, "copy a node right after itself",
        required=("node",), optional=("name",), texts=("node", "name"))
declare("rename", op_rename, "give a node a new name", required=("node", "name"), texts=("node", "name"))
declare("eliminate_dead_code", op_eliminate_dead_code, "erase every pure node whose value is never used")
def _pass_kwargs(edit: dict) -> str | None:
    return kwargs_problem(edit["kwargs"]) if "kwargs" in edit else None


declare("run_pass", op_run_pass,
        "run a torch.fx pass (a file's function, Transformer, Interpreter or PassBase, a class of callable passes, "
        "or a built-in), with keyword arguments",
        required=("name",), optional=("file", "sha256", "kwargs"), texts=("name", "file", "sha256"),
        script_check=_pass_kwargs)
declare("replace_pattern", op_replace_pattern, "replace every match of a pattern function by a replacement function",
        required=("file", "pattern", "replacement"), optional=("sha256",),
        texts=("file", "pattern", "replacement", "sha256"))


def check_fields(edit: Any) -> str:
    """The edit's op after checking its fields against ``OPS``; ``EditRefused`` for an unknown op or
    field, or a missing one."""
    if not isinstance(edit, dict):
        raise EditRefused(f"An edit must be an object with an 'op' field, not {type(edit).__name__}.")
    op = edit.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise EditRefused(f"Unknown edit op {short_repr(op)} (known: {', '.join(OPS)}).")
    spec = OPS[op]
    unknown = sorted(set(edit) - spec.fields - {"op"}, key=str)
    if unknown:
        raise EditRefused(f"Unknown field(s) {', '.join(short_repr(f, 40) for f in unknown[:5])} for op {op!r} "
                          f"(fields: {', '.join(sorted(spec.fields))}).")
    missing = sorted(spec.required - set(edit))
    if missing:
        raise EditRefused(f"Op {op!r} needs the field(s) {', '.join(map(repr, missing))}.")
    return op


__all__ = ["OPS", "OpSpec", "check_fields", "declare"]
