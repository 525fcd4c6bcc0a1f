"""Node sources point into the user's model file, never at the launcher that started the trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fxstudio.core.loading.tracing import StudioTracer
from fxstudio.resources import example_path


def test_the_console_script_is_not_a_source(tmp_path):
    """``fxstudio inspect`` as installed (the venv's console script): placeholders and the output
    have no source; the other nodes point at their line of the model."""
    script = Path(sys.executable).with_name("fxstudio")
    model = example_path("add_mul.py")
    out = subprocess.run([str(script), "inspect", str(model), "--json"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    sources = {n["name"]: n["source"] for n in json.loads(out.stdout)["nodes"]}
    assert sources["x"] is None and sources["output"] is None
    assert sources["add"]["file"] == str(model) and sources["add"]["line"] == 11


def test_relative_file_names_are_library_code():
    """A frozen bundle's library frames carry relative archive names (``torch/fx/proxy.py``)."""
    tracer = StudioTracer(user_file=example_path("add_mul.py"))
    assert not tracer._classify("torch/fx/proxy.py")
    assert not tracer._classify("<eval_with_key>.3")
    assert tracer._classify(str(example_path("add_mul.py")))
