"""The report's sections below the graph: the edits, the compare table, the first divergence, the
per-node table and the diff of the generated code. Each returns HTML with every model text escaped."""

from __future__ import annotations

import difflib
import json
import math

import torch.fx

from fxstudio.core.node_text import META_SOURCE
from fxstudio.core.report.markup import esc, table

MAX_DIFF_LINES = 4000     # a diff longer than this is cut (the note says so)
MAX_NODE_ROWS = 3000      # rows of the per-node table


def num(x: float | None, fmt: str = ".3g") -> str:
    """A figure as the compare table writes it: ``-`` for none, ``inf``/``nan`` as such."""
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return format(x, fmt)


def edits_section(edits: list[dict], labels: list[str], script_name: str) -> str:
    """The edits in order: what each did (the window's label where known) and its fields."""
    if not edits:
        return '<p class="note">No edits: the report shows the model as loaded.</p>'
    rows = []
    for i, edit in enumerate(edits):
        fields = {k: v for k, v in edit.items() if k != "op"}
        label = labels[i] if i < len(labels) else ""
        rows.append([str(i + 1), f"<code>{esc(edit.get('op', '?'))}</code>", esc(label),
                     f"<code>{esc(json.dumps(fields, ensure_ascii=False))}</code>"])
    where = f' from <code>{esc(script_name)}</code>' if script_name else ""
    script = json.dumps({"format": "fxstudio.edits/1", "edits": edits}, indent=1, ensure_ascii=False)
    return (f"<p>{len(edits)} edit{'s' if len(edits) != 1 else ''}{where}, applied in this order.</p>"
            + table(["#", "op", "edit", "fields"], rows, frozenset({0}))
            + f"<details><summary>The edit script (replays with <code>fxstudio apply</code>)</summary>"
              f"<pre>{esc(script)}</pre></details>")


def compare_section(report, compare_error: str) -> str:
    """The outputs table, the trace check, the timings and the notes of a ``CompareReport``."""
    if report is None:
        return f'<p class="note">{esc(compare_error or "The models were not compared.")}</p>'
    parts = [f"<p>Device <code>{esc(report.device)}</code>, dtype <code>{esc(report.dtype or 'as loaded')}</code>, "
             f"rtol <code>{report.rtol:g}</code>, atol <code>{report.atol:g}</code>.</p>"]
    if report.outputs:
        rows = [[f"<code>{esc(o.path)}</code>", esc("×".join(map(str, o.shape)) if o.shape is not None else "-"),
                 esc(o.dtype or "-"), num(o.max_abs), num(o.max_rel), num(o.cosine, ".6f"),
                 '<span class="yes">yes</span>' if o.allclose else '<span class="no">NO</span>', esc(o.note)]
                for o in report.outputs]
        parts.append(table(["output", "shape", "dtype", "max abs", "max rel", "cosine", "allclose", "note"], rows,
                           frozenset({3, 4, 5})))
    elif report.error is not None:
        parts.append(f'<p class="no">No outputs to compare: the {esc(report.error.graph)} graph raised at node '
                     f'<code>{esc(report.error.node_name)}</code> (<a href="#divergence">below</a>).</p>')
    if report.trace_outputs:
        off = [o for o in report.trace_outputs if o.max_abs != 0.0]
        parts.append("<p>" + (f"Tracing changed the outputs: traced graph vs module as loaded, max abs "
                              f"{num(max((o.max_abs or 0.0) for o in off))}." if off else
                              "Tracing changed nothing: the traced graph matches the module as loaded exactly.")
                     + "</p>")
    if report.timings_ms:
        rows = [[esc(k), f"{v:.3f}" if math.isfinite(v) else "-"] for k, v in report.timings_ms.items()]
        parts.append(table(["run", "time (median, ms)"], rows, frozenset({1})))
    if report.notes:
        parts.append("<ul class=\"note\">" + "".join(f"<li>{esc(n)}</li>" for n in report.notes) + "</ul>")
    return "\n".join(parts)


def _source_of(gm: torch.fx.GraphModule | None, name: str) -> str:
    if gm is None:
        return ""
    for node in gm.graph.nodes:
        if node.name == name:
            src = node.meta.get(META_SOURCE)
            if isinstance(src, dict) and src.get("file"):
                # the file's name, not its folder: a report is attached to issues, a home folder is private
                file_name = str(src.get("file")).replace("\\", "/").rpartition("/")[2]
                return f"{file_name}:{src.get('line')}: {str(src.get('code', '')).strip()}"
    return ""


