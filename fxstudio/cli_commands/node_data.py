"""``fxstudio compare ... --node-data OUT.json [--metric M]``: one per-node metric of the comparison
written as Model Explorer node data (``fxstudio.core.overlays``), so the figures open there too."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fxstudio.core.errors import FxStudioError

METRIC_CHOICES = ("error", "isolated", "sqnr", "time", "memory")


def add_node_data_arguments(parser: argparse.ArgumentParser) -> None:
    """``--node-data`` and ``--metric`` of ``fxstudio compare``."""
    parser.add_argument("--node-data", default=None, metavar="OUT.json",
                        help="write one per-node metric as Model Explorer node data")
    parser.add_argument("--metric", default=None, choices=METRIC_CHOICES,
                        help="the metric --node-data writes: error (accumulated, default), isolated (each node on "
                             "the original's inputs), sqnr (dB), time (ms, median per node) or memory (bytes)")


def check_node_data_arguments(args: argparse.Namespace) -> None:
    """Refuse ``--metric`` without ``--node-data`` and an output folder that does not exist (exit 2),
    before anything runs."""
    if args.node_data is None:
        if args.metric is not None:
            raise FxStudioError("--metric chooses what --node-data writes: give --node-data OUT.json too.")
        return
    out = Path(args.node_data)
    if out.is_dir() or not out.parent.is_dir():
        raise FxStudioError(f"--node-data {out}: not a file in an existing folder.")


def write_node_data(args: argparse.Namespace, report, traced, edited, inputs: tuple, match: str, device: str) -> None:
    """Measure ``args.metric`` (the accumulated error comes from the report's node rows when it has
    them) and write it to ``args.node_data``; a line on stderr says what was written."""
    from fxstudio.core.overlays import compute_metrics, error_from_divergence, save_node_data

    if args.node_data is None:
        return
    metric = args.metric or "error"
    if metric == "error" and report.nodes:
        metrics = error_from_divergence(report.nodes, edited.graph)
    else:
        metrics = compute_metrics(traced, edited, inputs, metrics=[metric], device=device, dtype=args.dtype,
                                  match=match, seed=args.seed if args.seed is not None else 0)
    try:
        save_node_data(args.node_data, metrics, metric)
    except OSError as exc:
        raise FxStudioError(f"Cannot write --node-data {args.node_data}: {exc.strerror or exc}.") from None
    print(f"fxstudio: {metrics.info(metric).title.lower()} of {len(metrics.metric(metric)):,} nodes written to "
          f"{args.node_data} (Model Explorer node data)", file=sys.stderr)
