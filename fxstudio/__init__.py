"""fxstudio: a desktop editor for torch.fx graphs."""

__version__ = "0.1.0"
