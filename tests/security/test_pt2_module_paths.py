"""A ``.pt2`` archive's module stacks are data, however deep or strange (issue #28's folding reads them).

The archive is a real ``torch.export.save`` file whose nodes' ``nn_module_stack`` texts were
rewritten: a module path of 3,000 parts (the folding walks every ancestor of it) and class names
holding the marker payload among brackets and commas (the stack's splitter reads them). Through the
real CLI and the real window (``--screenshot``), under ``conftest``'s limits: it opens, nothing in
it runs, no traceback. The loaded graph then folds and lays out like any other (no recursion limit).
"""

from __future__ import annotations

from tests.security import pt2_hostile as h

DEPTH = 3_000


def _deep_stacks(hostile):
    deep = ".".join(f"m{i % 7}" for i in range(DEPTH))
    payload = f"[__import__('os').system({hostile.shell!r}), (1, 2)]"

    def change(program):
        for node in program["graph_module"]["graph"]["nodes"]:
            meta = node.setdefault("metadata", {})
            meta["nn_module_stack"] = (f"L__self__,,{payload};"
                                       f"L__self__deep,{deep},evil.{payload}.Block;"
                                       f"L__self__deep_{node['target'][-8:]},{deep}.leaf,x[{payload}]")
    return change, deep


def test_deep_and_hostile_module_stacks_open_as_data(hostile):
    base = h.save_tiny(hostile.dir / "base.pt2")
    change, deep = _deep_stacks(hostile)
    path = h.program_edit(base, hostile.dir / "deep_stacks.pt2", change)

    proc = hostile.run("inspect", path, "--json", timeout=120)
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr and not hostile.marker.exists()
    if proc.returncode == 2:   # refused: in one line
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr

    shot = hostile.dir / "window.png"
    proc = hostile.run(path, "--screenshot", shot, timeout=120)
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr
    assert not hostile.marker.exists()

    # In process: the loaded graph folds at every level of the deep path without a recursion limit.
    from fxstudio.core.layout import compute_layout, opened_collapsed, opening_collapsed
    from fxstudio.core.loading import load_model

    graph = load_model(str(path)).graph_module.graph
    paths = {n.meta.get("fxs_module_path") or "" for n in graph.nodes}
    assert any(p.count(".") >= DEPTH - 1 for p in paths), paths
    folded = opening_collapsed(graph, above=0, cards=1)
    assert folded
    layout = compute_layout(graph, collapsed=folded)
    assert set(folded) <= set(layout.groups)
    opened = opened_collapsed(graph, folded, sorted(folded)[0], above=0, cards=1)
    compute_layout(graph, collapsed=opened, fold_weights=True)
    assert not hostile.marker.exists()
