"""The diff window (File ▸ Diff With…, File ▸ Diff Against Original): graphs side by side, read-only,
matched node for node (``fxstudio.core.diff``), with synced selection, pan and zoom."""

from fxstudio.qt.diff.actions import DiffActions
from fxstudio.qt.diff.window import DiffWindow

__all__ = ["DiffActions", "DiffWindow"]
