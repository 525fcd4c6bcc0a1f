"""Checking an exported file the way a user gets it: imported in a fresh Python process.

The child process runs with ``-I`` (no ``PYTHONPATH``, no user site), a temporary working folder and
only the export's folder and the model file's folder on ``sys.path``; fxstudio itself is made
unimportable there, so the file must stand on its own. It loads the example inputs saved by the
parent (``weights_only=True``), runs ``get_model()`` on them under the same seed and thread count,
and saves the outputs for the parent to compare with the in-memory module's. Started by the window's
worker (not the CLI), it runs at a lower CPU priority (``compile_aside.lower_priority``).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import torch

from fxstudio.core.compile_aside import lower_priority
from fxstudio.core.threads import subprocess_env
from fxstudio.core.errors import ExportError
from fxstudio.core.fileio import pid_folder_prefix
from fxstudio.core.temp_folders import VERIFY_PREFIX, sweep_verify_folders

SEED = 0
RTOL = 1e-5
ATOL = 1e-6

class ExportCancelled(ExportError):
    """The user cancelled an export while it was verifying (nothing is written)."""


class GraphRunFailed(ExportError):
    """The graph being exported raises on its example inputs, so there is nothing to verify the
    exported file against (exit 1; nothing is written). ``node``: the name of the node that raised
    (None when it cannot be told), ``target``: what that node calls, ``reason``: torch's message in
    one line (``TypeError: ...``), ``edited``: whether it is an edited graph (else the model as loaded),
    ``skippable``: whether exporting without verification would write the file (it then fails the
    same way when run); not for a ``.pt2``, since torch.export runs the graph too."""

    def __init__(self, message: str, *, node: str | None = None, target: str = "", reason: str = "",
                 edited: bool = True, skippable: bool = True):
        super().__init__(message)
        self.node, self.target, self.reason, self.edited, self.skippable = node, target, reason, edited, skippable


_CHILD = r"""
import importlib.util, json, sys
name, py_path, inputs_path, result_path, threads, seed, paths = sys.argv[1:8]
sys.path[:0] = json.loads(paths)
class _NoFxstudio:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] == "fxstudio":
            raise ImportError("the exported file imports fxstudio; it must run with only torch installed")
sys.meta_path.insert(0, _NoFxstudio())
import torch
torch.set_num_threads(int(threads))

def plain(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value) if type(value) in (list, tuple) else tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value

spec = importlib.util.spec_from_file_location(name, py_path)
module = importlib.util.module_from_spec(spec)
sys.modules[name] = module
spec.loader.exec_module(module)
model = module.get_model()
inputs = torch.load(inputs_path, weights_only=True)
torch.manual_seed(int(seed))
with torch.no_grad():
    out = model(*inputs)
torch.save(plain(out), result_path)
"""


def plain(value: Any) -> Any:
    """Outputs as tensors, tuples, lists, dicts and scalars (what ``weights_only`` loading accepts)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (list, tuple)):
        if type(value) in (list, tuple):
            return type(value)(plain(v) for v in value)
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def reference_outputs(module: torch.nn.Module, inputs: tuple, *, edited: bool = True, skippable: bool = True) -> Any:
    """Run ``module`` on a copy of ``inputs`` under the verification seed, leaving its state as it was.

    A document's modules share their weights and buffers with the model as loaded: when the run
    may write into them (batch norm statistics, in-place ops) it runs on a copy that owns them.
    ``GraphRunFailed`` naming the node that raised when it fails; ``edited``: the message says
    "the edited graph" (else "the model itself"); ``skippable``: it suggests exporting without
    verification.
    """
    from fxstudio.core.module_state import copy_to_run

    copied = tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in inputs)
    torch.manual_seed(SEED)
    runner = module
    try:
        runner = copy_to_run(module, force=_has_observers(module))
        with torch.no_grad():
            out = runner(*copied)
    except Exception as exc:  # noqa: BLE001 - the user's graph may raise anything
        raise graph_run_failure(runner, inputs, exc, edited=edited, skippable=skippable) from None
    return plain(out)


def graph_run_failure(module: torch.nn.Module, inputs: tuple, exc: BaseException, *,
                      edited: bool = True, skippable: bool = True) -> GraphRunFailed:
    """The ``GraphRunFailed`` of ``module`` raising ``exc`` on ``inputs``: the node is told by the
    traceback (``failing_node``), else by running the graph again node by node in a
    ``torch.fx.Interpreter`` and taking the node it was at when it raised."""
    node = failing_node(module, exc) or _interpreted_failing_node(module, inputs)
    reason = f"{type(exc).__name__}: {' '.join(first_line(exc).split()).rstrip('.')}"
    target = node_target(node) if node is not None else ""
    what = "the edited graph" if edited else "the model itself"
    where = f" at node `{node.name}` ({target})" if node is not None else ""
    fix = ("that node" if node is not None else "the graph") + (" (or undo the edit)" if edited else "")
    fix += (", or export without verification (--no-verify: the file is then written unchecked, and fails "
            "the same way)." if skippable else "; torch.export runs the graph on these inputs too.")
    return GraphRunFailed(f"{what} fails on its example inputs{where}: {reason}. Nothing was written; fix {fix}",
                          node=node.name if node is not None else None, target=target, reason=reason,
                          edited=edited, skippable=skippable)


