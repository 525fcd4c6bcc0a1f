"""Load + trace + metadata of a generated ~10k-node model, against a plain forward and a plain trace.

``python -m bench.bench_load`` (``--quick``: a ~1k-node model; ``--one-thread``: the tuned figure on one
torch thread, beside torch's default). The model is written as a ``.py``
file and opened the way the app opens it (``load_model``): run the file, build the module, trace
with stack traces, fake-tensor shape propagation, module paths and source lines on every node.
Then the ``Document`` the app builds on it: its open time, and the weights the model, its graph
and the document hold together (shared, so about 1× the model's).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.common import best_time, deep_model_source


import torch
import torch.fx

def main(argv: list[str]) -> int:
    """Write the model, time each step, print ratios and a markdown table."""
    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model
    from torch.fx.passes.shape_prop import ShapeProp

    from fxstudio.core.metadata import annotate
    from fxstudio.core.shape_propagation import propagate_shapes
    from fxstudio.core.loading.tracing import trace_fx

    quick = "--quick" in argv
    blocks = 200 if quick else 2000
    repeats = 1 if quick else 2
    width, batch = 64, 32
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deep_bench.py"
        path.write_text(deep_model_source(width=width, blocks=blocks, batch=batch))
        torch.set_grad_enabled(False)
        one_thread = "--one-thread" in argv  # a tuned figure; by default torch's own settings, as users run
        if one_thread:
            torch.set_num_threads(1)
        # CPU time sums over threads: with torch's default count, wall time is what a user waits
        clock = time.process_time if torch.get_num_threads() == 1 else time.perf_counter
        loaded = load_model(path)
        model, inputs = loaded.module, loaded.example_inputs
        nodes = len(loaded.graph_module.graph.nodes)

        t_forward = best_time(lambda: model(*inputs), repeats, clock=clock, warm_up=True)
        t_plain_trace = best_time(lambda: torch.fx.symbolic_trace(model), repeats, clock=clock, warm_up=True)
        t_trace = best_time(lambda: trace_fx(model, display="bench", user_file=path), repeats, clock=clock, warm_up=True)
        gm = trace_fx(model, display="bench", user_file=path)
        t_real_shapes = best_time(lambda: ShapeProp(gm).propagate(*inputs), repeats, clock=clock, warm_up=True)
        t_shapes = best_time(lambda: propagate_shapes(gm, inputs, []), repeats, clock=clock, warm_up=True)
        t_open_shapes = best_time(lambda: propagate_shapes(gm, inputs, [], prefer_real=True), repeats, clock=clock,
                                  warm_up=True)
        t_annotate = best_time(lambda: annotate(gm, inputs, user_file=path, notes=[]), repeats, clock=clock, warm_up=True)
        t_load = best_time(lambda: load_model(path), repeats, clock=clock, warm_up=True)
        t_open = best_time(lambda: Document(loaded), repeats, clock=clock, warm_up=True)
        doc = Document(loaded)
        model_bytes = _tensor_bytes(loaded.module)
        held_bytes = _tensor_bytes(loaded.module, loaded.graph_module, doc.original, doc.edited)

    rows = [
        ("plain forward pass (reference)", t_forward),
        ("plain torch.fx.symbolic_trace", t_plain_trace),
        ("fxstudio trace (stack traces recorded)", t_trace),
        ("real-tensor ShapeProp (what fake mode avoids)", t_real_shapes),
        ("fake-tensor shape propagation (fxstudio, large models and untrusted graphs)", t_shapes),
        ("shape propagation at open of a small .py model (one real run, fxstudio)", t_open_shapes),
        ("all metadata (shapes + paths + sources)", t_annotate),
        ("load_model total (run file, build, trace, metadata)", t_load),
        ("Document open (graph copies + compiles, weights shared)", t_open),
    ]
    print(
        f"model: {blocks} residual blocks, {nodes} nodes, input {batch}×{width}; "
        f"best {'CPU' if clock is time.process_time else 'wall'} seconds of {repeats} (after a warm-up), "
        f"{torch.get_num_threads()} torch thread(s) ({'--one-thread, tuned' if one_thread else 'torch default'})"
    )
    print()
    print("| step | seconds | × forward | × symbolic_trace |")
    print("| --- | ---: | ---: | ---: |")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.3f} | {seconds / t_forward:.1f} | {seconds / t_plain_trace:.2f} |")
    print()
    print(
        f"load + trace + metadata of {nodes} nodes: {t_load:.2f} s "
        f"= {t_load / t_forward:.0f}× a forward pass, {t_load / t_plain_trace:.1f}× a plain symbolic_trace"
    )
    print(
        f"weights held by the model, its graph and an open document: {held_bytes / 2**20:.1f} MiB "
        f"= {held_bytes / model_bytes:.2f}× the model's {model_bytes / 2**20:.1f} MiB"
    )
    return 0


def _tensor_bytes(*modules) -> int:
    """Bytes of the distinct storages behind the modules' parameters, buffers and tensor attributes."""
    from fxstudio.core.module_state import state_tensors

    storages = {}
    for module in modules:
        for t in state_tensors(module):
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(storages.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
