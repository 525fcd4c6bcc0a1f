"""Cost of the node-by-node comparison against plain forwards, on the residual CNN and the transformer.

``python -m bench.bench_compare [--quick]``. For each model and batch size it measures, in the same
process: a plain forward of the traced graph (the reference), the plain forwards of original and
edited (what any output comparison runs anyway), and ``run_divergence`` (both graphs stepped by
``torch.fx.Interpreter``) twice: with every node run twice and compared (the cost when the edit is
at the first node), and with the nodes upstream of every edit shared (the cost when it is at the
last node; here the graphs are identical, so every node is shared). Time is the fastest CPU time over interleaved rounds after a warm-up.
Peak memory is the peak of live tensor storage bytes created during the call, counted exactly
by a ``TorchDispatchMode`` (inputs and weights, which exist before the call, are not counted).
Targets (issue 7): <= 2.5x time, <= 3x peak memory.
"""

from __future__ import annotations

import sys
import time
import weakref

import torch
import torch.fx
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from fxstudio.core.divergence import run_divergence
from fxstudio.core.loading import load_model
from fxstudio.resources import example_path


class PeakTensorMemory(TorchDispatchMode):
    """Tracks bytes of tensor storages created by ops while active, and their peak while alive."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self.live:
                    self.live[key] = storage.nbytes()
                    self.current += storage.nbytes()
                    self.peak = max(self.peak, self.current)
                    weakref.finalize(t, self._free, key)
        return out


def peak_bytes(fn) -> int:
    """Peak live bytes of tensors created while ``fn()`` runs."""
    with torch.no_grad(), PeakTensorMemory() as mode:
        fn()
    return mode.peak


def best_ms(fns: dict, repeats: int) -> dict:
    """Fastest CPU time (ms) of each function, measured in interleaved rounds after a warm-up.

    CPU time of this process (torch runs on one thread here) rather than wall time, and the
    minimum over rounds: on a machine shared with other jobs both are what the work itself costs.
    """
    best = {name: float("inf") for name in fns}
    with torch.no_grad():
        for fn in fns.values():
            fn()
        for _ in range(repeats):
            for name, fn in fns.items():
                start = time.process_time()
                fn()
                best[name] = min(best[name], (time.process_time() - start) * 1000)
    return best


def case(model: str, batch: int, repeats: int) -> dict:
    """Measure one model at one batch size."""
    loaded = load_model(example_path(model))
    gm = loaded.graph_module
    for i, node in enumerate(gm.graph.nodes):
        node.meta["fxs_id"] = i
    edited = torch.fx.GraphModule(gm, __import__("copy").deepcopy(gm.graph))
    inputs = tuple(torch.cat([t] * batch) if isinstance(t, torch.Tensor) else t for t in loaded.example_inputs)

    def plain():
        return gm(*inputs)

    def both():
        return gm(*inputs), edited(*inputs)

    def per_node():  # worst case, an edit at the first node: every node runs twice and is compared
        return run_divergence(gm, edited, inputs, rtol=1e-5, atol=1e-6, share=False)

    def shared():  # best case, an edit at the last node: the unchanged nodes run once
        return run_divergence(gm, edited, inputs, rtol=1e-5, atol=1e-6, share=True)

    assert per_node().first is None and shared().first is None
    t = best_ms({"plain": plain, "both": both, "node": per_node, "shared": shared}, repeats)
    m_plain, m_node, m_shared = (peak_bytes(f) for f in (plain, per_node, shared))
    return {"model": model.removesuffix(".py"), "batch": batch, "nodes": len(gm.graph.nodes),
            "t_plain": t["plain"], "t_both": t["both"], "t_node": t["node"], "t_shared": t["shared"],
            "m_plain": m_plain, "m_node": m_node, "m_shared": m_shared}


def main(argv: list[str]) -> int:
    """Print the markdown table; exit 1 when a large-batch case misses the targets."""
    quick = "--quick" in argv
    torch.set_num_threads(1)
    repeats = 3 if quick else 25
    cases = [("residual_cnn.py", 1), ("transformer_block.py", 1)]
    if not quick:
        cases += [("residual_cnn.py", 16), ("transformer_block.py", 16)]
    rows = [case(m, b, repeats) for m, b in cases]
    print("| model | batch | nodes | plain forward | per-node, all compared | ratio | vs both forwards "
          "| per-node, unchanged shared | ratio | peak mem plain | all compared | ratio | shared | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['batch']} | {r['nodes']} | {r['t_plain']:.2f} ms | {r['t_node']:.2f} ms "
              f"| {r['t_node'] / r['t_plain']:.2f}x | {r['t_node'] / r['t_both']:.2f}x "
              f"| {r['t_shared']:.2f} ms | {r['t_shared'] / r['t_plain']:.2f}x "
              f"| {r['m_plain'] / 1024:.0f} KiB | {r['m_node'] / 1024:.0f} KiB | {r['m_node'] / r['m_plain']:.2f}x "
              f"| {r['m_shared'] / 1024:.0f} KiB | {r['m_shared'] / r['m_plain']:.2f}x |")
    print("\nTargets: time <= 2.5x, peak memory <= 3x a plain forward (torch threads: 1).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
