"""Diff benchmark (issue #27 item 1): the diff of two 10k-node graphs on screen in under 2 s.

Run ``.venv/bin/python -m bench.bench_diff`` (``--quick``: 2k nodes). Two graphs: a 10k-node
``skip_chain`` and a copy with edits (constants changed, nodes inserted), matched by structure (no
shared ids, as two files are). Timed, each the best of a few runs:

- ``match + diff``: ``core.diff.diff_graphs`` (structural matching, per-argument changes), against
  ``core.compare.graph_diff(match="name")``, the window's change outline on the same pair (no
  matching, no per-argument detail): the reference measured in the same run;
- ``on screen``: from the two GraphModules to a ``DiffWindow`` shown and painted offscreen at
  1600×1000 (diff, pane documents, layouts, scenes), against one ``GraphCanvas`` showing one of the
  graphs (what opening one model costs the main canvas): the ratio says what the second pane and
  the matching add.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TARGET_S = 2.0


def _pair(n_nodes: int):
    """(base, other): a synthetic graph and an edited copy, as two documents' graphs."""
    from bench.common import synthetic_document

    doc = synthetic_document(n_nodes)
    relus = [n.name for n in doc.edited.graph.nodes if n.op == "call_function" and "relu" in n.name]
    for name in relus[:: max(1, len(relus) // 20)]:
        doc.apply_edit({"op": "insert", "after": name, "kind": "call_function", "target": "torch.mul",
                        "args": f"(%{name}, 0.5)", "kwargs": "{}", "reroute": True})
    return doc.original, doc.module()


def _process(app) -> None:
    for _ in range(3):
        app.processEvents()


def main(argv: list[str]) -> int:
    """Print the timings and ratios; exit 0 (a benchmark reports, it does not fail)."""
    from PySide6.QtWidgets import QApplication

    from bench.common import best_time
    from fxstudio.core.compare import graph_diff
    from fxstudio.core.diff import DiffGraph, diff_graphs
    from fxstudio.qt.canvas import GraphCanvas
    from fxstudio.qt.diff import DiffWindow
    from fxstudio.qt.diff.panes import pane_document
    from fxstudio.qt.selection import SelectionModel

    quick = "--quick" in argv
    n_nodes = 2_000 if quick else 10_000
    repeats = 2 if quick else 3
    app = QApplication.instance() or QApplication(sys.argv)
    base, other = _pair(n_nodes)
    graphs = [DiffGraph("A", base, "base"), DiffGraph("B", other, "edited copy")]
    print(f"graphs: {len(base.graph.nodes):,} and {len(other.graph.nodes):,} nodes", flush=True)

    diff = diff_graphs(graphs)
    counts = diff.comparisons[0].counts()
    print("diff: " + ", ".join(f"{v} {k}" for k, v in counts.items()), flush=True)
    core_s = best_time(lambda: diff_graphs(graphs), repeats)
    outline_s = best_time(lambda: graph_diff(base, other, match="name"), repeats)

    def one_canvas():
        canvas = GraphCanvas(SelectionModel())
        canvas.resize(1600, 1000)
        doc, _ = pane_document(base, "base")
        canvas.set_document(doc)
        canvas.show()
        _process(app)
        canvas.grab()
        canvas.close()
        canvas.deleteLater()

    def window():
        win = DiffWindow(diff_graphs(graphs))
        win.resize(1600, 1000)
        win.show()
        _process(app)
        win.grab()
        win.close()

    one_s = best_time(one_canvas, repeats, warm_up=True)
    screen_s = best_time(window, repeats, warm_up=True)
    print(f"\n| step | seconds | reference | ref. seconds | × ref. | target |")
    print("| --- | ---: | --- | ---: | ---: | --- |")
    print(f"| match + diff | {core_s:.3f} | graph_diff by name | {outline_s:.3f} | {core_s / outline_s:.1f} | |")
    verdict = "met" if screen_s < TARGET_S else "NOT met"
    print(f"| diff window on screen | {screen_s:.3f} | one canvas, one graph | {one_s:.3f} | {screen_s / one_s:.1f} "
          f"| < {TARGET_S:g} s: {verdict} |")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    status = main(sys.argv[1:])
    print(f"\n(total {time.perf_counter() - started:.1f} s)")
    sys.exit(status)
