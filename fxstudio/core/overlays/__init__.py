"""Per-node numbers for the canvas: isolated and accumulated error, SQNR, time and peak memory, and Model Explorer node-data JSON. Everything else in this package is private.

``compute_metrics(original, edited, inputs, metrics=..., device=..., repeats=...)`` runs both graphs
and returns a ``NodeMetrics`` (values by metric and node name, units, module-frame totals);
``error_from_divergence(rows)`` takes the accumulated error of a run that already happened
(``CompareReport.nodes``). ``save_node_data`` / ``load_node_data`` write and read Model Explorer's
node-data JSON (``node_data.py`` cites the format); a file read is data only, checked, never run.
"""

from fxstudio.core.overlays.node_data import (FORMAT, GRADIENT_HIGH_WORSE, GRADIENT_LOW_WORSE, gradient_for,
                                              load_node_data, parse_node_data, save_node_data, to_node_data)
from fxstudio.core.overlays.node_metrics import (DATA, MEASURED, METRICS, Metric, NodeMetrics, error_from_divergence,
                                                 format_value, frame_totals, metric_info, module_paths)
from fxstudio.core.overlays.shadow_run import compute_metrics, difference, output_bytes, sqnr_db

__all__ = ["DATA", "FORMAT", "GRADIENT_HIGH_WORSE", "GRADIENT_LOW_WORSE", "MEASURED", "METRICS", "Metric", "NodeMetrics",
           "compute_metrics", "difference", "error_from_divergence", "format_value", "frame_totals", "gradient_for",
           "load_node_data", "metric_info", "module_paths", "output_bytes", "parse_node_data", "save_node_data",
           "sqnr_db", "to_node_data"]
