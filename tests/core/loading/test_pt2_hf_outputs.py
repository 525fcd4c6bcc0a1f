"""``.pt2`` archives whose output is a Hugging Face ``ModelOutput`` or another type torch's pytree
does not know here, and programs exported with keyword inputs (issue #15, defects 2 and 4): they
open without running anything from the archive, through the real CLI and ``load_model``."""

from __future__ import annotations

import json

import pytest
import torch

from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model
from tests.core.loading.hf_files import (
    error_lines, fxstudio, marker_module, save_gpt2, save_two_outputs, token_ids, with_output_type,
)


@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory):
    """The two GPT-2 archives: positional ids + ``use_cache=False``, and all keyword inputs."""
    folder = tmp_path_factory.mktemp("gpt2")
    return save_gpt2(folder / "gpt2_out.pt2", keywords=False), save_gpt2(folder / "gpt2_kw.pt2", keywords=True)


def test_a_modeloutput_archive_opens_in_the_cli_with_its_class_imported(gpt2_files, tmp_path):
    for archive in gpt2_files:
        proc = fxstudio("inspect", str(archive), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert ("note: the output type transformers.modeling_outputs.CausalLMOutputWithCrossAttentions was "
                "imported from the installed package transformers") in proc.stdout
        assert "note: example inputs: the program's stored example inputs" in proc.stdout
        assert "--input-shape" not in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr


def test_keyword_inputs_are_the_stored_ones_in_positional_slots(gpt2_files):
    _, keywords = gpt2_files
    loaded = load_model(keywords)
    ids, use_cache, return_dict = loaded.example_inputs
    assert torch.equal(ids, token_ids()) and use_cache is False and return_dict is True
    assert any("keyword inputs passed in their positional slots" in n for n in loaded.notes)
    out = loaded.graph_module(*loaded.example_inputs)
    from transformers.modeling_outputs import CausalLMOutputWithCrossAttentions

    assert isinstance(out, CausalLMOutputWithCrossAttentions) and out.logits.shape == (1, 8, 100)
    placeholders = {n.name: n.meta.get("val") for n in loaded.graph_module.graph.nodes if n.op == "placeholder"}
    assert placeholders["use_cache"] is False  # the constant of the signature, shown as recorded


def test_without_stored_inputs_tensors_come_from_the_programs_shapes(gpt2_files, tmp_path):
    from tests.security.pt2_hostile import rewrite

    src, _ = gpt2_files
    bare = rewrite(src, tmp_path / "no_inputs.pt2", lambda r: r.pop("data/sample_inputs/model.pt") and None)
    loaded = load_model(bare)
    ids, use_cache = loaded.example_inputs
    assert ids.shape == (1, 8) and ids.dtype == torch.int64 and use_cache is False
    assert "example inputs: random values of the program's input shapes" in loaded.notes
    proc = fxstudio("inspect", str(bare), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # --input-shape gives the tensor inputs only; the constant stays as recorded
    loaded = load_model(bare, input_shapes=[(1, 8)])
    assert loaded.example_inputs[1] is False


def test_an_output_type_from_a_module_beside_the_archive_is_not_imported(tmp_path):
    marker = tmp_path / "imported.marker"
    base = save_two_outputs(tmp_path / "base.pt2")
    marker_module(tmp_path, "fxstudio_fake_outputs", marker)  # beside the archive and in the working folder
    archive = with_output_type(base, tmp_path / "fake_type.pt2", "fxstudio_fake_outputs.Out")
    proc = fxstudio("inspect", str(archive), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert ("the output type fxstudio_fake_outputs.Out is not importable here (its package is not installed, or it "
            "is not a registered pytree type): the output is a dict with its keys (logits, hidden)") in proc.stdout
    assert not marker.exists()
    loaded = load_model(archive)
    out = loaded.graph_module(*loaded.example_inputs)
    assert type(out) is dict and list(out) == ["logits", "hidden"]
    assert not marker.exists()


def test_os_system_as_the_output_type_runs_nothing(tmp_path):
    marker = tmp_path / "ran.marker"
    base = save_two_outputs(tmp_path / "base.pt2")
    archive = with_output_type(base, tmp_path / "os_system.pt2", "os.system", json.dumps([f"touch {marker}", "x"]))
    loaded = load_model(archive)
    out = loaded.graph_module(*loaded.example_inputs)
    assert type(out) is dict and set(out) == {f"touch {marker}", "x"}
    assert any("the output type os.system is not importable here" in n for n in loaded.notes)
    assert not marker.exists()


@pytest.mark.parametrize("enum_key", ["__enum__", "\\u005f_enum__"])  # also as a JSON escape
def test_a_context_that_names_a_python_object_is_refused(tmp_path, enum_key):
    marker = tmp_path / "imported.marker"
    marker_module(tmp_path, "fxstudio_fake_enum", marker)
    base = save_two_outputs(tmp_path / "base.pt2")
    context = '[{"%s": true, "fqn": "fxstudio_fake_enum:X", "name": "a"}, "hidden"]' % enum_key
    archive = with_output_type(base, tmp_path / "enum.pt2", "builtins.dict", context)
    proc = fxstudio("inspect", str(archive), cwd=tmp_path)
    assert proc.returncode == 2
    assert len(error_lines(proc)) == 1 and "--trust" in error_lines(proc)[0]
    assert not marker.exists()
    fxstudio("inspect", "--trust", str(archive), cwd=tmp_path)
    assert marker.exists()  # what the refusal prevents: torch imports the module the context names


def test_an_unknown_namedtuple_becomes_a_tuple(tmp_path):
    from tests.security.pt2_hostile import rewrite

    base = save_two_outputs(tmp_path / "base.pt2")

    def edit(records):
        program = json.loads(records["models/model.json"])
        signature = program["graph_module"]["module_call_graph"][0]["signature"]
        signature["out_spec"] = json.dumps([1, {"type": "collections.namedtuple", "context": "no_such_pkg.Pair",
                                                "children_spec": [{"type": None, "context": None, "children_spec": []}] * 2}])
        records["models/model.json"] = json.dumps(program).encode()

    loaded = load_model(rewrite(base, tmp_path / "pair.pt2", edit))
    out = loaded.graph_module(*loaded.example_inputs)
    assert type(out) is tuple and len(out) == 2
    assert any("namedtuple no_such_pkg.Pair is not importable here" in n for n in loaded.notes)


def test_with_trust_an_unknown_type_is_named_not_blamed_on_the_file(tmp_path):
    base = save_two_outputs(tmp_path / "base.pt2")
    archive = with_output_type(base, tmp_path / "fake_type.pt2", "no_such_pkg.Out")
    with pytest.raises(LoadError) as info:
        load_model(archive, trust=True)
    text = str(info.value)
    assert "no_such_pkg.Out" in text and "not registered with torch's pytree" in text
    assert "truncated" not in text and "incompatible torch version" not in text
    proc = fxstudio("inspect", "--trust", str(archive), cwd=tmp_path)
    assert proc.returncode == 2 and len(error_lines(proc)) == 1


def test_with_trust_a_modeloutput_archive_opens_too(gpt2_files):
    loaded = load_model(gpt2_files[0], trust=True)
    assert loaded.graph_module(*loaded.example_inputs).logits.shape == (1, 8, 100)


def test_without_torchs_pytree_table_every_structure_is_a_plain_container(gpt2_files, monkeypatch):
    from fxstudio.core import fx_compat

    assert fx_compat.pytree_type_registered("builtins.dict")
    monkeypatch.setattr(fx_compat, "_pytree", None)  # the fallback: nothing counts as registered
    assert not fx_compat.pytree_type_registered("builtins.dict")
    loaded = load_model(gpt2_files[1])
    out = loaded.graph_module(*loaded.example_inputs)
    assert type(out) is dict and out["logits"].shape == (1, 8, 100)
