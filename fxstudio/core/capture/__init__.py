"""torch.compile capture (docs/notes/capture.md): a Dynamo backend that records each graph as data
to a versioned ``.fxcap`` file, reading such a file back, and rebuilding one of its graphs as a
``torch.fx.GraphModule`` through the trust boundary. Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.capture.fileformat import (
    SUFFIX, Capture, break_text, graph_index, input_text, printable, read_capture, summary_lines,
)
from fxstudio.core.capture.rebuild import rebuild_graph
from fxstudio.core.capture.record import CaptureBackend, capture
from fxstudio.core.capture.runner import run_script_captured

__all__ = ["SUFFIX", "Capture", "CaptureBackend", "break_text", "capture", "graph_index", "input_text",
           "printable", "read_capture", "rebuild_graph", "run_script_captured", "summary_lines"]
