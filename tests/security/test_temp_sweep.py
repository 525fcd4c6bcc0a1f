"""Verification folders (``fxstudio-verify-<pid>-*`` in the temp dir) that killed exports left are
removed the next time ``fxstudio`` starts, whatever the command: real folders in a private temp
dir, the real ``fxstudio`` command in a subprocess. A live process's folder, other folders and a
link that only looks like one are left alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def temp(hostile):
    """A private temp dir holding a dead process's verify folder (with a file in it), a live
    process's, an unrelated folder and a link named like a dead one that points outside."""
    root = hostile.dir / "tmp"
    root.mkdir()
    dead = root / f"fxstudio-verify-{_dead_pid()}-abc123"
    (dead / "inner").mkdir(parents=True)
    (dead / "inner" / "inputs.pt").write_bytes(b"x" * 1024)
    live = root / f"fxstudio-verify-{os.getpid()}-def456"
    live.mkdir()
    other = root / "someone-else-123-folder"
    other.mkdir()
    outside = hostile.dir / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    link = root / f"fxstudio-verify-{_dead_pid()}-link"
    link.symlink_to(outside, target_is_directory=True)
    return {"root": root, "dead": dead, "live": live, "other": other, "outside": outside, "link": link}


def _assert_swept(temp) -> None:
    assert not temp["dead"].exists(), sorted(p.name for p in temp["root"].iterdir())
    assert temp["live"].is_dir() and temp["other"].is_dir()
    assert temp["link"].is_symlink() and (temp["outside"] / "keep.txt").read_text() == "keep"


def test_help_start_removes_dead_verify_folders(hostile, temp):
    proc = hostile.run("--help", env={"TMPDIR": str(temp["root"])})
    hostile.assert_clean(proc, code=0)
    assert "fxstudio" in proc.stdout
    _assert_swept(temp)


def test_a_failing_inspect_start_still_sweeps(hostile, temp):
    proc = hostile.run("inspect", hostile.dir / "missing.py", env={"TMPDIR": str(temp["root"])})
    hostile.assert_clean(proc, code=2)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    _assert_swept(temp)


def test_the_sweep_imports_no_torch():
    """The start-up sweep stays cheap: importing the CLI entry point loads neither torch nor Qt."""
    code = "import sys, fxstudio.cli; print(sorted(m for m in ('torch', 'PySide6') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", (out.stdout, out.stderr)
