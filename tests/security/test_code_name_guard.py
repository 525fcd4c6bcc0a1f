"""Issue #23 (1): one rule for every name torch.fx writes into code, checked at the one point where
code is generated (``torch.fx.Graph.python_code``, guarded in ``core/fx_compat.py``), whichever path
made the node: a loader (edit script, journal, ``.pt2``, ``.fxcap``), an edit, a pass result.

Each hostile name below, written by torch.fx unchecked, runs the marker payload when the module is
built or called (the test proves it with the unguarded code generator); with the guard, building
the module is refused with ``UnsafeNameError`` and nothing runs."""

from __future__ import annotations

import pytest
import torch
import torch.fx

from fxstudio.core import fx_compat  # noqa: F401 - installs the guard
from fxstudio.core.code_names import UnsafeNameError, is_code_path, node_code_name_problem


def _payload(marker) -> str:
    return f"open({str(marker)!r}, 'w')"


def _hostile_graph(kind: str, marker) -> tuple[torch.nn.Module, torch.fx.Graph]:
    root, graph = torch.nn.Module(), torch.fx.Graph()
    x = graph.placeholder("x")
    code = list(_payload(marker).encode())  # no dots: torch.fx splits attribute paths at dots
    if kind == "kwargs key (call_function)":
        out = graph.call_function(torch.nn.functional.relu, (x,),
                                  {f"inplace=False) if exec(bytes({code})) else None#": False})
    elif kind == "kwargs key (call_method)":
        out = graph.call_method("softmax", (x,), {f"dim=0) if exec(bytes({code})) else x.softmax(dim=0)#": 0})
    elif kind == "kwargs key (call_module)":
        root.add_module("act", torch.nn.ReLU())
        out = graph.call_module("act", (x,), {f"input=x) if exec(bytes({code})) else self.act(x)#": 0})
    elif kind == "get_attr path":
        attr = f'b") if exec(bytes({code})) else getattr(self, "b'
        root._buffers[attr] = torch.ones(1)
        out = graph.call_function(torch.add, (x, graph.get_attr(attr)))
    elif kind == "call_module path":
        target = f'a")(x) if exec(bytes({code})) else getattr(self, "a'
        root._modules[target] = torch.nn.ReLU()
        out = graph.call_module(target, (x,))
    elif kind == "call_method name":
        out = graph.call_method(f'relu") if exec(bytes({code})) else getattr(x, "relu', (x,))
    elif kind == "placeholder default":
        graph = torch.fx.Graph()
        x = graph.placeholder("x")
        y = graph.placeholder(f"y=exec(bytes({code}))")
        out = graph.call_function(torch.add, (x, y))
    else:
        raise AssertionError(kind)
    graph.output(out)
    return root, graph


KINDS = ["kwargs key (call_function)", "kwargs key (call_method)", "kwargs key (call_module)", "get_attr path",
         "call_module path", "call_method name", "placeholder default"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_name_torch_fx_writes_is_checked_where_code_is_made(tmp_path, kind):
    marker = tmp_path / "PWNED"
    root, graph = _hostile_graph(kind, marker)
    with pytest.raises(UnsafeNameError, match="refusing to turn it into code"):
        torch.fx.GraphModule(root, graph)
    assert not marker.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_the_hostile_names_really_inject_without_the_guard(tmp_path, kind):
    """Proof that the names above are real attacks: torch.fx's code generator, unguarded, runs them."""
    marker = tmp_path / "PWNED"
    root, graph = _hostile_graph(kind, marker)
    guarded = torch.fx.Graph.python_code
    torch.fx.Graph.python_code = guarded.__wrapped__
    try:
        gm = torch.fx.GraphModule(root, graph)
        try:
            gm.forward(torch.ones(2), torch.ones(2)) if kind == "placeholder default" else gm.forward(torch.ones(2))
        except Exception:  # noqa: BLE001 - the forward may fail after the payload ran; what counts is the marker
            pass
    except Exception:  # noqa: BLE001
        pass
    finally:
        torch.fx.Graph.python_code = guarded
    assert marker.exists(), f"{kind}: the payload did not run, so this vector proves nothing"


@pytest.mark.parametrize("path,ok", [("layer1.0.conv1.weight", True), ("trunk_output.block1.block1-0.proj.0", True),
                                     ("a b.c", True), ('a"b', False), ("a\\b", False), ("a\nb", False), ("", False),
                                     ("a..b", False), ("\x1b[2J", False)])
def test_attribute_paths_torch_fx_can_quote(path, ok):
    assert is_code_path(path) is ok


def test_real_graphs_pass_the_rule():
    """A traced model with non-identifier module names (torchvision RegNet's ``block1-0``) and keyword
    arguments passes: the rule refuses what would splice code, not what nn.Module allows."""
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.add_module("block1-0", torch.nn.Linear(3, 3))

        def forward(self, x):
            return torch.nn.functional.softmax(getattr(self, "block1-0")(x), dim=-1)

    block = Block()
    gm = torch.fx.symbolic_trace(block)
    assert all(node_code_name_problem(n) is None for n in gm.graph.nodes)
    assert torch.equal(gm(torch.ones(1, 3)), block(torch.ones(1, 3)))