def _interpreted_failing_node(module: torch.nn.Module, inputs: tuple) -> torch.fx.Node | None:
    """The node a ``torch.fx.Interpreter`` run of ``module`` (a GraphModule) raises at, or None."""
    from fxstudio.core.module_state import copy_to_run

    if not isinstance(module, torch.fx.GraphModule):
        return None
    at: list[torch.fx.Node] = []

    class _Tracking(torch.fx.Interpreter):
        def run_node(self, n):
            """Note ``n`` as the node being run, then run it."""
            at[:] = [n]
            return super().run_node(n)

    copied = tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in inputs)
    torch.manual_seed(SEED)
    try:
        with torch.no_grad():
            _Tracking(copy_to_run(module, force=True)).run(*copied)
    except Exception:  # noqa: BLE001 - the failure being located
        return at[0] if at else None
    return None


def first_line(exc: BaseException) -> str:
    """The first non-empty line of ``exc``'s message (at most 300 characters), else its type name."""
    text = str(exc).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "") or type(exc).__name__
    return first if len(first) <= 300 else first[:297] + "..."


def failing_node(module: torch.nn.Module, exc: BaseException) -> torch.fx.Node | None:
    """The node of ``module``'s graph being run when ``exc`` was raised: the ``node`` of a
    ``torch.fx.Interpreter`` frame (how torch.export runs a GraphModule), else the line of the
    module's own generated ``forward``; the outermost such frame of the exception chain."""
    graph = getattr(module, "graph", None)
    if graph is None:
        return None
    interp = {torch.fx.Interpreter.run.__code__, torch.fx.Interpreter.run_node.__code__}
    forward = getattr(type(module).forward, "__code__", None)
    by_name = {n.name: n for n in graph.nodes}
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        tb = error.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code in interp:
                node = frame.f_locals.get("n", frame.f_locals.get("node"))
                if isinstance(node, torch.fx.Node) and node.graph is graph:
                    return node
            elif forward is not None and frame.f_code is forward:
                import linecache

                line = linecache.getline(forward.co_filename, tb.tb_lineno, frame.f_globals)
                found = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=", line)
                if found and found.group(1) in by_name:
                    return by_name[found.group(1)]
            tb = tb.tb_next
        error = error.__cause__ or error.__context__
    return None


def node_target(node: torch.fx.Node) -> str:
    """What ``node`` calls, for a message: ``operator.mul``, ``torch.relu``, ``call_module fc``."""
    from fxstudio.core import fx_compat

    if node.op == "call_function":
        try:
            name = fx_compat.qualified_name(node.target)
        except Exception:  # noqa: BLE001 - a name only for the message
            return str(node.target)
        return "operator." + name[len("_operator."):] if name.startswith("_operator.") else name
    return f"{node.op} {node.target}"


def _has_observers(module: torch.nn.Module) -> bool:
    """Whether ``module`` holds torch.ao quantization modules with buffers (observers, fake quantizers):
    they update their statistics in place when run, which ``copy_to_run`` does not foresee."""
    return any(type(m).__module__.startswith("torch.ao.quantization") and next(m.buffers(recurse=False), None) is not None
               for m in module.modules())


