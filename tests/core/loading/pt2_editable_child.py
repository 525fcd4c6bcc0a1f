"""Run by ``test_pt2_editable.py`` in a fresh process: open ``.pt2`` archives with ``load_model``
(no trust) and save, per archive, the graph as (op, name, target, args, kwargs) text, the example
inputs and the module's outputs on them, and whether torch's deserializer was imported."""

from __future__ import annotations

import sys

import torch

from fxstudio.core.loading import load_model


def describe(gm) -> list[tuple]:
    """Each node as text: what an edit script refers to (names, targets, argument positions)."""
    return [(n.op, n.name, str(n.target), str(n.args), str(n.kwargs)) for n in gm.graph.nodes]


def main(out: str, paths: list[str]) -> None:
    found = {}
    for path in paths:
        loaded = load_model(path)
        state = {k: v.detach().clone() for k, v in loaded.module.state_dict().items()}  # before any run
        with torch.no_grad():
            outputs = loaded.module(*loaded.example_inputs)
            copy_outputs = loaded.graph_module(*loaded.example_inputs)
        found[path] = {"graph": describe(loaded.graph_module), "inputs": loaded.example_inputs, "outputs": outputs,
                       "copy_outputs": copy_outputs, "rebuilt": loaded.exported_program is not None,
                       "state": state,
                       "deserializer": "torch._export.serde.serialize" in sys.modules}
    torch.save(found, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
