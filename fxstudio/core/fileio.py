"""Atomic file writes: a temp file in the target's folder, fsync, then rename over the target."""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

DISK_FULL = "disk full (no space left on device)"


class DiskFullError(OSError):
    """A write that failed because the disk (or quota) is full; ``strerror`` says "disk full"."""


def disk_full_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` as a ``DiskFullError`` naming ``path`` when it is ENOSPC/EDQUOT, else ``exc`` itself."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) and not isinstance(exc, DiskFullError):
        return DiskFullError(exc.errno, DISK_FULL, str(path))
    return exc


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half of one.

    On a full disk the temp file is removed, ``path`` keeps its old content, and the error is a
    ``DiskFullError`` (an ``OSError`` whose ``strerror`` is "disk full (no space left on device)").
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise disk_full_error(exc, path) from None
    try:
        _give_mode(fd, path)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise disk_full_error(exc, path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _process_umask() -> int:
    mask = os.umask(0o022)  # (reading the mask means setting it: put it back at once)
    os.umask(mask)
    return mask


_UMASK = _process_umask()


def _give_mode(fd: int, path: Path) -> None:
    """The mode the file would have had from a plain ``open``: the old file's when it is replaced,
    else 0666 less the umask (``mkstemp`` makes it 0600: a written report or export could not be
    shared)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_UMASK
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Atomically write ``text`` (UTF-8) to ``path``."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def read_capped(path: str | os.PathLike, limit: int, unreadable: Callable[[OSError], Exception],
                too_large: Callable[[], Exception]) -> bytes:
    """The bytes of ``path``, reading at most ``limit + 1`` of them: raises ``unreadable(exc)`` when
    the file cannot be read and ``too_large()`` when it holds more than ``limit`` bytes."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise unreadable(exc) from None
    if len(data) > limit:
        raise too_large()
    return data


def pid_folder_prefix(prefix: str) -> str:
    """``prefix`` followed by this process's id: the name start of a temporary folder that
    ``sweep_stale_folders`` can tell is abandoned once the process is gone."""
    return f"{prefix}{os.getpid()}-"


def sweep_stale_folders(folder: str | os.PathLike, prefix: str, *, max_age_s: float = 3600.0) -> list[Path]:
    """Remove the temporary folders in ``folder`` that killed processes left behind; the paths removed.

    A folder named ``<prefix><pid>-...`` is stale once that process is gone; one without a process
    id (written by an older fxstudio) once it is ``max_age_s`` old. Links are never followed.
    """
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.is_symlink() or not entry.is_dir():
            continue
        found = re.match(r"(\d+)-", entry.name[len(prefix):])
        if found:
            pid = int(found.group(1))
            stale = pid != os.getpid() and not _process_alive(pid)
        else:
            try:
                stale = time.time() - entry.stat().st_mtime > max_age_s
            except OSError:
                stale = False
        if stale:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
