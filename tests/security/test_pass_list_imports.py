"""``fxstudio pass --list`` resolves the names a pass file imports without running any code: not the
pass file, not the modules it imports (``from antigravity import x`` would open a browser, ``from
this import y`` print the Zen of Python, a sibling ``evil.py`` write the marker). Real ``fxstudio``
processes; the marker must never appear."""

from __future__ import annotations

import os
import sys

import pytest

ZEN = "Beautiful is better than ugly"


def browser(hostile) -> str:
    """A ``BROWSER`` setting under which ``webbrowser.open`` (what importing antigravity calls) runs the payload."""
    return f"{hostile.shell} %s"


@pytest.fixture
def hostile_listing(hostile):
    """A pass file importing from antigravity, this, a sibling ``evil.py`` and a sibling package whose
    ``__init__`` carries the payload, each writing the marker if it ran; plus a real pass import."""
    (hostile.dir / "evil.py").write_text(f"{hostile.payload}\n\n\ndef evil_pass(gm):\n    return gm\n")
    package = hostile.dir / "evilpkg"
    package.mkdir()
    (package / "__init__.py").write_text(f"{hostile.payload}\nfrom .inner import *\n")
    (package / "inner.py").write_text(f"{hostile.payload}\n\n\ndef inner_pass(gm):\n    return gm\n")
    path = hostile.dir / "hostile_passes.py"
    path.write_text(f"{hostile.payload}\n"
                    "from antigravity import x\n"
                    "from this import y\n"
                    "from evil import evil_pass\n"
                    "from evilpkg import inner_pass\n"
                    "from evilpkg.inner import inner_pass as again_pass\n"
                    "from torch.fx.experimental.optimization import fuse\n")
    return path


def test_importing_antigravity_would_write_the_marker(hostile):
    """The control: under ``browser(hostile)``, importing antigravity does run the payload."""
    from tests.security.conftest import run_bounded

    run_bounded([sys.executable, "-c", "import antigravity, time; time.sleep(3)"], cwd=hostile.dir,
                env={"BROWSER": browser(hostile)})
    assert hostile.marker.exists()


def test_list_runs_no_module_it_resolves(hostile, hostile_listing):
    # a browser antigravity would open is the payload itself
    proc = hostile.run("pass", "--list", hostile_listing, env={"BROWSER": browser(hostile)})
    hostile.assert_clean(proc, code=0)
    assert ZEN not in proc.stdout and ZEN not in proc.stderr
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "hostile_passes.py::evil_pass", "hostile_passes.py::inner_pass", "hostile_passes.py::again_pass",
        "hostile_passes.py::fuse"]
    assert proc.stdout.splitlines()[0].endswith("imported from evil")


def test_list_from_another_folder_finds_siblings_and_runs_none(hostile, hostile_listing, tmp_path_factory):
    """The sibling modules are found beside the file (where running it would find them), from any cwd."""
    elsewhere = tmp_path_factory.mktemp("cwd")
    from tests.security.conftest import FXSTUDIO, run_bounded

    proc = run_bounded([FXSTUDIO, "pass", "--list", hostile_listing], cwd=elsewhere,
                       env={"FXSTUDIO_STATE_DIR": str(hostile.state), "BROWSER": browser(hostile)})
    hostile.assert_clean(proc, code=0)
    assert "hostile_passes.py::evil_pass" in proc.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_list_does_not_hang_on_a_fifo_or_device_sibling(hostile):
    os.mkfifo(hostile.dir / "fifo_mod.py")
    (hostile.dir / "zero_mod.py").symlink_to("/dev/zero")
    path = hostile.dir / "odd_passes.py"
    path.write_text("from fifo_mod import fifo_pass\nfrom zero_mod import zero_pass\n")
    proc = hostile.run("pass", "--list", path, timeout=60)
    hostile.assert_clean(proc, code=0)
    assert [line.split("\t")[1] for line in proc.stdout.splitlines()] == ["unresolved", "unresolved"]


def test_the_window_list_reads_imports_without_running_them(hostile, hostile_listing, monkeypatch):
    """``pass_names`` (what Edit ▸ Run Pass… lists) in this process: no module is imported."""
    from fxstudio.core.passes import pass_names

    monkeypatch.setenv("BROWSER", browser(hostile))
    before = set(sys.modules)
    names = [p.name for p in pass_names(hostile_listing)]
    assert set(sys.modules) == before
    hostile.assert_clean()
    assert names == ["evil_pass", "inner_pass", "again_pass", "fuse"]
