"""The checks every edit makes on a call before it touches the graph: the call signature
(``validation.check_call``) and the trust boundary on its arguments (``trust.check_call_args``:
``getattr`` attribute names, bounded cost of Python arithmetic on the operands' known values), and
the size of what it returns, computed on fake tensors (``torch.zeros(10**10)`` is refused)."""

from __future__ import annotations

from typing import Any

import torch

from fxstudio.core import trust
from fxstudio.core.edits.shapes import operand_values, result_elements
from fxstudio.core.edits.validation import check_call as check_signature
from fxstudio.core.errors import EditRefused

MAX_RESULT_ELEMENTS = 1 << 30
"""Tensor elements a new call may produce (4 GiB of float32), or 4x its largest tensor input."""


def check_call(kind: str, target: Any, args: tuple, kwargs: dict, gm: torch.nn.Module | None) -> str | None:
    """Why a ``kind`` node calling ``target`` on ``args``/``kwargs`` is refused, or None."""
    reason = check_signature(kind, target, args, kwargs, gm)
    if reason:
        return reason
    try:
        trust.check_call_args(kind, target, args, kwargs, operand_values(gm))
    except EditRefused as exc:
        return exc.message
    sizes = result_elements(gm, kind, target, args, kwargs)
    if sizes is not None:
        made, largest_input = sizes
        budget = max(MAX_RESULT_ELEMENTS, 4 * largest_input)
        if made > budget:
            return (f"{trust.format_target_name(target)!r} is not allowed here (rule: {trust.RULE_RESULT}): its result "
                    f"would hold {made:,} tensor elements (more than {budget:,}); every run would allocate them.")
    return None
