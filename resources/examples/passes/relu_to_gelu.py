"""A function pass: ``f(gm)`` changes the module in place and returns None. It swaps every
``nn.ReLU`` submodule for an ``nn.GELU`` (one edit, however many ReLUs). Try it on
``residual_cnn.py``: ``{"op": "run_pass", "file": "passes/relu_to_gelu.py", "name": "relu_to_gelu"}``."""

from torch import nn


def relu_to_gelu(gm):
    """Replace the submodule of every ``call_module`` node that calls an ``nn.ReLU``."""
    for node in gm.graph.nodes:
        if node.op == "call_module" and type(gm.get_submodule(node.target)) is nn.ReLU:
            parent, _, name = node.target.rpartition(".")
            setattr(gm.get_submodule(parent), name, nn.GELU())
