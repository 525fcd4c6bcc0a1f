"""Writing a reduction as a standalone repro: ``repro.py`` plus ``repro.data.pt`` beside it.

Each subgraph is written by the export code generator (``export.export_python``, unverified, into a
staging folder); the two classes are then put in one file with a ``main()`` that loads the captured
inputs and weights (``torch.load(weights_only=True)``), runs both, prints the verdict of
``repro_check.judge`` (whose source the file carries) and exits 1 when the problem shows, 0 when not.
The file imports torch (and whatever registers the ops it calls), never fxstudio. It is run in a
fresh Python process before it is moved into place: a repro that does not reproduce is not written.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from fxstudio.core.compare import RunCancelled
from fxstudio.core.export import export_python
from fxstudio.core.model import LoadedModel
from fxstudio.core.reduce import repro_check
from fxstudio.core.reduce.search import ReduceError, Reduction

_LOAD_CALL = 'torch.load(Path(__file__).with_name(WEIGHTS_FILE), map_location="cpu", weights_only=True)'
_SKIPPED = {"WEIGHTS_FILE", "example_inputs"}
_VERIFY_TIMEOUT_S = 300.0


@dataclass
class ReproFile:
    """What ``write_repro`` wrote and what the fresh process printed."""

    path: Path
    data_path: Path
    verified: bool
    output: str
    seconds: float


def write_repro(reduction: Reduction, out_path: str | os.PathLike, *, loaded: LoadedModel | None = None,
                about: list[str] | None = None, verify: bool = True,
                cancel: Callable[[], bool] | None = None) -> ReproFile:
    """Write ``reduction`` to ``out_path`` and ``<stem>.data.pt`` beside it, checked first in a fresh
    process (unless ``verify`` is False). ``loaded`` is the model the graphs came from (functions of its
    file are imported, not copied); ``about`` lines go into the header. Raises ``ReduceError`` when the
    file cannot be written or does not reproduce, ``RunCancelled`` when ``cancel()`` turns true."""
    started = time.perf_counter()
    out_path = Path(os.path.abspath(out_path))
    if out_path.suffix != ".py":
        raise ReduceError(f"{out_path.name}: a repro is a Python file; give a name ending in .py.", )
    if not out_path.parent.is_dir():
        raise ReduceError(f"{out_path.parent} is not a folder; cannot write {out_path.name} there.")
    data_path = out_path.with_name(f"{out_path.stem}.data.pt")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".fxstudio-reduce-{os.getpid()}-", dir=out_path.parent))
    except OSError as exc:
        raise ReduceError(f"cannot write into {out_path.parent}: {exc.strerror or exc}.") from None
    try:
        parts, states, needs = [], {}, []
        for role, module, keys in (("original", reduction.original, reduction.original_inputs),
                                   ("edited", reduction.edited, reduction.edited_inputs)):
            if module is not None:
                source, state, requirements = _generate(role, module, [reduction.inputs[k] for k in keys],
                                                        loaded, staging)
                parts.append(source)
                states[role] = state
                needs += [r for r in requirements if r not in needs]
        text = _assemble(reduction, parts, data_path.name, about or [], needs)
        staged_py, staged_data = staging / out_path.name, staging / data_path.name
        torch.save({"inputs": reduction.inputs, **states}, staged_data)
        staged_py.write_text(text, encoding="utf-8")
        output, verified = "", False
        if verify:
            output = _run_fresh(staged_py, loaded, cancel)
            verified = True
        os.replace(staged_data, data_path)
        os.replace(staged_py, out_path)
    except OSError as exc:
        raise ReduceError(f"cannot write {out_path.name}: {exc.strerror or exc}; nothing was written.") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ReproFile(out_path, data_path, verified, output, time.perf_counter() - started)


def _generate(role: str, module: torch.fx.GraphModule, inputs: list, loaded: LoadedModel | None,
              staging: Path) -> tuple[str, dict, list[str]]:
    """(source of the exported file with its class renamed, its weights, what it needs to import)."""
    base = loaded or LoadedModel(None, "memory", module, module, ())
    as_model = dataclasses.replace(base, module=module, graph_module=module, example_inputs=tuple(inputs),
                                   entry="", exported_program=None)
    result = export_python(as_model, staging / f"{role}_subgraph.py", verify=False)
    source = result.py_path.read_text(encoding="utf-8")
    state = torch.load(result.weights_path, map_location="cpu", weights_only=True)
    state.pop("#example_inputs", None)
    name = f"{role.capitalize()}Subgraph"
    source = re.sub(rf"\b{re.escape(result.class_name)}\b", name, source)
    if _LOAD_CALL not in source or "def get_model(" not in source:
        raise ReduceError("the export code generator wrote a file of a shape fxstudio reduce does not know.")
    source = source.replace(_LOAD_CALL, f"dict(data[{role!r}])")
    source = source.replace("def get_model()", f"def build_{role}(data)")
    source = source.replace('"""The graph as a module; its weights come from WEIGHTS_FILE (see get_model)."""',
                            f'"""The {role} subgraph as a module; its weights come from DATA_FILE (see build_{role})."""')
    source = source.replace(f'"""Build the module and load its weights from the file beside this one."""',
                            f'"""The {role} subgraph with its weights from ``data`` (DATA_FILE)."""')
    return source, state, result.requirements


def _assemble(reduction: Reduction, parts: list[str], data_name: str, about: list[str], needs: list[str]) -> str:
    """One file from the exported sources: imports and helpers once, both classes, the check, main()."""
    imports: list[str] = []
    body: dict[str, str] = {}
    for source in parts:
        tree = ast.parse(source)
        for stmt in tree.body[1:] if _is_docstring(tree.body[0]) else tree.body:
            text = ast.get_source_segment(source, stmt)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                if text not in imports:
                    imports.append(text)
                continue
            names = _defined(stmt)
            if _is_docstring(stmt) or names & _SKIPPED:
                continue
            key = ",".join(sorted(names)) or text
            if body.get(key, text) != text:
                raise ReduceError(f"the two subgraphs define {key} differently; fxstudio reduce cannot combine them.")
            body[key] = text
    if "import sys" not in imports:
        imports.insert(0, "import sys")
    stdlib = [line for line in imports if line.split()[1].split(".")[0] in sys.stdlib_module_names]
    imports = stdlib + [""] + [line for line in imports if line not in stdlib]
    osub, esub = reduction.sub_nodes
    owhole, ewhole = reduction.whole_nodes
    header = [*about,
              f"Problem: the {reduction.kind} at node %{reduction.node}.",
              f"Subgraphs: edited {esub} of {ewhole} nodes, original {osub} of {owhole} nodes.",
              f"Found: {reduction.verdict}",
              f"Data: {data_name} beside this file (captured inputs and weights; torch.load with weights_only=True).",
              "Run: python this_file.py; it prints what it finds and exits 1 when the problem shows, 0 when not."]
    if needs:
        header.append("Needs at import time: " + "; ".join(needs) + ".")
    lines = [*(f"# {_one_line(line)}".rstrip() for line in header),
             f'"""Repro of the {reduction.kind} at one node (NODE), written by fxstudio reduce."""', "",
             *imports, "",
             f"DATA_FILE = {data_name!r}",
             f"NODE = {reduction.node!r}",
             f"RTOL = {reduction.rtol!r}",
             f"ATOL = {reduction.atol!r}",
             f"EXPECTED = {reduction.expected!r}",
             f"ORIGINAL_INPUTS = {tuple(reduction.original_inputs) if reduction.original is not None else None!r}",
             f"EDITED_INPUTS = {tuple(reduction.edited_inputs)!r}"]
    for text in body.values():
        lines += ["", "", text]
    for fn in (repro_check.first_line, repro_check.value_gap, repro_check.judge):
        lines += ["", "", inspect.getsource(fn).rstrip()]
    lines += ["", "", _MAIN.strip("\n"), ""]
    return "\n".join(lines)


_MAIN = '''
def _fresh(keys, inputs):
    return [inputs[k].clone() if isinstance(inputs[k], torch.Tensor) else inputs[k] for k in keys]


def main():
    """Run both subgraphs on the captured inputs; print what happened; 1 when the problem shows."""
    data = torch.load(Path(__file__).with_name(DATA_FILE), map_location="cpu", weights_only=True)
    inputs = data["inputs"]
    reference = value = error = None
    with torch.no_grad():
        if ORIGINAL_INPUTS is not None:
            reference = build_original(data)(*_fresh(ORIGINAL_INPUTS, inputs))
        edited = build_edited(data)
        try:
            value = edited(*_fresh(EDITED_INPUTS, inputs))
        except Exception as exc:  # the exception is the finding
            error = exc
    reproduces, line = judge(EXPECTED, reference, value, error, RTOL, ATOL)
    print(f"%{NODE}: {line}")
    return 1 if reproduces else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _one_line(text: str) -> str:
    """``text`` with every line break and control character made a space: names from files go into
    comments, and a line break there would start a line of code."""
    return "".join(" " if ord(c) < 32 or c in "\x7f\u2028\u2029\x85" else c for c in text)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _defined(stmt: ast.stmt) -> set[str]:
    """The top-level names a statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {t.id for t in targets if isinstance(t, ast.Name)}
    return set()


def _run_fresh(path: Path, loaded: LoadedModel | None, cancel: Callable[[], bool] | None) -> str:
    """Run the repro in a fresh Python process; its output line when it reproduces, else ``ReduceError``."""
    env = dict(os.environ)
    if loaded is not None and loaded.path is not None:  # functions of the model file are imported from it
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(loaded.path.parent.resolve()), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, str(path)], cwd=str(path.parent), env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + _VERIFY_TIMEOUT_S
    while True:
        try:
            out, err = proc.communicate(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            if (cancel is not None and cancel()) or time.monotonic() > deadline:
                proc.kill()
                proc.communicate()
                if time.monotonic() > deadline:
                    raise ReduceError(f"the repro did not finish within {_VERIFY_TIMEOUT_S:.0f} s in a fresh process; "
                                      "nothing was written.") from None
                raise RunCancelled("The reduction was cancelled.") from None
    said = out.strip().splitlines()[-1] if out.strip() else ""
    if proc.returncode == 1 and ": reproduced:" in said:
        return said
    why = said or (err.strip().splitlines()[-1] if err.strip() else f"exit status {proc.returncode}")
    raise ReduceError(f"the repro does not reproduce in a fresh process ({why}); nothing was written.")
