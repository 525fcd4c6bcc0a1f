"""Exporting an edited module as a standalone Python file, verified in a fresh process before it
is committed (``docs/notes/export.md``). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.export.python_file import ExportCancelled, ExportTargetError, commit_files, export_python, weights_name_in
from fxstudio.core.export.names import restore_exported_names
from fxstudio.core.export.pt2_file import export_pt2
from fxstudio.core.export.verify import GraphRunFailed

__all__ = ["ExportCancelled", "ExportTargetError", "GraphRunFailed", "commit_files", "export_pt2", "export_python",
           "restore_exported_names", "weights_name_in"]
