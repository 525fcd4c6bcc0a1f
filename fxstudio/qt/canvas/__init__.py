"""The node canvas: ``GraphCanvas`` (view), its scene and items, minimap, search and drag rewiring."""

from fxstudio.qt.canvas.view import GraphCanvas

__all__ = ["GraphCanvas"]
