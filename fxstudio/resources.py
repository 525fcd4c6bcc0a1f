"""Where the bundled resources (examples, icons, stylesheets) live."""

from pathlib import Path

RESOURCES_DIR = Path(__file__).resolve().parent.parent / "resources"
EXAMPLES_DIR = RESOURCES_DIR / "examples"


def example_path(name: str) -> Path:
    """Path of a built-in example model file, e.g. ``example_path("residual_cnn.py")``."""
    return EXAMPLES_DIR / name


DEFAULT_EXAMPLE = "residual_cnn.py"
"""The example the app opens when started without a model."""
