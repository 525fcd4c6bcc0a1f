"""``NodeMetrics``: per-node numbers by metric and node name, with their units and the totals per
module frame; ``METRICS`` says what each metric means, its unit, which end of its scale is bad and
how a module frame totals it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch.fx

from fxstudio.core.node_text import META_MODULE_STACK


@dataclass(frozen=True)
class Metric:
    """One kind of per-node number.

    ``worse``: ``"high"`` when a larger value is worse (errors, time, memory), ``"low"`` for SQNR.
    ``total``: how a module frame sums its nodes up: ``"sum"`` (time, memory), ``"max"`` (the
    worst error inside it), ``"min"`` (the worst SQNR inside it). ``log``: values spread over
    decades, so a colour scale is logarithmic."""

    key: str
    title: str
    unit: str
    worse: str
    total: str
    log: bool
    help: str


METRICS: dict[str, Metric] = {m.key: m for m in (
    Metric("error", "Accumulated error", "", "high", "max", True,
           "max |edited - original| of the node's value in a run of the whole edited graph"),
    Metric("isolated", "Isolated error", "", "high", "max", True,
           "max |edited - original| of the node run on the original's input values (a shadow run)"),
    Metric("sqnr", "SQNR", "dB", "low", "min", False,
           "10 log10(sum original^2 / sum (original - edited)^2) of the node's value"),
    Metric("time", "Time", "ms", "high", "sum", True,
           "median time of the node on the run device"),
    Metric("memory", "Peak memory", "bytes", "high", "sum", True,
           "bytes the node's outputs hold (on cuda: the peak allocation during the node)"),
)}
DATA = "data"   # the metric key of node data loaded from a file
MEASURED = tuple(METRICS)


def metric_info(key: str, unit: str = "") -> Metric:
    """The ``Metric`` of ``key``; loaded node data (``DATA``) is a high-is-worse value summed per frame
    unless the file said which metric it holds."""
    if key in METRICS:
        return METRICS[key]
    return Metric(key, "Loaded node data", unit, "high", "sum", False, "values read from a node-data file")


@dataclass
class NodeMetrics:
    """Per-node numbers keyed by node name: ``values[metric][name]`` (floats; ``inf``/``-inf``/``nan``
    allowed: an SQNR of identical values is ``inf``), ``units[metric]``, the totals per module path
    ``frames[metric][path]`` (``METRICS[m].total`` of the nodes inside, nested frames included),
    the device the run used, the repeats per timed node, notes for the user, and the colour
    stops a node-data file gave (``styles[metric]["gradient"|"thresholds"]``)."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    frames: dict[str, dict[str, float]] = field(default_factory=dict)
    device: str = "cpu"
    repeats: int = 0
    notes: list[str] = field(default_factory=list)
    styles: dict[str, dict] = field(default_factory=dict)   # per metric: Model Explorer gradient/thresholds read

    def metric(self, key: str) -> dict[str, float]:
        """The values of one metric by node name ({} when not measured)."""
        return self.values.get(key, {})

    def info(self, key: str) -> Metric:
        """The ``Metric`` of ``key`` (with this object's unit for loaded data)."""
        return metric_info(key, self.units.get(key, ""))

    def set_metric(self, key: str, values: dict[str, float], graph: torch.fx.Graph | None, unit: str | None = None) -> None:
        """Store ``values`` for ``key`` and, when ``graph`` is given, its module frame totals."""
        self.values[key] = dict(values)
        self.units[key] = metric_info(key).unit if unit is None else unit
        if graph is not None:
            self.frames[key] = frame_totals(graph, values, self.info(key).total)

    def text(self, key: str, value: float) -> str:
        """``value`` of metric ``key`` as the legend and tooltips write it."""
        return format_value(value, self.units.get(key, metric_info(key).unit))


def module_paths(node: torch.fx.Node) -> list[str]:
    """The module frames ``node`` sits in, outermost first (``[]`` at the top level)."""
    stack = node.meta.get(META_MODULE_STACK) or []
    return [str(entry[0]) for entry in stack if isinstance(entry, (tuple, list)) and entry and entry[0]]


def frame_totals(graph: torch.fx.Graph, values: dict[str, float], how: str) -> dict[str, float]:
    """Each module path's total of ``values`` over the nodes inside it (nested frames included):
    ``how`` is ``"sum"``, ``"max"`` or ``"min"``; NaN values are left out."""
    totals: dict[str, float] = {}
    pick = {"sum": lambda a, b: a + b, "max": max, "min": min}[how]
    for node in graph.nodes:
        value = values.get(node.name)
        if value is None or math.isnan(value):
            continue
        for path in module_paths(node):
            totals[path] = pick(totals[path], value) if path in totals else value
    return totals


def format_value(value: float, unit: str) -> str:
    """A short text for a value and its unit: ``1.25 ms``, ``3.1 KiB``, ``42.0 dB``, ``2.4e-07``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return ("+" if value > 0 else "-") + "inf" + (f" {unit}" if unit else "")
    if unit == "bytes":
        size = float(value)
        for name in ("bytes", "KiB", "MiB", "GiB"):
            if abs(size) < 1024 or name == "GiB":
                return f"{size:.0f} {name}" if name == "bytes" else f"{size:.1f} {name}"
            size /= 1024
    if unit == "ms":
        return f"{value:.3g} ms"
    if unit == "dB":
        return f"{value:.1f} dB"
    return f"{value:.3g}" + (f" {unit}" if unit else "")


def error_from_divergence(rows, graph: torch.fx.Graph | None = None) -> NodeMetrics:
    """A ``NodeMetrics`` holding the accumulated error (``"error"``) of a node-by-node run that
    already happened: ``CompareReport.nodes`` or ``DivergenceResult.nodes`` rows (``max_abs`` by
    name; rows without one, such as inserted nodes, are left out)."""
    values = {r.name: float(r.max_abs) for r in rows if getattr(r, "max_abs", None) is not None}
    result = NodeMetrics()
    result.set_metric("error", values, graph)
    return result
