"""``fxstudio capture SCRIPT.py`` end to end in a subprocess: the script runs with its arguments,
torch.compile records each graph, the summary names the break lines; then ``fxstudio inspect``
lists the capture and opens one graph, and ``fxstudio export`` writes a verified file of it."""

from __future__ import annotations

import json
import subprocess
import sys

from fxstudio.testing.capture_scripts import BRANCH_LINE, PRINT_LINE, write_script

FXSTUDIO = [sys.executable, "-m", "fxstudio"]


def fxstudio(cwd, *argv, timeout=600):
    return subprocess.run([*FXSTUDIO, *map(str, argv)], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def test_capture_a_script_then_inspect_and_export_its_graphs(tmp_path):
    script = write_script(tmp_path)
    proc = fxstudio(tmp_path, "capture", script.name, "-o", "run.fxcap", "--backend", "eager", "--save-inputs",
                    "--", "first", "--flag")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "ARGS ['first', '--flag']" in out and "MAX_DIFF 0.0" in out  # the script ran, compiled, with its argv
    assert "run.fxcap: 3 graph(s) captured by torch.compile (backend eager" in out and "graph breaks: 2" in out
    assert f"print` with argument types ['str'] (has_kwargs False) at {script}:{PRINT_LINE}" in out
    assert "data-dependent branch" in out and f"{script}:{BRANCH_LINE}" in out
    assert (tmp_path / "run.fxcap").is_file()

    listing = fxstudio(tmp_path, "inspect", "run.fxcap")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].startswith("run.fxcap: 3 graph(s)")
    assert "  [0] graph_0: 3 op(s), inputs: 3×4 float32 (param), 3 float32 (param), 2×4 float32" in lines
    assert any(line.strip().startswith("ends: ") and line.endswith(f":{PRINT_LINE}") for line in lines)
    record = json.loads(fxstudio(tmp_path, "inspect", "run.fxcap", "--json").stdout)
    assert [g["index"] for g in record["graphs"]] == [0, 1, 2]
    assert record["graphs"][1]["break"]["user_frame"]["line"] == BRANCH_LINE

    one = fxstudio(tmp_path, "inspect", "run.fxcap::graph_2")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[0] == "run.fxcap::graph_2 — fx tracer, 4 nodes, inputs: 2×3 float32"
    assert "example inputs: the tensors saved in the capture" in one.stdout

    export = fxstudio(tmp_path, "export", "run.fxcap::0", "-o", "graph0.py")
    assert export.returncode == 0, export.stderr
    assert "verified" in export.stdout and (tmp_path / "graph0.py").is_file()
    assert "Source model: run.fxcap::graph_0 (graph from a torch.compile capture (Dynamo))." in (
        tmp_path / "graph0.py").read_text()


def test_a_failing_script_keeps_the_graphs_captured_before_it_failed(tmp_path):
    script = write_script(tmp_path)
    script.write_text(script.read_text().replace('    print("ARGS", argv)', '    raise ValueError("after the run")'))
    proc = fxstudio(tmp_path, "capture", script.name, "-o", "run.fxcap", "--backend", "eager")
    assert proc.returncode == 1
    assert "graph breaks: 2" in proc.stdout
    err = proc.stderr.strip().splitlines()
    assert err[-1].startswith(f"fxstudio: {script.name} raised ValueError at {script.name}:")
    assert "3 graph(s)" in err[-1]


def test_a_missing_script_is_exit_2(tmp_path):
    proc = fxstudio(tmp_path, "capture", "nope.py")
    assert proc.returncode == 2 and "nope.py: no such script" in proc.stderr
    assert not (tmp_path / "run.fxcap").exists()
