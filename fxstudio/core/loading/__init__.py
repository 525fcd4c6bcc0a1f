"""Opening a model: a ``.py`` file, a pickled module or a ``.pt2`` archive, traced into a
``LoadedModel`` (``docs/CONTRACTS.md``, "Packages"). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.loading.load import load_model
from fxstudio.core.loading.inputs import inputs_from_shapes
from fxstudio.core.loading.py_loader import run_user_code, user_frame

__all__ = ["inputs_from_shapes", "load_model", "run_user_code", "user_frame"]
