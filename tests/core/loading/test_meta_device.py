"""Opening a ``.py`` model on the meta device (issue #28): the graph with shapes and module frames
and no weight allocated, both tracers; weights mapped from a safetensors checkpoint (names and
shapes checked); the memory check that the window's offer builds on."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch

from fxstudio.core.errors import LoadError
from fxstudio.core.loading import TooLargeForMemory, check_fits_memory, has_meta_weights, load_model
from tests.core.loading.meta_files import MLP_SOURCE, llama_source, save_checkpoint, write


def _shapes(loaded) -> dict:
    return {n.name: n.meta.get("fxs_shape") for n in loaded.graph_module.graph.nodes}


def _user_module(path):
    """The model file as the loader ran it (its classes build a model of the same layout)."""
    return sys.modules[path.stem]


def test_fx_tracer_on_meta_gives_shapes_and_no_weights(tmp_path):
    path = write(tmp_path, "mlp_meta.py", MLP_SOURCE)
    loaded = load_model(path, device="meta")
    assert has_meta_weights(loaded.module) and has_meta_weights(loaded.graph_module)
    assert all(p.is_meta for p in loaded.module.parameters()) and loaded.module.scale.is_meta
    assert all(t.is_meta for t in loaded.example_inputs)
    shapes = _shapes(loaded)
    assert tuple(shapes["fc1"]) == (4, 32) and tuple(shapes["mul"]) == (4, 8)
    assert any("built on the meta device" in note for note in loaded.notes)


def test_a_real_build_is_unchanged(tmp_path):
    path = write(tmp_path, "mlp_real.py", MLP_SOURCE)
    loaded = load_model(path)
    assert not has_meta_weights(loaded.module)
    assert not any("meta device" in note for note in loaded.notes)


def test_export_tracer_on_meta_llama_has_frames_and_shapes(tmp_path):
    pytest.importorskip("transformers")
    path = write(tmp_path, "llama_meta.py", llama_source())
    loaded = load_model(path, device="meta", tracer="export")
    assert has_meta_weights(loaded.module)
    nodes = list(loaded.graph_module.graph.nodes)
    out = [n for n in nodes if n.op == "output"][0].args[0]
    logits = out[0] if isinstance(out, (tuple, list)) else out
    assert tuple(logits.meta["fxs_shape"]) == (1, 8, 1000)
    frames = {n.meta.get("fxs_module_path") for n in nodes}
    assert any(f and f.startswith("inner.model.layers.1") for f in frames)


def test_weights_map_a_checkpoint_and_the_model_runs_like_plain_torch(tmp_path):
    path = write(tmp_path, "mlp_weights.py", MLP_SOURCE)
    reference = load_model(path).module  # a real build: the layout the checkpoint is made from
    saved = save_checkpoint(reference, tmp_path / "mlp.safetensors")
    loaded = load_model(path, device="meta", weights=tmp_path / "mlp.safetensors")
    assert not has_meta_weights(loaded.module) and not has_meta_weights(loaded.graph_module)
    assert torch.equal(loaded.module.fc1.weight, saved["fc1.weight"])
    x = loaded.example_inputs[0]
    assert not x.is_meta
    plain = _user_module(path).MLP()
    plain.load_state_dict(saved)
    assert torch.equal(loaded.graph_module(x), plain(x))
    assert any("weights mapped from mlp.safetensors" in note for note in loaded.notes)


def test_a_folder_of_shards_and_tied_weights(tmp_path):
    pytest.importorskip("transformers")
    path = write(tmp_path, "llama_tied.py", llama_source({"tie_word_embeddings": True}))
    reference = load_model(path, tracer="export").module
    saved = save_checkpoint(reference, tmp_path / "whole.safetensors")
    assert "inner.lm_head.weight" not in saved  # tied to the embedding: stored once
    from safetensors.torch import save_file

    shards = tmp_path / "shards"
    shards.mkdir()
    names = sorted(saved)
    save_file({k: saved[k] for k in names[: len(names) // 2]}, str(shards / "model-00001-of-00002.safetensors"))
    save_file({k: saved[k] for k in names[len(names) // 2:]}, str(shards / "model-00002-of-00002.safetensors"))
    loaded = load_model(path, device="meta", tracer="export", weights=shards)
    assert not has_meta_weights(loaded.module)
    inner = loaded.module.inner
    assert torch.equal(inner.lm_head.weight, saved["inner.model.embed_tokens.weight"])
    assert not inner.model.rotary_emb.inv_freq.is_meta  # a buffer no checkpoint holds: as built
    expected = reference.inner.model.rotary_emb.inv_freq
    assert torch.equal(inner.model.rotary_emb.inv_freq, expected)


@pytest.mark.parametrize("change, says", [
    (lambda s: s.update({"fc1.weight": torch.zeros(3, 3)}), "'fc1.weight' has shape (3, 3) in the checkpoint, (32, 16)"),
    (lambda s: s.update({"fc9.weight": s.pop("fc1.weight")}), "'fc9.weight' is not a parameter or buffer"),
    (lambda s: s.pop("fc2.bias"), "the checkpoint has no 'fc2.bias'"),
])
def test_a_checkpoint_that_does_not_fit_is_refused(tmp_path, change, says):
    from safetensors.torch import save_file

    path = write(tmp_path, "mlp_bad.py", MLP_SOURCE)
    state = save_checkpoint(load_model(path).module, tmp_path / "good.safetensors")
    change(state)
    save_file(state, str(tmp_path / "bad.safetensors"))
    with pytest.raises(LoadError) as info:
        load_model(path, device="meta", weights=tmp_path / "bad.safetensors")
    assert says in info.value.message and "\n" not in info.value.message


def test_weights_and_devices_that_do_not_apply(tmp_path):
    path = write(tmp_path, "mlp_flags.py", MLP_SOURCE)
    (tmp_path / "broken.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(LoadError, match="not a readable safetensors file"):
        load_model(path, device="meta", weights=tmp_path / "broken.safetensors")
    with pytest.raises(LoadError, match="add --device meta"):
        load_model(path, weights=tmp_path / "broken.safetensors")
    with pytest.raises(LoadError, match="--device cuda"):
        load_model(path, device="cuda")
    with pytest.raises(LoadError, match="no such file or folder"):
        load_model(path, device="meta", weights=tmp_path / "missing.safetensors")


def test_the_memory_check_counts_parameters_without_allocating_them(tmp_path):
    path = write(tmp_path, "mlp_fits.py", MLP_SOURCE)
    expected = sum(p.numel() * 4 for p in load_model(path).module.parameters())
    assert check_fits_memory(path, available=10 * expected) == expected
    with pytest.raises(TooLargeForMemory) as info:
        check_fits_memory(f"{path}::MLP", available=expected - 1)
    assert info.value.needed == expected and "--device meta" in info.value.message


def test_an_open_that_checks_memory_runs_the_file_once(tmp_path, monkeypatch):
    """The window's open counts the parameters on the meta device between the file's run and the
    real build: the file's module-level code runs once, the model is refused before it is built."""
    counter = tmp_path / "runs.txt"
    source = f"import pathlib\n_p = pathlib.Path({str(counter)!r}); _p.write_text(_p.read_text() + 'x' if _p.exists() else 'x')\n"
    path = write(tmp_path, "mlp_once.py", source + MLP_SOURCE)
    loaded = load_model(path, check_memory=True)
    assert counter.read_text() == "x" and not has_meta_weights(loaded.module)
    expected = sum(p.numel() * 4 for p in loaded.module.parameters())
    monkeypatch.setenv("FXSTUDIO_MEMORY_LIMIT", str(expected - 1))
    with pytest.raises(TooLargeForMemory) as info:
        load_model(path, check_memory=True)
    assert info.value.needed == expected and counter.read_text() == "xx"


