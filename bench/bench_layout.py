"""Layout benchmark: fxstudio's layered layout against Graphviz ``dot -Tplain`` on the same graphs.

Run ``.venv/bin/python -m bench.bench_layout`` (``--quick`` for a smoke run). For every graph it
times ``compute_layout`` (best of a few runs for small graphs) and one ``dot -Tplain`` run
(killed after ``--dot-timeout`` seconds and reported as "> N s"), converts dot's output into a
``Layout`` and scores both with the same ``count_crossings``. It prints the ratios and a markdown
table; the targets of issue 5 are checked and reported at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fxstudio.testing import synthetic
from fxstudio.core.layout import compute_layout
from fxstudio.core.layout import count_crossings, overlapping_pairs, upward_edges
from fxstudio.core.layout import EdgeRoute, Layout, NodeBox

REAL_MODELS = [("residual_cnn.py", "fx"), ("residual_cnn.py", "export"), ("transformer_block.py", "fx"),
               ("transformer_block.py", "export"), ("conv_bn_relu.py", "export"), ("two_linear.py", "export")]


def to_dot(layout: Layout) -> str:
    """The graph of ``layout`` in DOT, with fxstudio's card sizes (points → inches), top to bottom."""
    lines = ["digraph G {", "  graph [rankdir=TB, nodesep=0.5, ranksep=0.6];", "  node [shape=box, fixedsize=true];"]
    ids = {}
    for i, (name, box) in enumerate(layout.nodes.items()):
        ids[name] = f"n{i}"
        lines.append(f"  n{i} [width={box.w / 72:.3f}, height={box.h / 72:.3f}];")
    for j, (path, g) in enumerate((p, g) for p, g in layout.groups.items() if g.collapsed):
        ids[path] = f"g{j}"
        lines.append(f"  g{j} [width={g.w / 72:.3f}, height={g.h / 72:.3f}];")
    for e in layout.edges:
        lines.append(f"  {ids[e.src]} -> {ids[e.dst]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def parse_plain(text: str, layout: Layout) -> Layout:
    """dot's ``-Tplain`` output as a ``Layout`` (y flipped to grow downward, inches → points)."""
    back = {f"n{i}": name for i, name in enumerate(layout.nodes)}
    back.update({f"g{j}": p for j, p in enumerate(p for p, g in layout.groups.items() if g.collapsed)})
    height = 0.0
    out = Layout()
    raw_edges = []
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "graph":
            height = float(parts[3]) * 72
        elif parts[0] == "node":
            name = back[parts[1]]
            cx, cy, w, h = (float(v) * 72 for v in parts[2:6])
            out.nodes[name] = NodeBox(name=name, x=cx - w / 2, y=height - cy - h / 2, w=w, h=h, layer=0)
        elif parts[0] == "edge":
            n = int(parts[3])
            coords = [float(v) * 72 for v in parts[4:4 + 2 * n]]
            pts = [(coords[k], height - coords[k + 1]) for k in range(0, len(coords), 2)]
            raw_edges.append(EdgeRoute(src=back[parts[1]], dst=back[parts[2]], key=0, points=pts))
    out.edges = raw_edges
    return out


def run_dot(layout: Layout, timeout: float) -> tuple[float | None, Layout | None]:
    """Seconds dot took and its layout, or (None, None) when it ran past ``timeout``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.dot"
        path.write_text(to_dot(layout))
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(["dot", "-Tplain", str(path)], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, None
        seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed: {proc.stderr[-500:]}")
    return seconds, parse_plain(proc.stdout, layout)


CPU_TIMES: dict[int, float] = {}  # id(layout) -> best CPU seconds of the runs that made it


def time_layout(graph, repeats: int, **kwargs) -> tuple[float, Layout]:
    """Best wall time of ``compute_layout`` over ``repeats`` runs, and the layout (its best CPU
    time, which a busy machine inflates less, goes to ``CPU_TIMES``)."""
    best, best_cpu, layout = float("inf"), float("inf"), None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        layout = compute_layout(graph, **kwargs)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    CPU_TIMES[id(layout)] = best_cpu
    return best, layout


def real_graphs():
    """(label, graph) of the bundled examples, traced as a user opens them."""
    from fxstudio.core.loading import load_model
    from fxstudio.resources import example_path

    for name, tracer in REAL_MODELS:
        loaded = load_model(example_path(name), tracer=tracer)
        yield f"{name} ({tracer})", loaded.graph_module.graph


def fmt_s(seconds: float | None, timeout: float) -> str:
    """Seconds as ms below 1 s, '> N s' for a timeout."""
    if seconds is None:
        return f"> {timeout:.0f} s"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(prog="bench.bench_layout", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small graphs only, short dot timeout")
    parser.add_argument("--dot-timeout", type=float, default=None, help="seconds before dot is given up (60)")
    args = parser.parse_args(argv)
    timeout = args.dot_timeout or (10.0 if args.quick else 60.0)
    have_dot = shutil.which("dot") is not None
    if not have_dot:
        print("graphviz 'dot' not found: only fxstudio's times are reported", file=sys.stderr)
    sizes = [2000] if args.quick else [4000, 10000]
    load0 = os.getloadavg()[0]
    print(f"load average {load0:.1f} on {os.cpu_count()} CPUs: on a busy machine wall times run above CPU times")
    rows = []
    misses = []

    def bench(label, graph, kind, repeats=3, dot=True, **kwargs):
        seconds, layout = time_layout(graph, repeats, **kwargs)
        if overlapping_pairs(layout) or upward_edges(layout):
            misses.append(f"{label}: overlapping cards or upward edges")
        cross = count_crossings(layout)
        dot_s = dot_cross = None
        dot_ran = dot and have_dot
        if dot_ran:
            dot_s, dot_layout = run_dot(layout, timeout)
            dot_cross = count_crossings(dot_layout) if dot_layout is not None else None
        ratio = (dot_s if dot_s is not None else timeout) / seconds if dot_ran else None
        n_nodes = len(graph.nodes)
        cpu = CPU_TIMES[id(layout)]
        rows.append((label, n_nodes, seconds, cpu, cross, dot_s, dot_cross, ratio, dot_ran))
        print(f"{label}: {n_nodes} nodes, fxstudio {fmt_s(seconds, timeout)} (CPU {fmt_s(cpu, timeout)}, {cross} crossings)"
              + (f", dot {fmt_s(dot_s, timeout)} ({dot_cross if dot_cross is not None else '-'} crossings), "
                 f"{'≥ ' if dot_s is None else ''}{ratio:.0f}x faster" if dot_ran else ""), flush=True)
        if kind == "real":
            if seconds >= 0.05:
                misses.append(f"{label}: {seconds * 1000:.0f} ms ≥ 50 ms")
            if dot_cross is not None and cross > dot_cross:
                misses.append(f"{label}: {cross} crossings > dot's {dot_cross}")
        if kind == "big" and dot_ran and ratio < 40 and n_nodes >= 3500:  # the target is for 4k-10k nodes
            misses.append(f"{label}: only {ratio:.0f}x faster than dot")
        if n_nodes <= 10500 and seconds >= 1.0:
            misses.append(f"{label}: {seconds:.2f} s ≥ 1 s")
        return layout

    for label, graph in real_graphs():
        bench(label, graph, "real", repeats=5)
    for kind in ("skip_chain", "transformer", "exported"):
        for n in sizes:
            graph = synthetic.make_graph(kind, n)
            bench(f"{kind} {n // 1000}k", graph, "big", repeats=3)
    huge = 20000 if args.quick else 100000
    graph = synthetic.make_graph("exported", huge)
    layout = bench(f"exported {huge // 1000}k", graph, "huge", repeats=1, dot=False)
    top = frozenset(p for p in layout.groups if p.count(".") == 1)
    seconds, collapsed_layout = time_layout(graph, 3, collapsed=top)
    rows.append((f"exported {huge // 1000}k, layers collapsed", len(graph.nodes), seconds,
                 CPU_TIMES[id(collapsed_layout)], None, None, None, None, False))
    print(f"exported {huge // 1000}k collapsed by layer: {fmt_s(seconds, timeout)}")
    if not args.quick:
        if layout.seconds >= 5:
            misses.append(f"exported {huge // 1000}k: {layout.seconds:.1f} s ≥ 5 s")
        if seconds >= 1:
            misses.append(f"exported {huge // 1000}k collapsed: {seconds:.2f} s ≥ 1 s")

    print()
    print("| graph | nodes | fxstudio | (CPU) | crossings | dot | dot crossings | speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, n, s, cpu, c, ds, dc, ratio, dot_ran in rows:
        dot_txt = fmt_s(ds, timeout) if dot_ran else "–"
        ratio_txt = ("≥ " if ds is None else "") + f"{ratio:.0f}x" if dot_ran else "–"
        print(f"| {label} | {n} | {fmt_s(s, timeout)} | {fmt_s(cpu, timeout)} | {'–' if c is None else c} | {dot_txt} | "
              f"{'–' if dc is None else dc} | {ratio_txt} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if misses:
        print("targets missed:\n  " + "\n  ".join(misses))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
