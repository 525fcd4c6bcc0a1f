"""An observer-insertion pass: after every ``nn.Conv2d`` call, ``observe(value, name)`` records the
largest magnitude seen and passes the value on (the conv's users now read the observer). Try it on
``conv_bn_relu.py``: ``{"op": "run_pass", "file": "passes/observers.py", "name": "insert_observers"}``."""

from torch import nn

OBSERVED = {}
"""Largest absolute value seen per observed node name, filled when the edited model runs."""


def observe(x, name):
    """Record ``max |x|`` under ``name`` and return ``x`` unchanged."""
    OBSERVED[name] = max(OBSERVED.get(name, 0.0), float(x.detach().abs().max()))
    return x


def insert_observers(gm):
    """Insert ``observe`` after each Conv2d call and move the conv's users onto it; returns ``gm``."""
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Conv2d):
            with gm.graph.inserting_after(node):
                obs = gm.graph.call_function(observe, (node, node.name))
            node.replace_all_uses_with(obs, delete_user_cb=lambda user: user is not obs)
    gm.recompile()
    return gm
