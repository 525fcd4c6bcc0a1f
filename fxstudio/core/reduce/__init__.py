"""Shrinking a divergence or an exception to the smallest subgraph that still shows it, written as a standalone repro (``fxstudio reduce``). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.reduce.repro_file import ReproFile, write_repro
from fxstudio.core.reduce.search import ReduceError, Reduction, reduce_graphs

__all__ = ["ReduceError", "Reduction", "ReproFile", "reduce_graphs", "write_repro"]
