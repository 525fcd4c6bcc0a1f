"""Model Explorer node-data JSON: the written shape, a round trip, Model Explorer's own files, and
hostile files refused with one clear message."""

import json
import math
from pathlib import Path

import pytest

from fxstudio.core.document import Document
from fxstudio.core.errors import LoadError
from fxstudio.core.loading import load_model
from fxstudio.core.overlays import DATA, compute_metrics, load_node_data, save_node_data

QUANT_CNN = Path(__file__).resolve().parents[2] / "corpus" / "passes" / "quant_cnn.py"


@pytest.fixture(scope="module")
def measured():
    loaded = load_model(str(QUANT_CNN))
    doc = Document(loaded)
    doc.apply_edit({"op": "set_target", "node": "relu_1", "target": "torch.sigmoid"})
    metrics = compute_metrics(doc.original, doc.module(), tuple(loaded.example_inputs), metrics=["sqnr", "time"],
                              repeats=2)
    return doc, metrics


def test_written_file_is_model_explorer_graph_node_data(measured, tmp_path):
    doc, metrics = measured
    path = save_node_data(tmp_path / "time.json", metrics, "time")
    data = json.loads(path.read_text())
    # GraphNodeData (model_explorer/node_data_builder.py): results by node id, each {"value": number}
    assert set(data["results"]) == set(metrics.values["time"])
    assert all(set(r) == {"value"} and isinstance(r["value"], float) for r in data["results"].values())
    assert data["gradient"][0]["stop"] == 0 and data["gradient"][-1]["stop"] == 1
    assert all(s["bgColor"].startswith("#") for s in data["gradient"])
    assert data["fxstudio"]["metric"] == "time" and data["fxstudio"]["unit"] == "ms"
    json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))


def test_round_trip_keeps_values_units_infinities_and_frames(measured, tmp_path):
    doc, metrics = measured
    path = save_node_data(tmp_path / "sqnr.json", metrics, "sqnr")
    back = load_node_data(path, doc.edited.graph)
    assert back.values["sqnr"] == metrics.values["sqnr"]           # inf upstream of the edit included
    assert math.inf in back.values["sqnr"].values()
    assert back.units["sqnr"] == "dB"
    assert back.frames["sqnr"] == metrics.frames["sqnr"]
    again = save_node_data(tmp_path / "again.json", back, "sqnr")
    assert json.loads(again.read_text())["results"] == json.loads(path.read_text())["results"]


def test_model_explorer_files_load_as_node_data(measured, tmp_path):
    doc, _ = measured
    graph_data = {"results": {"conv1": {"value": 3}, "fc": {"value": 0.5, "bgColor": "red"}},
                  "thresholds": [{"value": 1, "bgColor": "green"}, {"value": 5, "bgColor": "#ff0000"}]}
    model_data = {"main_graph": graph_data}      # ModelNodeData: graph id -> GraphNodeData
    for name, data in (("graph.json", graph_data), ("model.json", model_data)):
        path = tmp_path / name
        path.write_text(json.dumps(data))
        loaded = load_node_data(path, doc.edited.graph)
        assert loaded.values[DATA] == {"conv1": 3.0, "fc": 0.5}
        assert loaded.styles[DATA]["thresholds"][1] == {"value": 5.0, "bgColor": "#ff0000"}
        assert loaded.frames[DATA]["conv1"] == 3.0


@pytest.mark.parametrize("text, message", [
    ('[1, 2]', "is a JSON object"),
    ('{"results": [1]}', "'results' must be an object"),
    ('{"results": {"conv1": 3}}', "not an object with a 'value'"),
    ('{"results": {"conv1": {"value": "3"}}}', "is not a number (str)"),
    ('{"results": {"conv1": {"value": true}}}', "is not a number (bool)"),
    ('{"results": {"conv1": {"value": 1, "bgColor": 7}}}', "must be a colour text"),
    ('{"results": {"no_such_node": {"value": 1}, "__import__": {"value": 2}}}', "2 node(s) this graph does not have"),
    ('{"results": {}, "gradient": {"stop": 0}}', "lists of at most"),
    ('{"a": {"results": {}}, "b": {"results": {}}}', "node data of 2 graphs"),
    ('{"version": 1}', "no 'results'"),
    ('{"results": ', "is not JSON"),
    ('[' * 200000 + ']' * 200000, "nested too deeply"),
])
def test_hostile_files_are_refused_with_one_line(measured, tmp_path, text, message):
    doc, _ = measured
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(LoadError) as info:
        load_node_data(path, doc.edited.graph)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_huge_file_is_refused_before_parsing(measured, tmp_path):
    doc, _ = measured
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:
        fh.truncate(65 * 1024 * 1024)      # sparse: 65 MiB of zeros
    with pytest.raises(LoadError, match="larger than 64 MiB"):
        load_node_data(path, doc.edited.graph)
    with pytest.raises(LoadError, match="Cannot read"):
        load_node_data(tmp_path / "missing.json", doc.edited.graph)
