"""Real passes through the Document API (``apply_edit``): torch.ao quantization (prepare with
calibration, convert, reference convert, fuse), split_module, const_fold, make_fx, normalize,
reinplace, ShapeProp, the docs' profiling Interpreter, torchao pt2e, optimum's FuseBiasInLinear.

Each installed result computes what plain torch's pass computes on the same inputs; undo gives the
original graph and outputs back; replaying the recorded edit gives the same graph. The result's trial
run, run-measured shapes, kwargs and example_inputs, analyses and their boundaries are checked too.
"""

from __future__ import annotations

import copy
import importlib.util
import warnings

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.edits import replay_into
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.core.passes import ANALYSIS_KEY, RUN_META_KEY, PassTrust, trust_all
from tests.core.passes.real_world_files import write_files

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_files(tmp_path_factory.mktemp("real_passes"))


@pytest.fixture(scope="module")
def cnn(files):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_model(files["cnn"])


@pytest.fixture(scope="module")
def plain(files):
    """The pass file imported as plain Python: the reference passes."""
    spec = importlib.util.spec_from_file_location("plain_passes", files["passes"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def doc_of(loaded) -> Document:
    doc = Document(loaded)
    doc.set_pass_trust(PassTrust(trusted=trust_all))
    return doc


def run(doc: Document, files, name: str, **kwargs):
    edit = {"op": "run_pass", "file": str(files["passes"]), "name": name}
    if kwargs:
        edit["kwargs"] = kwargs
    return doc.apply_edit(edit)


def out(module, inputs):
    with torch.no_grad():
        return module(*copy.deepcopy(inputs))


def reference(loaded, fn, *args):
    """Plain torch: the pass on a fresh copy of the traced model."""
    return fn(copy.deepcopy(loaded.graph_module), *args)


def check_undo_and_replay(doc: Document, loaded, files) -> None:
    """Undo restores the original graph and outputs; replaying the script rebuilds the same code."""
    x = loaded.example_inputs
    code = doc.module().code
    script = doc.edit_script()
    while doc.can_undo:
        doc.undo()
    assert doc.module().code == doc.original.code
    assert torch.equal(out(doc.module(), x), out(loaded.module, x))
    again = doc_of(loaded)
    replay_into(again, script["edits"], "stop")
    assert again.module().code == code


def test_prepare_with_calibration_then_convert(cnn, files, plain):
    x = cnn.example_inputs
    doc = doc_of(cnn)
    result = run(doc, files, "prepare")
    observers = [n for n in doc.edited.graph.nodes if "activation_post_process" in n.name]
    assert observers and all(doc.shape_text_of(n) for n in observers)  # shapes from the trial run
    prepared = reference(cnn, plain.prepare, copy.deepcopy(x))
    assert torch.equal(out(doc.module(), x), out(prepared, x))
    mine = dict(doc.module().named_buffers())
    assert all(torch.equal(mine[k], v) for k, v in prepared.named_buffers() if "min_val" in k or "max_val" in k)
    assert result.label.startswith("Run pass passes.py::prepare (10 added, 3 removed")
    run(doc, files, "convert")  # a second edit: convert_fx reads what prepare_fx left in the module's meta
    converted = plain.convert(prepared)
    assert torch.equal(out(doc.module(), x), out(converted, x))
    quantize = next(n for n in doc.edited.graph.nodes if n.name.startswith("quantize_per_tensor"))
    assert doc.shape_text_of(quantize) == "2×3×8×8 quint8"  # fake tensors say float32; the run says quint8
    check_undo_and_replay(doc, cnn, files)


def test_reference_convert_and_fuse(cnn, files, plain):
    x = cnn.example_inputs
    for name, fn in (("quantize_reference", lambda gm: plain.quantize_reference(gm, copy.deepcopy(x))),
                     ("fuse", plain.fuse)):
        doc = doc_of(cnn)
        run(doc, files, name)
        assert torch.allclose(out(doc.module(), x), out(reference(cnn, fn), x), atol=1e-6), name
        check_undo_and_replay(doc, cnn, files)


def test_split_module_and_normalize(cnn, files, plain):
    x = cnn.example_inputs
    doc = doc_of(cnn)
    run(doc, files, "split")
    assert {"submod_0", "submod_1"} <= {n.name for n in doc.edited.graph.nodes}
    assert torch.allclose(out(doc.module(), x), out(reference(cnn, plain.split), x), atol=1e-6)
    check_undo_and_replay(doc, cnn, files)
    doc = doc_of(cnn)
    run(doc, files, "NormalizeArgs")
    run(doc, files, "NormalizeOperators")
    expected = plain.NormalizeOperators(plain.NormalizeArgs(copy.deepcopy(cnn.graph_module)).transform()).transform()
    assert torch.allclose(out(doc.module(), x), out(expected, x), atol=1e-6)
    check_undo_and_replay(doc, cnn, files)


def test_const_fold_result_is_folded(cnn, files, plain):
    x = cnn.example_inputs
    doc = doc_of(cnn)
    result = run(doc, files, "const_fold")
    assert "constants folded" in result.label
    gm = doc.module()
    assert "_FX_CONST_FOLDED_ATTRS" in gm.code and gm._FX_CONST_FOLDED_ATTRS.numel() == 8
    assert torch.allclose(out(gm, x), out(reference(cnn, plain.const_fold), x), atol=1e-6)
    check_undo_and_replay(doc, cnn, files)


def test_make_fx_keeps_the_input_names(cnn, files, plain):
    x = cnn.example_inputs
    doc = doc_of(cnn)
    run(doc, files, "decompose")
    gm = doc.module()
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["x"]
    assert "def forward(self, x)" in gm.code and "torch.ops.aten" in gm.code
    expected = reference(cnn, plain.decompose, copy.deepcopy(x))
    assert torch.allclose(out(gm, x), out(expected, x), atol=1e-5)
    check_undo_and_replay(doc, cnn, files)


def test_reinplace_on_a_make_fx_graph(files, plain):
    loaded = load_model(files["no_params"])
    x = loaded.example_inputs
    doc = doc_of(loaded)
    run(doc, files, "in_place")
    assert "add_.Tensor" in doc.module().code or "mul_.Tensor" in doc.module().code
    assert torch.equal(out(doc.module(), x), out(reference(loaded, plain.in_place, copy.deepcopy(x)), x))
    check_undo_and_replay(doc, loaded, files)


def test_fuse_bias_in_linear_class(cnn, files, plain):
    x = cnn.example_inputs
    doc = doc_of(cnn)
    run(doc, files, "FuseBiasInLinear")
    assert "cat" in doc.module().code
    assert torch.allclose(out(doc.module(), x), out(reference(cnn, plain.FuseBiasInLinear()), x), atol=1e-6)
    check_undo_and_replay(doc, cnn, files)


def test_pt2e_on_an_exported_document(files, plain):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load_model(files["cnn"], tracer="export")
    x = loaded.example_inputs
    doc = doc_of(loaded)
    run(doc, files, "pt2e")
    assert "quantize_per_tensor" in doc.module().code
    expected = reference(loaded, plain.pt2e, copy.deepcopy(x))
    assert torch.allclose(out(doc.module(), x), out(expected, x), atol=1e-6)
    check_undo_and_replay(doc, loaded, files)


@pytest.mark.parametrize("name", ["shape_prop", "ShapeProp"])
def test_shape_prop_is_an_analysis(cnn, files, name):
    doc = doc_of(cnn)
    code = doc.module().code
    type_before = doc.find("fc").meta.get("type")  # fxstudio's own propagation: FakeTensor
    result = run(doc, files, name)
    count = len(doc.edited.graph.nodes)
    assert result.label == f"Run pass passes.py::{name} (analysis: tensor_meta, type on {count} nodes)"
    fc = doc.find("fc")
    assert fc.meta[ANALYSIS_KEY][f"passes.py::{name}"] == {"tensor_meta": "2×4 float32",
                                                            "type": "torch.Tensor"}
    assert fc.meta["type"] is torch.Tensor and doc.module().code == code and result.changed
    doc.undo()
    assert ANALYSIS_KEY not in fc.meta and fc.meta.get("type") is type_before
    doc.redo()
    assert fc.meta[ANALYSIS_KEY]
    check_undo_and_replay(doc, cnn, files)


def test_profiling_interpreter_keeps_its_run_times(cnn, files):
    doc = doc_of(cnn)
    result = run(doc, files, "ProfilingInterpreter")
    count = len(doc.edited.graph.nodes)
    assert result.label == f"Run pass passes.py::ProfilingInterpreter (analysis: runtimes_sec on {count} nodes)"
    text = doc.find("conv1").meta[ANALYSIS_KEY]["passes.py::ProfilingInterpreter"]["runtimes_sec"]
    assert text.startswith("[") and float(text.strip("[]")) >= 0


def test_kwargs_reach_the_pass_and_are_recorded(cnn, files, plain):
    x = cnn.example_inputs
    doc = doc_of(cnn)
    run(doc, files, "scale_output", factor="3.0", dtype="torch.float64")
    got = out(doc.module(), x)
    assert got.dtype == torch.float64 and torch.allclose(got, out(cnn.module, x).double() * 3.0)
    assert doc.edit_script()["edits"][0]["kwargs"] == {"factor": "3.0", "dtype": "torch.float64"}
    check_undo_and_replay(doc, cnn, files)


@pytest.mark.parametrize("kwargs, message", [
    ({}, "needs the argument factor of its call"),
    ({"factor": "2", "speed": "1"}, "takes no argument 'speed' (it takes: dtype, factor)"),
    ({"factor": "os.system"}, "The pass argument factor='os.system'"),
    ({"factor": "%x"}, "there is no node named %x"),
    ({"factor": "2", "example_inputs": "1"}, "'example_inputs' is given by fxstudio"),
    ({"factor": 2}, "must be text in the argument syntax"),
])
def test_bad_kwargs_are_refused_in_one_line(cnn, files, kwargs, message):
    doc = doc_of(cnn)
    with pytest.raises(EditRefused, match=None) as refused:
        run(doc, files, "scale_output", **kwargs)
    assert message in refused.value.message and "\n" not in refused.value.message
    assert not doc.can_undo


def test_a_result_that_does_not_run_is_refused(cnn, files):
    doc = doc_of(cnn)
    with pytest.raises(EditRefused) as refused:
        run(doc, files, "breaks_at_run_time")
    assert refused.value.message == ("The pass passes.py::breaks_at_run_time's result does not run on the example "
                                     "inputs (IndexError: list index out of range); nothing was changed.")
    assert not doc.can_undo and doc.module().code == doc.original.code


def test_the_trial_run_leaves_the_results_state_alone(cnn, files):
    doc = doc_of(cnn)
    run(doc, files, "train_bn_after_conv1")
    probe = doc.module().probe
    assert probe.training and int(probe.num_batches_tracked) == 0
    assert torch.equal(probe.running_mean, torch.zeros(8))


def test_no_example_inputs_skips_the_run_and_says_so(files):
    loaded = load_model(files["no_inputs"])
    doc = doc_of(loaded)
    result = run(doc, files, "scale_output", factor="2.0")
    assert result.label.startswith("Run pass passes.py::scale_output (not run: the model has no example inputs; "
                                   "2 added")
    with pytest.raises(EditRefused, match="needs the model's example inputs, and this model has none"):
        run(doc, files, "prepare")
    with pytest.raises(EditRefused, match="is a torch.fx.Interpreter: it runs the model on its example inputs"):
        run(doc, files, "ProfilingInterpreter")


def test_run_measured_shapes_hold_for_the_passs_nodes_only(cnn, files):
    """An edit script gets no run-measured shape: rewiring an observer or calling one anew is refused
    (its size cannot be told before a run), as before the pass."""
    doc = doc_of(cnn)
    run(doc, files, "prepare")
    observer = next(n for n in doc.edited.graph.nodes if n.name == "activation_post_process_1")
    assert observer.meta[RUN_META_KEY] is not None and doc.shape_text_of(observer) == "2×8×8×8 float32"
    with pytest.raises(EditRefused, match="cannot be told before a run"):
        doc.apply_edit({"op": "set_arg", "node": "activation_post_process_1", "key": 0, "value": "%x"})
    with pytest.raises(EditRefused, match="cannot be told before a run"):
        doc.apply_edit({"op": "insert", "kind": "call_module", "target": "activation_post_process_1",
                        "after": "x", "args": "(%x,)"})
    assert doc.history_index == 1


def test_a_pass_cannot_plant_a_run_record(cnn, files):
    doc = doc_of(cnn)
    run(doc, files, "plants_a_shape_record")
    records = [n.meta.get(RUN_META_KEY) for n in doc.edited.graph.nodes if n.op not in ("placeholder", "output")]
    assert records and all(type(r).__name__ == "RanShape" for r in records)   # the runner's own, measured
    loaded = load_model(files["no_inputs"])
    doc = doc_of(loaded)
    run(doc, files, "plants_a_shape_record")   # no trial run: no record at all
    assert not any(RUN_META_KEY in n.meta for n in doc.edited.graph.nodes)
