"""Shared set-up for the trust-boundary tests: hostile files go through the real ``fxstudio``
command in a subprocess, each carrying a payload that would create a marker file if any code
from the file ran. A test passes only if the marker never appears."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FXSTUDIO = Path(sys.executable).parent / "fxstudio"


class Hostile:
    """A marker path plus helpers to write hostile files and run the real CLI on them."""

    def __init__(self, tmp_path: Path):
        self.dir = tmp_path
        self.marker = tmp_path / "PWNED_MARKER"
        self.state = tmp_path / "state"

    @property
    def payload(self) -> str:
        """Python source that creates the marker file when executed."""
        return f"open({str(self.marker)!r}, 'w').write('pwned')"

    def script(self, edits: list, name: str = "hostile.json") -> Path:
        """An edit script holding ``edits``, written next to the marker."""
        path = self.dir / name
        path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": edits}))
        return path

    def run(self, *argv, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
        """``fxstudio ARGV`` in a subprocess (offscreen Qt, private state folder)."""
        full_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": str(self.state),
                    "OMP_NUM_THREADS": "1", **(env or {})}
        return subprocess.run([str(FXSTUDIO), *map(str, argv)], capture_output=True, text=True,
                              timeout=timeout, env=full_env, cwd=self.dir)

    def assert_clean(self, proc: subprocess.CompletedProcess | None = None, *, code: int | None = None) -> None:
        """No marker; with ``proc``: no traceback, and the given exit status."""
        assert not self.marker.exists(), "the hostile payload ran"
        if proc is not None:
            assert "Traceback" not in proc.stderr, proc.stderr
            if code is not None:
                assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def hostile(tmp_path) -> Hostile:
    """A fresh marker and hostile-file helper for one test."""
    return Hostile(tmp_path)
