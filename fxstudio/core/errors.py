"""Expected failures, each carrying a message written for the user.

An ``FxStudioError`` is never shown with a traceback: the CLI prints its message to stderr and
exits with ``exit_code``; the GUI shows it in a dialog or the Problems dock.
"""


class FxStudioError(Exception):
    """An expected failure with a one-paragraph, user-facing message."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class LoadError(FxStudioError):
    """A model file that cannot be read, imported or resolved to a module (exit 2).

    ``needs_trust`` is True when only a trusted load (``--trust``, or the window's confirmation
    naming the file) would open it, because the file holds code that a safe reader does not run.
    """

    needs_trust = False


class TraceError(LoadError):
    """A module that cannot be traced; the message names the user's file and line (exit 2)."""


class EditRefused(FxStudioError):
    """An edit that validation refused; nothing was changed (exit 1).

    ``internal`` is True when the refusal is an unexpected exception of the edit engine (a bug),
    rolled back like a refusal; ``index`` is the 0-based position of the refused edit in a replayed
    script (``replay``), else None.
    """

    exit_code = 1
    internal: bool = False
    index: int | None = None

    def __init__(self, message: str, *, hint: str | None = None, internal: bool = False, index: int | None = None):
        super().__init__(message, hint=hint)
        self.internal = internal
        self.index = index


class ScriptError(FxStudioError):
    """An edit script that does not follow the format (exit 2)."""


class ExportError(FxStudioError):
    """An export that could not be written or did not verify (exit 1)."""

    exit_code = 1


class RunError(FxStudioError):
    """A run or comparison that failed, e.g. an exception raised by a node (exit 1)."""

    exit_code = 1


class NoDisplayError(FxStudioError):
    """The window cannot open: no display to draw on (``fxstudio.edit`` / ``show``; the CLI exits 2)."""
