"""Generators of big FX graphs for tests and benchmarks, with the loader's metadata filled in.

Three shapes of graph people actually open, at any size:

- ``skip_chain``: a deep chain of linear/relu blocks with long skip connections (an ``add`` joins
  the running value with one from 10 to 100 blocks, 40 to 400 layers, earlier): the case where Graphviz
  ``dot`` takes minutes.
- ``transformer``: a stack of identical pre-norm transformer layers traced with ``symbolic_trace``
  style ops, each parameter a ``get_attr`` under its module path.
- ``exported``: the same stack as ``torch.export`` shows it: aten ops, and every parameter a
  lifted ``placeholder`` at the top of the graph (marked ``fxs_hidden``), thousands of them.

Every node carries ``fxs_module_path``, ``fxs_module_stack``, ``fxs_shape`` and ``fxs_dtype``.
``as_graph_module`` wraps a generated graph with real (small) parameters so it runs.
"""

from __future__ import annotations

import operator
import random

import torch
import torch.fx
import torch.nn.functional as F

D = 8  # hidden width of the generated models (small: they are for layout, but they do run)
BATCH = 2


class _Builder:
    """Adds nodes with metadata; ``scope`` is the current module stack."""

    def __init__(self):
        self.graph = torch.fx.Graph()
        self.scope: list[tuple[str, str]] = []
        self.params: dict[str, torch.Tensor] = {}
        self.hidden_inputs: list[torch.fx.Node] = []
        self.first_input: torch.fx.Node | None = None

    def _meta(self, node, shape, stack=None):
        stack = list(self.scope if stack is None else stack)
        node.meta["fxs_module_stack"] = stack
        node.meta["fxs_module_path"] = stack[-1][0] if stack else ""
        node.meta["fxs_shape"] = tuple(shape) if shape is not None else None
        node.meta["fxs_dtype"] = "float32" if shape is not None else None
        return node

    def input(self, name, shape):
        node = self._meta(self.graph.placeholder(name), shape, stack=[])
        if self.first_input is None:
            self.first_input = node
        return node

    def param(self, qualname, shape, lifted: bool = False):
        """A parameter as ``get_attr`` (traced) or as a lifted, hidden placeholder (exported)."""
        self.params[qualname] = torch.randn(*shape) * 0.1
        if lifted:
            name = "p_" + qualname.replace(".", "_")
            with self.graph.inserting_before(self.first_input):
                node = self.graph.placeholder(name)
            node.meta["fxs_hidden"] = True
            node.meta["fxs_param"] = qualname
            self.hidden_inputs.append(node)
            return self._meta(node, shape)
        return self._meta(self.graph.get_attr(qualname), shape)

    def call(self, fn, args, shape, kwargs=None):
        return self._meta(self.graph.call_function(fn, tuple(args), kwargs or {}), shape)

    def output(self, value):
        return self._meta(self.graph.output(value), None, stack=[])


def _linear(b: _Builder, x, path, din, dout, lifted=False, aten=False):
    b.scope.append((path, "Linear"))
    w = b.param(f"{path}.weight", (dout, din), lifted)
    bias = b.param(f"{path}.bias", (dout,), lifted)
    if aten:
        wt = b.call(torch.ops.aten.t.default, [w], (din, dout))
        y = b.call(torch.ops.aten.addmm.default, [bias, x, wt], (BATCH, dout))
    else:
        y = b.call(F.linear, [x, w, bias], (BATCH, dout))
    b.scope.pop()
    return y


def skip_chain(n_nodes: int, *, seed: int = 0, min_skip: int = 10, max_skip: int = 100,
               skip_every: int = 4) -> torch.fx.Graph:
    """A chain of ``blocks.i`` (weight, bias, linear, relu) of about ``n_nodes`` nodes; every
    ``skip_every``-th block adds the output of a block ``min_skip``..``max_skip`` blocks earlier."""
    rng = random.Random(seed)
    b = _Builder()
    h = b.input("x", (BATCH, D))
    outs = []
    nblocks = max(1, int(n_nodes / (4 + 1 / skip_every)))
    for i in range(nblocks):
        path = f"blocks.{i}"
        b.scope[:] = [("blocks", "Sequential"), (path, "SkipBlock")]
        y = _linear(b, h, f"{path}.fc", D, D)
        y = b.call(F.relu, [y], (BATCH, D))
        if i % skip_every == skip_every - 1 and i >= min_skip:
            j = i - rng.randint(min_skip, min(max_skip, i))
            y = b.call(operator.add, [y, outs[j]], (BATCH, D))
        outs.append(y)
        h = y
    b.scope[:] = []
    b.output(h)
    return b.graph


