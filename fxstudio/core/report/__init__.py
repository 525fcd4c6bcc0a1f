"""One self-contained HTML report of a model and its edits (``fxstudio report``, File > Save Report):
the graph as SVG, the edits, the compare table, the first divergence, the per-node plot and the
diff of the generated code, in one file that opens offline and makes no request.
Everything else in this package is private."""

from __future__ import annotations

from fxstudio.core.report.comparing import compare_for_report
from fxstudio.core.report.report_page import ReportInputs, node_status, render_report, save_report, verdict

__all__ = ["ReportInputs", "compare_for_report", "node_status", "render_report", "save_report", "verdict"]
