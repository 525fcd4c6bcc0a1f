"""The helper processes a window's worker starts run at a lower CPU priority than the app (issue #25):
the export's verification, seen from inside the fresh process that imports the exported file, and
the compile-aside child, seen from outside while it compiles. The CLI's verification keeps the
command's own priority (the user is waiting for it, not for a window)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fxstudio.core.compile_aside import CHILD_NICE, compile_code
from fxstudio.core.document import Document
from fxstudio.core.export import export_python
from fxstudio.core.loading import load_model

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="CPU priorities as Linux reads them")

FXSTUDIO = Path(sys.executable).with_name("fxstudio")

# The exported file imports the wrapped function from this file: its import records the priority of
# every process that imports it (the test's, when it loads the model, and the verifying child).
MODEL = '''
import os
import torch

with open({log!r}, "a") as f:
    f.write(f"{{os.getpid()}} {{os.getpriority(os.PRIO_PROCESS, 0)}}\\n")


@torch.fx.wrap
def scale(x):
    return x * 3


class Scaled(torch.nn.Module):
    def forward(self, x):
        return scale(x) + 1


def example_inputs():
    return (torch.ones(2, 3),)
'''


def _model(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "priorities.log"
    model = tmp_path / "scaled.py"
    model.write_text(MODEL.format(log=str(log)))
    return model, log


def _others(log: Path, *mine: int) -> list[int]:
    """The priorities recorded by processes other than ``mine``."""
    lines = [line.split() for line in log.read_text().splitlines()]
    return [int(prio) for pid, prio in lines if int(pid) not in mine]


def _lowered(priority: int) -> int:
    """``priority`` lowered by ``CHILD_NICE`` (strictly lower: this test runs at nice 0-18)."""
    assert priority < 19 and CHILD_NICE > 0
    return min(19, priority + CHILD_NICE)


def test_the_window_worker_verifies_an_export_in_a_lower_priority_process(tmp_path):
    model, log = _model(tmp_path)
    doc = Document(load_model(model))
    doc.apply_edit({"op": "set_arg", "node": "add", "key": 1, "value": "2"})
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(result=export_python(doc, tmp_path / "out.py")))
    worker.start()
    worker.join(300)
    assert box["result"].verified
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert _others(log, os.getpid()) == [_lowered(mine)]


def test_the_cli_verifies_an_export_at_its_own_priority(tmp_path):
    model, log = _model(tmp_path)
    cli = subprocess.Popen([str(FXSTUDIO), "export", str(model), "-o", str(tmp_path / "out.py")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = cli.communicate(timeout=300)
    assert cli.returncode == 0, err
    verifier = _others(log, cli.pid)
    assert verifier == [os.getpriority(os.PRIO_PROCESS, 0)], (verifier, out)


def _children_nice() -> dict[int, int]:
    """This process's child processes and their nice values, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():   # ppid; nice is the 19th field of stat
                found[int(entry.name)] = int(fields[16])
    return found


def test_a_large_compile_aside_runs_in_a_lower_priority_child():
    source = "def f(x):\n" + "".join(f"    a{i} = x + {i}\n    x = a{i} * 2 - a{i}\n" for i in range(40_000)) + \
        "    return x\n"
    before = set(_children_nice())
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(code=compile_code(source, "<aside>")))
    worker.start()
    seen: dict[int, int] = {}
    while worker.is_alive():
        seen.update({pid: nice for pid, nice in _children_nice().items() if pid not in before})
        time.sleep(0.002)
    worker.join()
    namespace: dict = {}
    exec(box["code"], namespace)  # noqa: S102 - the test's own source
    assert namespace["f"](3) == 3 + sum(range(40_000))
    assert list(seen.values()) and set(seen.values()) == {_lowered(os.getpriority(os.PRIO_PROCESS, 0))}, seen
