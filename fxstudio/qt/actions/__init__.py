"""Structure actions of the editor window (insert, erase, replace uses, duplicate, DCE, rename)."""

from fxstudio.qt.actions.structure_actions import StructureActions

__all__ = ["StructureActions"]
