"""Large generated code compiled in a worker thread does not hold the interpreter lock (issue #25):
``compile_aside.compile_code`` and torch.fx's recompile through ``fx_compat_compile``, measured by a
main thread that keeps ticking while a worker compiles, with the in-process compile as the contrast."""

from __future__ import annotations

import threading
import time

import torch
import torch.fx

from fxstudio.core.compile_aside import compile_code
from fxstudio.core.fx_compat_compile import compile_off_lock
from fxstudio.testing.residual_mlp import residual_mlp_source


def _longest_gap_while(work) -> float:
    """The longest time (s) the main thread could not run while ``work`` ran in a thread."""
    done = threading.Event()
    worker = threading.Thread(target=lambda: (work(), done.set()))
    gaps, last = [], time.perf_counter()
    worker.start()
    while not done.is_set():
        time.sleep(0.002)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    worker.join()
    return max(gaps)


def _source(lines: int) -> str:
    return "def f(x):\n" + "".join(f"    a{i} = x + {i}\n    x = a{i} * 2 - a{i}\n" for i in range(lines)) + \
        "    return x\n"


def test_a_worker_compiles_a_large_source_without_stalling_the_main_thread():
    src = _source(6000)
    start = time.perf_counter()
    compile(src, "<in process>", "exec")
    in_process = time.perf_counter() - start
    box: dict = {}
    gap = _longest_gap_while(lambda: box.update(code=compile_code(src, "<aside>")))
    namespace: dict = {}
    exec(box["code"], namespace)  # noqa: S102 - the test's own source
    assert namespace["f"](3) == 3 + sum(range(6000)) and box["code"].co_filename == "<aside>"
    assert gap < max(0.05, in_process / 2), (gap, in_process)


def test_graph_module_recompile_in_a_worker_gives_the_same_module(tmp_path):
    assert compile_off_lock() and compile_off_lock()   # idempotent
    namespace: dict = {}
    exec(compile(residual_mlp_source(800), "residual_mlp", "exec"), namespace)  # noqa: S102
    model = namespace["get_model"]()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(2, 16)
    expected = gm(x)
    gap = _longest_gap_while(gm.recompile)
    torch.testing.assert_close(gm(x), expected)
    assert "def forward" in gm.code and gap < 0.06, gap