def _attention(b: _Builder, h, path, lifted, aten):
    b.scope.append((path, "Attention"))
    q = _linear(b, h, f"{path}.q_proj", D, D, lifted, aten)
    k = _linear(b, h, f"{path}.k_proj", D, D, lifted, aten)
    v = _linear(b, h, f"{path}.v_proj", D, D, lifted, aten)
    if aten:
        kt = b.call(torch.ops.aten.t.default, [k], (D, BATCH))
        s = b.call(torch.ops.aten.mm.default, [q, kt], (BATCH, BATCH))
        s = b.call(torch.ops.aten.mul.Tensor, [s, D ** -0.5], (BATCH, BATCH))
        p = b.call(torch.ops.aten._softmax.default, [s, -1, False], (BATCH, BATCH))
        o = b.call(torch.ops.aten.mm.default, [p, v], (BATCH, D))
    else:
        kt = b.call(torch.transpose, [k, 0, 1], (D, BATCH))
        s = b.call(torch.matmul, [q, kt], (BATCH, BATCH))
        s = b.call(operator.mul, [s, D ** -0.5], (BATCH, BATCH))
        p = b.call(F.softmax, [s], (BATCH, BATCH), {"dim": -1})
        o = b.call(torch.matmul, [p, v], (BATCH, D))
    o = _linear(b, o, f"{path}.out_proj", D, D, lifted, aten)
    b.scope.pop()
    return o


def _norm(b: _Builder, h, path, lifted, aten):
    b.scope.append((path, "LayerNorm"))
    w = b.param(f"{path}.weight", (D,), lifted)
    bias = b.param(f"{path}.bias", (D,), lifted)
    if aten:
        y = b.call(torch.ops.aten.layer_norm.default, [h, [D], w, bias], (BATCH, D))
    else:
        y = b.call(F.layer_norm, [h, (D,), w, bias], (BATCH, D))
    b.scope.pop()
    return y


def _layer_stack(n_layers: int, lifted: bool, aten: bool) -> torch.fx.Graph:
    b = _Builder()
    h = b.input("x", (BATCH, D))
    add = torch.ops.aten.add.Tensor if aten else operator.add
    act = torch.ops.aten.gelu.default if aten else F.gelu
    for i in range(n_layers):
        path = f"layers.{i}"
        b.scope[:] = [("layers", "ModuleList"), (path, "TransformerLayer")]
        a = _attention(b, _norm(b, h, f"{path}.norm1", lifted, aten), f"{path}.attn", lifted, aten)
        h = b.call(add, [h, a], (BATCH, D))
        b.scope.append((f"{path}.mlp", "MLP"))
        m = _linear(b, _norm(b, h, f"{path}.norm2", lifted, aten), f"{path}.mlp.fc1", D, D, lifted, aten)
        m = b.call(act, [m], (BATCH, D))
        m = _linear(b, m, f"{path}.mlp.fc2", D, D, lifted, aten)
        b.scope.pop()
        h = b.call(add, [h, m], (BATCH, D))
    b.scope[:] = []
    h = _norm(b, h, "norm", lifted, aten)
    b.output(h)
    return b.graph


NODES_PER_TRANSFORMER_LAYER = 32
NODES_PER_EXPORTED_LAYER = 38


def transformer(n_layers: int) -> torch.fx.Graph:
    """``n_layers`` identical transformer layers as ``symbolic_trace`` shows them (32 nodes each)."""
    return _layer_stack(n_layers, lifted=False, aten=False)


def exported(n_layers: int) -> torch.fx.Graph:
    """The same stack as ``torch.export`` shows it: aten ops and lifted, hidden parameter inputs."""
    return _layer_stack(n_layers, lifted=True, aten=True)


def make_graph(kind: str, n_nodes: int, *, seed: int = 0) -> torch.fx.Graph:
    """A generated graph of about ``n_nodes`` nodes: kind is skip_chain, transformer or exported."""
    if kind == "skip_chain":
        return skip_chain(n_nodes, seed=seed)
    if kind == "transformer":
        return transformer(max(1, n_nodes // NODES_PER_TRANSFORMER_LAYER))
    if kind == "exported":
        return exported(max(1, n_nodes // NODES_PER_EXPORTED_LAYER))
    raise ValueError(f"unknown synthetic graph kind {kind!r}")


def as_graph_module(graph: torch.fx.Graph, seed: int = 0) -> torch.fx.GraphModule:
    """A runnable ``GraphModule`` over a generated graph (``get_attr`` kinds only), input ``(2, 8)``."""
    torch.manual_seed(seed)
    root: dict[str, torch.Tensor] = {}
    for node in graph.nodes:
        if node.op == "get_attr":
            shape = node.meta.get("fxs_shape") or (D,)
            root[node.target] = torch.nn.Parameter(torch.randn(*shape) * 0.1)
    return torch.fx.GraphModule(root, graph)
