"""What both node-by-node engines share: where the inputs live, the seed, memory after an OOM."""

from __future__ import annotations

import gc
from typing import Any

import torch

from fxstudio.core import fx_compat
from fxstudio.core.compare.run_metrics import reseed


def input_device(args: tuple[Any, ...]) -> torch.device | str:
    return next((a.device for a in fx_compat.tree_leaves(args) if isinstance(a, torch.Tensor)), "cpu")


def reseed_for(args: tuple[Any, ...], seed: int | None) -> None:
    if seed is not None:  # each graph's random ops draw what they draw in a run alone from the seed
        reseed(seed, input_device(args))


def release_memory() -> None:
    """After an out-of-memory error: collect what the failed run left, return cached device memory."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
