"""One process per real-world pass: plain torch's result, then every stage a user takes it through fxstudio.

``python pass_driver.py WORK MODEL.py PASS TRACER [NAME=VALUE ...]`` (run in WORK, a fresh folder):

1. ``reference``: plain torch alone: the model file imported, traced (``symbolic_trace`` or
   ``torch.export(...).module()``), the pass function of ``real_passes.py`` called on it (with the
   example inputs and the keyword arguments where it takes them), its outputs saved to ``reference.pt``;
   nothing of fxstudio imported yet.
2. ``pass``: ``fxstudio pass MODEL real_passes.py::PASS --save-script pass.json -o exported.py``.
3. ``pt2``: ``fxstudio apply MODEL pass.json --trust-passes -o exported.pt2`` (the saved script replayed).
4. ``neutral``: ``fxstudio apply`` of the script plus a numerically neutral edit (``x * 1.0`` before
   the output) to ``neutral.py``, then ``fxstudio compare exported.py neutral.py --json``.
5. ``undo``: the pass as one edit of a ``Document``, undone: the graph's code and outputs as before.

Then ``rerun.py`` runs ``exported.py`` and ``exported.pt2`` in fresh processes. Each CLI step goes
through ``fxstudio.cli.main`` with its own argv; everything seen is written to ``WORK/results.json``.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
PASSES = HERE / "real_passes.py"


def _import_file(path: Path, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _literal(text: str):
    import ast

    return ast.literal_eval(text)


def reference(model_file: Path, pass_name: str, tracer: str, kwargs: dict, work: Path) -> dict:
    """Plain torch's result of the pass on the model: the outputs, saved with the inputs."""
    import torch

    model_mod = _import_file(model_file, "corpus_model")
    passes = _import_file(PASSES, "corpus_real_passes")
    model, inputs = model_mod.get_model(), tuple(model_mod.example_inputs())
    gm = torch.fx.symbolic_trace(copy.deepcopy(model)) if tracer == "fx" else \
        torch.export.export(copy.deepcopy(model), inputs).module()
    obj = getattr(passes, pass_name)
    if isinstance(obj, type) and issubclass(obj, torch.fx.Interpreter):
        obj(gm).run(*inputs)
        result = gm
    else:
        params = inspect.signature(obj).parameters
        call_kwargs = {k: _literal(v) for k, v in kwargs.items()}
        if "example_inputs" in params:
            call_kwargs["example_inputs"] = inputs
        result = obj(gm, **call_kwargs) or gm
        if hasattr(result, "graph_module"):
            result = result.graph_module
    if hasattr(result, "run_folding") and not getattr(result, "has_folding_been_run", True):
        result.run_folding()
    with torch.no_grad():
        original, out = model(*inputs), result(*inputs)
    torch.save({"inputs": inputs, "outputs": out, "original": original}, work / "reference.pt")
    try:  # can plain torch.export take the result at all? (observers branch on their statistics)
        torch.export.export(copy.deepcopy(result), inputs, strict=False)
        exportable = True
    except Exception:  # noqa: BLE001
        exportable = False
    return {"rc": 0, "torch_export_ok": exportable}


def _cli(argv: list[str]) -> dict:
    from fxstudio.cli import main

    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - a traceback is a result too (the test shows it)
            rc = "traceback"
            err.write(traceback.format_exc())
    return {"argv": argv, "rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()[-4000:],
            "seconds": round(time.perf_counter() - start, 2)}


def _output_source(gm) -> str:
    """The name of the node the graph outputs (the first one, for several)."""
    import torch

    out = next(n for n in gm.graph.nodes if n.op == "output")
    found: list = []
    torch.fx.node.map_arg(out.args, lambda n: found.append(n) or n)
    return found[0].name


def undo_and_neutral(model_file: Path, tracer: str, script: dict, work: Path) -> dict:
    """The pass as one Document edit, undone; and the neutral edit's script for stage 4."""
    import torch

    from fxstudio.core.document import Document
    from fxstudio.core.loading import load_model
    from fxstudio.core.passes import PassTrust, trust_all

    loaded = load_model(model_file, tracer=tracer)
    doc = Document(loaded)
    doc.set_pass_trust(PassTrust(base_dir=work, trusted=trust_all))
    inputs = tuple(loaded.example_inputs)
    before_code = doc.module().code
    with torch.no_grad():
        before = doc.module()(*inputs)
    edit = dict(script["edits"][0])
    doc.apply_edit(edit)
    target = _output_source(doc.module())
    doc.undo()
    with torch.no_grad():
        after = doc.module()(*inputs)
    torch.testing.assert_close(after, before, rtol=0, atol=0)
    assert doc.module().code == before_code, "undo left other code"
    neutral = {"op": "insert", "after": target, "kind": "call_function", "target": "torch.mul",
               "args": f"(%{target}, 1.0)", "kwargs": "{}", "name": "neutral", "reroute": True}
    return {"format": script.get("format", "fxstudio.edits/1"), "edits": [*script["edits"], neutral]}


def main() -> int:
    """Run the stages (see the module docstring); results in WORK/results.json."""
    work, model_file, pass_name, tracer = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    kwargs = dict(a.split("=", 1) for a in sys.argv[5:])
    results: dict = {}
    try:
        results["reference"] = reference(model_file, pass_name, tracer, kwargs, work)
    except BaseException:  # noqa: BLE001 - plain torch failing is a finding of its own
        results["reference"] = {"rc": "traceback", "stderr": traceback.format_exc()[-4000:]}
        (work / "results.json").write_text(json.dumps(results, indent=1))
        return 0
    opts = ["--tracer", tracer]
    args = [x for k, v in kwargs.items() for x in ("--arg", f"{k}={v}")]
    results["pass"] = _cli(["pass", str(model_file), f"{PASSES}::{pass_name}", *opts, *args,
                            "--save-script", str(work / "pass.json"), "-o", str(work / "exported.py")])
    if (work / "pass.json").exists():
        results["pt2"] = _cli(["apply", str(model_file), str(work / "pass.json"), "--trust-passes", *opts,
                               "-o", str(work / "exported.pt2")])
        # what the user is told to import before torch.export.load (op namespaces torch registers lazily)
        needed = re.findall(r"`import ([A-Za-z0-9_.]+)`", results["pt2"]["stdout"])
        (work / "pt2_imports.txt").write_text("\n".join(needed))
        try:
            script = json.loads((work / "pass.json").read_text())
            neutral = undo_and_neutral(model_file, tracer, script, work)
            results["undo"] = {"rc": 0}
            (work / "neutral.json").write_text(json.dumps(neutral))
            results["neutral_export"] = _cli(["apply", str(model_file), str(work / "neutral.json"), "--trust-passes",
                                              *opts, "-o", str(work / "neutral.py")])
            # the exported files are plain code: where torch.export cannot take the result (observers
            # branch on their statistics), they open with the fx tracer, as a user would open them
            reopen = opts if results["reference"].get("torch_export_ok", True) else ["--tracer", "fx"]
            results["neutral_compare"] = _cli(["compare", str(work / "exported.py"), str(work / "neutral.py"),
                                               *reopen, "--json", "--repeats", "1"])
        except BaseException:  # noqa: BLE001
            results.setdefault("undo", {"rc": "traceback", "stderr": traceback.format_exc()[-4000:]})
    rerun = subprocess.run([sys.executable, "-I", str(HERE / "rerun.py"), str(work)],
                           capture_output=True, text=True, timeout=300, cwd=work)
    results["rerun"] = {"rc": rerun.returncode, "stdout": rerun.stdout[-4000:], "stderr": rerun.stderr[-4000:]}
    (work / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
