"""Saving the edited module as a ``.pt2`` (a ``torch.export`` ExportedProgram), verified.

``export_pt2`` runs ``torch.export.export(module, example_inputs, strict=False)`` on the edited
module (in the train/eval mode it is in), ``torch.export.save``s the program into a staging folder
beside the target, loads it in a fresh Python process (``torch.export.load(path).module()``), runs
it on the example inputs and compares the outputs with the in-memory graph's, and only then renames
it into place: a failure at any step leaves no new file and an existing target as it was.

Operators of namespaces that plain ``import torch`` does not register (``quantized_decomposed``,
registered by ``torch.ao.quantization.fx._decomposed``; a user's ``torch.library`` ops) make
``torch.export.load`` fail unless the registering module is imported first. Those modules are found
in ``sys.modules`` (a ``torch.library.Library`` or ``CustomOpDef`` of that namespace); the
verifying process imports the ones it needs, and the result names them (``imports``).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from fxstudio.core.threads import subprocess_env
from fxstudio.core import fx_compat
from fxstudio.core.errors import ExportError, FxStudioError
from fxstudio.core.export.python_file import (
    ExportTargetError,
    Progress,
    _fsync_folder,
    _same_file,
    _staging_dir,
    _unpack,
    _write,
    _write_error,
    sweep_stale_staging,
)
from fxstudio.core.export.verify import SEED, _run, compare, plain, python_c_argv, reference_outputs
from fxstudio.core.export.verify import failing_node as _failing_node, first_line as _first_line, node_target as _node_target
from fxstudio.core.fileio import pid_folder_prefix
from fxstudio.core.temp_folders import VERIFY_PREFIX, sweep_verify_folders

__all__ = ["Pt2ExportResult", "check_pt2_target", "export_failure", "export_program", "export_pt2", "quiet_torch",
           "registering_modules", "run_pt2"]


@dataclass
class Pt2ExportResult:
    """What ``export_pt2`` wrote and how the check went; ``imports``: the modules to import before
    ``torch.export.load`` (they register custom operators the program calls)."""

    pt2_path: Path
    verified: bool
    verdict: str
    max_abs_error: float | None = None
    imports: list[str] = field(default_factory=list)
    requirements: list[str] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        """The file written (``pt2_path``), as other export results name theirs."""
        return self.pt2_path


_CHILD = r"""
import importlib, json, sys
pt2_path, inputs_path, result_path, report_path, threads, seed, paths, needs = sys.argv[1:9]
sys.path[:0] = json.loads(paths)
class _NoFxstudio:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] == "fxstudio":
            raise ImportError("loading the .pt2 imports fxstudio; it must load with only torch installed")
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

def missing(ns, ops):
    space = getattr(torch.ops, ns)
    return [op for op in ops if not hasattr(space, op)]

imported = []
for ns, (ops, modules) in json.loads(needs).items():
    for name in modules:
        if not missing(ns, ops):
            break
        importlib.import_module(name)
        imported.append(name)
    left = missing(ns, ops)
    if left:
        sys.exit(f"it calls {ns}::{left[0]}, which is not registered after `import torch`"
                 + (f" and `import {', '.join(modules)}`" if modules else "")
                 + "; import the module that registers it before torch.export.load")
with open(report_path, "w") as fh:
    json.dump(imported, fh)
program = torch.export.load(pt2_path)
model = program.module()
inputs = torch.load(inputs_path, weights_only=True)
torch.manual_seed(int(seed))
with torch.no_grad():
    out = model(*inputs)
