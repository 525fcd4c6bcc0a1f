"""Edit scripts (docs/edit-scripts.md): the ``fxstudio.edits/1`` JSON format, strict validation, load and save.

Replaying a script is ``fxstudio.core.document.replay``.
"""

from __future__ import annotations

import codecs
import copy
import json
import os
from typing import Any

from fxstudio.core.argsyntax import dict_literal_keys, short_repr
from fxstudio.core.edits.registry import OPS, check_fields
from fxstudio.core.edits.validation import keyword_problem
from fxstudio.core.errors import EditRefused, ScriptError
from fxstudio.core.fileio import atomic_write_text, read_capped

FORMAT = "fxstudio.edits/1"
MAX_SCRIPT_BYTES = 64 * 2**20  # far above any recorded session; stops a read of /dev/zero
_MAX_POSITION = 1_000_000  # no call has this many positional arguments


def new_script(edits: list[dict] | None = None) -> dict:
    """A script holding ``edits`` (copied)."""
    return {"format": FORMAT, "edits": copy.deepcopy(list(edits or []))}


def validate_script(script: Any) -> dict:
    """Check a script's format, ops, fields and field types; ``ScriptError`` naming the bad edit."""
    if not isinstance(script, dict):
        raise ScriptError(f"An edit script is a JSON object with \"format\" and \"edits\", not {type(script).__name__}.")
    unknown = sorted(set(script) - {"format", "edits"})
    if unknown:
        raise ScriptError(f"Unknown top-level field(s) in the edit script: {', '.join(short_repr(u, 40) for u in unknown[:5])}.")
    if script.get("format") != FORMAT:
        raise ScriptError(f"Unsupported edit script format {short_repr(script.get('format'))}; this fxstudio reads {FORMAT!r}.")
    edits = script.get("edits")
    if not isinstance(edits, list):
        raise ScriptError("The edit script's \"edits\" must be a list of edits.")
    for i, edit in enumerate(edits):
        try:
            spec = OPS[check_fields(edit)]
        except EditRefused as exc:
            raise ScriptError(f"Edit {i + 1}: {exc.message}") from None
        for field in spec.text_fields:
            if field in edit and not isinstance(edit[field], str):
                raise ScriptError(f"Edit {i + 1} ({edit['op']}): field {field!r} must be a string, not {short_repr(edit[field])}.")
        for field in sorted(spec.bool_fields):
            if field in edit and not isinstance(edit[field], bool):
                raise ScriptError(f"Edit {i + 1} ({edit['op']}): field {field!r} must be true or false, not {short_repr(edit[field])}.")
        if "key" in edit:
            key = edit["key"]
            if isinstance(key, bool) or not isinstance(key, (int, str)):
                raise ScriptError(f"Edit {i + 1} ({edit['op']}): 'key' must be an int (position) or a string (keyword).")
            if isinstance(key, int) and abs(key) > _MAX_POSITION:
                raise ScriptError(f"Edit {i + 1} ({edit['op']}): position {short_repr(key, 30)} is out of range.")
            problem = keyword_problem(key) if isinstance(key, str) else None
            if problem:
                raise ScriptError(f"Edit {i + 1} ({edit['op']}): {problem}")
        for key in dict_literal_keys(edit["kwargs"]) if isinstance(edit.get("kwargs"), str) else ():
            problem = keyword_problem(key)
            if problem:
                raise ScriptError(f"Edit {i + 1} ({edit['op']}): 'kwargs': {problem}")
        problem = spec.script_check(edit) if spec.script_check is not None else None
        if problem:
            raise ScriptError(f"Edit {i + 1} ({edit['op']}): {problem}")
    return script


def load_script(path: str | os.PathLike) -> dict:
    """Read and validate an edit script; ``ScriptError`` for unreadable files, text that is not
    UTF-8, bad JSON (too deep, numbers too long) or a bad format."""
    name = os.fspath(path)
    data = read_capped(
        path, MAX_SCRIPT_BYTES,
        lambda exc: ScriptError(f"Cannot read the edit script {name!r}: {exc.strerror or exc}."),
        lambda: ScriptError(f"{name} is larger than {MAX_SCRIPT_BYTES // 2**20} MiB; that is not an edit script."))
    text = _decode(name, data)
    try:
        script = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    except RecursionError:
        raise ScriptError(f"{name} is not a usable edit script: its JSON is nested too deeply.") from None
    except ValueError as exc:  # the int digit limit: a number with thousands of digits
        raise ScriptError(f"{name} is not a usable edit script: {str(exc).split(':')[0]}.") from None
    try:
        return validate_script(script)
    except ScriptError as exc:
        raise ScriptError(f"{name}: {exc.message}") from None


def _decode(name: str, data: bytes) -> str:
    """The script's text: UTF-8 (a leading BOM is allowed); anything else is refused by name."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise ScriptError(f"{name} is UTF-32 text; edit scripts are UTF-8 JSON (save it as UTF-8).")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ScriptError(f"{name} is UTF-16 text; edit scripts are UTF-8 JSON (save it as UTF-8).")
    if b"\x00" in data:
        raise ScriptError(f"{name} holds NUL bytes: it is a binary file (or UTF-16 text), not a UTF-8 JSON edit script.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                          "edit scripts are UTF-8 JSON.") from None


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


__all__ = ["FORMAT", "dumps_script", "load_script", "new_script", "save_script", "validate_script"]
