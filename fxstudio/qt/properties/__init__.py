"""The Properties dock: the selected node's op, name, target, arguments, defaults, links and source."""

from fxstudio.qt.properties.panel import PropertiesPanel

__all__ = ["PropertiesPanel"]