torch.save(plain(out), result_path)
"""


def export_pt2(
    source: Any,
    out_path: str | os.PathLike,
    *,
    script_path: str | os.PathLike | None = None,
    verify: bool = True,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Pt2ExportResult:
    """Export ``source`` (a ``Document`` or a ``LoadedModel``) through ``torch.export`` to ``out_path``.

    Raises ``ExportTargetError`` (exit 2) for an unusable target or a failed write (a full disk
    says so) and ``ExportError`` (exit 1) when ``torch.export`` refuses the module or the saved
    program does not load or compute the same outputs in a fresh process; nothing is written then.
    ``progress(message, fraction)`` reports the steps; ``cancel()``, polled during verification,
    stops the export (``ExportCancelled``, nothing written).
    """
    started = time.perf_counter()
    report = progress or (lambda message, fraction: None)
    loaded, module, _labels = _unpack(source)
    out_path = Path(os.path.abspath(out_path))
    check_pt2_target(out_path, loaded, script_path)
    sweep_stale_staging(out_path.parent)
    inputs = tuple(loaded.example_inputs)
    if any(n.op == "placeholder" for n in module.graph.nodes) and not inputs:
        raise ExportError(
            "cannot export to .pt2: the model has no example inputs, and torch.export traces on them. "
            "Give input shapes (--input-shape)."
        )

    report("Running torch.export", 0.05)
    try:
        program = export_program(module, inputs)
    except ExportError:
        # A graph that fails by itself is not torch.export's doing: say so, naming the node.
        reference_outputs(module, inputs, edited=bool(_labels), skippable=False)
        raise
    needs = _custom_namespaces(program)
    search = _search_paths(needs, loaded)
    expected = None
    if verify:
        report("Running the graph in memory", 0.3)
        expected = reference_outputs(module, inputs, edited=bool(_labels))

    report("Saving the program", 0.4)
    staging = _staging_dir(out_path)
    try:
        staged = staging / out_path.name
        with quiet_torch():
            _write(staged, lambda fh: torch.export.save(program, fh))
        verdict, err = "not verified (verification was turned off)", None
        imports = [modules[0] for _ops, modules in needs.values() if modules]
        if verify:
            report("Loading it in a fresh Python process", 0.5)
            got, imports = run_pt2(staged, inputs, needs=needs, search_paths=search, cancel=cancel)
            exact, err = compare(expected, got)
            verdict = (
                "verified: torch.export.load gives outputs identical to the graph in memory"
                if exact
                else "verified: torch.export.load gives outputs matching the graph in memory within "
                f"rtol=1e-5, atol=1e-6 (max abs error {err:.3g})"
            )
        report("Moving the file into place", 0.95)
        os.replace(staged, out_path)
        _fsync_folder(out_path.parent)
    except FxStudioError:
        raise
    except OSError as exc:
        raise _write_error(out_path, exc) from None
    except Exception as exc:  # noqa: BLE001 - e.g. a constant torch.export.save cannot store
        raise ExportError(f"cannot save the .pt2 ({type(exc).__name__}: {_first_line(exc)}); nothing was written.") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report("Done", 1.0)
    requirements = []
    for name in imports:
        spaces = ", ".join(ns for ns, (_ops, modules) in needs.items() if name in modules)
        requirements.append(f"`import {name}` before torch.export.load (it registers the {spaces} operators "
                            "the program calls)")
    return Pt2ExportResult(
        pt2_path=out_path, verified=verify, verdict=verdict, max_abs_error=err, imports=list(imports),
        requirements=requirements, seconds=time.perf_counter() - started,
        notes=["input shapes are fixed to the example inputs' (torch.export specialised every dimension)"],
    )


def check_pt2_target(out_path: Path, loaded: Any, script_path: str | os.PathLike | None) -> None:
    """``ExportTargetError`` unless ``out_path`` is a ``.pt2`` file name in a writable folder that
    is neither the opened model file nor the edit script."""
    if out_path.suffix.lower() != ".pt2" or not out_path.stem:
        raise ExportTargetError(f"{out_path}: the target must be a .pt2 file (e.g. model_edited.pt2).")
    if _same_file(out_path, getattr(loaded, "path", None)):
        raise ExportTargetError(f"{out_path}: refusing to overwrite the model file that is open; choose another file name.")
    if _same_file(out_path, script_path):
        raise ExportTargetError(f"{out_path}: refusing to overwrite the edit script; choose another file name.")
    if out_path.is_dir():
        raise ExportTargetError(f"{out_path}: is a folder; give the path of the .pt2 file to write.")
    parent = out_path.parent
    if not parent.is_dir():
        raise ExportTargetError(f"{out_path}: the folder {parent} does not exist.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ExportTargetError(f"{out_path}: the folder {parent} is not writable.")


# ----------------------------------------------------------------------------- torch.export


@contextlib.contextmanager
def quiet_torch() -> Iterator[None]:
    """torch.export's own output silenced for the block: its warnings, its loggers (a failure logs
    the partial graph and advice) and what it prints on stderr/stdout. The caller reports the outcome
    in one line. Logging is disabled process-wide for the block, as ``logging.disable`` does."""
    before = logging.root.manager.disable
    sink = io.StringIO()
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
            warnings.simplefilter("ignore")
            with fx_compat.fake_tensor_logs_off():
                yield
    finally:
        logging.disable(before)


def export_program(module: torch.nn.Module, inputs: tuple) -> Any:
    """``torch.export.export(module, inputs, strict=False)``; an ``ExportError`` in one line naming
    the node torch.export failed on when it can be told."""
    copied = tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in inputs)
    try:
        with quiet_torch():
            return torch.export.export(module, copied, strict=False)
    except (MemoryError, RecursionError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - whatever torch.export raises, one line
        raise ExportError(export_failure(module, exc)) from None


def export_failure(module: torch.nn.Module, exc: BaseException) -> str:
    """The one-line message of a failed ``torch.export``: the node (when a frame of the run names
    one) and the first line of torch's message."""
    node = _failing_node(module, exc)
    where = f" at node `{node.name}` ({_node_target(node)})" if node is not None else ""
    reason = " ".join(_first_line(exc).split())
    if "data-dependent" in reason or "data dependent" in reason:
        reason += " (the computation branches or sizes on tensor values, which torch.export cannot trace)"
    return (f"torch.export cannot export the edited module{where}: {type(exc).__name__}: {reason}; "
            "nothing was written (a .py export does not need torch.export).")


