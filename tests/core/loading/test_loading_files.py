"""Opening user files: entry resolution, example inputs, reloads, .pt2 archives and pickles."""

import re
import textwrap

import pytest
import torch

from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model, shapes_unknown
from fxstudio.resources import EXAMPLES_DIR

MODULE_HEAD = "import torch\nfrom torch import nn\n\n"


def write(path, body):
    path.write_text(MODULE_HEAD + textwrap.dedent(body))
    return path


def test_entry_order_name_then_model_then_factory_then_single_class(tmp_path):
    body = """
    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    class Triple(nn.Module):
        def forward(self, x):
            return x * 3

    def get_model():
        return Triple()

    model = Double()
    EXAMPLE_INPUTS = (torch.ones(2),)
    """
    f = write(tmp_path / "entries.py", body)
    assert load_model(f).entry == "model"
    loaded = load_model(f"{f}::Triple")
    assert loaded.entry == "Triple" and loaded.display_name == "entries.py::Triple"
    torch.testing.assert_close(loaded.graph_module(torch.ones(2)), torch.full((2,), 3.0))
    write(f, body.replace("model = Double()", ""))
    assert load_model(f).entry == "get_model"
    only = write(tmp_path / "only.py", """
    class Block(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.n = n
        def forward(self, x):
            return x * self.n

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block(4)
        def forward(self, x):
            return self.block(x)

    def example_inputs():
        return (torch.ones(3),)
    """)
    assert load_model(only).entry == "Net"


def test_several_candidates_are_listed(tmp_path):
    f = write(tmp_path / "two.py", """
    class A(nn.Module):
        def forward(self, x):
            return x
    class B(nn.Module):
        def __init__(self, k):
            super().__init__()
        def forward(self, x):
            return x
    class C(nn.Module):
        def forward(self, x):
            return x
    """)
    with pytest.raises(LoadError) as info:
        load_model(f)
    msg = str(info.value)
    assert "several" in msg and "two.py::A" in msg and "two.py::C" in msg and "two.py::B (needs k)" in msg


def test_unknown_entry_and_constructor_arguments(tmp_path):
    f = write(tmp_path / "needs.py", """
    class Scale(nn.Module):
        def __init__(self, factor, bias):
            super().__init__()
        def forward(self, x):
            return x
    """)
    with pytest.raises(LoadError, match=r"every nn.Module in the file needs constructor arguments \(Scale\(factor, bias\)\)"):
        load_model(f)
    with pytest.raises(LoadError, match=r"needs.py::Scale: the constructor needs arguments \(factor, bias\)"):
        load_model(f"{f}::Scale")
    with pytest.raises(LoadError, match="needs.py defines no 'Missing'. Candidates: needs.py::Scale"):
        load_model(f"{f}::Missing")


def test_sibling_import_and_reload_picks_up_changes(tmp_path):
    (tmp_path / "helpers_sib.py").write_text("OFFSET = 1.0\n")
    f = write(tmp_path / "uses_sibling.py", """
    from helpers_sib import OFFSET

    class AddOffset(nn.Module):
        def forward(self, x):
            return x + OFFSET

    EXAMPLE_INPUTS = (torch.zeros(2),)
    """)
    first = load_model(f)
    torch.testing.assert_close(first.graph_module(torch.zeros(2)), torch.ones(2))
    (tmp_path / "helpers_sib.py").write_text("OFFSET = 5.0\n")
    f.write_text(f.read_text().replace("x + OFFSET", "x + OFFSET * 2"))
    second = load_model(f)
    torch.testing.assert_close(second.graph_module(torch.zeros(2)), torch.full((2,), 10.0))
    assert second.user_module is not first.user_module and second.user_module_name == "uses_sibling"


def test_inputs_from_shapes_or_a_clear_request(tmp_path):
    f = write(tmp_path / "noinputs.py", """
    class Net(nn.Module):
        def forward(self, x, y):
            return x + y
    """)
    # issue #15 defect 5: fx traces without inputs; the model opens with its shapes unknown and says how to give them
    unknown = load_model(f)
    assert unknown.example_inputs == () and shapes_unknown(unknown)
    assert all(n.meta.get("fxs_shape") is None for n in unknown.graph_module.graph.nodes)
    note = next(n for n in unknown.notes if n.startswith("shapes unknown"))
    assert re.search(r"forward takes: x, y.*--input-shape 1,3,224,224", note), note
    assert not any("failed" in n for n in unknown.notes), unknown.notes  # nothing ran, nothing failed
    torch.testing.assert_close(unknown.graph_module(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0))
    # torch.export runs the model: without inputs it is still refused, saying fx needs none
    with pytest.raises(LoadError, match=r"no example inputs .*forward takes: x, y.*--input-shape 1,3,224,224.*fx tracer"):
        load_model(f, tracer="export")
    loaded = load_model(f, input_shapes=[(2, 3), (2, 3)])
    assert not shapes_unknown(loaded)
    assert [tuple(t.shape) for t in loaded.example_inputs] == [(2, 3), (2, 3)]
    add = next(n for n in loaded.graph_module.graph.nodes if n.op == "call_function")
    assert add.meta["fxs_shape"] == (2, 3)


