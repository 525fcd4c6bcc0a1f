"""What a run says before its first compared node (issue #25: the bar moves and says what runs)."""

from __future__ import annotations

from fxstudio.core.compare import compare_models
from fxstudio.core.document import Document
from fxstudio.core.loading import load_model
from fxstudio.testing.residual_mlp import write_residual_mlp


def test_the_preparation_names_its_steps_before_the_nodes(tmp_path):
    doc = Document(load_model(write_residual_mlp(tmp_path, blocks=20)))
    doc.apply_edit({"op": "set_arg", "node": "mul_7", "key": 1, "value": "2.0"})
    seen: list[tuple[float, str]] = []
    report = compare_models(doc.loaded.module, doc.original, doc.module(), doc.loaded.example_inputs,
                            progress=lambda f, t: seen.append((f, t)))
    texts = [t for _, t in seen]
    first_node = next(i for i, t in enumerate(texts) if t.startswith("comparing node"))
    assert texts[:first_node] == ["copying the models to cpu",
                                  f"matching and compiling the node-by-node run of {len(doc.edited.graph.nodes):,} nodes"]
    assert all(f == 0.0 for f, _ in seen[:first_node]) and seen[-1] == (1.0, "done")
    assert report.first_divergence.name == "mul_7"
