"""What loading a model file produces: the module, its traced graph and its example inputs."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
import torch.fx

Tracer = Literal["fx", "export"]


@dataclass
class LoadedModel:
    """A model file turned into an FX graph with metadata (see docs/CONTRACTS.md for node meta keys).

    ``module`` is the module as loaded (for ``.pt2`` files, ``ExportedProgram.module()``);
    ``graph_module`` is its traced graph, never edited by anyone: the document copies it.
    """

    path: Path | None
    kind: Literal["py", "pt2", "pickle", "memory", "capture"]  # "memory": a module of the caller (fxstudio.edit), no file; "capture": graph k of a .fxcap
    module: torch.nn.Module
    graph_module: torch.fx.GraphModule
    example_inputs: tuple[Any, ...]
    tracer: Tracer = "fx"
    entry: str = ""
    user_module: types.ModuleType | None = None
    exported_program: Any = None
    notes: list[str] = field(default_factory=list)

    @property
    def display_name(self) -> str:
        """Short name for titles: the file name and the entry, e.g. ``residual_cnn.py::ResidualCNN``."""
        name = self.path.name if self.path else "<memory>"
        return f"{name}::{self.entry}" if self.entry else name

    @property
    def user_module_name(self) -> str | None:
        """Import name under which functions of the opened file are written in target syntax."""
        return self.user_module.__name__ if self.user_module is not None else None
