"""What real passes produce, exported as the window exports it (issue #25): in a worker thread, with
large generated code compiled in the child interpreter (``compile_aside``, also torch.fx's own
recompiles through ``fx_compat_compile``). The size limit is lowered so every compile goes aside;
the file still verifies, and a fresh process gives plain torch's output for the pass result."""

from __future__ import annotations

import threading

import pytest
from torch.fx import graph_module

from fxstudio.core import compile_aside
from fxstudio.core.export import export_python
from fxstudio.core.fx_compat_compile import compile_off_lock
from tests.core.export.test_export_pass_results import PASSES, assert_same_output, loaded_model, plain_output, run_fresh

REAL_PASSES = ("convert_fx", "convert_pt2e", "split_module", "const_fold", "fuse_bias_in_linear")


@pytest.mark.parametrize("name", REAL_PASSES)
def test_a_pass_result_exported_from_a_worker_with_code_compiled_aside(name, tmp_path, monkeypatch):
    monkeypatch.setattr(compile_aside, "ASIDE_MIN_CHARS", 0)
    monkeypatch.setattr(graph_module, "_exec_with_source", graph_module._exec_with_source)  # undone after
    monkeypatch.setattr("fxstudio.core.fx_compat_compile.ASIDE_MIN_CHARS", 0)
    assert compile_off_lock()
    children: list = []
    real_popen = compile_aside.subprocess.Popen

    def recording_popen(args, *rest, **kwargs):
        if list(args[1:3]) == ["-I", "-S"]:   # the compile child (not the verification, not a probe)
            children.append(args[-1])   # the file name the child compiles for
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(compile_aside.subprocess, "Popen", recording_popen)
    gm, example = PASSES[name]()
    expected = plain_output(gm, example)
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(
        result=export_python(loaded_model(gm, example), tmp_path / f"{name}_aside.py")))
    worker.start()
    worker.join(600)
    result = box["result"]
    assert result.verified and result.verdict.startswith("verified"), result.verdict
    assert any(c.endswith(".py") for c in children), children   # the generated file's check went aside
    fresh = run_fresh([result.py_path], [example], tmp_path)[0]
    assert_same_output(fresh["out"], expected)
