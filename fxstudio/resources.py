"""Where the bundled resources (examples, icons, stylesheets) live."""

import sys
from pathlib import Path


def find_resources_dir(bundle_dir: str | None = None) -> Path:
    """The ``resources`` folder: beside the ``fxstudio`` package in a checkout or install, and in
    the bundle's data folder (``sys._MEIPASS``, which ``packaging/fxstudio.spec`` fills) when frozen."""
    if bundle_dir is None and getattr(sys, "frozen", False):
        bundle_dir = getattr(sys, "_MEIPASS", None)
    if bundle_dir:
        return Path(bundle_dir) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


RESOURCES_DIR = find_resources_dir()
EXAMPLES_DIR = RESOURCES_DIR / "examples"
ICON_PNG = RESOURCES_DIR / "icon.png"
"""The application icon, 256x256 (drawn from ``icon.svg`` by ``packaging/render_icon.py``)."""


def example_path(name: str) -> Path:
    """Path of a built-in example model file, e.g. ``example_path("residual_cnn.py")``."""
    return EXAMPLES_DIR / name


DEFAULT_EXAMPLE = "residual_cnn.py"
"""The example the app opens when started without a model."""
