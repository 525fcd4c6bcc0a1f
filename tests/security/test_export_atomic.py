"""Export is one atomic step, and a failed write says why and leaves nothing behind.

The weights file is named by its content hash and referenced from the ``.py``; the ``.py`` rename
is the commit point. Tests: a real full file system (a 64 KiB tmpfs), ``kill -9`` in the middle of
an export followed by the next export, and the commit point itself (weights moved in, ``.py`` not).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
import torch

from fxstudio.core.export import commit_files, export_python, weights_name_in
from fxstudio.core.fileio import DiskFullError, atomic_write_text
from fxstudio.core.loading import load_model

WEIGHTS = re.compile(r"out\.weights\.[0-9a-f]{16}\.pt")


def _model_file(folder: Path, name: str, size: int, seed: int) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(f"""
        import torch

        torch.manual_seed({seed})


        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear({size}, {size})

            def forward(self, x):
                return self.lin(x) * 2


        model = M()


        def example_inputs():
            return (torch.ones(2, {size}),)
    """))
    return path


def _run_exported(py: Path) -> torch.Tensor:
    """Import an exported file as a user does and run it on ones."""
    spec = importlib.util.spec_from_file_location(f"exported_{uuid.uuid4().hex}", py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.get_model()
    with torch.no_grad():
        return model(*[torch.ones_like(t) for t in module.example_inputs()])


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def tiny_fs(tmp_path):
    """A 64 KiB tmpfs mounted for the test (skipped where mounting is not permitted)."""
    mnt = tmp_path / "small_disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a 64k tmpfs to fill up (needs root): {proc.stderr.strip() or proc.returncode}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_export_onto_a_full_disk_says_so_and_keeps_the_old_files(hostile, tiny_fs):
    small = _model_file(hostile.dir, "small", 4, seed=1)
    big = _model_file(hostile.dir, "big", 160, seed=2)  # ~100 KiB of weights: cannot fit
    out = tiny_fs / "out.py"
    first = hostile.run("export", small, "-o", out)
    hostile.assert_clean(first, code=0)
    before = _snapshot(tiny_fs)
    assert "out.py" in before and sum(bool(WEIGHTS.fullmatch(n)) for n in before) == 1
    proc = hostile.run("export", big, "-o", out)
    hostile.assert_clean(proc, code=2)
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "disk full" in err, err
    assert "unexpected pos" not in err
    assert _snapshot(tiny_fs) == before, "the failed export changed or left files"


def test_atomic_writes_onto_a_full_disk_say_so(hostile, tiny_fs):
    target = tiny_fs / "layout.json"
    target.write_text("old")
    filler = tiny_fs / "filler"
    with open(filler, "wb", buffering=0) as fh:  # fill the disk up to its last byte
        try:
            while True:
                fh.write(b"\0" * 512)
        except OSError:
            pass
    with pytest.raises(DiskFullError) as caught:
        atomic_write_text(target, "x" * 50_000)
    assert "disk full" in str(caught.value)
    assert target.read_text() == "old" and sorted(p.name for p in tiny_fs.iterdir()) == ["filler", "layout.json"]
    from fxstudio.resources import example_path

    proc = hostile.run("layout", example_path("residual_cnn.py"), "--json", target)
    hostile.assert_clean(proc, code=2)
    assert "disk full" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert target.read_text() == "old"


def test_kill_9_during_export_leaves_nothing_after_the_next_export(hostile, tmp_path):
    model = _model_file(tmp_path, "model", 8, seed=3)
    out_dir, tmpdir = tmp_path / "out", tmp_path / "tmp"
    out_dir.mkdir()
    tmpdir.mkdir()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "FXSTUDIO_STATE_DIR": str(hostile.state), "TMPDIR": str(tmpdir)}
    fxstudio = Path(sys.executable).parent / "fxstudio"
    proc = subprocess.Popen([str(fxstudio), "export", str(model), "-o", str(out_dir / "out.py")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if list(out_dir.glob(".fxstudio-export-*")) and list(tmpdir.glob("fxstudio-verify-*")):
            break
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = list(out_dir.glob(".fxstudio-export-*")) + list(tmpdir.glob("fxstudio-verify-*"))
    assert left, "the export was not caught mid-way (staging and verification folders present)"
    time.sleep(0.5)  # the orphaned verification child may still be finishing
    again = hostile.run("export", model, "-o", out_dir / "out.py", env={"TMPDIR": str(tmpdir)})
    hostile.assert_clean(again, code=0)
    assert not list(out_dir.glob(".fxstudio-export-*")), list(out_dir.iterdir())
    assert not [p for p in tmpdir.glob("fxstudio-verify-*") if p.name.startswith(f"fxstudio-verify-{proc.pid}-")]
    names = sorted(p.name for p in out_dir.iterdir())
    assert names[0] == "out.py" and len(names) == 2 and WEIGHTS.fullmatch(names[1])


def test_the_py_rename_is_the_commit_point(tmp_path):
    target, side = tmp_path / "target", tmp_path / "side"
    target.mkdir()
    side.mkdir()
    v1 = export_python(load_model(_model_file(tmp_path, "first", 4, seed=1)), target / "out.py")
    v2 = export_python(load_model(_model_file(tmp_path, "second", 4, seed=2)), side / "out.py")
    assert v1.weights_path.name != v2.weights_path.name
    out_v1, out_v2 = _run_exported(v1.py_path), _run_exported(v2.py_path)
    assert not torch.equal(out_v1, out_v2)

    # A crash after the first step of the commit: the new weights are in, the .py is not.
    shutil.copy2(v2.weights_path, target / v2.weights_path.name)
    assert weights_name_in(target / "out.py") == v1.weights_path.name
    assert torch.equal(_run_exported(target / "out.py"), out_v1)

    # The next export commits and removes the weights the .py no longer names.
    v3 = export_python(load_model(_model_file(tmp_path, "second", 4, seed=2)), target / "out.py")
    assert sorted(p.name for p in target.iterdir()) == sorted(["out.py", v3.weights_path.name])
    assert v3.weights_path.name == v2.weights_path.name  # same weights, same content hash
    assert torch.equal(_run_exported(target / "out.py"), out_v2)


def test_a_failed_commit_removes_the_new_weights_and_keeps_the_old_pair(tmp_path):
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "out.py").write_text("new")
    (staging / "w.pt").write_bytes(b"new weights")
    out = tmp_path / "out.py"
    out.mkdir()  # a .py that cannot be replaced: the commit fails
    (out / "keep").write_text("old")
    with pytest.raises(OSError):
        commit_files(staging / "out.py", staging / "w.pt", out, tmp_path / "out.weights.0123456789abcdef.pt")
    assert not (tmp_path / "out.weights.0123456789abcdef.pt").exists()
    assert (out / "keep").read_text() == "old" and (staging / "out.py").read_text() == "new"


def test_atomic_writes_give_the_mode_a_plain_write_gives(tmp_path):
    """A new file gets 0666 less the umask (not mkstemp's 0600: an exported file or a report is
    shared); a replaced one keeps its mode. Checked in a fresh process with a known umask."""
    code = textwrap.dedent(f"""
        import os, stat
        os.umask(0o022)
        from fxstudio.core.fileio import atomic_write_text
        from fxstudio.cli_commands.export import run  # (imports as the CLI does)
        new = atomic_write_text({str(tmp_path / 'new.py')!r}, "x = 1\\n")
        old = {str(tmp_path / 'old.py')!r}
        open(old, "w").close(); os.chmod(old, 0o640)
        atomic_write_text(old, "y = 2\\n")
        print(oct(stat.S_IMODE(os.stat(new).st_mode)), oct(stat.S_IMODE(os.stat(old).st_mode)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0o644", "0o640"]
