"""The thread policy (issue #25): what ``fxstudio.core.threads`` chooses, and that every run fxstudio
starts follows it: compare, the CLI's ``--threads``, and the subprocesses it starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from fxstudio.core import threads
from fxstudio.core.compare import compare_models


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    threads.set_override(None)
    yield
    threads.set_override(None)


def test_small_tensors_get_one_thread_and_the_user_wins():
    assert threads.choose(100) == threads.ThreadChoice(1, "small tensors")
    threads.set_override(3)
    assert threads.choose(100).count == 3 and threads.choose(None).reason == "as set"
    threads.set_override(None)
    os.environ[threads.ENV] = "2"
    try:
        assert threads.choose(10).count == 2
    finally:
        del os.environ[threads.ENV]


def test_large_work_gets_the_free_cores_and_never_more_than_the_cores():
    choice = threads.choose(10**8)
    assert 1 <= choice.count <= threads.cores()
    gui = threads.choose(10**8, leave_for_gui=True)
    assert gui.count <= max(1, choice.count)


def test_busy_cores_sees_other_processes_spinning():
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(threads.cores())]
    try:
        import time
        time.sleep(0.3)
        threads._cached = None  # a fresh sample, not one taken before the spinners started
        busy = threads.busy_cores()
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert busy >= 0.25 * threads.cores(), busy  # a quarter of their load at least, on a loaded CI machine
    threads._cached = None


def test_torch_threads_sets_and_restores():
    before = torch.get_num_threads()
    with threads.torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_a_compare_of_a_small_model_runs_on_one_thread_and_says_so():
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    from fxstudio.core.metadata import annotate  # shapes recorded as a loaded model's are

    annotate(gm, (torch.ones(2, 4),), user_file=None, notes=[])
    seen = []
    orig_forward = gm.forward

    class Spy(torch.nn.Module):
        def forward(self, x):
            seen.append(torch.get_num_threads())
            return orig_forward(x)

    torch.set_num_threads(2)
    report = compare_models(Spy(), gm, gm, (torch.ones(2, 4),), per_node=False)
    assert seen and set(seen) == {1}
    assert "ran on 1 torch thread (small tensors)" in report.notes
    assert torch.get_num_threads() == 2
    report = compare_models(gm, gm, gm, (torch.ones(2, 4),), per_node=False, threads=2)
    assert "ran on 2 torch threads (as set)" in report.notes


def test_subprocess_env_sets_the_pools_of_a_child():
    env = threads.subprocess_env(1, {"PATH": os.environ["PATH"]})
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"


def test_the_cli_takes_threads_and_refuses_a_bad_count_in_one_line(tmp_path):
    model = tmp_path / "m.py"
    model.write_text(textwrap.dedent("""
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x) * 2.0
        def example_inputs():
            return (torch.ones(2, 3),)
    """))
    script = tmp_path / "e.json"
    script.write_text('{"format": "fxstudio.edits/1", "edits": []}')
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    ok = subprocess.run([sys.executable, "-m", "fxstudio", "compare", str(model), str(script), "--threads", "2",
                         "--no-per-node"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "ran on 2 torch threads (as set)" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "fxstudio", "compare", str(model), str(script), "--threads", "0"],
                         capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "thread count is at least 1" in bad.stderr and "Traceback" not in bad.stderr
