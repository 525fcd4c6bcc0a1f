"""Opening graph k of a torch.compile capture (``run.fxcap::k``) as a ``LoadedModel``."""

from __future__ import annotations

import copy
from pathlib import Path

from fxstudio.core.errors import LoadError
from fxstudio.core.loading.inputs import inputs_from_shapes
from fxstudio.core.metadata import annotate
from fxstudio.core.model import LoadedModel


def load_capture(path: Path, selector: str | None, input_shapes) -> LoadedModel:
    """Graph ``selector`` (``"2"``/``"graph_2"``, default 0) of the capture at ``path``, rebuilt through
    the trust boundary (``core/capture``): nothing in the file runs; a refused target is a ``LoadError``."""
    from fxstudio.core.capture import graph_index, read_capture, rebuild_graph

    capture = read_capture(path)
    index = graph_index(capture, selector)
    gm, inputs, notes = rebuild_graph(capture, index)
    if selector is None and len(capture.graphs) > 1:
        notes.append(f"the capture holds {len(capture.graphs)} graphs; graph 0 is open "
                     f"(open {path.name}::k for graph k)")
    if input_shapes:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(input_shapes) != len(placeholders):
            raise LoadError(f"{path}::{index}: the graph takes {len(placeholders)} input(s); --input-shape "
                            f"was given {len(input_shapes)} time(s).")
        inputs = inputs_from_shapes(input_shapes)
        notes.append("inputs from --input-shape (random values) replace the recorded ones")
    annotate(gm, inputs, user_file=None, notes=notes)
    return LoadedModel(
        path=path, kind="capture", module=copy.deepcopy(gm), graph_module=gm, example_inputs=tuple(inputs),
        tracer="fx", entry=f"graph_{index}", user_module=None, exported_program=None, notes=notes,
    )
