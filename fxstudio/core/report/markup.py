"""The report page's frame: escaping, the stylesheet, the few lines of pan/zoom script and the
Content-Security-Policy that lets nothing but that script run and nothing load from anywhere.

The page is one file: styles and script inline, the graph and the plot inline SVG, no fonts, images
or links to fetch. The policy allows exactly the script below (by its hash) and inline styles, so a
text from the model that slipped past escaping still could neither run nor fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def esc(value: object) -> str:
    """``value`` as text safe in HTML/SVG content and in double- or single-quoted attributes."""
    return html.escape(_CONTROL.sub("\ufffd", str(value)), quote=True)


CSS = """
:root { --fg:#1f2937; --muted:#5f6770; --line:#d5dae0; --bg:#ffffff; --panel:#f4f5f7; --good:#2e8b57;
  --warn:#c46a1b; --bad:#c0392b; --accent:#1f6feb; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  color:var(--fg); background:var(--bg); }
header { padding:20px 32px 16px; background:var(--panel); border-bottom:1px solid var(--line); }
header h1 { margin:0 0 4px; font-size:22px; word-break:break-all; }
header .meta { color:var(--muted); margin:0; }
.facts { display:flex; flex-wrap:wrap; gap:10px; margin:12px 0 0; padding:0; list-style:none; }
.facts li { background:var(--bg); border:1px solid var(--line); border-radius:6px; padding:4px 10px; }
.facts b { font-variant-numeric:tabular-nums; }
.verdict { display:inline-block; margin-top:12px; padding:6px 12px; border-radius:6px; font-weight:600; color:#fff; }
.verdict.good { background:var(--good); } .verdict.warn { background:var(--warn); } .verdict.bad { background:var(--bad); }
nav { padding:8px 32px; border-bottom:1px solid var(--line); position:sticky; top:0; background:var(--bg); z-index:2; }
nav a { margin-right:18px; color:var(--accent); text-decoration:none; }
main { padding:8px 32px 48px; max-width:1400px; }
section { margin-top:28px; }
h2 { font-size:18px; border-bottom:1px solid var(--line); padding-bottom:4px; }
h2 a.anchor { color:var(--muted); text-decoration:none; margin-left:6px; font-weight:400; }
table { border-collapse:collapse; margin:8px 0; font-size:13px; }
th, td { border:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:var(--panel); }
td.num { text-align:right; font-variant-numeric:tabular-nums; font-family:ui-monospace,Menlo,Consolas,monospace; }
code, pre, .mono { font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Liberation Mono",monospace; font-size:12.5px; }
pre { background:var(--panel); border:1px solid var(--line); border-radius:6px; padding:10px; overflow:auto;
  white-space:pre-wrap; word-break:break-word; }
.yes { color:var(--good); font-weight:600; } .no { color:var(--bad); font-weight:600; }
.note { color:var(--muted); }
.graph-box { border:1px solid var(--line); border-radius:6px; background:#f4f5f7; overflow:auto; max-height:80vh;
  width:fit-content; max-width:100%; }
.graph-box svg { display:block; }
.graph-box.dragging { cursor:grabbing; }
svg.graph text { font:11px ui-monospace,Menlo,Consolas,monospace; fill:#22262b; }
svg.graph text.title { font-weight:600; fill:#fff; }
svg.graph text.tgt, svg.graph text.row { fill:#5f6770; }
svg.graph text.const { fill:#8a4b0f; }
svg.graph .edge { fill:none; stroke:#6d7580; stroke-width:1.2; }
svg.graph .frame rect { fill:rgba(90,100,114,0.05); stroke:#aab2bc; stroke-dasharray:4 3; }
svg.graph .frame text { fill:#5a6472; font-size:11px; }
svg.graph .node .body { fill:#fff; stroke:#9aa3ae; }
svg.graph .node.dead .body { fill:#f1f2f4; stroke-dasharray:4 3; }
svg.graph .node.added .body, .swatch.added { stroke:#2e8b57; stroke-width:3; }
svg.graph .node.changed .body, .swatch.changed { stroke:#e0a010; stroke-width:3; }
svg.graph .node.diverged .body, .swatch.diverged { stroke:#d6602a; stroke-width:3; }
svg.graph .node.first .body, .swatch.first { stroke:#c81e1e; stroke-width:4; }
.legend { list-style:none; padding:0; display:flex; gap:18px; margin:6px 0; }
.swatch { display:inline-block; width:16px; height:10px; border:3px solid; border-radius:3px; margin-right:6px;
  vertical-align:middle; }
.swatch.added { border-color:#2e8b57; } .swatch.changed { border-color:#e0a010; }
.swatch.diverged { border-color:#d6602a; } .swatch.first { border-color:#c81e1e; }
.zoom { display:none; margin:4px 0; }
html.js .zoom { display:block; }
.zoom button { font:inherit; padding:2px 10px; margin-right:4px; border:1px solid var(--line); border-radius:4px;
  background:var(--bg); cursor:pointer; }
svg.plot text { font:11px system-ui,sans-serif; fill:#5f6770; }
svg.plot .axis { stroke:#9aa3ae; } svg.plot .grid { stroke:#e5e8ec; } svg.plot .tol { stroke:#777; stroke-dasharray:5 4; }
svg.plot .p-equal { fill:#969fa9; } svg.plot .p-close { fill:#2e8b57; } svg.plot .p-diverged { fill:#d6602a; }
svg.plot .p-first { fill:#c81e1e; stroke:#000; } svg.plot .p-error { fill:#000; }
.diff { border:1px solid var(--line); border-radius:6px; overflow:auto; }
.diff table { margin:0; border:none; width:100%; }
.diff td { border:none; padding:0 8px; white-space:pre-wrap; word-break:break-word;
  font-family:ui-monospace,Menlo,Consolas,monospace; font-size:12.5px; }
.diff td.ln { color:#8b949e; text-align:right; user-select:none; width:1%; white-space:nowrap; }
.diff tr.add td { background:#e6ffec; } .diff tr.del td { background:#ffebe9; }
.diff tr.hunk td { background:#ddf4ff; color:#57606a; }
details summary { cursor:pointer; color:var(--accent); }
@media print { nav { position:static; } .graph-box { max-height:none; overflow:visible; } }
"""

JS = """(function () {
  document.documentElement.classList.add('js');
  document.querySelectorAll('.graph-box').forEach(function (box) {
    var svg = box.querySelector('svg');
    if (!svg) { return; }
    var w0 = +svg.getAttribute('width'), h0 = +svg.getAttribute('height'), k = 1;
    function zoom(nk, cx, cy) {
      nk = Math.max(0.05, Math.min(4, nk));
      var fx = (box.scrollLeft + cx) / k, fy = (box.scrollTop + cy) / k;
      k = nk;
      svg.setAttribute('width', Math.round(w0 * k));
      svg.setAttribute('height', Math.round(h0 * k));
      box.scrollLeft = fx * k - cx; box.scrollTop = fy * k - cy;
    }
    var bar = box.previousElementSibling;
    bar.querySelector('[data-zoom=in]').onclick = function () { zoom(k * 1.25, box.clientWidth / 2, 0); };
    bar.querySelector('[data-zoom=out]').onclick = function () { zoom(k / 1.25, box.clientWidth / 2, 0); };
    bar.querySelector('[data-zoom=fit]').onclick = function () { zoom(Math.min(1, box.clientWidth / w0), 0, 0); };
    bar.querySelector('[data-zoom=one]').onclick = function () { zoom(1, 0, 0); };
    box.addEventListener('wheel', function (e) {
      if (!e.ctrlKey) { return; }
      e.preventDefault();
      var r = box.getBoundingClientRect();
      zoom(k * (e.deltaY < 0 ? 1.15 : 1 / 1.15), e.clientX - r.left, e.clientY - r.top);
    }, {passive: false});
    var drag = null;
    box.addEventListener('pointerdown', function (e) {
      if (e.target === box) { return; }  // the scroll bars
      drag = {x: e.clientX, y: e.clientY, l: box.scrollLeft, t: box.scrollTop};
      box.classList.add('dragging');
    });
    window.addEventListener('pointermove', function (e) {
      if (drag) { box.scrollLeft = drag.l - (e.clientX - drag.x); box.scrollTop = drag.t - (e.clientY - drag.y); }
    });
    window.addEventListener('pointerup', function () { drag = null; box.classList.remove('dragging'); });
  });
})();"""


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       f"script-src 'sha256-{_sha256(JS)}'; base-uri 'none'; form-action 'none'")


def page(title: str, header: str, nav: list[tuple[str, str]], sections: list[str]) -> str:
    """The whole HTML document: ``header`` and ``sections`` are HTML already escaped; ``nav`` is
    (anchor, label) pairs."""
    links = "".join(f'<a href="#{esc(anchor)}">{esc(label)}</a>' for anchor, label in nav)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="generator" content="fxstudio report">\n'
            '<link rel="icon" href="data:,">\n'
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            f"{header}\n<nav>{links}</nav>\n<main>\n" + "\n".join(sections)
            + f"\n</main>\n<script>{JS}</script>\n</body>\n</html>\n")


def section(anchor: str, title: str, body: str) -> str:
    """One ``<section>`` with its heading and a ``#anchor`` link to itself."""
    return (f'<section id="{esc(anchor)}"><h2>{esc(title)}<a class="anchor" href="#{esc(anchor)}">#</a></h2>\n'
            f"{body}</section>")


def table(headers: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset()) -> str:
    """An HTML table; cells are HTML already escaped, columns in ``numeric`` right-aligned."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    head = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table>{head}<tbody>{body}</tbody></table>"