# ----------------------------------------------------------------------------- custom operators


def _custom_namespaces(program: Any) -> dict[str, tuple[list[str], list[str]]]:
    """``{namespace: (operator names, modules that may register them)}`` of the operators the
    program calls outside ``aten`` and ``prims`` (``registering_modules``; none for an operator
    torch itself or a compiled extension registers)."""
    ops: dict[str, set[str]] = {}
    for sub in program.graph_module.modules():
        graph = getattr(sub, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for node in graph.nodes:
            target = node.target
            if node.op == "call_function" and isinstance(target, fx_compat.OP_TYPES):
                ns = getattr(target, "namespace", None)
                if isinstance(target, fx_compat.OpOverload):
                    name = fx_compat.op_base_name(target)
                else:
                    name = fx_compat.packet_qualified_name(target).split("::")[-1]
                if ns and ns not in ("aten", "prims", "prim"):
                    ops.setdefault(ns, set()).add(name)
    return {ns: (sorted(names), registering_modules(ns, names)) for ns, names in sorted(ops.items())}


def registering_modules(namespace: str, op_names: set[str] | None = None) -> list[str]:
    """The modules in ``sys.modules`` that hold a ``torch.library.Library`` of ``namespace`` (or a
    ``torch.library.custom_op`` of it), best first: those whose source creates that library and
    names the operators, then the other holders (which import it from them)."""
    holders: dict[str, int] = {}
    custom_def = getattr(torch.library, "CustomOpDef", None)
    with warnings.catch_warnings():  # a deprecated module attribute warns when it is looked at
        warnings.simplefilter("ignore")
        for name, module in list(sys.modules.items()):
            _add_holder(holders, name, module, namespace, custom_def)
    for name, rank in list(holders.items()):
        if rank == 2:
            holders[name] = _source_rank(sys.modules.get(name), namespace, op_names or set())
    return sorted(holders, key=lambda name: (holders[name], name.count("."), name))


def _add_holder(holders: dict[str, int], name: str, module: Any, namespace: str, custom_def: type | None) -> None:
    """Rank ``module`` in ``holders`` if a global of it registers ``namespace``: 0 a custom op of it,
    2 a ``Library`` of it (ranked by its source later)."""
    if not isinstance(module, types.ModuleType):
        return
    try:
        values = list(vars(module).values())
    except TypeError:
        return
    for value in values:
        try:
            if isinstance(value, torch.library.Library) and getattr(value, "ns", None) == namespace \
                    and getattr(value, "kind", "DEF") in ("DEF", "FRAGMENT"):
                holders[name] = min(holders.get(name, 9), 2)
            elif custom_def is not None and isinstance(value, custom_def) and str(value).startswith(
                    f"<CustomOpDef({namespace}::"):
                holders[name] = 0
        except Exception:  # noqa: BLE001 - a module global whose isinstance/str misbehaves
            continue


def _source_rank(module: Any, namespace: str, op_names: set[str]) -> int:
    """0: its source creates the library and names every operator; 1: creates the library; 2: neither."""
    try:
        text = Path(module.__file__).read_text(encoding="utf-8", errors="replace")
    except (AttributeError, TypeError, OSError):
        return 2
    if not re.search(r"Library\(\s*[\"']" + re.escape(namespace) + r"[\"']", text):
        return 2
    return 0 if all(re.search(rf"\b{re.escape(op)}\b", text) for op in op_names) else 1


def _search_paths(needs: dict[str, tuple[list[str], list[str]]], loaded: Any) -> list[Path]:
    """The folders the verifying process needs on ``sys.path`` to import the registering modules
    that are not installed packages (a model file and its folder's siblings)."""
    paths: list[Path] = []
    if getattr(loaded, "kind", None) == "py" and getattr(loaded, "path", None) is not None:
        paths.append(Path(loaded.path).resolve().parent)
    for _ops, modules in needs.values():
        for name in modules:
            top = sys.modules.get(name.split(".")[0])
            file = getattr(top, "__file__", None)
            if not file:
                continue
            root = Path(file).resolve().parent
            if Path(file).name == "__init__.py":
                root = root.parent
            if root not in paths and not _installed(root):
                paths.append(root)
    return paths


def _installed(folder: Path) -> bool:
    """Whether ``folder`` is inside this Python's installation (its packages import anywhere)."""
    for prefix in {sys.prefix, sys.base_prefix}:
        try:
            folder.relative_to(Path(prefix).resolve())
            return True
        except ValueError:
            continue
    return False


# ----------------------------------------------------------------------------- verification


def run_pt2(
    pt2_path: Path, inputs: tuple, *, needs: dict[str, tuple[list[str], list[str]]], search_paths: list[Path],
    timeout: float = 600.0, cancel: Callable[[], bool] | None = None,
) -> tuple[Any, list[str]]:
    """Load ``pt2_path`` with ``torch.export.load`` in a fresh, isolated Python process (after
    importing the modules of ``needs`` it must), run its ``module()`` on ``inputs``; (outputs,
    modules imported). ``ExportError`` in one line when it fails; ``ExportCancelled`` on cancel."""
    sweep_verify_folders()
    with tempfile.TemporaryDirectory(prefix=pid_folder_prefix(VERIFY_PREFIX)) as tmp:
        tmp_path = Path(tmp)
        inputs_path, result_path, report_path = tmp_path / "inputs.pt", tmp_path / "outputs.pt", tmp_path / "imports.json"
        torch.save(tuple(plain(v) for v in inputs), inputs_path)
        argv = python_c_argv(_CHILD) + [
            str(pt2_path), str(inputs_path), str(result_path), str(report_path), str(torch.get_num_threads()),
            str(SEED), json.dumps([str(p) for p in search_paths]), json.dumps(needs),
        ]
        # the child starts its thread pool with this process's count (threads.py), not one per core
        env = subprocess_env(torch.get_num_threads(), {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
        returncode, stderr = _run(argv, tmp, env, timeout, cancel)
        if returncode != 0:
            raise ExportError(f"the saved .pt2 does not load and run in a fresh Python process: {_last_line(stderr)}")
        try:
            imported = json.loads(report_path.read_text())
            return torch.load(result_path, weights_only=True), list(imported)
        except Exception as exc:  # noqa: BLE001 - unreadable results are a verification failure
            raise ExportError(f"could not read the outputs of the saved .pt2: {exc}") from None


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1][:400] if lines else "(no error output)"
