"""Node matching before/after a pass: by name first, then by position and target."""

from __future__ import annotations

import torch
import torch.fx

from fxstudio.core.passes import match_nodes, same_call


def _graph(ops):
    g = torch.fx.Graph()
    x = g.placeholder("x")
    last = x
    for name, fn in ops:
        last = g.call_function(fn, (last,), name=name)
    g.output(last)
    return g


def test_names_first_then_position_and_target():
    old = _graph([("a", torch.relu), ("b", torch.sin), ("c", torch.cos)])
    new = _graph([("a", torch.relu), ("renamed", torch.sin), ("fresh", torch.tanh), ("c", torch.cos)])
    matched = {n.name: m.name for n, m in match_nodes(list(old.nodes), list(new.nodes)).items()}
    assert matched == {"x": "x", "a": "a", "renamed": "b", "c": "c", "output": "output"}


def test_a_name_with_another_kind_is_another_node():
    old = _graph([("a", torch.relu)])
    g = torch.fx.Graph()
    x = g.placeholder("x")
    a = g.create_node("call_method", "relu", (x,), name="a")
    g.output(a)
    matched = {n.name: m.name for n, m in match_nodes(list(old.nodes), list(g.nodes)).items()}
    assert "a" not in matched and matched["x"] == "x"


def test_same_call_compares_targets_and_arguments_by_key():
    old = _graph([("a", torch.relu), ("b", torch.sin)])
    new = _graph([("a", torch.relu), ("b", torch.cos)])
    pairs = match_nodes(list(old.nodes), list(new.nodes))
    key = lambda n: n.name  # noqa: E731
    verdict = {n.name: same_call(m, n, key, key) for n, m in pairs.items()}
    assert verdict == {"x": True, "a": True, "b": False, "output": True}
