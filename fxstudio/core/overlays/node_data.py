"""Model Explorer's node-data JSON, written from and read into ``NodeMetrics``.

The format is Model Explorer's own (google-ai-edge/model-explorer,
``src/server/package/src/model_explorer/node_data_builder.py``: ``GraphNodeData``, ``NodeDataResult``,
``ThresholdItem``, ``GradientItem``; a ``ModelNodeData`` file maps graph ids to ``GraphNodeData``)::

    {"results": {"<node id>": {"value": 0.25, "bgColor": "#ff0000"?, "textColor": "..."?}, ...},
     "thresholds": [{"value": 10, "bgColor": "red", "textColor": "..."?}, ...],      (optional)
     "gradient": [{"stop": 0, "bgColor": "#ffffff"}, {"stop": 1, "bgColor": "#c81e1e"}]}  (optional)

Node ids are the FX node names (what Model Explorer's PyTorch adapter shows). JSON has no
infinity, so non-finite values (an SQNR of identical values is ``inf``) are left out of
``results`` and kept, with the metric, its unit and the module-frame totals, under an extra
``"fxstudio"`` key that Model Explorer does not read.

Reading is data only: the file's size, nesting, types, counts and string lengths are checked,
and every node name must be a node of the graph; any problem is one ``LoadError`` line and
nothing is kept. Nothing in the file is ever executed or imported.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch.fx

from fxstudio.core.errors import LoadError
from fxstudio.core.fileio import atomic_write_text, read_capped
from fxstudio.core.overlays.node_metrics import DATA, METRICS, NodeMetrics, frame_totals, metric_info

FORMAT = "fxstudio.node-data/1"
MAX_BYTES = 64 * 1024 * 1024
MAX_RESULTS = 1_000_000
MAX_NAME = 1024
MAX_STOPS = 64
MAX_TEXT = 64
# Model Explorer gradients (stop 0 = the lowest value, 1 = the highest): pale to red where high is
# worse, red to pale where low is worse (SQNR). The canvas uses the same stops.
GRADIENT_HIGH_WORSE = [{"stop": 0, "bgColor": "#fff7e0"}, {"stop": 0.5, "bgColor": "#f0a030"},
                       {"stop": 1, "bgColor": "#c81e1e"}]
GRADIENT_LOW_WORSE = [{"stop": 0, "bgColor": "#c81e1e"}, {"stop": 0.5, "bgColor": "#f0a030"},
                      {"stop": 1, "bgColor": "#fff7e0"}]


def gradient_for(metrics: NodeMetrics, key: str) -> list[dict]:
    """The gradient stops for metric ``key``: those read from a file, else the default ones."""
    loaded = metrics.styles.get(key, {}).get("gradient")
    if loaded:
        return [dict(s) for s in loaded]
    return [dict(s) for s in (GRADIENT_LOW_WORSE if metrics.info(key).worse == "low" else GRADIENT_HIGH_WORSE)]


def to_node_data(metrics: NodeMetrics, key: str) -> dict:
    """Model Explorer's ``GraphNodeData`` for metric ``key`` (plus the ``"fxstudio"`` section)."""
    values = metrics.metric(key)
    results = {name: {"value": value} for name, value in values.items() if math.isfinite(value)}
    non_finite = {name: repr(value) for name, value in values.items() if not math.isfinite(value)}
    data: dict[str, Any] = {"results": results, "gradient": gradient_for(metrics, key)}
    styles = metrics.styles.get(key, {})
    if styles.get("thresholds"):
        data["thresholds"] = [dict(t) for t in styles["thresholds"]]
    data["fxstudio"] = {
        "format": FORMAT, "metric": key, "title": metrics.info(key).title, "unit": metrics.units.get(key, ""),
        "device": metrics.device, "non_finite": non_finite,
        "frames": {p: v for p, v in metrics.frames.get(key, {}).items() if math.isfinite(v)},
    }
    return data


def save_node_data(path: str | Path, metrics: NodeMetrics, key: str) -> Path:
    """Write metric ``key`` as a Model Explorer node-data file (atomically)."""
    if key not in metrics.values:
        raise LoadError(f"No {metric_info(key).title.lower()} was measured: nothing to write.")
    return atomic_write_text(path, json.dumps(to_node_data(metrics, key), indent=1) + "\n")


def load_node_data(path: str | Path, graph: torch.fx.Graph) -> NodeMetrics:
    """Read a Model Explorer node-data file for ``graph`` into a ``NodeMetrics`` holding one metric
    (the file's ``"fxstudio"`` metric where it names one of ours, else ``DATA``). Raises ``LoadError``."""
    raw = read_capped(path, MAX_BYTES, lambda exc: LoadError(f"Cannot read the node data {path}: {exc.strerror or exc}."),
                      lambda: LoadError(f"The node data {path} is larger than {MAX_BYTES // 2**20} MiB."))
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise LoadError(f"The node data {path} is nested too deeply to be node data.") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise LoadError(f"The node data {path} is not JSON: {str(exc).splitlines()[0][:200]}.") from None
    return parse_node_data(data, graph, str(path))


