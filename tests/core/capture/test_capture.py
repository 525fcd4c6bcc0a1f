"""torch.compile capture in a real program: a model whose forward breaks the graph twice (a print,
a data-dependent branch), compiled with ``fxstudio.capture`` as its backend; the capture file read
back, its graphs rebuilt and run, and opened as models."""

from __future__ import annotations

import json
import runpy
import zipfile

import pytest
import torch
import torch._dynamo

import fxstudio
from fxstudio.core.capture import break_text, read_capture, rebuild_graph, summary_lines
from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model
from fxstudio.testing.capture_scripts import BRANCH_LINE, PRINT_LINE, write_script


@pytest.fixture
def net_module(tmp_path):
    """The breaking model's namespace (its file in tmp_path) and a fresh Dynamo cache."""
    torch._dynamo.reset()
    script = write_script(tmp_path)
    namespace = runpy.run_path(str(script), run_name="breaking_model")
    yield script, namespace
    torch._dynamo.reset()


def _compile_and_run(namespace, path, **options):
    torch.manual_seed(0)
    model = namespace["Net"]()
    backend = fxstudio.capture(path, **options)
    x = torch.randn(2, 4)
    out = torch.compile(model, backend=backend)(x)
    backend.close()
    return model, x, out


def test_capture_records_each_graph_with_its_break_line(net_module, tmp_path):
    script, namespace = net_module
    path = tmp_path / "run.fxcap"
    model, x, out = _compile_and_run(namespace, path, backend="eager")
    torch.testing.assert_close(out, model(x))
    manifest = json.loads(zipfile.ZipFile(path).read("capture.json"))
    assert manifest["format"] == "fxstudio-capture" and manifest["version"] == 1
    capture = read_capture(path)
    assert len(capture.graphs) == 3
    first, second, last = capture.graphs
    assert first["break"]["graph_break"] and second["break"]["graph_break"] and not last["break"]["graph_break"]
    assert first["break"]["user_frame"]["file"] == str(script) and first["break"]["user_frame"]["line"] == PRINT_LINE
    assert "print" in first["break"]["reason"] and "print" in first["break"]["user_frame"]["code"]
    assert second["break"]["user_frame"]["line"] == BRANCH_LINE
    assert break_text(first).endswith(f"{script}:{PRINT_LINE}")
    assert "data-dependent branch" in break_text(second) and break_text(second).endswith(f"{script}:{BRANCH_LINE}")
    # nodes as data: targets in target syntax, args with node references, shapes from the fake inputs
    nodes = {n["name"]: n for n in first["nodes"]}
    assert nodes["linear"]["target"] == "torch.nn.functional.linear"
    assert nodes["linear"]["args"].startswith("(%l_x_, ")
    assert nodes["linear"]["value"] == {"kind": "tensor", "shape": [2, 3], "dtype": "float32", "requires_grad": True}
    assert [i.get("parameter", False) for i in first["inputs"]] == [True, True, False]
    assert "TENSOR_MATCH" in first["guards"] and "size=[2, 4]" in first["guards"]
    assert all("TREE_GUARD_MANAGER" in g["guards"] for g in capture.graphs)  # each frame's own guards
    assert "size=[2, 3]" in last["guards"] and "size=[2, 4]" not in last["guards"]
    assert first["saved_inputs"] is False and capture.saved_tensors(0) is None
    lines = summary_lines(capture)
    assert lines[0].startswith("run.fxcap: 3 graph(s)") and lines[1] == "graph breaks: 2"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # atomic writes leave no temp file


