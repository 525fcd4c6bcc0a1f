"""Shared set-up for the trust-boundary tests: hostile files go through the real ``fxstudio``
command in a subprocess, each carrying a payload that would create a marker file if any code
from the file ran. A test passes only if the marker never appears."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fxstudio.resources import example_path

FXSTUDIO = Path(sys.executable).parent / "fxstudio"

ADDRESS_SPACE_LIMIT = 6 * 2**30
"""Every hostile run gets this much address space: a memory bomb fails its test, not the machine."""

HOSTILE_WALL_LIMIT = 90
"""Seconds a hostile run may take (a hang is a failure, reported by ``subprocess.TimeoutExpired``)."""


def limit_address_space(limit: int = ADDRESS_SPACE_LIMIT):
    """A ``preexec_fn`` that caps the child's address space at ``limit`` bytes."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def run_bounded(argv, *, cwd, env: dict | None = None, timeout: float = HOSTILE_WALL_LIMIT,
                limit: int = ADDRESS_SPACE_LIMIT) -> subprocess.CompletedProcess:
    """``argv`` in a subprocess under the address-space and wall limits, offscreen, one torch thread."""
    full_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, env=full_env,
                          cwd=cwd, preexec_fn=limit_address_space(limit))


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

    @property
    def shell(self) -> str:
        """A shell command that runs the marker payload (what ``os.system`` would be handed)."""
        return f'{sys.executable} -c "{self.payload}"'

    def model(self, example: str) -> Path:
        """The example model file ``example`` copied next to the hostile files, with a planted module
        (``planted_payload.py``, the payload) beside it; returns the copy's path."""
        path = self.dir / example
        shutil.copy(example_path(example), path)
        (self.dir / "planted_payload.py").write_text(self.payload + "\n")
        return path

    def script(self, edits: list, name: str = "hostile.json") -> Path:
        """An edit script holding ``edits``, written next to the marker."""
        path = self.dir / name
        path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": edits}))
        return path

    def run(self, *argv, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
        """``fxstudio ARGV`` in a subprocess (offscreen Qt, private state folder), under the
        address-space limit."""
        return run_bounded([FXSTUDIO, *argv], cwd=self.dir, timeout=timeout,
                           env={"FXSTUDIO_STATE_DIR": str(self.state), **(env or {})})

    def assert_clean(self, proc: subprocess.CompletedProcess | None = None, *, code: int | None = None) -> None:
        """No marker; with ``proc``: no traceback, and the given exit status."""
        assert not self.marker.exists(), "the hostile payload ran"
        if proc is not None:
            assert "Traceback" not in proc.stderr, proc.stderr
            assert "unexpected error" not in proc.stderr, proc.stderr  # the CLI's last resort: a missed check
            if code is not None:
                assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)

    def assert_refused(self, proc: subprocess.CompletedProcess, rule: str) -> None:
        """A refused edit: clean exit status 1, one ``refused`` line naming ``rule``, no ``out.py`` written."""
        self.assert_clean(proc, code=1)
        lines = [line for line in proc.stderr.splitlines() if "refused" in line]
        assert len(lines) == 1, proc.stderr
        assert rule in lines[0], proc.stderr
        assert not (self.dir / "out.py").exists()


@pytest.fixture
def hostile(tmp_path) -> Hostile:
    """A fresh marker and hostile-file helper for one test."""
    return Hostile(tmp_path)
