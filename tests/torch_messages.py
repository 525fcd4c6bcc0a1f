"""What torch itself raises for the rejected edits the tests make (compared with fxstudio's lines)."""

from __future__ import annotations

import operator

import torch


def mul_hello_message() -> str:
    """torch's ``TypeError: …`` for ``tensor * 'hello'``, as fxstudio quotes it."""
    try:
        operator.mul(torch.ones(2, 3), "hello")
    except TypeError as exc:
        return f"TypeError: {exc}"
    raise AssertionError("torch accepted tensor * 'hello'")
