"""One process per corpus model: the real ``fxstudio`` command line on each of its cases, then the exported file.

``python cli_driver.py WORK MODEL.py TRACER...`` runs, for each tracer, ``fxstudio inspect --json``,
``fxstudio layout --json``, ``fxstudio apply MODEL WORK/<tracer>/edits.json -o WORK/<tracer>/exported.py``
(export and its own verification in a fresh ``python -I``), ``fxstudio compare MODEL edits.json --json``,
each through ``fxstudio.cli.main`` with its own argv, exit status, stdout and stderr; then imports the
exported file (never imported before in this process), runs ``get_model()`` on ``WORK/<tracer>/inputs.pt``
and saves the outputs to ``WORK/<tracer>/rerun.pt``. Everything it saw goes to ``WORK/results.json``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import time
import traceback
from pathlib import Path


def _cli(argv: list[str]) -> dict:
    from fxstudio.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - a traceback is a result too (the test shows it)
            rc = "traceback"
            err.write(traceback.format_exc())
    return {"argv": argv, "rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()[-4000:],
            "seconds": round(time.perf_counter() - start, 2)}


def _rerun(exported: Path, inputs_file: Path, out_file: Path) -> dict:
    import torch

    start = time.perf_counter()
    try:
        sys.path.insert(0, str(exported.parent))
        spec = importlib.util.spec_from_file_location(f"corpus_export_{exported.parent.name}", exported)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model = module.get_model()
        inputs = torch.load(inputs_file, weights_only=True)
        with torch.no_grad():
            outputs = model(*inputs)
        torch.save(outputs, out_file)
        return {"rc": 0, "seconds": round(time.perf_counter() - start, 2)}
    except BaseException:  # noqa: BLE001
        return {"rc": "traceback", "stderr": traceback.format_exc()[-4000:]}
    finally:
        sys.path.remove(str(exported.parent))


def main() -> int:
    """Run every step for each tracer named on the command line; write ``results.json``."""
    work, model, tracers = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    results = {}
    for tracer in tracers:
        case = work / tracer
        script = case / "edits.json"
        exported = case / "exported.py"
        opts = ["--tracer", tracer]
        steps = {
            "inspect": _cli(["inspect", model, *opts, "--json"]),
            "layout": _cli(["layout", model, *opts, "--json", str(case / "layout.json")]),
            "export": _cli(["apply", model, str(script), *opts, "-o", str(exported)]),
            "compare": _cli(["compare", model, str(script), *opts, "--json", "--repeats", "1"]),
        }
        if steps["export"]["rc"] == 0:
            steps["rerun"] = _rerun(exported, case / "inputs.pt", case / "rerun.pt")
        results[tracer] = steps
    (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
