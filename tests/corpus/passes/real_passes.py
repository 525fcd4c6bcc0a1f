"""Passes as an FX user brings them from other projects: torch.ao FX graph mode quantization,
torchao PT2E, ``torch.fx.passes``, ``torch.fx.experimental``, optimum, the torch.fx docs' examples.

Each is a thin function of the graph module (and, where the pass needs them, the model's example
inputs by the parameter name ``example_inputs``, or literal keyword arguments). The corpus test
runs each one twice: here in plain torch (the reference) and through ``fxstudio pass``.
"""

import time

import torch
import torch.fx
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, fuse_fx, prepare_fx
from torch.fx.experimental import const_fold
from torch.fx.experimental.normalize import NormalizeArgs, NormalizeOperators
from torch.fx.experimental.optimization import fuse  # noqa: F401 - an imported pass, run by name
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.reinplace import reinplace
from torch.fx.passes.shape_prop import ShapeProp  # noqa: F401
from torch.fx.passes.split_module import split_module


def fx_fuse(gm):
    """torch.ao: fuse conv-bn-relu into ConvReLU2d (eval mode)."""
    return fuse_fx(gm)


def fx_prepare(gm, example_inputs, backend="x86"):
    """torch.ao: insert observers, then calibrate on the example inputs."""
    prepared = prepare_fx(gm, get_default_qconfig_mapping(backend), example_inputs)
    prepared(*example_inputs)
    return prepared


def fx_convert(gm, example_inputs):
    """torch.ao: prepare, calibrate and convert to quantized modules (packed weights)."""
    return convert_fx(fx_prepare(gm, example_inputs))


def fx_reference(gm, example_inputs):
    """torch.ao: prepare, calibrate and convert to the reference quantized representation."""
    return convert_to_reference_fx(fx_prepare(gm, example_inputs))


def split_in_two(gm):
    """torch.fx.passes.split_module: the stem in one submodule, the rest in another."""
    stem = {"conv1", "bn1", "relu"}
    return split_module(gm, gm, lambda node: 0 if node.name in stem else 1)


def fold_constants(gm):
    """torch.fx.experimental.const_fold: compute the weight-only subgraphs once."""
    return const_fold.split_const_subgraphs(gm)


def decompose(gm, example_inputs):
    """make_fx with the core ATen decompositions."""
    from torch._decomp import core_aten_decompositions

    return make_fx(gm, decomposition_table=core_aten_decompositions())(*example_inputs)


def functional_then_reinplace(gm, example_inputs):
    """make_fx to ATen, then torch.fx.passes.reinplace."""
    traced = make_fx(gm)(*example_inputs)
    return reinplace(traced, *example_inputs)


def normalize_args(gm):
    """torch.fx.experimental.normalize.NormalizeArgs: every call with keyword arguments."""
    return NormalizeArgs(gm).transform()


def normalize_operators(gm):
    """torch.fx.experimental.normalize.NormalizeOperators: operator.add → torch.add."""
    return NormalizeOperators(gm).transform()


def shape_prop(gm, example_inputs):
    """torch.fx.passes.shape_prop.ShapeProp: an analysis pass (tensor_meta on every node)."""
    ShapeProp(gm).propagate(*example_inputs)
    return gm


class ProfilingInterpreter(torch.fx.Interpreter):
    """The torch.fx documentation's profiling interpreter: time per node."""

    def __init__(self, gm):
        super().__init__(gm)
        self.total_runtime_sec = []
        self.runtimes_sec = {}

    def run(self, *args):
        start = time.time()
        result = super().run(*args)
        self.total_runtime_sec.append(time.time() - start)
        return result

    def run_node(self, n):
        start = time.time()
        result = super().run_node(n)
        self.runtimes_sec.setdefault(n, []).append(time.time() - start)
        return result


def optimum_fuse_bias(gm):
    """optimum.fx: fold every Linear's bias into its weight (an extra input column of ones)."""
    from optimum.fx.optimization import FuseBiasInLinear

    return FuseBiasInLinear()(gm)


def pt2e_prepare(gm, example_inputs):
    """torchao PT2E: annotate with the X86 Inductor quantizer, insert observers, calibrate."""
    from torchao.quantization.pt2e.quantize_pt2e import prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer, get_default_x86_inductor_quantization_config)

    quantizer = X86InductorQuantizer().set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(gm, quantizer)
    prepared(*example_inputs)
    return prepared


def pt2e_convert(gm, example_inputs):
    """torchao PT2E: prepare, calibrate, convert (quantize/dequantize ops of quantized_decomposed)."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e

    return convert_pt2e(pt2e_prepare(gm, example_inputs))
