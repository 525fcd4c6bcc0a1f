"""The autosave journal: after every edit, the edit script and the model it applies to are written
atomically to a per-model file under the state folder, so that a crash loses nothing.

The state folder is ``$FXSTUDIO_STATE_DIR`` when set (tests), else ``$XDG_STATE_HOME/fxstudio``,
else ``~/.local/state/fxstudio``. A journal is removed when its edits are saved or the window is
closed cleanly; one left behind by a process that no longer runs is an abandoned journal, which the
next start offers to recover. Qt-free.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fxstudio.core.errors import ScriptError
from fxstudio.core.fileio import atomic_write_text

JOURNAL_FORMAT = "fxstudio.journal/1"
SCRIPT_FORMAT = "fxstudio.edits/1"


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


def journal_path(model: str | os.PathLike) -> Path:
    """The journal file of one model: named after its file and a hash of its full spec."""
    key = model_key(model)
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
    stem = Path(key.partition("::")[0]).name.replace(".", "_")
    return journals_dir() / f"{stem}-{digest}.json"


def _process_start(pid: int) -> str:
    """The start time of a process (Linux ``/proc``), to tell a reused pid from the writer; "" elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]


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


@dataclass
class JournalEntry:
    """One journal as read back: the model spec, how it was opened, and the edits made so far."""

    path: Path
    model: str
    script: dict[str, Any]
    labels: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    pid: int = 0
    started: str = ""
    written_at: float = 0.0

    @property
    def edit_count(self) -> int:
        """How many edits the journal holds."""
        return len(self.script.get("edits", []))

    @property
    def abandoned(self) -> bool:
        """True when the process that wrote it is gone (it crashed or was killed)."""
        return not _pid_alive(self.pid, self.started)

    def describe(self) -> str:
        """One line for the recovery offer: the model, the edit count and when it was written."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.written_at)) if self.written_at else "?"
        noun = "edit" if self.edit_count == 1 else "edits"
        return f"{Path(self.model.partition('::')[0]).name}: {self.edit_count} unsaved {noun} (last at {when})"


def write_journal(
    model: str | os.PathLike,
    script: dict[str, Any],
    *,
    labels: list[str] | None = None,
    options: dict[str, Any] | None = None,
) -> Path | None:
    """Record ``script`` (an edit script, design §4) as the unsaved work on ``model``, atomically.

    A script without edits removes the journal instead (nothing to recover) and returns None.
    """
    if script.get("format") != SCRIPT_FORMAT:
        raise ScriptError(f"cannot journal an edit script of format {script.get('format')!r}; expected {SCRIPT_FORMAT!r}")
    if not script.get("edits"):
        clear_journal(model)
        return None
    path = journal_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": JOURNAL_FORMAT,
        "model": model_key(model),
        "pid": os.getpid(),
        "started": _process_start(os.getpid()),
        "written_at": time.time(),
        "options": dict(options or {}),
        "labels": list(labels or []),
        "script": script,
    }
    return atomic_write_text(path, json.dumps(payload, indent=1))


def clear_journal(model: str | os.PathLike) -> None:
    """Forget the unsaved work on ``model`` (after a save or a clean close)."""
    journal_path(model).unlink(missing_ok=True)


def read_journal(path: str | os.PathLike) -> JournalEntry:
    """Read one journal file; a file that is not a journal raises :class:`ScriptError`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ScriptError(f"the autosave journal {path} cannot be read: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != JOURNAL_FORMAT:
        raise ScriptError(f"{path} is not an fxstudio autosave journal (format {JOURNAL_FORMAT!r} expected)")
    script = data.get("script")
    if not isinstance(script, dict) or script.get("format") != SCRIPT_FORMAT or not isinstance(script.get("edits"), list):
        raise ScriptError(f"the autosave journal {path} holds no valid edit script")
    return JournalEntry(
        path=path,
        model=str(data.get("model", "")),
        script=script,
        labels=[str(x) for x in data.get("labels", [])],
        options=dict(data.get("options") or {}),
        pid=int(data.get("pid", 0)),
        started=str(data.get("started", "")),
        written_at=float(data.get("written_at", 0.0)),
    )


def find_journals(*, abandoned_only: bool = True) -> list[JournalEntry]:
    """Journals in the state folder, newest first; by default only those whose writer is gone.

    Unreadable files are skipped (they are left in place for a human to look at).
    """
    folder = journals_dir()
    if not folder.is_dir():
        return []
    entries = []
    for file in folder.glob("*.json"):
        try:
            entry = read_journal(file)
        except ScriptError:
            continue
        if abandoned_only and not entry.abandoned:
            continue
        entries.append(entry)
    entries.sort(key=lambda e: e.written_at, reverse=True)
    return entries


def discard_journal(entry: JournalEntry) -> None:
    """Delete a journal the user chose not to recover."""
    entry.path.unlink(missing_ok=True)