def parse_node_data(data: Any, graph: torch.fx.Graph, where: str = "node data") -> NodeMetrics:
    """``load_node_data`` on an already parsed JSON value."""
    graph_data = _graph_section(data, where)
    results = graph_data.get("results")
    if not isinstance(results, dict):
        raise LoadError(f"{where}: 'results' must be an object of node ids.")
    if len(results) > MAX_RESULTS:
        raise LoadError(f"{where}: {len(results):,} results; at most {MAX_RESULTS:,} are read.")
    extra = graph_data.get("fxstudio") if isinstance(graph_data.get("fxstudio"), dict) else {}
    key = extra.get("metric") if extra.get("metric") in METRICS else DATA
    unit = extra.get("unit") if isinstance(extra.get("unit"), str) and len(extra["unit"]) <= 16 else ""
    values: dict[str, float] = {}
    for name, entry in results.items():
        if not isinstance(name, str) or len(name) > MAX_NAME:
            raise LoadError(f"{where}: a node id is longer than {MAX_NAME} characters.")
        if not isinstance(entry, dict) or "value" not in entry:
            raise LoadError(f"{where}: the result of {_short(name)} is not an object with a 'value'.")
        values[name] = _number(entry["value"], f"{where}: the value of {_short(name)}")
        for colour in ("bgColor", "textColor"):
            if colour in entry:
                _text(entry[colour], f"{where}: {colour} of {_short(name)}")
    non_finite = extra.get("non_finite", {})
    if isinstance(non_finite, dict) and len(non_finite) <= MAX_RESULTS:
        for name, text in non_finite.items():
            if isinstance(name, str) and text in ("inf", "-inf", "nan") and name not in values:
                values[name] = float(text)
    known = {n.name for n in graph.nodes}
    missing = [n for n in values if n not in known]
    if missing:
        shown = ", ".join(_short(n) for n in missing[:5]) + (", …" if len(missing) > 5 else "")
        raise LoadError(f"{where} names {len(missing)} node(s) this graph does not have: {shown}.")
    metrics = NodeMetrics(device=str(extra.get("device", ""))[:32] if isinstance(extra.get("device"), str) else "")
    metrics.values[key] = values
    metrics.units[key] = unit if key == DATA else metric_info(key).unit
    metrics.frames[key] = frame_totals(graph, values, metric_info(key, unit).total)
    metrics.styles = {key: {"gradient": _stops(graph_data.get("gradient", []), "stop", where),
                            "thresholds": _stops(graph_data.get("thresholds", []), "value", where)}}
    metrics.notes.append(f"read {len(values):,} node values from {where}")
    return metrics


def _graph_section(data: Any, where: str) -> dict:
    """The ``GraphNodeData`` of a file: the file itself, or the one graph of a ``ModelNodeData``."""
    if not isinstance(data, dict):
        raise LoadError(f"{where}: node data is a JSON object, not {type(data).__name__}.")
    if "results" in data:
        return data
    graphs = [v for v in data.values() if isinstance(v, dict) and "results" in v]
    if len(graphs) == 1 and len(data) == 1:
        return graphs[0]
    if not graphs:
        raise LoadError(f"{where}: no 'results' (Model Explorer node data has results by node id).")
    raise LoadError(f"{where}: the file holds node data of {len(data)} graphs; fxstudio reads a file of one graph.")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LoadError(f"{what} is not a number ({type(value).__name__}).")
    if isinstance(value, int) and abs(value) > 2**63:
        raise LoadError(f"{what} is too large.")
    return float(value)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise LoadError(f"{what} must be a colour text of at most {MAX_TEXT} characters.")
    return value


def _stops(items: Any, number_key: str, where: str) -> list[dict]:
    """Checked gradient stops or thresholds: a list of at most ``MAX_STOPS`` objects."""
    if not isinstance(items, list) or len(items) > MAX_STOPS:
        raise LoadError(f"{where}: gradient and thresholds are lists of at most {MAX_STOPS} items.")
    checked = []
    for item in items:
        if not isinstance(item, dict) or number_key not in item:
            raise LoadError(f"{where}: each gradient stop or threshold is an object with '{number_key}'.")
        entry: dict[str, Any] = {number_key: _number(item[number_key], f"{where}: a '{number_key}'")}
        for colour in ("bgColor", "textColor"):
            if colour in item:
                entry[colour] = _text(item[colour], f"{where}: a {colour}")
        checked.append(entry)
    return checked


def _short(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:37] + "...")
