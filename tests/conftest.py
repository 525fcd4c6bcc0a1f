"""Shared test set-up: Qt runs offscreen, and examples are found by name."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests run two at a time on small machines; one torch thread each avoids oversubscription
# (OpenMP workers spinning against each other turn a 3 ms forward into a second).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from fxstudio.resources import EXAMPLES_DIR  # noqa: E402


@pytest.fixture
def examples_dir():
    """The folder of the built-in example models."""
    return EXAMPLES_DIR
