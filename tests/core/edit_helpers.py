"""Shared helpers for the edit-engine tests: loaded examples (cached per process) and documents."""

from __future__ import annotations

import functools

import torch

from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path


@functools.lru_cache(maxsize=None)
def loaded_example(name: str):
    """The built-in example ``name`` loaded once per test process (documents copy it, never edit it)."""
    return load_model(example_path(name))


def doc_for(name: str) -> Document:
    """A fresh document on a built-in example."""
    return Document(loaded_example(name))


def run(doc: Document, *inputs):
    """Run the edited module (recompiled if needed) on ``inputs`` or the example inputs."""
    with torch.no_grad():
        return doc.module()(*(inputs or doc.loaded.example_inputs))


def code(doc: Document) -> str:
    """The edited module's current code."""
    return doc.module().code
