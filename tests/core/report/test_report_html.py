"""The HTML report of a real model and real edits, as a browser shows it: headless Chromium loads the
file with every request recorded, with scripts on and off."""

from __future__ import annotations

import json
import re

import pytest

from fxstudio.core.document import Document, replay_into
from fxstudio.core.loading import load_model
from fxstudio.core.report import ReportInputs, compare_for_report, render_report, save_report
from fxstudio.resources import EXAMPLES_DIR
from tests.core.report.chromium_page import CHROMIUM, SKIP_REASON, Chromium, png_colours

EDITS = [
    {"op": "set_arg", "node": "add_1", "key": 1, "value": "%layer1_0_relu"},            # rewire the skip
    {"op": "insert", "after": "layer2_0_relu_1", "kind": "call_function", "target": "torch.sigmoid",
     "args": "(%layer2_0_relu_1,)", "name": "squash"},
]


def _inputs(edits: list[dict], *, compare: bool = True) -> ReportInputs:
    loaded = load_model(EXAMPLES_DIR / "residual_cnn.py")
    doc = Document(loaded)
    replay_into(doc, edits, "stop")
    edited = doc.module()
    report, why = (compare_for_report(loaded.module, doc.original, edited, tuple(loaded.example_inputs))
                   if compare else (None, "not run"))
    return ReportInputs(title=loaded.display_name, original=doc.original, edited=edited, edits=edits,
                        labels=list(doc.history[:doc.history_index]), script_name="edits.json",
                        compare=report, compare_error=why)


@pytest.fixture(scope="module")
def cnn_report():
    inputs = _inputs(EDITS)
    return inputs, render_report(inputs)


def test_the_page_holds_every_section_with_the_model_s_figures(cnn_report):
    inputs, page = cnn_report
    for anchor in ("graph", "edits", "compare", "divergence", "per-node", "code-diff"):
        assert f'<section id="{anchor}">' in page and f'href="#{anchor}"' in page
    assert "residual_cnn.py::ResidualCNN" in page
    n_orig, n_edit = len(inputs.original.graph.nodes), len(inputs.edited.graph.nodes)
    assert n_edit == n_orig + 1
    assert f"nodes (original) <b>{n_orig}</b>" in page and f"nodes (edited) <b>{n_edit}</b>" in page
    assert "edits <b>2</b>" in page
    # the compare found the rewire: the first divergence is add_1, named in the verdict and its section
    report = inputs.compare
    assert report.first_divergence is not None and report.first_divergence.name == "add_1"
    assert "first divergence at node add_1" in page
    # the inserted node is outlined as added, the first divergence as such
    assert re.search(r'<g class="node added dead" data-name="squash">', page)   # nothing uses it yet
    assert re.search(r'<g class="node first" data-name="add_1">', page)
    # the code diff carries the rewired line and the inserted one
    assert re.search(r'<tr class="add">.*squash = torch\.sigmoid\(layer2_0_relu_1\)', page)
    assert re.search(r'<tr class="del">.*add_1 = layer1_1_bn2 \+ layer1_0_relu_1', page)
    assert re.search(r'<tr class="add">.*add_1 = layer1_1_bn2 \+ layer1_0_relu;', page)
    # the edits table and the script, which replays as it stands
    assert page.count("<code>set_arg</code>") == 1 and page.count("<code>insert</code>") == 1
    script = re.search(r"<pre>(\{\s*&quot;format&quot;.*?)</pre>", page, re.S).group(1)
    assert json.loads(script.replace("&quot;", '"').replace("&#x27;", "'"))["edits"] == EDITS


def test_without_edits_or_a_run_the_report_says_so():
    page = render_report(_inputs([], compare=False))
    assert "No edits: the report shows the model as loaded." in page
    assert "The generated code is the same." in page
    assert 'class="verdict warn"' in page and "Not compared: not run" in page


def test_written_atomically_over_an_older_report(tmp_path, cnn_report):
    inputs, page = cnn_report
    out = tmp_path / "report.html"
    out.write_text("old report")
    (tmp_path / "old.html").hardlink_to(out)   # the old file's other name keeps its bytes only if replaced
    save_report(out, inputs)
    assert out.read_text() == page.replace(_created(page), _created(out.read_text()))
    assert (tmp_path / "old.html").read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.html", "report.html"]   # no temp file left


