"""The canvas section of ``bench_window`` (issue #28: a scene that makes only the items in view).

For a generated ``skip_chain`` graph of each size (10k and 200k nodes; ``--quick``: 2k and 20k),
on a 1600×1000 ``GraphCanvas`` offscreen:

* layout: ``compute_layout`` of the whole graph (core, what the canvas waits for);
* scene build: ``CanvasScene.show_graph`` (target < 100 ms at 10k);
* on screen after load: layout + scene build + the opening view painted, with every module open;
  and at 200k as the window opens it: modules folded (``measure_folded_open``; target 3 s), then
  the outermost folded module opened from the canvas (laid out in a worker);
* items made: cards/edges/frames the open made, against the graph's totals;
* pan frame: a 120-px scroll at the opening zoom, until painted (median and worst; targets 16 ms at
  10k, 33 ms at 200k); zoom frame: one wheel step (×1.25) from the opening zoom down past the
  overview threshold to the whole graph and back, until painted; overview pan: a scroll with the
  whole graph in view;
* insert / erase (the 10k graph, through a ``Document``): the edit until the canvas has redrawn
  (target < 50 ms), and the undo of each; and the incremental ``compute_layout`` alone (the core's share).
  Measured with the window's garbage collection (``fxstudio.qt.gui_gc``, as ``fxstudio`` runs), and
  the insert and erase again with Python's automatic collector for comparison.
"""

from __future__ import annotations

import statistics
import time


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _frames(app, canvas, steps) -> list[float]:
    """Seconds per step: ``step()`` then a synchronous repaint of the viewport."""
    out = []
    for step in steps:
        t = time.perf_counter()
        step()
        canvas.viewport().repaint()
        app.processEvents()
        out.append(time.perf_counter() - t)
    return out


def _pan_steps(canvas, n: int, dy: int = 120):
    bar = canvas.verticalScrollBar()
    return [lambda: bar.setValue(bar.value() + dy) for _ in range(n)]


def measure(app, n_nodes: int) -> dict:
    """The figures above for one graph size (a bare canvas: no document, no docks)."""
    from fxstudio.core.layout import compute_layout
    from fxstudio.qt.canvas.view import GraphCanvas
    from fxstudio.qt.selection import SelectionModel
    from fxstudio.testing import synthetic

    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", n_nodes))
    ids = {node: i for i, node in enumerate(gm.graph.nodes)}
    canvas = GraphCanvas(SelectionModel())
    canvas.resize(1600, 1000)
    canvas.show()
    app.processEvents()
    t0 = time.perf_counter()
    layout = compute_layout(gm.graph)
    t1 = time.perf_counter()
    scene = canvas.canvas_scene
    scene.show_graph(gm, layout, ids.__getitem__)
    t2 = time.perf_counter()
    canvas.show_start()
    canvas.viewport().repaint()
    t3 = time.perf_counter()
    made = (len(scene.live_cards), len(scene.live_edges), len(scene.live_frames))
    totals = (len(scene.cards), len(scene.edges), len(scene.frames))
    app.processEvents()
    pan = _frames(app, canvas, _pan_steps(canvas, 30))
    zoom_out = []
    while scene.layout is not None and canvas.zoom() > 0.02 and len(zoom_out) < 40:
        zoom_out += _frames(app, canvas, [lambda: canvas.zoom_by(1 / 1.25)])
    overview_pan = _frames(app, canvas, _pan_steps(canvas, 20, 40))
    zoom_in = []
    while canvas.zoom() < 0.85 and len(zoom_in) < 40:
        zoom_in += _frames(app, canvas, [lambda: canvas.zoom_by(1.25)])
    canvas.close()
    canvas.deleteLater()
    app.processEvents()
    return {"n": len(gm.graph.nodes), "layout": t1 - t0, "build": t2 - t1, "on_screen": t3 - t0,
            "made": made, "totals": totals, "pan": pan, "zoom": zoom_out + zoom_in, "overview_pan": overview_pan}


