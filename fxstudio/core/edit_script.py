"""Edit scripts (design §4): the ``fxstudio.edits/1`` JSON format, strict validation, load and save.

Replaying a script is ``fxstudio.core.document.replay``.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from fxstudio.core.edits.validation import OP_FIELDS, check_fields
from fxstudio.core.errors import EditRefused, ScriptError
from fxstudio.core.fileio import atomic_write_text

FORMAT = "fxstudio.edits/1"
_TEXT_FIELDS = ("node", "value", "before", "after", "kind", "target", "args", "kwargs", "name",
                "replace_uses_with", "with", "match")


def new_script(edits: list[dict] | None = None) -> dict:
    """A script holding ``edits`` (copied)."""
    return {"format": FORMAT, "edits": copy.deepcopy(list(edits or []))}


def validate_script(script: Any) -> dict:
    """Check a script's format, ops, fields and field types; ``ScriptError`` naming the bad edit."""
    if not isinstance(script, dict):
        raise ScriptError(f"An edit script is a JSON object with \"format\" and \"edits\", not {type(script).__name__}.")
    unknown = sorted(set(script) - {"format", "edits"})
    if unknown:
        raise ScriptError(f"Unknown top-level field(s) in the edit script: {', '.join(map(repr, unknown))}.")
    if script.get("format") != FORMAT:
        raise ScriptError(f"Unsupported edit script format {script.get('format')!r}; this fxstudio reads {FORMAT!r}.")
    edits = script.get("edits")
    if not isinstance(edits, list):
        raise ScriptError("The edit script's \"edits\" must be a list of edits.")
    for i, edit in enumerate(edits):
        try:
            check_fields(edit)
        except EditRefused as exc:
            raise ScriptError(f"Edit #{i}: {exc.message}") from None
        for field in _TEXT_FIELDS:
            if field in edit and not isinstance(edit[field], str):
                raise ScriptError(f"Edit #{i} ({edit['op']}): field {field!r} must be a string, not {edit[field]!r}.")
        if "key" in edit:
            key = edit["key"]
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise ScriptError(f"Edit #{i} ({edit['op']}): 'key' must be an int (position) or a string (keyword).")
            if edit["op"] == "del_kwarg" and not isinstance(key, str):
                raise ScriptError(f"Edit #{i} (del_kwarg): 'key' must be a keyword name.")
    return script


def load_script(path: str | os.PathLike) -> dict:
    """Read and validate an edit script; ``ScriptError`` for unreadable files, bad JSON or format."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ScriptError(f"Cannot read the edit script {os.fspath(path)!r}: {exc.strerror or exc}.") from None
    try:
        script = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{os.fspath(path)} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    try:
        return validate_script(script)
    except ScriptError as exc:
        raise ScriptError(f"{os.fspath(path)}: {exc.message}") from None


def dumps_script(script: dict) -> str:
    """The script as JSON text: one edit per line, for readable diffs."""
    validate_script(script)
    lines = [json.dumps(edit, ensure_ascii=False) for edit in script["edits"]]
    body = ",\n  ".join(lines)
    edits = f"[\n  {body}\n ]" if lines else "[]"
    return f'{{"format": "{FORMAT}",\n "edits": {edits}}}\n'


def save_script(path: str | os.PathLike, script: dict) -> None:
    """Validate and write a script atomically."""
    atomic_write_text(path, dumps_script(script))


__all__ = ["FORMAT", "OP_FIELDS", "dumps_script", "load_script", "new_script", "save_script", "validate_script"]
