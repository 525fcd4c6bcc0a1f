"""Exporting models as standalone Python files: every example, edited documents, aten graphs, and the
cases the issue names (wrapped function, custom leaf module, buffers and constants, keyword names,
moving the pair of files). Files are run in fresh Python processes; where many are checked at once
they share one process (the product itself verifies each export in its own)."""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest
import torch
import torch.fx

from fxstudio.core.document import Document
from fxstudio.core.errors import ExportError
from fxstudio.core.export import ExportCancelled, ExportTargetError, export_python
from fxstudio.core.export.verify import run_exported
from fxstudio.core.loading import load_model
from fxstudio.core.model import LoadedModel
from fxstudio.resources import EXAMPLES_DIR, example_path
from tests.model_files import model_source

BATCH_RUNNER = r"""
import importlib.util, json, sys, torch
jobs, paths = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.path[:0] = paths
for i, (py, inputs, result) in enumerate(jobs):
    spec = importlib.util.spec_from_file_location(f"exported_{i}", py)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    model = module.get_model()
    torch.manual_seed(0)
    with torch.no_grad():
        out = model(*torch.load(inputs, weights_only=True))
    torch.save(out, result)
"""


def run_many_fresh(files: list[Path], inputs: list[tuple], search_paths: list[Path], tmp: Path) -> list:
    """Import and run several exported files in one fresh ``python -I`` process; their outputs."""
    jobs = []
    for i, (py, args) in enumerate(zip(files, inputs)):
        torch.save(tuple(args), tmp / f"in{i}.pt")
        jobs.append([str(py), str(tmp / f"in{i}.pt"), str(tmp / f"out{i}.pt")])
    proc = subprocess.run(
        [sys.executable, "-I", "-c", BATCH_RUNNER, json.dumps(jobs), json.dumps([str(p) for p in search_paths])],
        cwd=tmp, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [torch.load(job[2], weights_only=True) for job in jobs]


def private_torch_imports(source: str) -> list[str]:
    """The imports of private torch modules or names (``torch._x``, ``from torch.y import _z``) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        for module in modules:
            if module.split(".")[0] == "torch" and any(p.startswith("_") for p in module.split(".")):
                found.append(module)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            found.extend(f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_"))
    return found


def reference(module: torch.nn.Module, inputs: tuple):
    """The in-memory module's outputs under the same seed the runner uses."""
    torch.manual_seed(0)
    with torch.no_grad():
        return module(*inputs)


def structure(gm: torch.fx.GraphModule) -> list[tuple]:
    """The graph with node names replaced by positions and attribute reads by their paths: ops,
    targets and wiring only (where a tracer places its ``get_attr`` nodes does not count)."""
    index: dict[torch.fx.Node, str] = {}
    rows = []
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            index[node] = f"@{node.target}"
            continue
        index[node] = f"%{len(rows)}"
        target = node.target
        if callable(target):
            target = f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', target)}"
        args = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: index[n])
        rows.append((node.op, str(target), repr(args)))
    return rows


def names_and_code(gm: torch.fx.GraphModule) -> tuple[list[str], str]:
    return [n.name for n in gm.graph.nodes], gm.code


def forward_names_and_code(gm: torch.fx.GraphModule) -> tuple[list[str], str]:
    return [n.name for n in gm.graph.nodes], gm.code[gm.code.index("def forward("):]


