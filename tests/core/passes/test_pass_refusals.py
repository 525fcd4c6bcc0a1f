"""Passes that fail change nothing, and say why: the pass, the exception and the pass file's line.
And the trust gate: no pass file runs unless the state's trust policy says so."""

from __future__ import annotations

import pytest
import torch

from fxstudio.core.document import Document
from fxstudio.core.errors import EditRefused
from fxstudio.core.loading import load_model
from fxstudio.core.passes import PassTrust, file_sha256
from tests.core.passes.pass_helpers import apply, current, out, trusting, write
from tests.model_files import model_source

MODEL = model_source('''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) + 1


def example_inputs():
    return (torch.randn(2, 4),)
''')

BAD_PASSES = '''
import torch


def raises(gm):
    nodes = list(gm.graph.nodes)
    raise ValueError("no luck with " + nodes[1].name)


def junk(gm):
    return 42


def breaks_lint(gm):
    node = next(n for n in gm.graph.nodes if n.op == "call_module")
    node.target = "no_such_module"


def breaks_code(gm):
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    node.kwargs = {"not a name": 1}


def adds_input(gm):
    last = [n for n in gm.graph.nodes if n.op == "placeholder"][-1]
    with gm.graph.inserting_after(last):
        gm.graph.placeholder("extra")


def nothing(gm):
    return gm


def exits(gm):
    raise SystemExit(3)


def pattern(x):
    return torch.sigmoid(x)


def replacement(x):
    return torch.tanh(x)


NOT_A_PASS = 3
'''


@pytest.fixture
def doc(tmp_path):
    write(tmp_path, "bad.py", BAD_PASSES)
    return trusting(Document(load_model(write(tmp_path, "net.py", MODEL))), tmp_path)


def _fingerprint(doc):
    state = doc._state
    return (state.graph.python_code("self").src, dict(state.by_id), state.next_id,
            {k: v for k, v in state.gm.state_dict(keep_vars=True).items()}, state.graph)


@pytest.mark.parametrize("name, message", [
    ("raises", r"The pass bad\.py::raises raised ValueError at bad\.py:7 \(`raise ValueError.*no luck with fc"),
    ("junk", r"returned a int, not a GraphModule"),
    ("breaks_lint", r"fails lint\(\)"),
    ("breaks_code", r"does not compile"),
    ("adds_input", r"changed the model's inputs"),
    ("nothing", r"changed nothing"),
    ("exits", r"raised SystemExit at bad\.py:35"),
    ("NOT_A_PASS", r"is a int, not a pass"),
    ("missing", r"defines no pass 'missing' \(candidates: .*raises"),
])
def test_a_failing_pass_changes_nothing(doc, name, message):
    before = _fingerprint(doc)
    with pytest.raises(EditRefused, match=message):
        apply(doc, {"op": "run_pass", "file": "bad.py", "name": name})
    after = _fingerprint(doc)
    assert after[0] == before[0] and after[1] == before[1] and after[2] == before[2] and after[4] is before[4]
    assert all(after[3][k] is v for k, v in before[3].items())
    x = doc.loaded.example_inputs
    assert torch.equal(out(current(doc), x), out(doc.loaded.module, x))


def test_a_pattern_that_matches_nothing_is_refused(doc):
    before = _fingerprint(doc)
    with pytest.raises(EditRefused, match=r"pattern bad\.py::pattern matches nothing"):
        apply(doc, {"op": "replace_pattern", "file": "bad.py", "pattern": "pattern", "replacement": "replacement"})
    assert _fingerprint(doc)[0] == before[0]


def test_a_pass_file_changed_since_its_sha256_is_refused_unless_allowed(tmp_path, doc):
    path = write(tmp_path, "swap.py", "import torch\n\ndef swap(gm):\n    for n in gm.graph.nodes:\n"
                 "        if n.target is torch.relu:\n            n.target = torch.tanh\n")
    recorded = file_sha256(path)
    path.write_text(path.read_text() + "\n# edited\n")
    edit = {"op": "run_pass", "file": "swap.py", "name": "swap", "sha256": recorded}
    with pytest.raises(EditRefused, match="changed since this edit was recorded.*--allow-changed-passes"):
        apply(doc, edit)
    assert "tanh" not in current(doc).code
    trusting(doc, tmp_path, allow_changed=True)
    _, record, _ = apply(doc, edit)
    assert record["sha256"] == file_sha256(path) != recorded and "tanh" in current(doc).code


def test_a_syntax_error_names_the_line(tmp_path, doc):
    write(tmp_path, "broken.py", "def f(gm):\n    return (\n")
    with pytest.raises(EditRefused, match="broken.py: syntax error at line 2"):
        apply(doc, {"op": "run_pass", "file": "broken.py", "name": "f"})


def test_a_missing_pass_file_is_refused(doc):
    with pytest.raises(EditRefused, match="There is no pass file"):
        apply(doc, {"op": "run_pass", "file": "nowhere.py", "name": "f"})


HOSTILE = '''
import pathlib
pathlib.Path({marker!r}).write_text("pwned")


def innocent(gm):
    pathlib.Path({marker!r}).write_text("pwned too")
'''


@pytest.mark.parametrize("edit", [
    {"op": "run_pass", "file": "hostile.py", "name": "innocent"},
    {"op": "replace_pattern", "file": "hostile.py", "pattern": "innocent", "replacement": "innocent"},
])
def test_the_trust_gate_runs_no_pass_file_by_default(tmp_path, edit):
    marker = tmp_path / "marker.txt"
    path = write(tmp_path, "hostile.py", HOSTILE.format(marker=str(marker)))
    doc = Document(load_model(write(tmp_path, "net.py", MODEL)))  # the default policy
    doc._state.pass_trust = PassTrust(base_dir=tmp_path)  # relative to the script's folder, still untrusted
    with pytest.raises(EditRefused) as info:
        apply(doc, edit)
    assert info.value.message == f"run_pass runs code from {path}: trust it (--trust-passes in the CLI)."
    assert not marker.exists()
    asked = []
    doc._state.pass_trust = PassTrust(base_dir=tmp_path, trusted=lambda p: asked.append(p) or False)
    with pytest.raises(EditRefused, match="trust it"):
        apply(doc, edit)
    assert asked == [path] and not marker.exists()


def test_the_default_policy_of_a_new_state_refuses_files(tmp_path):
    marker = tmp_path / "marker.txt"
    write(tmp_path, "hostile.py", HOSTILE.format(marker=str(marker)))
    doc = Document(load_model(write(tmp_path, "net.py", MODEL)))
    with pytest.raises(EditRefused, match="run_pass runs code from .*hostile.py: trust it"):
        apply(doc, {"op": "run_pass", "file": str(tmp_path / "hostile.py"), "name": "innocent"})
    assert not marker.exists()
    apply(doc, {"op": "run_pass", "name": "fxstudio.passes.normalize_args"})  # built-ins need no trust
