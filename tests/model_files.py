"""Model files written by tests: the torch imports every such file starts with, then its own body."""

from __future__ import annotations

import textwrap
from pathlib import Path

MODEL_HEAD = "import torch\nfrom torch import nn\n\n"
"""The first three lines of every model file a test writes (line numbers in messages count them)."""


def model_source(body: str) -> str:
    """A model file's text: :data:`MODEL_HEAD`, then ``body`` dedented."""
    return MODEL_HEAD + textwrap.dedent(body)


def write_model(path: Path, body: str) -> Path:
    """Write :func:`model_source` of ``body`` to ``path``; returns ``path``."""
    path.write_text(model_source(body))
    return path
