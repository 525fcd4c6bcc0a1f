"""Issue #14: a pass file is code. A script's ``run_pass`` / ``replace_pattern`` naming a hostile file
(its top level writes the marker) must not run it through ``apply`` without ``--trust-passes``,
``compare``, or the window's ``--replay``; ``fxstudio pass --list`` reads a file without running it;
a file changed since its sha256 was recorded does not run even with ``--trust-passes``."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from fxstudio.resources import example_path


@pytest.fixture
def model(hostile):
    """relu_add.py copied next to the hostile files."""
    path = hostile.dir / "relu_add.py"
    shutil.copy(example_path("relu_add.py"), path)
    return path


@pytest.fixture
def pass_file(hostile):
    """A pass file whose import writes the marker; it defines a pass and a pattern pair."""
    path = hostile.dir / "evil_pass.py"
    path.write_text(f"{hostile.payload}\n\n"
                    "def my_pass(gm):\n    return gm\n\n\n"
                    "def pattern(x):\n    return x.relu()\n\n\n"
                    "def replacement(x):\n    return x.sigmoid()\n")
    return path


def _edits(kind: str, file: str) -> list:
    if kind == "run_pass":
        return [{"op": "run_pass", "file": file, "name": "my_pass"}]
    return [{"op": "replace_pattern", "file": file, "pattern": "pattern", "replacement": "replacement"}]


def _one_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("fxstudio: ")
    return lines[0]


@pytest.mark.parametrize("output", [False, True])
@pytest.mark.parametrize("relative", [False, True])
@pytest.mark.parametrize("kind", ["run_pass", "replace_pattern"])
def test_apply_without_trust_passes_refuses_in_one_line_and_runs_nothing(hostile, model, pass_file, kind,
                                                                          relative, output):
    script = hostile.script(_edits(kind, pass_file.name if relative else str(pass_file)))
    out = hostile.dir / "out.py"
    proc = hostile.run("apply", model, script, *(("-o", out) if output else ()))
    hostile.assert_clean(proc, code=2)
    line = _one_line(proc)
    assert str(pass_file) in line and "--trust-passes" in line, line
    assert proc.stdout == "" and not out.exists()


def test_the_refusal_comes_before_the_model_is_opened(hostile, pass_file):
    """The check reads the script only: a model file that would also write the marker never runs."""
    model = hostile.dir / "evil_model.py"
    model.write_text(f"{hostile.payload}\nimport torch\n\n\nclass M(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return x.relu()\n")
    proc = hostile.run("apply", model, hostile.script(_edits("run_pass", pass_file.name)))
    hostile.assert_clean(proc, code=2)
    assert "--trust-passes" in _one_line(proc)


@pytest.mark.parametrize("kind", ["run_pass", "replace_pattern"])
def test_a_changed_pass_file_is_refused_even_when_trusted(hostile, model, pass_file, kind):
    """Issue #23 (6): ``replace_pattern`` records and checks the file's sha256 as ``run_pass`` does, so a
    swapped pattern file is refused under ``--trust-passes`` too."""
    recorded = hashlib.sha256(b"the file as it was when the edit was recorded").hexdigest()
    script = hostile.script([{**_edits(kind, pass_file.name)[0], "sha256": recorded}])
    proc = hostile.run("apply", model, script, "--trust-passes")
    hostile.assert_clean(proc, code=2)
    line = _one_line(proc)
    assert str(pass_file) in line and "changed" in line and "--allow-changed-passes" in line, line


@pytest.mark.parametrize("kind", ["run_pass", "replace_pattern"])
def test_compare_never_runs_a_pass_file_of_a_script(hostile, model, pass_file, kind):
    proc = hostile.run("compare", model, hostile.script(_edits(kind, pass_file.name)))
    hostile.assert_clean(proc)
    assert proc.returncode != 0
    line = _one_line(proc)
    assert "runs code from" in line and pass_file.name in line, line


@pytest.mark.parametrize("kind", ["run_pass", "replace_pattern"])
def test_window_replay_never_runs_a_pass_file_unasked(hostile, model, pass_file, kind):
    """``--replay`` has nobody to answer the trust question: the answer is No, said in one line."""
    png = hostile.dir / "shot.png"
    proc = hostile.run(model, "--screenshot", png, "--replay", hostile.script(_edits(kind, str(pass_file))))
    hostile.assert_clean(proc)
    assert proc.returncode != 0
    assert "runs code from" in proc.stderr and str(pass_file) in proc.stderr, proc.stderr
    assert not png.exists()


def test_pass_list_reads_a_file_without_running_it(hostile, pass_file):
    proc = hostile.run("pass", "--list", pass_file)
    hostile.assert_clean(proc, code=0)
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "evil_pass.py::my_pass", "evil_pass.py::pattern", "evil_pass.py::replacement"]


def test_apply_with_trust_passes_does_run_the_file(hostile, model, pass_file):
    """The control: the flag is what lets it run (the pass itself then changes nothing: exit 1)."""
    proc = hostile.run("apply", model, hostile.script(_edits("run_pass", pass_file.name)), "--trust-passes")
    assert hostile.marker.exists()
    assert proc.returncode == 1 and "changed nothing" in proc.stderr, proc.stderr


def test_replace_pattern_records_the_sha256_it_ran(tmp_path):
    """The script the window and ``fxstudio pass --save-script`` write holds the pattern file's sha256."""
    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model
    from fxstudio.core.passes import PassTrust

    patterns = tmp_path / "patterns.py"
    patterns.write_text("import torch\n\n\ndef pattern(x):\n    return torch.relu(x)\n\n\n"
                        "def replacement(x):\n    return torch.sigmoid(x)\n")
    model = tmp_path / "relu_add.py"
    shutil.copy(example_path("relu_add.py"), model)
    doc = Document(load_model(model))
    doc.set_pass_trust(PassTrust(base_dir=tmp_path, trusted=lambda path: True))
    doc.apply_edit({"op": "replace_pattern", "file": str(patterns), "pattern": "pattern", "replacement": "replacement"})
    recorded = doc.edit_script()["edits"][-1]
    assert recorded["sha256"] == hashlib.sha256(patterns.read_bytes()).hexdigest()
