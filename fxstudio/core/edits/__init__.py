"""The edit engine behind ``Document``: primitive graph changes with exact inverses, the ops of the
edit-script format (``docs/edit-scripts.md``) built from them, validation and topological moves.
Nodes are referred to by stable id. Everything but this face is private to the package.
"""

from __future__ import annotations

from fxstudio.core.edits.ops_args import op_del_kwarg, op_replace_uses, op_set_arg, op_set_target
from fxstudio.core.edits.ops_nodes import op_duplicate, op_eliminate_dead_code, op_erase, op_insert, op_rename
from fxstudio.core.edits.ordering import cycle_path
from fxstudio.core.edits.primitives import Primitive, Transaction
from fxstudio.core.edits.script import FORMAT, load_script, new_script, save_script, validate_script
from fxstudio.core.edits.shapes import ShapeRefresher
from fxstudio.core.edits.state import ID_KEY, Changes, EditState
from fxstudio.core.edits.validation import OP_FIELDS, check_fields

__all__ = [
    "Changes", "EditState", "FORMAT", "ID_KEY", "OP_FIELDS", "Primitive", "ShapeRefresher", "Transaction",
    "check_fields", "cycle_path", "load_script", "new_script", "op_del_kwarg", "op_duplicate",
    "op_eliminate_dead_code", "op_erase", "op_insert", "op_rename", "op_replace_uses", "op_set_arg",
    "op_set_target", "save_script", "validate_script",
]