def test_every_example_exports_runs_fresh_and_round_trips(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    files, inputs, loaded_models = [], [], []
    for path in sorted(EXAMPLES_DIR.glob("*.py")):
        options = {"concrete_args": {"positive": True}} if path.stem == "data_branch" else {}
        loaded = load_model(path, **options)
        result = export_python(loaded, out_dir / f"{path.stem}_export.py", verify=False)
        assert result.py_path.exists() and result.weights_path.exists()
        assert not result.verified
        files.append(result.py_path)
        inputs.append(tuple(loaded.example_inputs))
        loaded_models.append(loaded)
    assert len(files) == 11
    for py in files:  # an exported file is the user's: it imports no private torch module
        assert not private_torch_imports(py.read_text()), py.name
    outputs = run_many_fresh(files, inputs, [out_dir, EXAMPLES_DIR], tmp_path)
    round_trip = {"data_branch", "residual_cnn", "transformer_block", "view_reshape", "wrapped_fn"}
    for loaded, args, got, py in zip(loaded_models, inputs, outputs, files):
        torch.testing.assert_close(got, reference(loaded.graph_module, args), rtol=0, atol=0, msg=py.name)
        if loaded.path.stem in round_trip:
            again = load_model(py)  # the exported file is a model file of its own
            assert names_and_code(again.graph_module) == names_and_code(loaded.graph_module), py.name
    text = (out_dir / "residual_cnn_export.py").read_text()
    assert "class ResidualCNNEdited(nn.Module):" in text and "def get_model()" in text
    assert "Source model: residual_cnn.py::ResidualCNN" in text
    assert "nn.BatchNorm2d(16" in text and '_attach(self, "layer1.0.conv1", nn.Conv2d(16, 16' in text
    assert str(tmp_path) not in text and str(EXAMPLES_DIR) not in text  # no absolute paths


def test_aten_graphs_from_the_export_tracer(tmp_path):
    names = ["residual_cnn.py", "transformer_block.py"]
    files, inputs, loaded_models = [], [], []
    for name in names:
        loaded = load_model(example_path(name), tracer="export")
        result = export_python(loaded, tmp_path / f"aten_{Path(name).stem}.py", verify=False)
        files.append(result.py_path)
        inputs.append(tuple(loaded.example_inputs))
        loaded_models.append(loaded)
    outputs = run_many_fresh(files, inputs, [tmp_path], tmp_path)
    for loaded, args, got in zip(loaded_models, inputs, outputs):
        torch.testing.assert_close(got, reference(loaded.graph_module, args), rtol=0, atol=0)
    text = files[0].read_text()
    assert "torch.ops.aten.conv2d.default(" in text
    assert "pytree" not in text and "_in_spec" not in text and "_guards_fn" not in text
    assert not any(private_torch_imports(py.read_text()) for py in files)


def test_pt2_file_with_lifted_constant_and_output_structure(tmp_path):
    class WithConstant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            self.bn = torch.nn.BatchNorm1d(3)

        def forward(self, x):
            y = self.bn(self.lin(x)) + torch.tensor([1.0, -2.0, 3.0])
            return {"y": y, "pair": (y.relu(), x.sum())}

    torch.manual_seed(1)
    model = WithConstant().eval()
    model.bn.running_mean.uniform_(-1, 1)
    args = (torch.randn(5, 4),)
    torch.export.save(torch.export.export(model, args), tmp_path / "const.pt2")
    loaded = load_model(tmp_path / "const.pt2")
    result = export_python(loaded, tmp_path / "const_export.py")
    assert result.verified and "identical" in result.verdict
    text = result.py_path.read_text()
    assert "torch.ops.aten.linear.default(" in text
    assert "return {'y': add, 'pair': (relu, sum_1)}" in text
    assert "A tensor constant captured when the graph was traced" in text

    again = load_model(result.py_path, tracer="export")
    assert structure(again.graph_module) == structure(loaded.graph_module)


CUSTOM_MODEL = '''
import torch
import torch.fx
from torch import nn


def shift(x, amount=1.0, *, scale=2.0):
    return (x + amount) * scale


torch.fx.wrap("shift")


def Path(x):  # named like something the exported file itself imports
    return x - 0.5


torch.fx.wrap("Path")


class Gate(nn.Module):
    def __init__(self, channels, alpha=0.5):
        super().__init__()
        self.channels = channels
        self.alpha = alpha
        self.weight = nn.Parameter(torch.linspace(-1, 1, channels))

    def forward(self, x):
        return x * torch.sigmoid(self.weight.view(1, -1, 1, 1)) * self.alpha


class Mixer(nn.Module):
    """A leaf whose constructor argument is not kept: the export takes it from the built model."""

    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x.transpose(1, 3)).transpose(1, 3)


class Custom(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.gate = Gate(4, alpha=0.25)
        self.mixer = Mixer(4)
        self.eval()

    def forward(self, input):
        x = self.mixer(self.gate(self.bn(self.conv(input))))
        x = Path(shift(x, scale=3.0))
        return x + torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, 4, 1, 1)


def example_inputs():
    return (torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(3)),)
'''


def test_custom_leaf_module_wrapped_function_buffers_and_constant(tmp_path, monkeypatch):
    model_dir, out_dir = tmp_path / "model", tmp_path / "out"
    model_dir.mkdir()
    out_dir.mkdir()
    (model_dir / "custommodel.py").write_text(CUSTOM_MODEL)
    loaded = load_model(model_dir / "custommodel.py", leaf_modules=["Gate", "Mixer"])
    # running statistics that only the weights file can carry (the class builds fresh ones)
    with torch.no_grad():
        loaded.graph_module.bn.running_mean.copy_(torch.tensor([0.5, -0.5, 1.0, 2.0]))
        loaded.graph_module.bn.running_var.copy_(torch.tensor([2.0, 0.5, 1.5, 3.0]))
    result = export_python(loaded, out_dir / "custom_export.py", verify=False)  # checked below, after moving
    assert any("custommodel.py" in r and "Gate" in r for r in result.requirements)
    text = result.py_path.read_text()
    assert "from custommodel import Gate" in text and "self.gate = Gate(4, alpha=0.25)" in text
    assert "from custommodel import Custom" in text and "original = Custom()" in text
    assert 'self.mixer = original.get_submodule("mixer")' in text
    assert "from custommodel import shift as custommodel_shift" in text
    assert 'torch.fx.wrap("custommodel_shift")' in text and "custommodel_shift(mixer, scale=3.0)" in text
    assert "from custommodel import Path as custommodel_Path" in text and "path = custommodel_Path(shift)" in text
    assert "torch.fx._symbolic_trace" not in text
    assert "# A tensor constant captured when the graph was traced" in text
    assert "def forward(self, input):" in text and "input_1 = input" in text
    assert "Needs at import time: the model file custommodel.py importable" in text

    moved = tmp_path / "moved"
    moved.mkdir()
    for f in (result.py_path, result.weights_path):
        shutil.move(f, moved / f.name)
    got = run_exported(moved / "custom_export.py", loaded.example_inputs, search_paths=[moved, model_dir])
    torch.testing.assert_close(got, reference(loaded.graph_module, loaded.example_inputs), rtol=0, atol=0)
    again = load_model(moved / "custom_export.py", leaf_modules=["Gate", "Mixer"])
    assert names_and_code(again.graph_module) == names_and_code(loaded.graph_module)

    # without the model file importable, the file says what it needs
    monkeypatch.delitem(sys.modules, "custommodel")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p).resolve() != model_dir.resolve()])
    spec = importlib.util.spec_from_file_location("custom_export_alone", moved / "custom_export.py")
    with pytest.raises(ModuleNotFoundError, match="uses code from custommodel.py, the model file it was exported"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_edited_documents_after_walkthrough_edits(tmp_path):
    walkthroughs = {
        "add_mul.py": [{"op": "set_arg", "node": "mul", "key": 1, "value": "10"}],
        "relu_add.py": [{"op": "set_target", "match": "torch.relu", "target": "relu_add.my_relu"},
                        {"op": "set_arg", "node": "add", "key": 1, "value": "2.5"}],
        "conv_bn_relu.py": [
            {"op": "insert", "after": "conv1", "kind": "call_module", "target": "torch.nn.Dropout(p=0.1)",
             "args": "(%conv1,)"},
            {"op": "replace_uses", "node": "conv1", "with": "dropout"},
            {"op": "erase", "node": "bn2", "replace_uses_with": "conv2"},
        ],
        "sub_chain.py": [{"op": "set_arg", "node": "mul", "key": 0, "value": "%add"}, {"op": "eliminate_dead_code"}],
        "view_reshape.py": [{"op": "set_target", "node": "view", "target": "reshape"},
                            {"op": "rename", "node": "view", "name": "flat"}],
        "wrapped_fn.py": [{"op": "set_arg", "node": "scaled_shift", "key": "scale", "value": "-1.5"}],
        "clamp.py": [{"op": "set_arg", "node": "clamp", "key": "max", "value": "10.0"}],
        "two_linear.py": [{"op": "set_arg", "node": "add", "key": "alpha", "value": "0.5"}],
    }
    docs, files = [], []
    for name, edits in walkthroughs.items():
        doc = Document(load_model(example_path(name)))
        for edit in edits:
            doc.apply_edit(edit)
        result = export_python(doc, tmp_path / f"{Path(name).stem}_edited.py", verify=False)  # batched below
        docs.append(doc)
        files.append(result.py_path)
    relu_text = files[1].read_text()
    assert "from relu_add import my_relu as relu_add_my_relu" in relu_text
    assert "Swap torch.relu → relu_add.my_relu" in relu_text
    assert "self.dropout = nn.Dropout(p=0.1" in files[2].read_text()
    inputs = [tuple(d.loaded.example_inputs) for d in docs]
    outputs = run_many_fresh(files, inputs, [tmp_path, EXAMPLES_DIR], tmp_path)
    for doc, args, got, py in zip(docs, inputs, outputs, files):
        torch.testing.assert_close(got, reference(doc.module(), args), rtol=0, atol=0, msg=py.name)
        again = load_model(py)
        assert structure(again.graph_module) == structure(doc.module()), py.name
        # names come back too (renamed, inserted, renumbered); the code differs at most by the
        # wrap() line fx prints for functions the exported file keeps as one call
        assert forward_names_and_code(again.graph_module) == forward_names_and_code(doc.module()), py.name
        assert "node names restored from the fxstudio export (FXSTUDIO_NODE_NAMES)" in again.notes


def test_keyword_and_builtin_node_names_give_valid_code(tmp_path):
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(torch.relu, (x,))
    b = graph.call_function(torch.add, (a, 1.0))
    c = graph.call_method("sum", (b,))
    d = graph.call_function(getattr, (b, "shape"))
    graph.output((b, c, d))
    for node, name in ((a, "lambda"), (b, "torch"), (c, "input"), (d, "getattr")):
        node.name = name  # as a foreign tool may leave them; fx's own renaming avoids these
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    loaded = LoadedModel(path=None, kind="pickle", module=gm, graph_module=gm,
                         example_inputs=(torch.linspace(-1, 1, 6).reshape(2, 3),))
    result = export_python(loaded, tmp_path / "names.py")
    assert result.verified
    text = result.py_path.read_text()
    assert "lambda_1 = torch.relu(x)" in text and "torch_1 = torch.add(lambda_1, 1.0)" in text
    assert "\n        input_1 = torch_1.sum()" in text


def test_unusable_targets_are_refused_and_nothing_is_written(tmp_path):
    model = tmp_path / "m.py"
    shutil.copy(example_path("add_mul.py"), model)
    loaded = load_model(model)
    cases = {
        model: "refusing to overwrite the model file",
        tmp_path / "m.txt": "must be a .py file",
        tmp_path / "my-model.py": "must be a Python identifier",
        tmp_path / "copy.py": "would shadow the module `copy`",
        tmp_path / "missing" / "x.py": "does not exist",
        Path("/proc/fxstudio_export.py"): "cannot write",
    }
    (tmp_path / "folder.py").mkdir()
    cases[tmp_path / "folder.py"] = "is a folder"
    for target, message in cases.items():
        with pytest.raises(ExportTargetError, match=message) as info:
            export_python(loaded, target)
        assert info.value.exit_code == 2
    wrapped = load_model(example_path("wrapped_fn.py"))  # its export imports `wrapped_fn`
    with pytest.raises(ExportTargetError, match="imports the model file as `wrapped_fn`"):
        export_python(wrapped, tmp_path / "wrapped_fn.py")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.py", "m.py"]


def test_failed_verification_leaves_the_old_files_and_no_new_ones(tmp_path):
    model = tmp_path / "drifting.py"
    model.write_text(textwrap.dedent('''
        import torch
        from torch import nn

        def bump(x):
            return x + 1.0

        torch.fx.wrap("bump")

        class Drifting(nn.Module):
            def forward(self, x):
                return bump(x) * 2

        def example_inputs():
            return (torch.ones(2, 2),)
    '''))
    loaded = load_model(model)
    out = tmp_path / "drift_export.py"
    out.write_text("# an older export\n")
    model.write_text(model.read_text().replace("x + 1.0", "x + 3.0"))  # the file changed on disk since loading
    with pytest.raises(ExportError, match="differs between the exported file and the graph") as info:
        export_python(loaded, out)
    assert info.value.exit_code == 1
    assert out.read_text() == "# an older export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["drift_export.py", "drifting.py"]


def test_cancel_during_verification_stops_and_writes_nothing(tmp_path):
    loaded = load_model(example_path("add_mul.py"))
    steps = []
    with pytest.raises(ExportCancelled, match="cancelled"):
        export_python(loaded, tmp_path / "cancelled.py", progress=lambda m, f: steps.append((m, f)),
                      cancel=lambda: bool(steps) and steps[-1][0].startswith("Verifying"))
    assert [m for m, _ in steps][:4] == ["Generating code", "Running the graph in memory", "Writing files",
                                         "Verifying in a fresh Python process"]
    assert list(tmp_path.iterdir()) == []


class MinMax(typing.NamedTuple):
    low: torch.Tensor
    high: torch.Tensor


class ReturnsNamedTuple(torch.nn.Module):
    def forward(self, x):
        return MinMax(x.min(dim=0).values, x.max(dim=0).values * 2)


def test_aten_graph_returning_a_namedtuple_builds_it_in_forward(tmp_path):
    model, args = ReturnsNamedTuple(), (torch.randn(3, 4),)
    gm = torch.export.export(model, args).module()
    loaded = LoadedModel(path=None, kind="pt2", module=gm, graph_module=gm, example_inputs=args, tracer="export")
    result = export_python(loaded, tmp_path / "minmax.py", verify=False)
    text = result.py_path.read_text()
    assert f"from {MinMax.__module__} import MinMax as" in text and "MinMax(getitem, mul)" in text
    spec = importlib.util.spec_from_file_location("minmax_export", result.py_path)
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    got = exported.get_model()(*args)
    assert type(got) is MinMax
    torch.testing.assert_close(tuple(got), tuple(model(*args)), rtol=0, atol=0)


TIED_MODEL = model_source("""

class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(10, 6)
        self.head = nn.Linear(6, 10, bias=False)
        self.head.weight = self.embed.weight   # tied, as in most language models

    def forward(self, tokens):
        return self.head(torch.relu(self.embed(tokens)))


def example_inputs():
    return (torch.tensor([[1, 2, 3]]),)
""")


def test_tied_weights_are_stored_once_and_tied_again(tmp_path):
    (tmp_path / "tiedmodel.py").write_text(TIED_MODEL)
    loaded = load_model(tmp_path / "tiedmodel.py")
    assert loaded.graph_module.head.weight is loaded.graph_module.embed.weight
    out = tmp_path / "out"
    out.mkdir()
    result = export_python(loaded, out / "tied_export.py")   # verified in a fresh process
    assert '_tie(model, "head.weight", "embed.weight")' in result.py_path.read_text()
    state = torch.load(result.weights_path, weights_only=True)
    assert state["head.weight"].untyped_storage().data_ptr() == state["embed.weight"].untyped_storage().data_ptr()
    spec = importlib.util.spec_from_file_location("tied_export", result.py_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.get_model()
    assert model.head.weight is model.embed.weight
    assert len(list(model.parameters())) == 1
    with torch.no_grad():   # still one tensor: a change to one is a change to the other
        model.embed.weight[0, 0] = 42.0
    assert model.head.weight[0, 0] == 42.0
