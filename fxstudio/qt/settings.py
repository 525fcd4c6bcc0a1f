"""What the window remembers between runs (QSettings): geometry, dock layout, recent files,
the ``.py`` files the user agreed to run, and small preferences.

``FXSTUDIO_CONFIG_DIR`` (tests, portable installs) puts the settings in an INI file there instead
of the platform's usual place.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings

MAX_RECENT = 10


def make_settings() -> QSettings:
    """The settings store: ``$FXSTUDIO_CONFIG_DIR/fxstudio.ini`` when set, else the user's QSettings."""
    folder = os.environ.get("FXSTUDIO_CONFIG_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return QSettings(str(Path(folder) / "fxstudio.ini"), QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "fxstudio", "fxstudio")


def _str_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(v) for v in value]


class Preferences:
    """Typed access to the settings the window keeps."""

    def __init__(self, settings: QSettings):
        self.settings = settings

    def recent_files(self) -> list[str]:
        """Recently opened model specs, most recent first, only those whose file still exists."""
        specs = _str_list(self.settings.value("recent/files"))
        return [s for s in specs if Path(s.partition("::")[0]).exists()]

    def add_recent(self, spec: str) -> None:
        """Put ``spec`` at the top of the recent files."""
        specs = [s for s in _str_list(self.settings.value("recent/files")) if s != spec]
        self.settings.setValue("recent/files", [spec, *specs][:MAX_RECENT])

    def clear_recent(self) -> None:
        """Forget the recent files."""
        self.settings.setValue("recent/files", [])

    def is_trusted_py(self, path: str | Path) -> bool:
        """Whether the user already agreed to run this ``.py`` file's code."""
        return str(Path(path).resolve()) in _str_list(self.settings.value("trust/py_files"))

    def trust_py(self, path: str | Path) -> None:
        """Remember that the user agreed to run this ``.py`` file's code."""
        files = _str_list(self.settings.value("trust/py_files"))
        key = str(Path(path).resolve())
        if key not in files:
            self.settings.setValue("trust/py_files", [*files, key])

    def last_dir(self) -> str:
        """The folder the open/save dialogs start in."""
        return str(self.settings.value("dialogs/last_dir", "") or "")

    def set_last_dir(self, folder: str | Path) -> None:
        """Remember the folder of the last file chosen in a dialog."""
        self.settings.setValue("dialogs/last_dir", str(folder))

    def minimap_shown(self) -> bool:
        """Whether the canvas's minimap is expanded (View ▸ Minimap); True on a first run."""
        return _bool(self.settings.value("view/minimap", True))

    def set_minimap_shown(self, shown: bool) -> None:
        """Remember View ▸ Minimap."""
        self.settings.setValue("view/minimap", bool(shown))

    def fold_weights(self) -> bool:
        """Whether weights used by one op are drawn as rows of its card (View ▸ Fold Weights into
        Cards); True on a first run."""
        return _bool(self.settings.value("view/fold_weights", True))

    def set_fold_weights(self, on: bool) -> None:
        """Remember View ▸ Fold Weights into Cards."""
        self.settings.setValue("view/fold_weights", bool(on))

    def canvas_hint_dismissed(self) -> bool:
        """Whether the user closed the canvas's first-run hint."""
        return _bool(self.settings.value("hints/canvas_dismissed", False))

    def dismiss_canvas_hint(self) -> None:
        """Do not show the canvas's first-run hint again."""
        self.settings.setValue("hints/canvas_dismissed", True)


def _bool(value) -> bool:
    # An INI file gives back "true"/"false" strings.
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)
