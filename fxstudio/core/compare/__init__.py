"""Running the original and the edited module side by side: inputs, metrics, the per-node
divergence walk, the fused comparison kernel and the structural graph diff
(``docs/notes/run-compare.md``). Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.compare.side_by_side import CompareReport, RunCancelled, available_devices, check_device, compare_models
from fxstudio.core.compare.divergence import DivergenceResult, run_divergence
from fxstudio.core.compare.fused_diff import warm_up as warm_up_fused_kernel
from fxstudio.core.compare.graph_diff import GraphDiff, GraphDiffer, graph_diff, match_key
from fxstudio.core.compare.node_pairing import GraphPairing, pair_graphs, pair_items
from fxstudio.core.compare.run_inputs import InputSpec, inputs_for_run, load_inputs_file, module_for_run, parse_input_spec, parse_run_dtype, random_inputs, specs_from_inputs

__all__ = ["CompareReport", "DivergenceResult", "GraphDiff", "GraphDiffer", "GraphPairing", "InputSpec", "RunCancelled", "available_devices", "check_device", "compare_models", "graph_diff", "inputs_for_run", "load_inputs_file", "match_key", "module_for_run", "pair_graphs", "pair_items", "parse_input_spec", "parse_run_dtype", "random_inputs", "run_divergence", "specs_from_inputs", "warm_up_fused_kernel"]
