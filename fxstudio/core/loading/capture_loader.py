"""Opening graph k of a torch.compile capture (``run.fxcap::k``) as a ``LoadedModel``."""

from __future__ import annotations

import re
from pathlib import Path

from fxstudio.core.gc_pause import collections_off
from fxstudio.core.loading.inputs import inputs_from_shapes
from fxstudio.core.metadata import annotate
from fxstudio.core.model import LoadedModel
from fxstudio.core.module_state import share_graph_module
from fxstudio.core.node_text import META_HIDDEN, META_PARAM


def load_capture(path: Path, selector: str | None, input_shapes) -> LoadedModel:
    """Graph ``selector`` (``"2"``/``"graph_2"``, default 0) of the capture at ``path``, rebuilt through
    the trust boundary (``core/capture``): nothing in the file runs; a refused target, or data past
    the data budget, is a ``LoadError``."""
    with collections_off():
        return _load(path, selector, input_shapes)


def _load(path: Path, selector: str | None, input_shapes) -> LoadedModel:
    from fxstudio.core.capture import graph_index, printable, read_capture, rebuild_graph

    capture = read_capture(path)
    index = graph_index(capture, selector)
    shapes = [tuple(s) for s in input_shapes] if input_shapes else None
    gm, inputs, notes = rebuild_graph(capture, index, shapes, inputs_from_shapes)
    if selector is None and len(capture.graphs) > 1:
        notes.append(f"the capture holds {len(capture.graphs)} graphs; graph 0 is open "
                     f"(open {printable(path.name, 200)}::k for graph k)")
    # The rebuild evaluated every node on fake tensors (within the data budget) and left the values in
    # meta["val"] and the shapes in tensor_meta, as an exported graph carries them: annotate's exported
    # path takes them as they are instead of a second propagation (half the open time of a large graph).
    # A capture hides nothing, so the export-plumbing marks that path sets are taken off again.
    annotate(gm, inputs, user_file=None, notes=notes, exported=True)
    for node in gm.graph.nodes:
        node.meta.pop(META_HIDDEN, None)
        node.meta.pop("val", None)
        if node.op == "placeholder":
            qualname = lifted_name(node.meta.get("fxs_capture_source"))
            if qualname:  # a parameter Dynamo lifted into an input: a row of its user's card
                node.meta[META_PARAM] = qualname
    # The module to run as the original shares the graph too (a copy of a 200k-node graph takes
    # seconds): nothing changes a loaded graph in place; a Document and every run work on copies.
    return LoadedModel(
        path=path, kind="capture", module=share_graph_module(gm, gm.graph), graph_module=gm,
        example_inputs=tuple(inputs), tracer="fx", entry=f"graph_{index}", user_module=None, exported_program=None,
        notes=notes,
    )


_LIFTED = re.compile(r"L\['self'\]((?:\._modules\['[A-Za-z0-9_]+'\])*)\._(?:parameters|buffers)\['([A-Za-z0-9_]+)'\]")
_STEP = re.compile(r"\._modules\['([A-Za-z0-9_]+)'\]")


def lifted_name(source) -> str | None:
    """``lin.weight`` for Dynamo's source text ``L['self']._modules['lin']._parameters['weight']``
    (a parameter or buffer of the compiled module, lifted into a graph input); None for a model
    input (``L['x']``) or any other text. The text is data from the file: it is only matched."""
    if not isinstance(source, str):
        return None
    found = _LIFTED.fullmatch(source)
    if found is None:
        return None
    return ".".join([*_STEP.findall(found.group(1)), found.group(2)])