def divergence_section(report, edited: torch.fx.GraphModule) -> str:
    """The first node beyond tolerance, or the failure that stopped the run, with its source line."""
    if report is None:
        return '<p class="note">Not compared.</p>'
    parts = []
    if report.error is not None:
        e = report.error
        parts.append(f'<p class="no">The {esc(e.graph)} graph {"ran out of memory" if e.out_of_memory else "raised"} '
                     f"at node <code>{esc(e.node_name)}</code> (<code>{esc(e.op)} {esc(e.target)}</code>).</p>")
        source = (_source_of(edited, e.node_name) if e.graph == "edited" else "") or e.source
        if source:
            parts.append(f"<p>Source: <code>{esc(source)}</code></p>")
        parts.append(f"<pre>{esc(e.message)}</pre>")
    fd = report.first_divergence
    if fd is not None:
        rows = [["node", f"<code>{esc(fd.name)}</code>"], ["op", f"<code>{esc(fd.op)}</code>"],
                ["target", f"<code>{esc(fd.target)}</code>"], ["counterpart", f"<code>{esc(fd.counterpart or '-')}</code>"],
                ["status", esc(fd.status)], ["max abs", num(fd.max_abs)], ["score (≤ 1 is within tolerance)", num(fd.score)]]
        if fd.note:
            rows.append(["note", esc(fd.note)])
        source = _source_of(edited, fd.name)
        if source:
            rows.append(["source", f"<code>{esc(source)}</code>"])
        parts.append(table(["", ""], rows))
        diverged = sum(1 for n in report.nodes if n.status == "diverged")
        parts.append(f"<p>{diverged} of {len(report.nodes)} nodes diverge beyond tolerance.</p>")
    elif report.error is None:
        if report.per_node:
            parts.append(f'<p class="yes">No node diverges beyond tolerance ({len(report.nodes)} nodes compared).</p>')
        else:
            parts.append('<p class="note">The node-by-node comparison was not run.</p>')
    return "\n".join(parts)


def node_table(report) -> str:
    """Every compared node's row (status, max abs, score), in a collapsed ``<details>``."""
    if report is None or not report.nodes:
        return ""
    rows = [[str(n.index), f"<code>{esc(n.name)}</code>", f"<code>{esc(n.op)}</code>", f"<code>{esc(n.target)}</code>",
             esc(n.status + (" (shared)" if n.shared else "")), num(n.max_abs), num(n.score), esc(n.note)]
            for n in report.nodes[:MAX_NODE_ROWS]]
    cut = (f'<p class="note">The first {MAX_NODE_ROWS:,} of {len(report.nodes):,} nodes.</p>'
           if len(report.nodes) > MAX_NODE_ROWS else "")
    return ("<details><summary>Every node's comparison</summary>"
            + table(["#", "node", "op", "target", "status", "max abs", "score", "note"], rows, frozenset({0, 5, 6}))
            + cut + "</details>")


def code_diff(original_code: str, edited_code: str) -> str:
    """A unified diff of the generated code (original → edited) as a table of coloured lines."""
    lines = list(difflib.unified_diff(original_code.splitlines(), edited_code.splitlines(),
                                      "original", "edited", n=3, lineterm=""))
    if not lines:
        return '<p class="note">The generated code is the same.</p>'
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    cut = ""
    if len(lines) > MAX_DIFF_LINES:
        cut = f'<p class="note">The first {MAX_DIFF_LINES:,} of {len(lines):,} diff lines.</p>'
        lines = lines[:MAX_DIFF_LINES]
    rows, old_no, new_no = [], 0, 0
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            head = line.split()
            old_no = int(head[1][1:].split(",")[0]) if len(head) > 2 else 0
            new_no = int(head[2][1:].split(",")[0]) if len(head) > 2 else 0
            rows.append(f'<tr class="hunk"><td class="ln"></td><td class="ln"></td><td>{esc(line)}</td></tr>')
            continue
        kind, a, b = "ctx", str(old_no), str(new_no)
        if line.startswith("+"):
            kind, a, b = "add", "", str(new_no)
            new_no += 1
        elif line.startswith("-"):
            kind, a, b = "del", str(old_no), ""
            old_no += 1
        else:
            old_no += 1
            new_no += 1
        rows.append(f'<tr class="{kind}"><td class="ln">{a}</td><td class="ln">{b}</td><td>{esc(line)}</td></tr>')
    return (f"<p>{added} line{'s' if added != 1 else ''} added, {removed} removed in the generated "
            f"<code>forward</code>.</p>{cut}<div class=\"diff\"><table>{''.join(rows)}</table></div>")
