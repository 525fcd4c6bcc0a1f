"""The edit engine behind ``Document``: primitive graph changes with exact inverses, the ops of the
edit-script format (``docs/edit-scripts.md``) built from them, validation and topological moves.
Nodes are referred to by stable id. Everything but this face is private to the package.
"""

from __future__ import annotations

from fxstudio.core.edits.ordering import cycle_path
from fxstudio.core.edits.primitives import Primitive, Transaction
from fxstudio.core.edits.registry import OPS, OpSpec, check_fields
from fxstudio.core.edits.replay import Refusal, ReplayReport, replay_into
from fxstudio.core.edits.script import FORMAT, load_script, new_script, save_script, validate_script
from fxstudio.core.edits.shapes import ShapeRefresher, fake_check, fake_mode_ready, warm_fake_mode
from fxstudio.core.edits.state import ID_KEY, Changes, EditState
from fxstudio.core.edits.whole_graph import PreparedEdit, compute_outcome

__all__ = [
    "Changes", "EditState", "FORMAT", "ID_KEY", "OPS", "OpSpec", "PreparedEdit", "Primitive", "Refusal", "ReplayReport",
    "ShapeRefresher", "Transaction", "check_fields", "compute_outcome", "cycle_path", "fake_check", "fake_mode_ready", "load_script", "new_script",
    "replay_into", "save_script", "validate_script", "warm_fake_mode",
]