def test_a_file_named_like_an_installed_module_is_refused(tmp_path):
    f = write(tmp_path / "json.py", "class Net(nn.Module):\n    def forward(self, x):\n        return x\n")
    with pytest.raises(LoadError, match="already taken by the installed module 'json'"):
        load_model(f, input_shapes=[(1,)])


def test_pt2_archive_round_trip_hides_plumbing(tmp_path):
    src = load_model(EXAMPLES_DIR / "conv_bn_relu.py")
    ep = torch.export.export(src.module, src.example_inputs)
    path = tmp_path / "conv.pt2"
    torch.export.save(ep, path)
    loaded = load_model(path)
    # issue #28: opened from the archive's graph and weights, without torch's ExportedProgram
    assert loaded.kind == "pt2" and loaded.tracer == "export" and loaded.exported_program is None
    gm = loaded.graph_module
    torch.testing.assert_close(gm(*loaded.example_inputs), src.module(*loaded.example_inputs))
    hidden = {n.name for n in gm.graph.nodes if n.meta.get("fxs_hidden")}
    assert "_guards_fn" in hidden and "conv1_weight" in hidden
    conv = next(n for n in gm.graph.nodes if n.name == "conv2d")
    assert conv.meta["fxs_module_path"] == "conv1" and conv.meta["fxs_shape"] == (1, 8, 16, 16)
    assert loaded.module is not gm
    assert any("example inputs" in n for n in loaded.notes)


def test_pickled_module_and_graph_module_with_trust(tmp_path):
    path = tmp_path / "clamp_gm.pt"
    gm = load_model(EXAMPLES_DIR / "clamp.py").graph_module
    torch.save(gm, path)
    with pytest.raises(LoadError, match="--trust"):
        load_model(path, input_shapes=[(4, 4)])
    loaded = load_model(path, input_shapes=[(4, 4)], trust=True)
    assert loaded.kind == "pickle" and loaded.tracer == "fx"
    x = loaded.example_inputs[0]
    torch.testing.assert_close(loaded.graph_module(x), torch.clamp(x, -5.0, 5.0))
    assert any("--trust" in n for n in loaded.notes)
    clamp = next(n for n in loaded.graph_module.graph.nodes if n.op == "call_function")
    assert clamp.meta["fxs_shape"] == (4, 4)


def test_leaf_modules_autowrap_and_bad_option_names(tmp_path):
    loaded = load_model(EXAMPLES_DIR / "residual_cnn.py", leaf_modules=["layer1", "BasicBlock"])
    targets = [n.target for n in loaded.graph_module.graph.nodes if n.op == "call_module"]
    assert "layer1" in targets and "layer2.0" in targets and "layer1.0.conv1" not in targets
    layer1 = next(n for n in loaded.graph_module.graph.nodes if n.target == "layer1")
    assert layer1.meta["fxs_module_stack"] == [("layer1", "Sequential")]
    with pytest.raises(LoadError, match="--leaf-module layer9: no submodule"):
        load_model(EXAMPLES_DIR / "residual_cnn.py", leaf_modules=["layer9"])
    with pytest.raises(LoadError, match="--autowrap nope"):
        load_model(EXAMPLES_DIR / "relu_add.py", autowrap_functions=["nope"])
    with pytest.raises(LoadError, match="--concrete-arg flag: forward\\(\\) has no argument"):
        load_model(EXAMPLES_DIR / "relu_add.py", concrete_args={"flag": True})


def test_same_named_siblings_in_two_model_folders_do_not_mix(tmp_path):
    results = {}
    for folder, value in (("first", 1.0), ("second", 2.0)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "shared_util.py").write_text(f"VALUE = {value}\n")
        write(tmp_path / folder / f"model_{folder}.py", """
        from shared_util import VALUE

        class Net(nn.Module):
            def forward(self, x):
                return x + VALUE

        EXAMPLE_INPUTS = (torch.zeros(1),)
        """)
    for folder in ("first", "second", "first"):
        loaded = load_model(tmp_path / folder / f"model_{folder}.py")
        results.setdefault(folder, []).append(float(loaded.graph_module(torch.zeros(1))))
    assert results == {"first": [1.0, 1.0], "second": [2.0]}


def test_pt2_without_stored_inputs_uses_its_input_shapes_and_checks_given_ones(tmp_path):
    ep = torch.export.export(torch.nn.Linear(3, 2), (torch.ones(4, 3),))
    ep._example_inputs = None  # as in archives saved by programs that drop them
    path = tmp_path / "bare.pt2"
    torch.export.save(ep, path)
    loaded = load_model(path)
    assert [tuple(t.shape) for t in loaded.example_inputs] == [(4, 3)]
    assert "random values of the program's input shapes" in loaded.notes[-1]
    with pytest.raises(LoadError, match="input 1 was exported with shape 4×3; --input-shape 5,3 does not fit"):
        load_model(path, input_shapes=[(5, 3)])
