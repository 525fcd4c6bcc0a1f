"""The model and pass files of the real-world pass tests: a small conv-bn-relu CNN with a residual add
and a linear head, and passes built from torch.ao quantization, const_fold, make_fx, normalize,
reinplace, split_module, ShapeProp, the torch.fx docs' profiling Interpreter, torchao pt2e and
optimum's FuseBiasInLinear, exactly as a user would write them."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.model_files import model_source

CNN = model_source('''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)
        self.scale = nn.Parameter(torch.rand(8) + 0.5)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.3, 0.3)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        z = self.bn2(self.conv2(y))
        y = self.relu(z + y)
        y = torch.flatten(self.pool(y), 1) * (self.scale * 2.0)
        return self.fc(y)


def get_model():
    return Net().eval()


def example_inputs():
    torch.manual_seed(1)
    return (torch.randn(2, 3, 8, 8),)
''')

NO_PARAMS = model_source('''
class Net(nn.Module):
    def forward(self, x):
        y = x.add(1.0)
        y = y.mul(2.0)
        return torch.relu(y) - x


def get_model():
    return Net()


def example_inputs():
    return (torch.randn(3, 4),)
''')

NO_INPUTS = model_source('''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2
''')

PASSES = '''
import copy
import time

import torch
import torch.fx
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, convert_to_reference_fx, fuse_fx, prepare_fx
from torch.fx.experimental.const_fold import split_const_subgraphs
from torch.fx.experimental.normalize import NormalizeArgs, NormalizeOperators
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.reinplace import reinplace
from torch.fx.passes.shape_prop import ShapeProp
from torch.fx.passes.split_module import split_module


def prepare(gm, example_inputs):
    prepared = prepare_fx(gm, get_default_qconfig_mapping("x86"), example_inputs)
    prepared(*example_inputs)  # calibration
    return prepared


def convert(gm):
    return convert_fx(gm)


def quantize_reference(gm, example_inputs):
    return convert_to_reference_fx(prepare(gm, example_inputs))


def fuse(gm):
    return fuse_fx(gm)


def split(gm):
    nodes = list(gm.graph.nodes)
    half = len(nodes) // 2
    where = {n: int(i >= half) for i, n in enumerate(nodes)}
    return split_module(gm, gm, lambda n: where[n])


def const_fold(gm):
    return split_const_subgraphs(gm)


def decompose(gm, example_inputs):
    from torch._decomp import core_aten_decompositions
    return make_fx(gm, decomposition_table=core_aten_decompositions())(*example_inputs)


def in_place(gm, example_inputs):
    return reinplace(make_fx(gm)(*example_inputs), *example_inputs)


def shape_prop(gm, example_inputs):
    ShapeProp(gm).propagate(*example_inputs)


class ProfilingInterpreter(torch.fx.Interpreter):
    """The torch.fx docs' profiler."""

    def __init__(self, mod):
        gm = torch.fx.symbolic_trace(mod)
        super().__init__(gm)
        self.total_runtime_sec = []
        self.runtimes_sec = {}

    def run(self, *args):
        t_start = time.time()
        return_val = super().run(*args)
        self.total_runtime_sec.append(time.time() - t_start)
        return return_val

    def run_node(self, n):
        t_start = time.time()
        return_val = super().run_node(n)
        self.runtimes_sec.setdefault(n, []).append(time.time() - t_start)
        return return_val


def pt2e(gm, example_inputs):
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
    prepared = prepare_pt2e(gm, XNNPACKQuantizer().set_global(get_symmetric_quantization_config()))
    prepared(*example_inputs)
    return convert_pt2e(prepared)


from optimum.fx.optimization import FuseBiasInLinear  # noqa: E402 - a class of callable passes


def scale_output(gm, factor, dtype=torch.float32):
    out = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(out):
        mul = gm.graph.call_function(torch.mul, (out.args[0], factor))
        cast = gm.graph.call_method("to", (mul, dtype))
    out.args = (cast,)
    gm.recompile()
    return gm


def plants_a_shape_record(gm):
    """A pass that writes fxstudio's run record itself (only the runner may)."""
    for node in gm.graph.nodes:
        node.meta["fxs_ran"] = "planted"
    return scale_output(gm, 2.0)


def boom(x):
    raise IndexError("list index out of range")


def breaks_at_run_time(gm):
    out = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(out):
        bad = gm.graph.call_function(boom, (out.args[0],))
    out.args = (bad,)
    gm.recompile()
    return gm


def train_bn_after_conv1(gm):
    conv = next(n for n in gm.graph.nodes if n.target == "conv1")
    gm.add_submodule("probe", torch.nn.BatchNorm2d(8, momentum=1.0).train())
    with gm.graph.inserting_after(conv):
        probe = gm.graph.call_module("probe", (conv,))
    conv.replace_all_uses_with(probe, delete_user_cb=lambda user: user is not probe)
    gm.recompile()
    return gm

'''


def write_files(folder: Path) -> dict[str, Path]:
    """Write the model and pass files to ``folder``; their paths by role."""
    files = {"cnn": CNN, "no_params": NO_PARAMS, "no_inputs": NO_INPUTS}
    paths = {}
    for name, text in files.items():
        paths[name] = folder / f"{name}.py"
        paths[name].write_text(text)
    paths["passes"] = folder / "passes.py"
    paths["passes"].write_text(textwrap.dedent(PASSES))
    return paths