def measure_folded_open(app, n_nodes: int) -> dict | None:
    """A graph over ``FOLD_ABOVE`` nodes opens folded (``core/layout/opening_fold.py``): seconds
    from the loaded ``Document`` to the opening view painted, as the window's open does it (the
    fold and its layout, which the loading worker computes, then the canvas); then opening the
    outermost folded module from the canvas (laid out in a worker): the longest GUI-thread turn
    meanwhile and the time until it is drawn."""
    import torch

    from fxstudio.core.document import Document
    from fxstudio.core.model import LoadedModel
    from fxstudio.qt import views_ahead
    from fxstudio.qt.canvas.view import GraphCanvas
    from fxstudio.qt.gui_gc import install_gui_thread_collector, uninstall_gui_thread_collector
    from fxstudio.qt.selection import SelectionModel
    from fxstudio.testing import synthetic

    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", n_nodes))
    doc = Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                               example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))
    install_gui_thread_collector(app)
    canvas = GraphCanvas(SelectionModel())
    canvas.resize(1600, 1000)
    canvas.show()
    app.processEvents()
    try:
        t0 = time.perf_counter()
        views_ahead.prepare(doc, views_ahead.CanvasSettings(fold_weights=canvas.fold_weights), diff=True, opening=True)
        t1 = time.perf_counter()
        canvas.set_document(doc)
        canvas.viewport().repaint()
        t2 = time.perf_counter()
        folded = sorted(canvas.collapsed)
        if not folded:
            return None
        cards = len(canvas.canvas_scene.layout.nodes) + len(folded)
        pan = _frames(app, canvas, _pan_steps(canvas, 10))
        t = time.perf_counter()
        canvas.toggle_group(folded[0])
        longest, last = 0.0, time.perf_counter()
        while canvas.fold_toggles.busy:
            app.processEvents()
            time.sleep(0.005)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        canvas.viewport().repaint()
        opened = time.perf_counter() - t
        longest = max(longest, time.perf_counter() - last)
        inner = len(canvas.collapsed)
        pan_opened = _frames(app, canvas, _pan_steps(canvas, 20))
    finally:
        canvas.close()
        canvas.deleteLater()
        app.processEvents()
        uninstall_gui_thread_collector()
    return {"n": len(gm.graph.nodes), "worker": t1 - t0, "canvas": t2 - t1, "on_screen": t2 - t0,
            "folded": folded, "cards": cards, "pan": pan, "opened": opened, "opened_turn": longest,
            "inner": inner, "pan_opened": pan_opened, "top": folded[0]}


def measure_edits(app, n_nodes: int, repeats: int = 5, gui_collector: bool = True) -> dict:
    """Insert and erase through a ``Document`` shown on a canvas: seconds until redrawn.

    ``gui_collector``: with the window's garbage collection (``fxstudio.qt.gui_gc``, installed by
    ``fxstudio.qt.launch``: collections run from a timer on the GUI thread, objects that survived
    frozen), else with Python's automatic collector (which runs inside whichever step allocates)."""
    from fxstudio.qt.gui_gc import install_gui_thread_collector, uninstall_gui_thread_collector

    if gui_collector:
        install_gui_thread_collector(app)
    try:
        return _measure_edits(app, n_nodes, repeats)
    finally:
        if gui_collector:
            uninstall_gui_thread_collector()


