"""Issue #26 defect 1 through the real ``fxstudio apply`` process: an edit torch's own checks reject
(``mul``'s second argument set to ``'hello'``) is reported on stderr, one line naming the node with
torch's message and no traceback; the graph is still printed, with "rejected by torch" / "unknown"
where the shapes were and a lint line that does not say "ok"; exit 1, or 0 with ``--keep-invalid``."""

from __future__ import annotations

import json
import subprocess
import sys


from fxstudio.resources import example_path
from tests.torch_messages import mul_hello_message

HELLO = [{"op": "set_arg", "node": "mul", "key": 1, "value": "'hello'"}]


def _apply(tmp_path, *extra):
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"format": "fxstudio.edits/1", "edits": HELLO}))
    return subprocess.run([sys.executable, "-m", "fxstudio", "apply", str(example_path("add_mul.py")), str(script), *extra],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)




def test_apply_reports_the_rejected_node_and_exits_1(tmp_path):
    proc = _apply(tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"fxstudio: torch rejects %mul: {mul_hello_message()}"), lines[0]
    assert "--keep-invalid" in lines[0]
    out = proc.stdout.splitlines()
    assert out[0].startswith("applied 1 edit(s)")
    assert next(line for line in out if line.startswith("mul ")).split()[-3:] == ["rejected", "by", "torch"]
    assert next(line for line in out if line.startswith("output ")).split()[-1] == "unknown"
    assert out[-1].startswith("lint: REJECTED — torch rejects %mul: TypeError") and "lint: ok" not in proc.stdout


def test_keep_invalid_exits_0_still_saying_it_and_writes_the_file(tmp_path):
    proc = _apply(tmp_path, "--keep-invalid", "-o", "out.py")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [f"fxstudio: kept (--keep-invalid): torch rejects %mul: {mul_hello_message()}"]
    assert (tmp_path / "out.py").is_file() and "wrote " in proc.stdout
    assert "verification run was skipped: torch rejects %mul" in proc.stdout

    record = json.loads(_apply(tmp_path, "--keep-invalid", "--json").stdout)
    assert record["checks"]["status"] == "rejected"
    assert record["checks"]["rejected"] == [{"node": "mul", "message": f"torch rejects this node: {mul_hello_message()}"}]
    mul = next(n for n in record["nodes"] if n["name"] == "mul")
    assert mul["rejected"] and mul["shape_text"] == "rejected by torch"


def test_keep_invalid_is_in_the_help():
    proc = subprocess.run([sys.executable, "-m", "fxstudio", "apply", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--keep-invalid" in proc.stdout and "fake-tensor" in proc.stdout


def test_without_keep_invalid_the_output_file_is_not_written(tmp_path):
    proc = _apply(tmp_path, "-o", "out.py")
    assert proc.returncode == 1
    assert not (tmp_path / "out.py").exists()
    err = proc.stderr.splitlines()
    assert err[-1] == "fxstudio: out.py not written: torch rejects %mul (--keep-invalid writes it without the verification run)"
    assert "Traceback" not in proc.stderr
