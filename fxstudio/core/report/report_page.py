"""What a report holds (``ReportInputs``) and the page made of it: a header with the model's name,
node counts, edit count and verdict, then the graph, the edits, the compare table, the first
divergence, the per-node plot and the diff of the generated code, each a section with an anchor."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch.fx

from fxstudio.core.compare import GraphDiffer
from fxstudio.core.errors import FxStudioError
from fxstudio.core.fileio import atomic_write_text
from fxstudio.core.report.graph_svg import graph_svg, legend
from fxstudio.core.report.markup import esc, page, section
from fxstudio.core.report.plot_svg import node_plot
from fxstudio.core.report.sections import code_diff, compare_section, divergence_section, edits_section, node_table, num


@dataclass
class ReportInputs:
    """Everything a report shows. ``original`` is the graph as traced, ``edited`` the graph after
    ``edits`` (the script's edit dicts; ``labels`` the window's names for them, when known);
    ``compare`` a ``CompareReport`` of the two, or None with ``compare_error`` saying why."""

    title: str
    original: torch.fx.GraphModule
    edited: torch.fx.GraphModule
    edits: list[dict] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    script_name: str = ""
    compare: object | None = None
    compare_error: str = ""
    created: str = ""


def node_status(inputs: ReportInputs) -> dict[str, str]:
    """Edited node name → ``added`` / ``changed`` by the edits, ``diverged`` / ``first`` in the
    comparison (the later wins: a changed node that diverges is outlined as diverging)."""
    edited_nodes = list(inputs.edited.graph.nodes)
    has_ids = any("fxs_id" in n.meta for n in edited_nodes)
    match = "id" if has_ids else "name"
    status: dict[str, str] = {}
    try:
        diff = GraphDiffer(inputs.original, match=match).diff(inputs.edited)
    except Exception:  # noqa: BLE001 - a graph the differ cannot read: no outlines, the rest still shows
        diff = None
    if diff is not None:
        for node in edited_nodes:
            key = node.meta.get("fxs_id") if has_ids else node.name
            if key in diff.added:
                status[node.name] = "added"
            elif key in diff.changed:
                status[node.name] = "changed"
    report = inputs.compare
    if report is not None:
        for row in report.nodes:
            if row.status in ("diverged", "error"):
                status[row.name] = "diverged"
        if report.first_divergence is not None:
            status[report.first_divergence.name] = "first"
        if report.error is not None and report.error.graph == "edited":
            status[report.error.node_name] = "first"
    return status


def verdict(inputs: ReportInputs) -> tuple[str, str]:
    """(css class, sentence): good when every output is within tolerance, bad when a graph raised."""
    report = inputs.compare
    if report is None:
        return "warn", "Not compared" + (f": {inputs.compare_error}" if inputs.compare_error else "")
    if report.error is not None:
        return "bad", f"The {report.error.graph} graph raises at node {report.error.node_name}"
    if report.all_close:
        return "good", f"Outputs within tolerance (rtol {report.rtol:g}, atol {report.atol:g})"
    worst = max((o.max_abs for o in report.outputs if o.max_abs is not None), default=None)
    where = f"; first divergence at node {report.first_divergence.name}" if report.first_divergence else ""
    return "warn", f"Outputs differ: max abs {num(worst)}{where}"


def _header(inputs: ReportInputs) -> str:
    css, sentence = verdict(inputs)
    n_orig, n_edit = len(inputs.original.graph.nodes), len(inputs.edited.graph.nodes)
    facts = [("nodes (original)", f"{n_orig:,}"), ("nodes (edited)", f"{n_edit:,}"), ("edits", f"{len(inputs.edits):,}")]
    if inputs.compare is not None:
        facts.append(("device", inputs.compare.device))
    items = "".join(f"<li>{esc(k)} <b>{esc(v)}</b></li>" for k, v in facts)
    created = inputs.created or datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (f"<header><h1>{esc(inputs.title)}</h1><p class=\"meta\">fxstudio report, {esc(created)}"
            + (f" · edits from <code>{esc(inputs.script_name)}</code>" if inputs.script_name else "")
            + f"</p><ul class=\"facts\">{items}</ul><div class=\"verdict {css}\" id=\"verdict\">{esc(sentence)}</div>"
            "</header>")


def render_report(inputs: ReportInputs) -> str:
    """The report as one self-contained HTML document (no request leaves the file)."""
    status = node_status(inputs)
    svg, drawn = graph_svg(inputs.edited, status)
    zoom = ('<div class="zoom"><button type="button" data-zoom="out">−</button><button type="button" data-zoom="in">+'
            '</button><button type="button" data-zoom="fit">Fit width</button><button type="button" data-zoom="one">'
            '100%</button> <span class="note">Ctrl+wheel zooms, drag pans</span></div>')
    graph_body = (f"<p>The edited graph, {drawn:,} cards (weights used by one op are rows of its card).</p>"
                  + legend(status) + zoom + f'<div class="graph-box">{svg}</div>')
    report = inputs.compare
    first = report.first_divergence.name if report is not None and report.first_divergence is not None else None
    plot = node_plot(report.nodes, first) if report is not None and report.per_node else ""
    plot_body = (plot and f"<p>Each node's tolerance score along the graph's order (log scale; the dashed line "
                 "is the tolerance, points above it diverge; hover a point for its node).</p>" + plot) \
        or '<p class="note">No node-by-node comparison to plot.</p>'
    try:
        diff = code_diff(inputs.original.code, inputs.edited.code)
    except Exception as exc:  # noqa: BLE001 - code that cannot be generated is said, not fatal
        diff = f'<p class="note">The generated code is not available: {esc(type(exc).__name__)}: {esc(exc)}</p>'
    parts = [("graph", "Graph", graph_body), ("edits", "Edits", edits_section(inputs.edits, inputs.labels, inputs.script_name)),
             ("compare", "Compare", compare_section(report, inputs.compare_error)),
             ("divergence", "First divergence", divergence_section(report, inputs.edited)),
             ("per-node", "Per-node error", plot_body + node_table(report)),
             ("code-diff", "Generated code diff", diff)]
    return page(f"fxstudio report: {inputs.title}", _header(inputs), [(a, t) for a, t, _ in parts],
                [section(a, t, body) for a, t, body in parts])


def save_report(path: str | os.PathLike, inputs: ReportInputs) -> Path:
    """Render and write the report to ``path`` atomically; an ``FxStudioError`` when it cannot be written."""
    text = render_report(inputs)
    try:
        return atomic_write_text(path, text)
    except OSError as exc:
        raise FxStudioError(f"Cannot write the report {path}: {exc.strerror or exc}.") from None
