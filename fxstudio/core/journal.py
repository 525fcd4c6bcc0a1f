"""The autosave journal: after every edit, the edit script and the model it applies to are written
atomically to a file under the state folder, so that a crash loses nothing.

The state folder is ``$FXSTUDIO_STATE_DIR`` when set (tests), else ``$XDG_STATE_HOME/fxstudio``,
else ``~/.local/state/fxstudio``. Each window instance writes its own journal
(``journals/<file>-<hash of the model>-<pid>-<token>.json``) and holds an ``fcntl.flock`` on the
``.lock`` file beside it for as long as the journal exists, so two windows on one model never
delete or overwrite each other's work. A journal whose lock nobody holds (its writer crashed or was
killed) is abandoned, and the next start offers to recover it. A file that fails the schema
(:mod:`fxstudio.core.journal_schema`) is moved aside to ``<name>.bad`` (``.bad-N`` when taken),
never deleted. Qt-free.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fxstudio.core.errors import ScriptError
from fxstudio.core.fileio import atomic_write_text
from fxstudio.core.journal_schema import JOURNAL_FORMAT, check_journal, check_options

SCRIPT_FORMAT = "fxstudio.edits/1"
MAX_JOURNAL_BYTES = 64 * 1024 * 1024

__all__ = [
    "JOURNAL_FORMAT", "Journal", "JournalCommand", "JournalEntry", "Quarantined", "Scan", "claim",
    "discard_journal", "find_journals", "journals_dir", "journals_of", "model_key", "quarantine",
    "read_journal", "scan_journals", "state_dir",
]


def state_dir() -> Path:
    """The folder that holds fxstudio's journals (not created here)."""
    override = os.environ.get("FXSTUDIO_STATE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "fxstudio"


def journals_dir() -> Path:
    """The folder of journal files inside :func:`state_dir`."""
    return state_dir() / "journals"


def model_key(model: str | os.PathLike) -> str:
    """The canonical text of a model spec: the absolute file path, plus ``::Entry`` if given."""
    text = os.fspath(model)
    path, sep, entry = text.partition("::")
    absolute = str(Path(path).expanduser().resolve())
    return f"{absolute}::{entry}" if sep and entry else absolute


def _model_prefix(key: str) -> str:
    """The start of every journal name of one model: its file name and a hash of its full spec."""
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
    stem = Path(key.partition("::")[0]).name.replace(".", "_")
    return f"{stem}-{digest}"


def lock_path(path: Path) -> Path:
    """The lock file a live writer of the journal ``path`` holds."""
    return path.with_suffix(".lock")


def _process_start(pid: int) -> str:
    """The start time of a process (Linux ``/proc``), to tell a reused pid from the writer; "" elsewhere."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text.rsplit(")", 1)[-1].split()[19]


def _pid_alive(pid: int, started: str = "") -> bool:
    if pid <= 0:
        return False
    if started and _process_start(pid) not in ("", started):
        return False  # the pid was reused by another process
    try:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] in ("Z", "X"):
            return False  # killed, not yet reaped by its parent
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except OSError:
        return False
    return True


def _lock_state(path: Path) -> str:
    """``held`` (a live writer has it), ``free`` (its writer is gone) or ``absent`` (no lock file)."""
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return "absent"
    except OSError:
        return "held"  # cannot tell: never touch it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return "held"
    finally:
        os.close(fd)  # closing drops the lock we may have taken
    return "free"


def _writer_alive(path: Path, pid: int, started: str) -> bool:
    state = _lock_state(path)
    if state == "absent":  # a journal written before locks, or by hand: go by its pid
        return _pid_alive(pid, started)
    return state == "held"


def _take_lock(path: Path) -> int | None:
    """Lock ``path``'s lock file for this process; the fd, or None when someone else holds it."""
    lock = lock_path(path)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # A writer that cleared its journal unlinks the lock file: a lock on that old file is no claim.
        if os.fstat(fd).st_ino != os.stat(lock, follow_symlinks=False).st_ino:
            raise BlockingIOError(errno.EAGAIN, "lock file replaced")
    except OSError:
        os.close(fd)
        return None
    return fd


@dataclass
class JournalCommand:
    """One undoable command of a journal: its History label and the edits it made."""

    label: str | None
    edits: list[dict[str, Any]]


@dataclass
class JournalEntry:
    """One journal as read back and validated: the model spec, how it was opened, the edits so far."""

    path: Path
    model: str
    script: dict[str, Any]
    labels: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    pid: int = 0
    started: str = ""
    written_at: float = 0.0

    @property
    def edit_count(self) -> int:
        """How many undoable edits the journal holds: History rows, as the status bar counts them."""
        return len(self.groups) if self.groups else len(self.script.get("edits", []))

    @property
    def abandoned(self) -> bool:
        """True when the process that wrote it is gone (it crashed or was killed)."""
        return not _writer_alive(self.path, self.pid, self.started)

    def commands(self) -> list[JournalCommand]:
        """The journal's edits grouped into the commands the writer's History showed."""
        edits = self.script["edits"]
        groups = self.groups or [1] * len(edits)
        labels = self.labels if len(self.labels) == len(groups) else [None] * len(groups)
        out, start = [], 0
        for size, label in zip(groups, labels):
            out.append(JournalCommand(label, edits[start:start + size]))
            start += size
        return out

    def describe(self) -> str:
        """One line for the recovery offer: the model, the edit count and when it was written."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.written_at)) if self.written_at else "?"
        noun = "edit" if self.edit_count == 1 else "edits"
        return f"{Path(self.model.partition('::')[0]).name}: {self.edit_count} unsaved {noun} (last at {when})"


class Journal:
    """The autosave journal of one window instance on one model.

    Nothing is on disk until the first :meth:`write`; from then on this object holds the journal's
    lock until :meth:`clear` (work saved or discarded) or :meth:`release` (keep it for recovery).
    """

    def __init__(self, model: str | os.PathLike, *, path: Path | None = None, lock_fd: int | None = None):
        self.model = model_key(model)
        self.instance = secrets.token_hex(8)
        self.path = path or journals_dir() / f"{_model_prefix(self.model)}-{os.getpid()}-{self.instance}.json"
        self._fd = lock_fd

    @property
    def held(self) -> bool:
        """Whether this object holds the journal's lock (it has written and not cleared)."""
        return self._fd is not None

    def write(self, script: dict[str, Any], *, labels: list[str] | None = None, groups: list[int] | None = None,
              options: dict[str, Any] | None = None) -> Path | None:
        """Record ``script`` (an edit script, docs/edit-scripts.md) as the unsaved work, atomically.

        ``labels`` and ``groups`` give each undoable command's History label and edit count.
        A script without edits removes the journal instead (nothing to recover) and returns None.
        """
        if not isinstance(script, dict) or script.get("format") != SCRIPT_FORMAT:
            fmt = script.get("format") if isinstance(script, dict) else None
            raise ScriptError(f"cannot journal an edit script of format {fmt!r}; expected {SCRIPT_FORMAT!r}")
        if script.get("edits") == []:
            self.clear()
            return None
        payload = {
            "format": JOURNAL_FORMAT,
            "model": self.model,
            "pid": os.getpid(),
            "started": _process_start(os.getpid()),
            "instance": self.instance,
            "written_at": time.time(),
            "options": check_options(dict(options or {})),
            "labels": list(labels or []),
            "groups": list(groups) if groups is not None else [1] * len(script["edits"]),
            "script": script,
        }
        check_journal(payload)  # never write what the next start would refuse to read
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = _take_lock(self.path)
            if self._fd is None:
                raise OSError(errno.EAGAIN, f"the journal {self.path} is locked by another process")
        return atomic_write_text(self.path, json.dumps(payload, indent=1))

    def clear(self) -> None:
        """Forget the unsaved work (after a save, a discard or a clean close): delete file and lock."""
        if self._fd is None and lock_path(self.path).exists():
            return  # not ours (a claim that was released, or never taken): leave it alone
        self.path.unlink(missing_ok=True)
        self._drop(unlink_lock=True)

    def release(self) -> None:
        """Let go of the lock but keep the journal: the next start offers it again."""
        self._drop(unlink_lock=False)

    def _drop(self, *, unlink_lock: bool) -> None:
        if self._fd is None:
            return
        if unlink_lock:
            lock_path(self.path).unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, refusing what is not a plain file of sane size (a FIFO would hang a read)."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ScriptError("it is not a regular file")
    if info.st_size > MAX_JOURNAL_BYTES:
        raise ScriptError(f"it is {info.st_size} bytes, more than a journal ever is")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(MAX_JOURNAL_BYTES + 1)


def read_journal(path: str | os.PathLike) -> JournalEntry:
    """Read and validate one journal file; a file that is not a valid journal raises :class:`ScriptError`."""
    path = Path(path)
    try:
        data = json.loads(_read_bytes(path).decode("utf-8"))
    except ScriptError as exc:
        raise ScriptError(f"The autosave journal {path.name} is malformed: {exc.message}") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise ScriptError(f"The autosave journal {path.name} cannot be read: {exc}") from None
    try:
        data = check_journal(data)
    except ScriptError as exc:
        raise ScriptError(f"The autosave journal {path.name} is malformed: {exc.message}") from None
    return JournalEntry(
        path=path, model=data["model"], script=data["script"], labels=list(data["labels"]),
        groups=data["groups"], options=data["options"], pid=data["pid"], started=data["started"],
        written_at=float(data["written_at"]),
    )


@dataclass
class Quarantined:
    """A journal file that failed the schema: where it was, where it was moved, and why."""

    path: Path
    moved_to: Path | None
    reason: str


@dataclass
class Scan:
    """What :func:`scan_journals` found: valid journals (newest first) and malformed files moved aside."""

    entries: list[JournalEntry]
    bad: list[Quarantined]


def quarantine(path: Path) -> Path | None:
    """Move ``path`` aside to ``<name>.bad`` (``.bad-1``, ``.bad-2``… when taken); the new path, or
    None when it could not be moved (it stays where it is)."""
    for n in range(1000):
        target = path.with_name(f"{path.name}.bad" + (f"-{n}" if n else ""))
        if os.path.lexists(target):
            continue
        try:
            try:
                os.link(path, target, follow_symlinks=False)  # fails instead of replacing a .bad that just appeared
                os.unlink(path)
            except FileExistsError:
                raise
            except OSError:  # a folder, or a file system without hard links
                os.rename(path, target)
        except FileExistsError:
            continue
        except OSError:
            return None
        if _lock_state(path) == "free":
            lock_path(path).unlink(missing_ok=True)  # an empty lock file of a dead writer
        return target
    return None


def scan_journals(*, abandoned_only: bool = True) -> Scan:
    """The journals in the state folder, newest first (by default only those whose writer is gone).

    Files that fail the schema are moved aside (see :func:`quarantine`) unless a live writer holds
    their lock; they are reported in ``bad``, never deleted.
    """
    folder = journals_dir()
    if not folder.is_dir():
        return Scan([], [])
    entries, bad = [], []
    for file in sorted(folder.glob("*.json")):
        try:
            entry = read_journal(file)
        except ScriptError as exc:
            if not os.path.lexists(file) or _lock_state(file) == "held":
                continue  # gone meanwhile, or a live window's: not ours to touch
            bad.append(Quarantined(file, quarantine(file), exc.message))
            continue
        if abandoned_only and not entry.abandoned:
            continue
        entries.append(entry)
    entries.sort(key=lambda e: e.written_at, reverse=True)
    return Scan(entries, bad)


def find_journals(*, abandoned_only: bool = True) -> list[JournalEntry]:
    """The valid journals of :func:`scan_journals`, newest first (malformed ones are moved aside)."""
    return scan_journals(abandoned_only=abandoned_only).entries


def journals_of(model: str | os.PathLike, *, abandoned_only: bool = False) -> list[JournalEntry]:
    """The valid journals recorded for ``model`` (any writer, or only dead ones), newest first."""
    key = model_key(model)
    return [e for e in find_journals(abandoned_only=abandoned_only) if e.model == key]


def claim(entry: JournalEntry) -> Journal | None:
    """Take an abandoned journal for this process (to recover or discard it): a :class:`Journal`
    holding its lock, or None when its writer is alive or another window claimed it first."""
    if _lock_state(entry.path) == "absent" and _pid_alive(entry.pid, entry.started):
        return None  # written without a lock (by hand, or an older fxstudio) by a process still running
    try:
        fd = _take_lock(entry.path)
    except OSError:
        return None
    if fd is None:
        return None
    owned = Journal(entry.model, path=entry.path, lock_fd=fd)
    if not entry.path.exists():
        owned.clear()  # its writer cleared it meanwhile: drop the lock file we made
        return None
    return owned


def discard_journal(entry: JournalEntry) -> bool:
    """Delete a journal the user chose not to recover; False when a live window owns it."""
    owned = claim(entry)
    if owned is None:
        return False
    owned.clear()
    return True
