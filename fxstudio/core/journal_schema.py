"""The schema of an autosave journal file: every field and every type is checked before a journal
is offered for recovery, and again before one is written. A journal is data (docs/CONTRACTS.md "Trust boundary"): its
options are validated against the keys and types the window itself writes, and its edits go
through the edit-script validator. Qt-free.
"""

from __future__ import annotations

import math
import re
from typing import Any

from fxstudio.core.edits import validate_script
from fxstudio.core.errors import ScriptError

JOURNAL_FORMAT = "fxstudio.journal/1"
REQUIRED_FIELDS = ("format", "model", "pid", "started", "written_at", "options", "labels", "script")
OPTIONAL_FIELDS = ("instance", "groups")
OPTION_KEYS = ("tracer", "input_shapes", "trust", "concrete_args", "leaf_modules", "autowrap_functions")
TRACERS = ("fx", "export")
MAX_LABEL = 2000
MAX_SHAPES, MAX_DIMS = 64, 16
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.([A-Za-z_][A-Za-z0-9_]*|[0-9]+))*")  # layer1.0, pkg.fn
_INSTANCE = re.compile(r"[0-9a-f]{1,64}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fail(reason: str) -> None:
    raise ScriptError(reason)


def check_options(options: Any) -> dict[str, Any]:
    """Validate the load options of a journal (allowed keys, exact types); returns a copy."""
    if not isinstance(options, dict):
        _fail(f"'options' must be an object, not {type(options).__name__}")
    unknown = sorted(set(options) - set(OPTION_KEYS), key=str)
    if unknown:
        _fail(f"unknown option(s) {', '.join(map(repr, unknown))}")
    out: dict[str, Any] = {}
    if "tracer" in options:
        if options["tracer"] not in TRACERS or not isinstance(options["tracer"], str):
            _fail(f"option 'tracer' must be one of {', '.join(TRACERS)}, not {options['tracer']!r}")
        out["tracer"] = options["tracer"]
    if "input_shapes" in options:
        shapes = options["input_shapes"]
        if (not isinstance(shapes, list) or len(shapes) > MAX_SHAPES
                or not all(isinstance(s, list) and len(s) <= MAX_DIMS and all(_is_int(d) and d >= 0 for d in s)
                           for s in shapes)):
            _fail("option 'input_shapes' must be a list of shapes, each a list of non-negative ints")
        out["input_shapes"] = [list(s) for s in shapes]
    if "trust" in options:
        if not isinstance(options["trust"], bool):
            _fail(f"option 'trust' must be true or false, not {options['trust']!r}")
        out["trust"] = options["trust"]
    if "concrete_args" in options:
        out["concrete_args"] = _check_concrete_args(options["concrete_args"])
    for key in ("leaf_modules", "autowrap_functions"):
        if key in options:
            names = options[key]
            if not isinstance(names, list) or not all(isinstance(n, str) and _PATH.fullmatch(n) for n in names):
                _fail(f"option {key!r} must be a list of dotted names")
            out[key] = list(names)
    return out


def _check_concrete_args(value: Any):
    """``{"name": literal}`` or ``["name=value", ...]`` (the ``--concrete-arg`` text); nothing else."""
    if isinstance(value, dict):
        for name, literal in value.items():
            if not _IDENT.fullmatch(name) or not (literal is None or isinstance(literal, (bool, int, str))
                                                  or (isinstance(literal, float) and math.isfinite(literal))):
                _fail("option 'concrete_args' must map argument names to literal values")
        return dict(value)
    if isinstance(value, list) and all(isinstance(v, str) and _IDENT.fullmatch(v.partition("=")[0].strip())
                                       and "=" in v for v in value):
        return list(value)
    _fail("option 'concrete_args' must map argument names to literal values")


def check_journal(data: Any) -> dict[str, Any]:
    """Validate a decoded journal; returns it with ``groups`` filled in. ``ScriptError`` says what is wrong.

    ``groups`` holds how many edits of the script each undoable command made (a compound command
    records several), so recovery rebuilds the same history: ``labels`` has one entry per group.
    """
    if not isinstance(data, dict):
        _fail(f"a journal is a JSON object, not {type(data).__name__}")
    if data.get("format") != JOURNAL_FORMAT:
        _fail(f"format {data.get('format')!r} is not {JOURNAL_FORMAT!r}")
    missing = [k for k in REQUIRED_FIELDS if k not in data]
    if missing:
        _fail(f"missing field(s) {', '.join(map(repr, missing))}")
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS), key=str)
    if unknown:
        _fail(f"unknown field(s) {', '.join(map(repr, unknown))}")
    if not isinstance(data["model"], str) or not data["model"] or "\0" in data["model"]:
        _fail("'model' must be a non-empty file path")
    if not _is_int(data["pid"]) or data["pid"] < 0:
        _fail(f"'pid' must be a non-negative integer, not {data['pid']!r}")
    if not isinstance(data["started"], str) or not (data["started"] == "" or data["started"].isdigit()):
        _fail(f"'started' must be a process start time (digits), not {data['started']!r}")
    written = data["written_at"]
    if isinstance(written, bool) or not isinstance(written, (int, float)) or not math.isfinite(written) or written < 0:
        _fail(f"'written_at' must be a time in seconds, not {written!r}")
    if "instance" in data and not (isinstance(data["instance"], str) and _INSTANCE.fullmatch(data["instance"])):
        _fail(f"'instance' must be a hex token, not {data['instance']!r}")
    options = check_options(data["options"])
    labels = data["labels"]
    if not isinstance(labels, list) or not all(isinstance(x, str) and len(x) <= MAX_LABEL for x in labels):
        _fail("'labels' must be a list of strings")
    try:
        script = validate_script(data["script"])
    except ScriptError as exc:
        _fail(f"its edit script is malformed: {exc.message}")
    edits = script["edits"]
    if not edits:
        _fail("it holds no edits")
    groups = data.get("groups", [1] * len(edits))
    if not isinstance(groups, list) or not all(_is_int(g) and g > 0 for g in groups) or sum(groups) != len(edits):
        _fail(f"'groups' must be positive edit counts adding up to the {len(edits)} edits")
    if labels and len(labels) != len(groups):
        _fail(f"{len(labels)} labels for {len(groups)} edits")
    return {**data, "options": options, "groups": list(groups)}