def test_what_the_file_imports_stays_real_for_the_next_open(tmp_path):
    # A sibling module's tensor made at import time must not be a meta tensor for later loads in this
    # process (the window opens the same file again without --device meta).
    write(tmp_path, "meta_consts.py", "import torch\n\nSCALE = torch.tensor([3.0])\n")
    path = write(tmp_path, "uses_consts.py", textwrap.dedent("""
        import torch
        from torch import nn

        import meta_consts


        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x) * meta_consts.SCALE


        def example_inputs():
            return (torch.ones(2, 4),)
    """))
    meta = load_model(path, device="meta")
    assert has_meta_weights(meta.module) and not sys.modules["meta_consts"].SCALE.is_meta
    real = load_model(path)
    out = real.graph_module(*real.example_inputs)
    assert not out.is_meta and torch.equal(out, real.module(*real.example_inputs))


def test_a_pt2_on_meta_opens_its_structure_without_reading_the_weights(tmp_path):
    import zipfile

    path = write(tmp_path, "mlp_pt2.py", MLP_SOURCE)
    module = load_model(path).module
    saved = tmp_path / "mlp.pt2"
    torch.export.save(torch.export.export(module, (torch.randn(4, 16),)), saved)
    # The same archive with every weight record's bytes replaced: only a reader of them can tell.
    damaged = tmp_path / "damaged.pt2"
    with zipfile.ZipFile(saved) as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            is_record = "/data/weights/weight_" in item.filename
            dst.writestr(item, b"\x00" * 3 if is_record else data)
    with pytest.raises(LoadError):
        load_model(damaged)
    loaded = load_model(damaged, device="meta")
    assert has_meta_weights(loaded.graph_module)
    shapes = _shapes(loaded)
    assert tuple(shapes["linear"]) == (4, 32) and tuple(shapes["mul"]) == (4, 8)
    assert any("structure and shapes without its weights" in note for note in loaded.notes)
    with pytest.raises(LoadError, match="--weights maps a checkpoint into a .py model"):
        load_model(saved, device="meta", weights=tmp_path / "x.safetensors")
