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


def with_huge_node(gm):
    """A copy of ``gm`` (add_mul) whose ``mul`` multiplies by a 10^14-element ``torch.ones`` node,
    inserted with plain torch.fx: the edit checks refuse such a size at edit time, and a run of a
    graph that allocates too much at run time must still report it, not raise."""
    import copy

    import torch

    gm = copy.deepcopy(gm)
    mul = next(n for n in gm.graph.nodes if n.name == "mul")
    ids = [n.meta["fxs_id"] for n in gm.graph.nodes if "fxs_id" in n.meta]
    with gm.graph.inserting_before(mul):
        huge = gm.graph.create_node("call_function", torch.ones, ((10000000, 10000000),), name="huge")
    huge.meta["fxs_id"] = max(ids, default=0) + 1
    mul.update_arg(1, huge)
    gm.recompile()
    return gm
