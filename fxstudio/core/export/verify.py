"""Checking an exported file the way a user gets it: imported in a fresh Python process.

The child process runs with ``-I`` (no ``PYTHONPATH``, no user site), a temporary working folder and
only the export's folder and the model file's folder on ``sys.path``; fxstudio itself is made
unimportable there, so the file must stand on its own. It loads the example inputs saved by the
parent (``weights_only=True``), runs ``get_model()`` on them under the same seed and thread count,
and saves the outputs for the parent to compare with the in-memory module's.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch

from fxstudio.core.errors import ExportError
from fxstudio.core.fileio import pid_folder_prefix
from fxstudio.core.temp_folders import VERIFY_PREFIX, sweep_verify_folders

SEED = 0
RTOL = 1e-5
ATOL = 1e-6

class ExportCancelled(ExportError):
    """The user cancelled an export while it was verifying (nothing is written)."""


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


def reference_outputs(module: torch.nn.Module, inputs: tuple) -> Any:
    """Run ``module`` on a copy of ``inputs`` under the verification seed, leaving its state as it was.

    A document's modules share their weights and buffers with the model as loaded: when the run
    may write into them (batch norm statistics, in-place ops) it runs on a copy that owns them.
    """
    from fxstudio.core.module_state import copy_to_run

    copied = tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in inputs)
    torch.manual_seed(SEED)
    try:
        with torch.no_grad():
            out = copy_to_run(module, force=_has_observers(module))(*copied)
    except Exception as exc:  # noqa: BLE001 - the user's graph may raise anything
        raise ExportError(
            f"the model itself fails on its example inputs ({type(exc).__name__}: {exc}); "
            "fix the graph before exporting, or export without verification."
        ) from None
    return plain(out)


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
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
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