def _created(page: str) -> str:
    return re.search(r"fxstudio report, ([^<·]+)", page).group(1)


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_chromium_renders_it_with_no_request_but_the_file(tmp_path, cnn_report):
    inputs, page = cnn_report
    out = tmp_path / "report.html"
    out.write_text(page)
    cards = len(re.findall(r'<g class="node', page))
    assert cards > 40
    with Chromium() as browser:
        browser.open(out)
        assert browser.requested_urls() == [out.resolve().as_uri()]
        assert browser.console_errors() == []   # the script ran under the page's own policy
        assert browser.evaluate("document.querySelectorAll('svg.graph g.node').length") == cards
        assert browser.evaluate("document.querySelectorAll('svg.graph polyline.edge').length") >= cards - 1
        assert browser.evaluate("document.querySelectorAll('svg.plot circle').length") == len(inputs.compare.nodes) - 1
        assert browser.evaluate("document.getElementById('verdict').textContent").startswith("Outputs differ")
        # the graph renders (non-blank) and zooms with the buttons the script wires up
        assert browser.evaluate("document.querySelector('svg.graph').getBoundingClientRect().height") > 500
        assert png_colours(browser.screenshot(tmp_path / "top.png", scale=0.25)) > 20
        width = browser.evaluate("document.querySelector('svg.graph').getBoundingClientRect().width")
        browser.evaluate("document.querySelector('[data-zoom=in]').click()")
        zoomed = browser.evaluate("document.querySelector('svg.graph').getBoundingClientRect().width")
        assert zoomed == pytest.approx(width * 1.25, abs=2)


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_it_reads_with_scripts_off(tmp_path, cnn_report):
    _, page = cnn_report
    out = tmp_path / "report.html"
    out.write_text(page)
    with Chromium(javascript=False) as browser:
        browser.open(out)
        assert browser.requested_urls() == [out.resolve().as_uri()]
        assert browser.evaluate("document.documentElement.className") == ""   # the page's script did not run
        assert browser.evaluate("getComputedStyle(document.querySelector('.zoom')).display") == "none"
        assert browser.evaluate("document.querySelectorAll('svg.graph g.node').length") == len(
            re.findall(r'<g class="node', page))
        assert browser.evaluate("document.querySelector('.diff tr.add') !== null")
        assert png_colours(browser.screenshot(tmp_path / "nojs.png", scale=0.25)) > 20


def test_an_exported_program_s_weights_are_rows_of_their_cards(tmp_path):
    from tests.model_files import save_small_cnn_pt2

    loaded = load_model(save_small_cnn_pt2(tmp_path / "cnn.pt2"))
    doc = Document(loaded)
    replay_into(doc, [{"op": "set_arg", "node": "mul", "key": 1, "value": "3"}], "stop")
    edited = doc.module()
    report, _ = compare_for_report(loaded.module, doc.original, edited, tuple(loaded.example_inputs))
    page = render_report(ReportInputs(title=loaded.display_name, original=doc.original, edited=edited,
                                      edits=[{"op": "set_arg", "node": "mul", "key": 1, "value": "3"}],
                                      compare=report))
    drawn = re.findall(r'<g class="node[^"]*" data-name="([^"]+)"', page)
    weights = [n.name for n in edited.graph.nodes if n.op == "get_attr"]
    assert len(weights) == 8 and not set(weights) & set(drawn)   # no card of their own...
    assert "_guards_fn" not in drawn and "conv2d" in drawn
    assert '<text class="row"' in page and "weight 8×3×3×3" in page and "running_mean 8" in page   # ...rows
    assert re.search(r'<g class="node first" data-name="mul">', page)
    assert "first divergence at node mul" in page


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_node_names_and_edit_values_that_are_markup_stay_text(tmp_path):
    hostile = "<img src=x onerror=\"window.__pwned='name'\">"
    inputs = _inputs([], compare=False)
    node = next(n for n in inputs.edited.graph.nodes if n.name == "add")
    node.name = hostile   # past every check the app makes: the drawing and the tables must still escape it
    inputs.edits = [{"op": "set_arg", "node": "mul", "key": 0, "value": "'<script>window.__pwned=1</script>'"}]
    inputs.labels = ["Set <b onmouseover=alert(1)>"]
    inputs.title = "<script>window.__pwned='title'</script>"
    page = render_report(inputs)
    assert "<img" not in page and "<script>window" not in page and "<b " not in page
    out = tmp_path / "hostile.html"
    out.write_text(page)
    with Chromium() as browser:
        browser.open(out)
        assert browser.requested_urls() == [out.resolve().as_uri()]
        assert browser.evaluate("typeof window.__pwned") == "undefined" and browser.evaluate("document.images.length") == 0
        assert browser.evaluate("document.querySelector('h1').textContent") == inputs.title
        names = browser.evaluate("[...document.querySelectorAll('svg.graph g.node')].map(g => g.dataset.name)")
        assert hostile in names
        text = browser.evaluate("document.body.innerText")
        assert "'<script>window.__pwned=1</script>'" in text and "Set <b onmouseover=alert(1)>" in text