def test_rebuilt_graphs_compute_the_compiled_pieces(net_module, tmp_path):
    _, namespace = net_module
    path = tmp_path / "run.fxcap"
    model, x, out = _compile_and_run(namespace, path, backend="eager", save_inputs=True)
    capture = read_capture(path)
    gm0, inputs0, notes0 = rebuild_graph(capture, 0)
    assert "example inputs: the tensors saved in the capture" in notes0
    torch.testing.assert_close(inputs0[2], x)
    torch.testing.assert_close(inputs0[0], model.lin.weight.detach())
    (y,) = gm0(*inputs0)
    torch.testing.assert_close(y, torch.relu(model.lin(x)) + 0.5)
    gm2, inputs2, _ = rebuild_graph(capture, 2)
    torch.testing.assert_close(gm2(*inputs2)[0], out)  # the last piece gives the program's output
    gm1, inputs1, _ = rebuild_graph(capture, 1)
    assert [n.op for n in gm1.graph.nodes] == ["placeholder", "call_method", "call_function", "output"]
    assert bool(gm1(*inputs1)[0]) is bool(y.sum() > 0)


def test_default_backend_is_inductor_and_still_runs_compiled(net_module, tmp_path):
    _, namespace = net_module
    path = tmp_path / "run.fxcap"
    model, x, out = _compile_and_run(namespace, path)
    torch.testing.assert_close(out, model(x))
    capture = read_capture(path)
    assert capture.backend == "inductor"
    used = {g["backend"] for g in capture.graphs}
    # inductor compiles here (a C++ compiler is installed); where it cannot, the graph ran eagerly with a note
    assert used == {"inductor"} or (used <= {"inductor", "eager"} and any("ran eagerly" in n for n in capture.notes))


def test_load_model_opens_graph_k_of_a_capture(net_module, tmp_path):
    _, namespace = net_module
    path = tmp_path / "run.fxcap"
    _compile_and_run(namespace, path, backend="eager")
    loaded = load_model(f"{path}::2")
    assert loaded.kind == "capture" and loaded.entry == "graph_2" and loaded.display_name == "run.fxcap::graph_2"
    assert [n.name for n in loaded.graph_module.graph.nodes] == ["l_y_", "tanh", "mul", "output"]
    assert [tuple(t.shape) for t in loaded.example_inputs] == [(2, 3)]
    mul = next(n for n in loaded.graph_module.graph.nodes if n.name == "mul")
    assert mul.meta["fxs_shape"] == (2, 3) and mul.meta["fxs_source"]["line"] == BRANCH_LINE + 1
    assert [n.name for n in load_model(f"{path}::graph_0").graph_module.graph.nodes][-3:] == ["relu", "y", "output"]
    whole = load_model(path)
    assert whole.entry == "graph_0" and any("holds 3 graphs" in n for n in whole.notes)
    with pytest.raises(LoadError, match="numbered 0 to 2"):
        load_model(f"{path}::3")
    with pytest.raises(LoadError, match="by its number"):
        load_model(f"{path}::first")


def test_an_opened_capture_graph_edits_like_any_model(net_module, tmp_path):
    from fxstudio.core.document import Document

    _, namespace = net_module
    path = tmp_path / "run.fxcap"
    _compile_and_run(namespace, path, backend="eager")
    doc = Document(load_model(f"{path}::2"))
    doc.apply_edit({"op": "set_target", "node": "tanh", "target": "torch.sigmoid"})
    gm = doc.module()
    (y,) = load_model(f"{path}::2").example_inputs
    torch.testing.assert_close(gm(y)[0], torch.sigmoid(y) * 2)


def test_without_a_cpp_compiler_inductor_falls_back_to_eager_with_a_note(tmp_path):
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    path = tmp_path / "nocc.fxcap"
    options = {"cpp.cxx": ("/nonexistent/c++",), "fx_graph_cache": False, "force_disable_caches": True}
    with inductor_config.patch(options):  # a machine whose C++ compiler is missing, for real
        backend = fxstudio.capture(path)
        x = torch.randn(5)
        out = torch.compile(lambda t: torch.relu(t) * 3 + 1, backend=backend)(x)
        backend.close()
    torch._dynamo.reset()
    torch.testing.assert_close(out, torch.relu(x) * 3 + 1)
    capture = read_capture(path)
    assert [g["backend"] for g in capture.graphs] == ["eager"]
    assert capture.notes and "inductor could not compile here" in capture.notes[0] and "ran eagerly" in capture.notes[0]
