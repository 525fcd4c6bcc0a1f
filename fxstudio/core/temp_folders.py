"""The verification folders exports leave in the temp dir, and the start-up sweep of those that
killed processes left behind. Imports neither torch nor Qt: ``fxstudio`` runs the sweep first thing."""

from __future__ import annotations

import tempfile
from pathlib import Path

from fxstudio.core.fileio import sweep_stale_folders

VERIFY_PREFIX = "fxstudio-verify-"  # then the pid of the exporting process and a random part


def sweep_verify_folders() -> list[Path]:
    """Remove the ``fxstudio-verify-<pid>-*`` folders in the temp dir whose process is gone (one
    listing of the folder); the paths removed. Never raises: a start must not fail on a sweep."""
    try:
        return sweep_stale_folders(tempfile.gettempdir(), VERIFY_PREFIX)
    except OSError:
        return []