def compare(expected: Any, got: Any, where: str = "output") -> tuple[bool, float]:
    """(exact, max abs error) of ``got`` against ``expected``; ``ExportError`` when they differ."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            raise ExportError(f"{where} is a {type(got).__name__} in the exported file, a tensor in the graph")
        if expected.shape != got.shape or expected.dtype != got.dtype:
            raise ExportError(
                f"{where} is {tuple(got.shape)} {got.dtype} in the exported file, "
                f"{tuple(expected.shape)} {expected.dtype} in the graph"
            )
        if torch.equal(expected, got):
            return True, 0.0
        if expected.dtype.is_floating_point or expected.dtype.is_complex:
            same_nan = torch.equal(torch.isnan(expected), torch.isnan(got))
            finite = ~torch.isnan(expected)
            if same_nan and torch.equal(expected[finite], got[finite]):
                return True, 0.0
            diff = (expected[finite].double() - got[finite].double()).abs()
            err = float(diff.max()) if diff.numel() else 0.0
            if same_nan and torch.allclose(got[finite], expected[finite], rtol=RTOL, atol=ATOL):
                return False, err
            raise ExportError(
                f"{where} differs between the exported file and the graph: max abs error {err:.3g} "
                f"(tolerance rtol={RTOL}, atol={ATOL})"
            )
        raise ExportError(f"{where} differs between the exported file and the graph ({expected.dtype} values)")
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            raise ExportError(f"{where} has another structure in the exported file: {_shape_of(got)} vs {_shape_of(expected)}")
        exact, err = True, 0.0
        for i, (e, g) in enumerate(zip(expected, got)):
            ex, er = compare(e, g, f"{where}[{i}]")
            exact, err = exact and ex, max(err, er)
        return exact, err
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            raise ExportError(f"{where} has other keys in the exported file")
        exact, err = True, 0.0
        for k in expected:
            ex, er = compare(expected[k], got[k], f"{where}[{k!r}]")
            exact, err = exact and ex, max(err, er)
        return exact, err
    if isinstance(expected, float) and isinstance(got, float) and math.isnan(expected) and math.isnan(got):
        return True, 0.0
    if expected != got:
        raise ExportError(f"{where} is {got!r} in the exported file, {expected!r} in the graph")
    return True, 0.0


def _shape_of(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


FROZEN_PYTHON_C_FLAG = "--fxstudio-python-c"
"""In a frozen bundle ``sys.executable`` is the app's binary, not a Python: the bundle's entry
(``packaging/fxstudio_entry.py``) runs ``BINARY --fxstudio-python-c CODE ARGS...`` as ``python -c``."""


def python_c_argv(code: str) -> list[str]:
    """The command that runs ``code`` in a fresh, isolated interpreter, as ``python -I -B -c code``
    (frozen: the bundle's binary in its hidden ``-c`` mode; arguments for ``code`` follow)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, FROZEN_PYTHON_C_FLAG, code]
    return [sys.executable, "-I", "-B", "-c", code]


def run_exported(
    py_path: Path, inputs: tuple, *, search_paths: list[Path], timeout: float = 600.0,
    cancel: Callable[[], bool] | None = None,
) -> Any:
    """Import ``py_path`` in a fresh process, run ``get_model()`` on ``inputs`` and return its outputs.

    ``cancel()`` is polled while the process runs; when it returns True the process is killed and
    ``ExportCancelled`` raised.
    """
    import json

    sweep_verify_folders()  # left by verifications that were killed
    with tempfile.TemporaryDirectory(prefix=pid_folder_prefix(VERIFY_PREFIX)) as tmp:
        tmp_path = Path(tmp)
        inputs_path, result_path = tmp_path / "inputs.pt", tmp_path / "outputs.pt"
        torch.save(tuple(plain(v) for v in inputs), inputs_path)
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in py_path.stem) or "exported"
        argv = python_c_argv(_CHILD) + [
            name, str(py_path), str(inputs_path), str(result_path),
            str(torch.get_num_threads()), str(SEED), json.dumps([str(p) for p in search_paths]),
        ]
        # the child starts its thread pool with this process's count (threads.py), not one per core
        env = subprocess_env(torch.get_num_threads(), {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
        returncode, stderr = _run(argv, tmp, env, timeout, cancel)
        if returncode != 0:
            raise ExportError(f"the exported file failed in a fresh Python process:\n{_error_tail(stderr)}")
        try:
            return torch.load(result_path, weights_only=True)
        except Exception as exc:  # noqa: BLE001 - unreadable results are a verification failure
            raise ExportError(f"could not read the outputs of the exported file: {exc}") from None


def _run(argv: list[str], cwd: str, env: dict, timeout: float, cancel) -> tuple[int, str]:
    """Run ``argv``; (exit status, stderr). Kills it on timeout or cancel."""
    with tempfile.TemporaryFile(mode="w+") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        if threading.current_thread() is not threading.main_thread():   # the window's worker, not the CLI
            lower_priority(proc.pid)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    proc.wait(timeout=0.1)
                    break
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel():
                        raise ExportCancelled("export cancelled; nothing was written") from None
                    if time.monotonic() > deadline:
                        raise ExportError(f"verification did not finish within {timeout:.0f} s") from None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err.seek(0)
        return proc.returncode, err.read()


def _error_tail(stderr: str) -> str:
    """The last traceback lines of ``stderr``: the user-facing reason of a failed run."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    if not lines:
        return "(no error output)"
    frames = [i for i, line in enumerate(lines) if line.lstrip().startswith("File ")]
    start = frames[-1] if frames else max(0, len(lines) - 6)
    return "\n".join(lines[start:][-8:])
