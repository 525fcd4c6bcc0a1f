"""Whether a pass file may run: ``run_pass`` and ``replace_pattern`` execute the user's code, so they
ask a ``PassTrust`` first (the window asks once per file, the CLI answers ``--trust-passes``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fxstudio.core.errors import EditRefused


def _trust_nothing(path: Path) -> bool:
    return False


@dataclass(frozen=True)
class PassTrust:
    """The trust policy of an edit state for pass files.

    ``base_dir``: the folder a relative ``file`` is relative to (the edit script's folder; None: the
    current directory). ``trusted(path)``: whether the resolved file may run (default: nothing may).
    ``allow_changed``: replay a pass whose file changed since its ``sha256`` was recorded.
    """

    base_dir: Path | None = None
    trusted: Callable[[Path], bool] = _trust_nothing
    allow_changed: bool = False

    def resolve(self, file: str) -> Path:
        """The absolute path ``file`` names (relative to ``base_dir``; ``~`` is not expanded)."""
        path = Path(file)
        if not path.is_absolute():
            path = Path(self.base_dir or os.getcwd()) / path
        return Path(os.path.abspath(path))

    def check(self, path: Path) -> None:
        """``EditRefused`` (one line naming the file) unless ``trusted(path)`` says it may run."""
        try:
            ok = bool(self.trusted(path))
        except Exception:  # noqa: BLE001 - a failing callback trusts nothing
            ok = False
        if not ok:
            raise EditRefused(f"run_pass runs code from {path}: trust it (--trust-passes in the CLI).")


def trust_all(path: Path) -> bool:
    """A ``trusted`` callback that trusts every file (what ``--trust-passes`` means)."""
    return True


DEFAULT_PASS_TRUST = PassTrust()
"""The policy of a new edit state: built-in passes run, no pass file does."""
