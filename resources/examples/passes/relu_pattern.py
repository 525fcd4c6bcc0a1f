"""A ``replace_pattern`` pair: ``torch.relu(x)`` decomposed into ``(x > 0) * x``. Try it on
``relu_add.py``: ``{"op": "replace_pattern", "file": "passes/relu_pattern.py", "pattern": "pattern",
"replacement": "replacement"}``."""

import torch


def pattern(x):
    """What to find: a call of ``torch.relu``."""
    return torch.relu(x)


def replacement(x):
    """What to put in its place: the same values, written with a comparison and a product."""
    return (x > 0) * x
