"""Node metadata: fake-tensor shape propagation, normalized arguments with overloads, shape text."""

import textwrap

import torch
import torch.fx

from fxstudio.core.loading import load_model
from fxstudio.core.metadata import normalized_arguments, shape_text
from fxstudio.core import shape_propagation
from fxstudio.core.shape_propagation import propagate_shapes
from fxstudio.resources import EXAMPLES_DIR


def node(loaded, name):
    return next(n for n in loaded.graph_module.graph.nodes if n.name == name)


def test_normalized_arguments_fill_defaults_and_pick_overloads():
    clamp = load_model(EXAMPLES_DIR / "clamp.py")
    args, note = normalized_arguments(node(clamp, "clamp"))
    assert note == "" and list(args) == ["input", "min", "max"] and (args["min"], args["max"]) == (-5.0, 5.0)
    two = load_model(EXAMPLES_DIR / "two_linear.py")
    args, _ = normalized_arguments(node(two, "add"))
    assert set(args) == {"input", "other", "alpha"} and args["alpha"] == 1
    wrapped = load_model(EXAMPLES_DIR / "wrapped_fn.py")
    args, _ = normalized_arguments(node(wrapped, "scaled_shift"))
    assert args["shift"] == 1.0 and args["scale"] == 3.0
    cnn = load_model(EXAMPLES_DIR / "residual_cnn.py")
    args, _ = normalized_arguments(node(cnn, "flatten"))
    assert args["start_dim"] == 1 and args["end_dim"] == -1
    args, note = normalized_arguments(node(cnn, "add"))
    assert args is None and "positional-only" in note
    view = load_model(EXAMPLES_DIR / "view_reshape.py")
    args, note = normalized_arguments(node(view, "view"))
    assert args == {"input": node(view, "x"), "size": [-1, 1]} and "list parameter" in note
    exported = load_model(EXAMPLES_DIR / "clamp.py", tracer="export")
    args, _ = normalized_arguments(node(exported, "clamp"))
    assert (args["min"], args["max"]) == (-5.0, 5.0)


def _max_graph(second_has_meta: bool, second):
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    x.meta["tensor_meta"] = torch.fx.passes.shape_prop._extract_tensor_metadata(torch.ones(4, 3))
    if second_has_meta:
        y.meta["tensor_meta"] = torch.fx.passes.shape_prop._extract_tensor_metadata(torch.ones(4, 3))
    m = g.call_function(torch.max, (x, y if second == "node" else second))
    g.output(m)
    return m


def test_overloads_are_told_apart_by_types_or_reported_as_ambiguous():
    args, _ = normalized_arguments(_max_graph(True, "node"))
    assert "other" in args
    args, _ = normalized_arguments(_max_graph(False, 1))
    assert args["dim"] == 1 and args["keepdim"] is False
    args, note = normalized_arguments(_max_graph(False, "node"))
    assert args is None and note.startswith("ambiguous:") and "torch.max" in note


def test_shape_text_for_tensors_tuples_and_unknowns(tmp_path):
    f = tmp_path / "maxes.py"
    f.write_text(textwrap.dedent("""
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                pair = torch.max(x, 1)
                return pair[0].sum() + x.size(0)

        EXAMPLE_INPUTS = (torch.ones(4, 3),)
    """))
    loaded = load_model(f)
    assert shape_text(node(loaded, "x")) == "4×3 float32"
    assert shape_text(node(loaded, "max_1")) == "(4 float32, 4 int64)"
    assert shape_text(node(loaded, "sum_1")) == "scalar float32"
    assert shape_text(node(loaded, "size")) == ""


RECORDER = textwrap.dedent("""
        import torch
        import torch.fx
        from torch import nn

        SEEN = []

        def record(x):
            SEEN.append(type(x).__name__)
            return x + 1
""")
"""The head of a model file whose ``record`` notes the type of tensor it is given."""


def test_shapes_come_from_fake_tensors_and_fall_back_to_a_real_run(tmp_path, monkeypatch):
    # above the size where a .py model's shapes come from a real run first (see the next test)
    monkeypatch.setattr(shape_propagation, "REAL_RUN_MAX_BYTES", 0)
    f = tmp_path / "seen.py"
    f.write_text(RECORDER + textwrap.dedent("""

        def to_python(x):
            return x * float(x.sum())

        torch.fx.wrap("record")
        torch.fx.wrap("to_python")

        class Net(nn.Module):
            def __init__(self, data_dependent=False):
                super().__init__()
                self.data_dependent = data_dependent
            def forward(self, x):
                y = record(x)
                return to_python(y) if self.data_dependent else y

        def build_model():
            return Net(data_dependent=DATA_DEPENDENT)

        DATA_DEPENDENT = False
        EXAMPLE_INPUTS = (torch.ones(64, 64),)
    """))
    loaded = load_model(f)
    assert loaded.user_module.SEEN == ["FakeTensor"] and loaded.notes == []
    assert node(loaded, "record").meta["fxs_shape"] == (64, 64)
    f.write_text(f.read_text().replace("DATA_DEPENDENT = False", "DATA_DEPENDENT = True"))
    loaded = load_model(f)
    assert loaded.user_module.SEEN == ["FakeTensor", "Tensor"]
    assert "real forward run" in loaded.notes[0] and "to_python" in loaded.notes[0]
    assert node(loaded, "to_python").meta["fxs_shape"] == (64, 64)


def test_a_small_model_files_shapes_come_from_one_real_run(tmp_path):
    """A small model opened from its .py file runs for real first (its code runs anyway; a fake
    mode costs ~1 s to set up): no fake tensor reaches its code, and no note is needed."""
    f = tmp_path / "small.py"
    f.write_text(RECORDER + textwrap.dedent("""

        torch.fx.wrap("record")

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 4)
            def forward(self, x):
                return self.fc(record(x))

        EXAMPLE_INPUTS = (torch.ones(2, 8),)
    """))
    loaded = load_model(f)
    assert loaded.user_module.SEEN == ["Tensor"] and loaded.notes == []
    assert node(loaded, "fc").meta["fxs_shape"] == (2, 4)
    assert node(loaded, "fc").meta["tensor_meta"].memory_format == torch.contiguous_format


def test_propagation_failure_leaves_no_shapes_and_says_why():
    gm = torch.fx.symbolic_trace(torch.nn.Linear(3, 2))
    notes = []
    assert propagate_shapes(gm, (torch.ones(2, 5),), notes) == "none"
    assert all("tensor_meta" not in n.meta for n in gm.graph.nodes)
    assert notes and notes[0].startswith("no shapes: running the model on its example inputs failed")
