"""fxstudio from Python: edit or look at a module of your program in the window, or replay an edit
script on it without one (docs/from_code.md).

- ``fxstudio.edit(module, *example_inputs)`` opens the editor on it and returns the edited
  ``torch.fx.GraphModule`` when the window is closed (``block=False``: a handle at once);
- ``fxstudio.show(module, *example_inputs)``: the same window, view only (every edit is refused);
- ``fxstudio.apply(module, "edits.json" | script, *example_inputs)``: headless, the engine of
  ``fxstudio apply``.

fxstudio always works on a deep copy: the module you pass is never changed. Importing this module
imports neither torch nor Qt; each function imports what it needs when called.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch.fx

    from fxstudio.qt.api_window import EditSession

__all__ = ["apply", "edit", "show"]

NO_DISPLAY_MESSAGE = (
    "fxstudio.{what}: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open. "
    "Run it where there is a screen (a desktop session, `ssh -X`), start Python under a virtual one "
    "(`xvfb-run python script.py`), or set QT_QPA_PLATFORM=offscreen before the call to draw the window off "
    "screen (tests, screenshots). Without a window, fxstudio.apply(module, 'edits.json', *inputs) replays "
    "a saved edit script, and `fxstudio inspect` prints a graph in the terminal."
)

# Qt platforms that draw without a display server; xcb and wayland need one.
_NO_SERVER_PLATFORMS = ("offscreen", "minimal", "minimalegl", "vnc", "eglfs", "linuxfb", "vkkhrdisplay")


def has_display(environ: dict[str, str] | None = None, platform: str | None = None) -> bool:
    """Whether Qt can open a window here: not Linux, a Qt platform that needs no display server
    (``QT_QPA_PLATFORM=offscreen``), or ``DISPLAY`` / ``WAYLAND_DISPLAY`` set."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    if not platform.startswith("linux"):
        return True
    qpa = env.get("QT_QPA_PLATFORM", "").split(":")[0].strip().lower()
    if qpa in _NO_SERVER_PLATFORMS:
        return True
    if qpa.startswith("wayland"):
        return bool(env.get("WAYLAND_DISPLAY"))
    if qpa == "xcb":
        return bool(env.get("DISPLAY"))
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def _loaded(module: Any, example_inputs: tuple, tracer: str | None, name: str | None):
    from fxstudio.core.loading import load_in_memory

    return load_in_memory(module, tuple(example_inputs), tracer, name=name)


def _open(what: str, module: Any, example_inputs: tuple, tracer: str | None, block: bool, name: str | None,
          view_only: bool):
    from fxstudio.core.errors import NoDisplayError

    if not _qt_running() and not has_display():
        raise NoDisplayError(NO_DISPLAY_MESSAGE.format(what=what))
    loaded = _loaded(module, example_inputs, tracer, name)
    from fxstudio.qt.api_window import open_session

    session = open_session(loaded, view_only=view_only, block=block)
    return session


def _qt_running() -> bool:
    """Whether a QApplication already runs in this process (then it has its display)."""
    qt = sys.modules.get("PySide6.QtWidgets")
    return qt is not None and qt.QApplication.instance() is not None


def edit(module: Any, *example_inputs: Any, tracer: str | None = None, block: bool = True,
         name: str | None = None) -> "torch.fx.GraphModule | EditSession":
    """Open the editor window on ``module`` and return the edited ``torch.fx.GraphModule``.

    ``module``: a ``torch.fx.GraphModule`` (used as it is; ``example_inputs`` optional, shapes stay
    unknown without them) or any ``nn.Module``, traced on ``example_inputs`` with ``tracer``
    (``"fx"``, the default: ``symbolic_trace``; ``"export"``: ``torch.export``). The window works on
    a deep copy; your module is unchanged. ``name`` titles the window (default: the class name).

    With ``block=True`` (the default) the call returns when the window is closed (File ▸ Quit,
    Ctrl+Q or its close button): Qt's events are processed meanwhile, in a plain script as under
    IPython's ``%gui qt``. With ``block=False`` it returns an ``EditSession`` at once: its
    ``result()`` waits for the window and returns the module; ``script`` is the edit script recorded
    so far (the JSON of File ▸ Save Edit Script) and ``save_script(path)`` writes it.

    Raises ``NoDisplayError`` without a display, ``LoadError`` / ``TraceError`` when the module
    cannot be copied or traced (``fxstudio.core.errors``).
    """
    session = _open("edit", module, example_inputs, tracer, block, name, view_only=False)
    return session.result() if block else session


def show(module: Any, *example_inputs: Any, tracer: str | None = None, block: bool = True,
         name: str | None = None) -> "EditSession":
    """Open the same window on ``module``, view only: every edit gesture is refused (the Problems
    dock and the status bar say "This window is view only"), everything else works (select, find,
    run the model, export it). Returns the ``EditSession`` once the window is closed, or at once
    with ``block=False``; arguments as for :func:`edit`."""
    return _open("show", module, example_inputs, tracer, block, name, view_only=True)


def apply(module: Any, script: str | os.PathLike | dict, *example_inputs: Any, tracer: str | None = None,
          trust_passes: bool = False, allow_changed_passes: bool = False) -> "torch.fx.GraphModule":
    """Replay an edit script on ``module`` without a window and return the edited ``GraphModule``.

    ``script``: a path to an edit script (``fxstudio.edits/1``, docs/edit-scripts.md) or the
    script itself as a dict (an ``EditSession.script``). ``module`` and ``example_inputs`` as for
    :func:`edit`; replay ``handle.script`` on the same module (and tracer) it was recorded on.
    It is ``fxstudio apply``'s engine with its refusals, raised instead of an exit status:
    ``ScriptError`` (a malformed script), ``LoadError`` / ``TraceError`` (the module), an
    ``FxStudioError`` for a pass file that needs ``trust_passes=True`` (or ``allow_changed_passes``
    when it changed since it was recorded), ``EditRefused`` naming the refused edit and why.
    Pass files named by a relative path are found next to the script file (or in the current
    folder for a dict).
    """
    from fxstudio.cli_commands.pass_cmd import check_script_passes, cli_pass_trust
    from fxstudio.core.document import Document, replay_into
    from fxstudio.core.edits import load_script, validate_script
    from fxstudio.core.errors import FxStudioError, ScriptError

    if isinstance(script, dict):
        import copy

        data = copy.deepcopy(script)
        base_dir = Path.cwd()
    elif isinstance(script, (str, os.PathLike)):
        data = load_script(script)
        base_dir = Path(script).resolve().parent  # a pass file is relative to the script's folder
    else:
        raise ScriptError(f"fxstudio.apply: the script is a path or a dict, not {type(script).__name__}.")
    validate_script(data)
    try:
        check_script_passes(data["edits"], base_dir, trust_files=trust_passes, allow_changed=allow_changed_passes)
    except FxStudioError as exc:
        message = exc.message.replace("--trust-passes", "trust_passes=True").replace(
            "--allow-changed-passes", "allow_changed_passes=True")
        raise type(exc)(message, hint=exc.hint) from None
    doc = Document(_loaded(module, example_inputs, tracer, None))
    doc.set_pass_trust(cli_pass_trust(base_dir, trust_files=trust_passes, allow_changed=allow_changed_passes))
    replay_into(doc, data["edits"], "stop")
    return doc.module()
