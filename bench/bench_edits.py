"""Edit-engine speed on a generated graph of about 10k nodes (issue 3: < 20 ms median per edit).

``python -m bench.bench_edits [--quick]``. Builds a residual chain of add/mul/relu nodes (with skip
connections), opens it as a ``Document`` and measures, in the same process, the median time of
``set_arg``, ``insert``, ``erase`` (with ``replace_uses_with``) and ``undo`` — each including the
incremental shape refresh and excluding the deferred recompile, which is measured separately
(``module()`` after an edit). A shape-changing edit at the top of the chain is the worst case: the
per-edit budget recomputes the first nodes and marks the rest unknown; ``refresh_shapes()``
recomputes all of them. References measured
in the same run: one ``graph.lint()`` and one plain forward of the module.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from fxstudio.core.document import Document
from fxstudio.core.edits.shapes import warm_fake_mode
from fxstudio.core.model import LoadedModel


def build_graph(n_nodes: int) -> torch.fx.GraphModule:
    """A chain ``h = relu(h * c + skip)`` of about ``n_nodes`` nodes on a 16-vector."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    h, skip = x, x
    i = 0
    while len(graph.nodes) < n_nodes - 1:
        m = graph.call_function(torch.mul, (h, 1.0 + (i % 7) * 1e-3))
        a = graph.call_function(torch.add, (m, skip))
        h = graph.call_function(torch.relu, (a,))
        if i % 10 == 0:
            skip = h
        i += 1
    graph.output(h)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def timed(fn) -> float:
    """Milliseconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def main(argv: list[str]) -> int:
    """Run the benchmark and print the table."""
    quick = "--quick" in argv
    n_nodes, reps = (2_000, 5) if quick else (10_000, 25)
    gm = build_graph(n_nodes)
    x = torch.randn(16)
    ShapeProp(gm).propagate(x)  # shapes as loading records them: edits keep them true incrementally
    loaded = LoadedModel(path=None, kind="py", module=gm, graph_module=gm, example_inputs=(x,))
    start = time.perf_counter()
    doc = Document(loaded)
    open_ms = (time.perf_counter() - start) * 1e3
    nodes = [n.name for n in doc.edited.graph.nodes if n.op == "call_function"]
    mids = [nodes[len(nodes) * k // (reps + 1)] for k in range(1, reps + 1)]
    muls = [n for n in nodes if n.startswith("mul")]
    mul_mids = [muls[len(muls) * k // (reps + 1)] for k in range(1, reps + 1)]
    relus = [n for n in nodes if n.startswith("relu")]
    relu_mids = [relus[len(relus) * k // (reps + 1)] for k in range(1, reps + 1)]

    lint_ms = statistics.median(timed(doc.edited.graph.lint) for _ in range(5))
    with torch.no_grad():
        forward_ms = statistics.median(timed(lambda: doc.module()(x)) for _ in range(5))

    results: dict[str, list[float]] = {k: [] for k in ("set_arg", "insert", "erase", "undo", "recompile")}
    for k in range(reps):
        results["set_arg"].append(timed(lambda: doc.apply_edit(
            {"op": "set_arg", "node": mul_mids[k], "key": 1, "value": str(2.0 + k)})))
        results["undo"].append(timed(doc.undo))
        results["insert"].append(timed(lambda: doc.apply_edit(
            {"op": "insert", "after": mids[k], "kind": "call_function", "target": "torch.neg",
             "args": f"(%{mids[k]},)"})))
        results["erase"].append(timed(lambda: doc.apply_edit(
            {"op": "erase", "node": relu_mids[k], "replace_uses_with": f"add{relu_mids[k][4:]}"})))
        results["recompile"].append(timed(doc.module))
    doc.edited.graph.lint()
    # The elementwise edits above need no fake mode (edits/pointwise_results.py); the worst case
    # below does. Its one-time set-up (the torch._dynamo import) is measured on its own.
    fake_setup = timed(warm_fake_mode)
    # worst case: a shape change at the top propagates through the whole graph, then back on undo
    worst = timed(lambda: doc.apply_edits([
        {"op": "insert", "after": "x", "kind": "call_function", "target": "torch.unsqueeze", "args": "(%x, 0)",
         "name": "x_row"},
        {"op": "replace_uses", "node": "x", "with": "x_row"},
    ]))
    output = doc.edited.graph.find_nodes(op="output")[0]
    # Edits work out the whole shape cascade at edit time (the edit budget needs every size), so the
    # shapes are complete already; the refresh below then has nothing left to do.
    assert doc.shapes_complete and output.meta["fxs_shape"] == (1, 16)
    full = timed(doc.refresh_shapes)
    assert doc.shapes_complete and output.meta["fxs_shape"] == (1, 16)
    worst_undo = timed(doc.undo)

    print(f"graph: {len(doc.edited.graph.nodes)} nodes; opening the document took {open_ms:.0f} ms")
    print(f"references (same run): graph.lint() {lint_ms:.2f} ms, plain forward {forward_ms:.2f} ms")
    print(f"the fake-tensor set-up, once per process, before the worst case: {fake_setup:.0f} ms\n")
    print("| operation | median ms | max ms | × lint | × forward | target |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, times in results.items():
        med = statistics.median(times)
        target = "—" if name == "recompile" else ("ok < 20 ms" if med < 20 else "MISSED (< 20 ms)")
        print(f"| {name} | {med:.2f} | {max(times):.2f} | {med / lint_ms:.2f} | {med / forward_ms:.2f} | {target} |")
    for name, ms in (("insert changing every downstream shape (budgeted)", worst), ("undo of it", worst_undo),
                     ("refresh_shapes() of the whole graph", full)):
        print(f"| {name} | {ms:.1f} | — | {ms / lint_ms:.1f} | {ms / forward_ms:.1f} | worst case |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
