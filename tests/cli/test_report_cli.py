"""`fxstudio report MODEL [EDITS.json] -o report.html` as a user runs it: the real CLI in a subprocess,
the report opened in headless Chromium; hostile text from the model, its source and its exceptions,
and the script's file name, shown as text and never run; bad input as one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fxstudio.cli import main
from tests.core.report.chromium_page import CHROMIUM, SKIP_REASON, Chromium

HOSTILE_MODEL = '''
import torch
from torch import nn


def boom(x):
    raise ValueError("<script>window.__pwned = 'exception'</script><img src=x onerror=\\"window.__pwned='img'\\">")


class Net(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        z = torch.sigmoid(y)  # </code><script>window.__pwned = 'source'</script>
        return z * 2


def example_inputs():
    return (torch.randn(2, 3),)
'''
# a file name may hold anything but "/": the report shows it in its header and the edits section
HOSTILE_SCRIPT_NAME = "<img src=x onerror=window.__pwned='name'>.json"


def _write_script(path, *edits):
    path.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": list(edits)}))
    return path


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fxstudio", "report", *map(str, args)], capture_output=True,
                          text=True, timeout=240)


@pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)
def test_hostile_text_is_shown_never_run(tmp_path):
    model = tmp_path / "hostile.py"
    model.write_text(HOSTILE_MODEL)
    script = _write_script(tmp_path / HOSTILE_SCRIPT_NAME,
                           {"op": "set_arg", "node": "mul", "key": 1, "value": "3"},
                           {"op": "set_target", "node": "sigmoid", "target": "hostile.boom"})
    out = tmp_path / "report.html"
    done = _cli(model, script, "-o", out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote {out}: The edited graph raises at node sigmoid"
    page = out.read_text()
    assert "<script>window" not in page and "<img" not in page   # escaped wherever it came from
    with Chromium() as browser:
        browser.open(out)
        assert browser.requested_urls() == [out.resolve().as_uri()]
        assert browser.evaluate("typeof window.__pwned") == "undefined"
        assert browser.evaluate("document.title") == "fxstudio report: hostile.py::Net"
        assert browser.evaluate("document.scripts.length") == 1 and browser.evaluate("document.images.length") == 0
        text = browser.evaluate("document.body.innerText")
        assert "<script>window.__pwned = 'exception'</script>" in text           # the edited graph's exception
        assert "# </code><script>window.__pwned = 'source'</script>" in text     # the failing node's source line
        assert HOSTILE_SCRIPT_NAME in text                                       # the script's file name
        assert browser.evaluate("document.getElementById('verdict').className") == "verdict bad"
        assert browser.evaluate("document.querySelector('svg.graph g.node.first').dataset.name") == "sigmoid"


def test_a_report_without_edits_and_one_without_a_run(tmp_path, examples_dir, capsys):
    out = tmp_path / "plain.html"
    assert main(["report", str(examples_dir / "add_mul.py"), "-o", str(out)]) == 0
    assert "Outputs within tolerance" in capsys.readouterr().out
    page = out.read_text()
    assert "No edits" in page and "No node diverges beyond tolerance (4 nodes compared)" in page
    script = _write_script(tmp_path / "edits.json", {"op": "set_arg", "node": "mul", "key": 1, "value": "10"})
    assert main(["report", str(examples_dir / "add_mul.py"), str(script), "-o", str(out), "--no-compare"]) == 0
    assert "Not compared: not run (--no-compare)" in capsys.readouterr().out
    page = out.read_text()
    assert "mul = add * 10" in page and "mul = add * 2" in page   # the code diff is there without a run


def test_bad_input_is_one_line_and_exit_2_and_a_refused_edit_exit_1(tmp_path, examples_dir, capsys):
    model = str(examples_dir / "add_mul.py")
    out = tmp_path / "r.html"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    refused = _write_script(tmp_path / "refused.json", {"op": "set_arg", "node": "nope", "key": 1, "value": "1"})
    cases = [
        (["report", str(tmp_path / "missing.py"), "-o", str(out)], 2, "missing.py"),
        (["report", model, str(broken), "-o", str(out)], 2, "broken.json"),
        (["report", model, "-o", str(tmp_path / "no_such_folder" / "r.html")], 2, "does not exist"),
        (["report", model, "-o", str(tmp_path)], 2, "is a folder"),
        (["report", model, str(refused), "-o", str(out)], 1, "nope"),
    ]
    for argv, status, says in cases:
        assert main(argv) == status, argv
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.json", "refused.json"]   # nothing written
