"""Opening a model: a ``.py`` file, a pickled module or a ``.pt2`` archive (``load_model``), or a
module of the calling program (``load_in_memory``, for ``fxstudio.edit``), traced into a
``LoadedModel`` (``docs/CONTRACTS.md``, "Packages"). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.loading.load import load_model, shapes_unknown
from fxstudio.core.loading.inputs import inputs_from_shapes
from fxstudio.core.loading.memory import MEMORY_NAME, load_in_memory
from fxstudio.core.loading.meta_device import TooLargeForMemory, available_memory_bytes, check_fits_memory, has_meta_weights
from fxstudio.core.loading.py_loader import run_user_code, user_frame

__all__ = ["MEMORY_NAME", "TooLargeForMemory", "available_memory_bytes", "check_fits_memory", "has_meta_weights", "inputs_from_shapes", "load_in_memory", "load_model", "run_user_code", "shapes_unknown", "user_frame"]
