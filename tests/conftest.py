"""Shared test set-up: Qt runs offscreen, and examples are found by name."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from fxstudio.resources import EXAMPLES_DIR  # noqa: E402


@pytest.fixture
def examples_dir():
    """The folder of the built-in example models."""
    return EXAMPLES_DIR