def _measure_edits(app, n_nodes: int, repeats: int) -> dict:
    import torch

    from fxstudio.qt.gui_gc import collecting_here, freeze_survivors

    from fxstudio.core.document import Document
    from fxstudio.core.layout import compute_layout
    from fxstudio.core.model import LoadedModel
    from fxstudio.qt.canvas.view import GraphCanvas
    from fxstudio.qt.selection import SelectionModel
    from fxstudio.testing import synthetic

    gm = synthetic.as_graph_module(synthetic.make_graph("skip_chain", n_nodes))
    doc = Document(LoadedModel(path=None, kind="py", module=gm, graph_module=gm,
                               example_inputs=(torch.zeros(synthetic.BATCH, synthetic.D),)))
    canvas = GraphCanvas(SelectionModel())
    canvas.resize(1600, 1000)
    canvas.show()
    canvas.set_document(doc)
    app.processEvents()
    if collecting_here():
        freeze_survivors()   # as the window does after an open
    nodes = list(doc.edited.graph.nodes)
    adds = [n for n in nodes if n.op == "call_function" and n.name.startswith("add")]
    relus = [n for n in nodes if n.op == "call_function" and n.name.startswith("relu")]
    out: dict[str, list[float]] = {"insert": [], "insert_undo": [], "erase": [], "erase_undo": [],
                                   "insert_layout": [], "erase_layout": []}

    events: list = []
    doc.subscribe(events.append)

    def touched() -> list:
        ev = events[-1]
        return [n for n in (doc.node(i) for i in ev.added | ev.changed) if n is not None]

    def timed(edit, key):
        canvas.selection.set([doc.id_of(doc.find(edit.get("after") or edit["node"]))])
        canvas.viewport().repaint()
        app.processEvents()
        shown = canvas.canvas_scene.layout
        t = time.perf_counter()
        doc.apply_edit(edit)
        canvas.flush()
        canvas.viewport().repaint()
        out[key].append(time.perf_counter() - t)
        t = time.perf_counter()   # the core's share: the incremental layout the canvas asked for, again
        compute_layout(doc.edited.graph, previous=shown, changed=touched(), fold_weights=canvas.fold_weights)
        out[key + "_layout"].append(time.perf_counter() - t)
        t = time.perf_counter()
        doc.undo()
        canvas.flush()
        canvas.viewport().repaint()
        out[key + "_undo"].append(time.perf_counter() - t)

    for i, n in enumerate(adds[len(adds) // 5: len(adds) // 5 + repeats]):
        timed({"op": "insert", "after": n.name, "kind": "call_function", "target": "torch.relu",
               "args": f"(%{n.name},)", "name": f"probe_{i}"}, "insert")
    for n in relus[len(relus) // 5: len(relus) // 5 + repeats]:
        timed({"op": "erase", "node": n.name, "replace_uses_with": n.args[0].name}, "erase")
    canvas.close()
    canvas.deleteLater()
    app.processEvents()
    return out


def canvas_section(app, quick: bool) -> bool:
    """Print the canvas table; True when every target is met."""
    sizes = (2_000, 20_000) if quick else (10_000, 200_000)
    rows, ok = [], True
    for size in sizes:
        m = measure(app, size)
        small = size == sizes[0]
        frame_target = 16.0 if small else 33.0
        c, e, f = m["made"]
        tc, te, tf = m["totals"]
        rows.append((f"{m['n']:,} nodes: layout of the whole graph (core)", m["layout"] * 1000, ""))
        rows.append((f"{m['n']:,} nodes: scene build (show_graph)", m["build"] * 1000, "< 100 ms" if small else ""))
        rows.append((f"{m['n']:,} nodes: on screen after load (layout + build + first paint)", m["on_screen"] * 1000,
                     "" if small else "< 3000 ms"))
        rows.append((f"{m['n']:,} nodes: items made at open: {c:,}/{tc:,} cards, {e:,}/{te:,} edges, "
                     f"{f:,}/{tf:,} frames", float("nan"), ""))
        for what, samples in (("pan frame (median)", m["pan"]), ("zoom frame (median)", m["zoom"]),
                              ("overview pan frame (median)", m["overview_pan"])):
            rows.append((f"{m['n']:,} nodes: {what}; worst {max(samples) * 1000:.1f}", _ms(samples),
                         f"≤ {frame_target:.0f} ms"))
            ok &= _ms(samples) <= frame_target
        ok &= not small or m["build"] < 0.1
        if small:
            continue
        rows[-5] = (f"{m['n']:,} nodes, every module open: layout + build + first paint", m["on_screen"] * 1000, "")
        fo = measure_folded_open(app, size)
        if fo is None:   # not over FOLD_ABOVE nodes (--quick): it opens unfolded, as measured above
            continue
        rows.append((f"{fo['n']:,} nodes as the window opens it (modules folded: {', '.join(fo['folded'][:3])}; "
                     f"{fo['cards']:,} cards): fold + layout (worker) {fo['worker'] * 1000:.0f} ms + canvas "
                     f"{fo['canvas'] * 1000:.0f} ms, on screen after load", fo["on_screen"] * 1000, "< 3000 ms"))
        rows.append((f"{fo['n']:,} nodes folded: pan frame (median); worst {max(fo['pan']) * 1000:.1f}", _ms(fo["pan"]),
                     f"≤ {frame_target:.0f} ms"))
        rows.append((f"{fo['n']:,} nodes: open {fo['top']} ({fo['inner']:,} modules inside stay folded), laid out in a "
                     f"worker, until drawn; longest GUI turn meanwhile {fo['opened_turn'] * 1000:.0f} ms",
                     fo["opened"] * 1000, ""))
        rows.append((f"{fo['n']:,} nodes, {fo['top']} open: pan frame (median); worst {max(fo['pan_opened']) * 1000:.1f}",
                     _ms(fo["pan_opened"]), f"≤ {frame_target:.0f} ms"))
        ok &= fo["on_screen"] < 3.0 and _ms(fo["pan"]) <= frame_target and _ms(fo["pan_opened"]) <= frame_target
    edits = measure_edits(app, sizes[0])
    for key, label in (("insert", "insert a node"), ("insert_undo", "undo of it"), ("erase", "erase a node"),
                       ("erase_undo", "undo of it")):
        rows.append((f"{sizes[0]:,} nodes: {label} → canvas redrawn; worst {max(edits[key]) * 1000:.1f}",
                     _ms(edits[key]), "< 50 ms"))
        ok &= _ms(edits[key]) < 50
        if key + "_layout" in edits:
            rows.append((f"{sizes[0]:,} nodes:   of which the incremental layout alone (core)",
                         _ms(edits[key + "_layout"]), ""))
    auto = measure_edits(app, sizes[0], gui_collector=False)
    for key, label in (("insert", "insert a node"), ("erase", "erase a node")):
        rows.append((f"{sizes[0]:,} nodes: {label}, Python's automatic collector instead; worst "
                     f"{max(auto[key]) * 1000:.1f}", _ms(auto[key]), ""))
    print("\n| canvas (issue #28) | median ms | target |")
    print("| --- | ---: | --- |")
    for name, ms, target in rows:
        print(f"| {name} | {'' if ms != ms else f'{ms:.1f}'} | {target} |")
    return ok
