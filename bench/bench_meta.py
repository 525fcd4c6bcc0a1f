"""Opening models larger than memory on the meta device (issue #28): ``python -m bench.bench_meta``.

For each Llama-style config (``8b``: hidden 4096, 32 layers, 8.0e9 parameters; ``70b``: hidden 8192,
80 layers; ``--quick``: a 2-layer toy) a model file is written, then each of these runs once, in a
fresh process, measured for wall time and peak RSS (``wait4``):

* reference: plain torch, build under ``torch.device("meta")`` and ``torch.export.export`` (imports included);
* fxstudio: ``python -m fxstudio FILE --device meta --tracer export`` (offscreen window, as a user
  starts it) from spawn to its graph drawn (``window_drawn``), the figure the target is checked on;
  and with ``--screenshot PNG`` (the model loaded on the main thread, the views settled, the window
  grabbed and written), for the picture and as a second figure.

Targets (issue #28): fxstudio within 1.2x of the reference's time, RSS at most 2 GB.
Usage: ``python -m bench.bench_meta [--quick] [--configs 8b,70b] [--png-dir DIR] [--repeats N]``
(default: 8b, one run of each; with N, the best of N interleaved runs; the window's screenshots are
kept in DIR as ``llama_<config>_meta.png``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fxstudio.testing.llama_file import LLAMA_8B, LLAMA_70B, LLAMA_TINY, llama_source

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = {"quick": LLAMA_TINY, "8b": LLAMA_8B, "70b": LLAMA_70B}
TARGET_RATIO, TARGET_RSS_GB = 1.2, 2.0


REFERENCE = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import {stem} as m
with torch.device("meta"):
    model = m.get_model()
inputs = tuple(t.to("meta") for t in m.example_inputs())
ep = torch.export.export(model, inputs, strict=False)
print(len(ep.graph.nodes), "nodes", sum(p.numel() for p in model.parameters()) / 1e9, "e9 parameters")
"""


def measured(argv: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in GB, last output line) of ``argv`` in a fresh process.
    CPU time (user + system) is printed too: on a shared machine it varies less than wall time."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = [line for line in out.splitlines() if line.strip() and not line.startswith(("W1", "Failed to load"))]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... failed (exit {proc.returncode}):\n" + "\n".join(lines[-10:]))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 2**20, lines[-1] if lines else ""


def window_drawn(argv: list[str], cwd: Path, timeout: float = 900) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in GB) of the window ``argv`` starts, from spawn to its
    ``graph_drawn`` mark (``FXSTUDIO_TIMING``): the window shows at once and the model loads in a
    worker, as a user opens it (``--screenshot`` instead loads on the main thread and then waits
    0.8 s for the views to settle before its grab). The process is then killed."""
    tmp = Path(tempfile.mkdtemp(prefix="fxs-bench-meta-window-"))
    marks = tmp / "timing.txt"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT), "FXSTUDIO_TIMING": str(marks),
           "FXSTUDIO_STATE_DIR": str(tmp / "state"), "FXSTUDIO_CONFIG_DIR": str(tmp / "config")}
    start = time.time()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None or time.time() - start > timeout:
                raise SystemExit(f"{' '.join(argv[:4])}... exited or hung before drawing the graph")
            text = marks.read_text() if marks.exists() else ""
            drawn = [float(line.split()[1]) for line in text.splitlines() if line.startswith("graph_drawn ")]
            if drawn:
                break
            time.sleep(0.02)
        status = Path(f"/proc/{proc.pid}/status").read_text()
        rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return drawn[0] - start, cpu, rss_kb / 2**20


def run_config(name: str, folder: Path, png_dir: Path | None = None, repeats: int = 1) -> bool:
    """Measure one config, best of ``repeats`` (the window's screenshot kept in ``png_dir`` if given);
    True when fxstudio meets the targets."""
    stem = f"llama_{name}"
    path = folder / f"{stem}.py"
    path.write_text(llama_source(CONFIGS[name]))
    png = (png_dir or folder) / f"{stem}_meta.png"
    ref_argv = [sys.executable, "-c", REFERENCE.format(stem=stem), str(folder)]
    fx_argv = [sys.executable, "-m", "fxstudio", str(path), "--device", "meta", "--tracer", "export",
               "--screenshot", str(png)]
    refs, fxs, wins = [], [], []
    for _ in range(repeats):  # interleaved, the best of each: the machine's other load varies
        refs.append(measured(ref_argv, folder))
        fxs.append(measured(fx_argv, folder))
        wins.append(window_drawn(fx_argv[:-2], folder))
    ref_wall, ref_cpu, ref_rss, ref_line = min(refs)
    fx_wall, fx_cpu, fx_rss, fx_line = min(fxs)
    win_wall, win_cpu, win_rss = min(wins)
    ratio = win_wall / ref_wall
    ok = ratio <= TARGET_RATIO and max(fx_rss, win_rss) <= TARGET_RSS_GB
    print(f"{name}: reference (meta build + torch.export): {ref_wall:.1f} s wall, {ref_cpu:.1f} s CPU, "
          f"{ref_rss:.2f} GB RSS ({ref_line})")
    print(f"{name}: fxstudio --device meta --tracer export, graph drawn: {fx_wall:.1f} s wall, {fx_cpu:.1f} s CPU, "
          f"{fx_rss:.2f} GB RSS ({fx_line})")
    print(f"{name}: the window (fxstudio FILE --device meta --tracer export), spawn to graph drawn: {win_wall:.1f} s "
          f"wall, {win_cpu:.1f} s CPU, {win_rss:.2f} GB RSS")
    print(f"{name}: ratio, the window: {ratio:.2f}x wall, {win_cpu / ref_cpu:.2f}x CPU; --screenshot: "
          f"{fx_wall / ref_wall:.2f}x wall, {fx_cpu / ref_cpu:.2f}x CPU (target <= {TARGET_RATIO}x), "
          f"RSS {max(fx_rss, win_rss):.2f} GB (target <= {TARGET_RSS_GB} GB): {'met' if ok else 'NOT met'}", flush=True)
    return ok


def main(argv: list[str]) -> int:
    """Run the configs named by ``--configs`` (or the quick one); exit 1 when a target is missed."""
    if "--quick" in argv:
        names = ["quick"]
    else:
        names = ["8b"]
        if "--configs" in argv:
            names = argv[argv.index("--configs") + 1].split(",")
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("bench_meta: transformers is not installed; nothing measured")
        return 0
    with tempfile.TemporaryDirectory(prefix="fxs_bench_meta_") as tmp:
        png_dir = Path(argv[argv.index("--png-dir") + 1]).resolve() if "--png-dir" in argv else None
        repeats = int(argv[argv.index("--repeats") + 1]) if "--repeats" in argv else 1
        results = [run_config(name, Path(tmp), png_dir, repeats) for name in names]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
