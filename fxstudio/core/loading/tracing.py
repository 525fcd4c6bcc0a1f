"""The two tracers: ``fx`` (``symbolic_trace`` with stack traces, concrete args, leaf modules,
autowrapped functions) and ``export`` (``torch.export.export(...).module()``, ATen-level, no
decompositions run beyond what export itself does).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import linecache
import logging
import os
import sys
import sysconfig
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch import nn

from fxstudio.core import fx_compat
from fxstudio.core.errors import LoadError
from fxstudio.core.shape_propagation import STDERR_LOCK
from fxstudio.core.loading.trace_diagnostics import trace_error


def _library_roots() -> tuple[str, ...]:
    roots = {str(Path(torch.__file__).parent), str(Path(__file__).resolve().parents[2])}
    # "scripts": console scripts such as the venv's own bin/fxstudio, which start every trace
    for key in ("stdlib", "platstdlib", "purelib", "platlib", "scripts"):
        try:
            roots.add(sysconfig.get_paths()[key])
        except KeyError:
            continue
    return tuple(sorted(roots))


_LIBRARY_ROOTS = _library_roots()


class StudioTracer(torch.fx.Tracer):
    """An fx ``Tracer`` that records stack traces and treats named modules or classes as leaves.

    The stack trace of a node lists the frames of user code only (not torch, the standard library
    or fxstudio), outermost first, in the format of ``traceback.format_list``. Walking the live
    frames costs about half of fx's own ``record_stack_traces`` capture.
    """

    def __init__(
        self, leaf_modules: Sequence[str] = (), autowrap_functions: Sequence = (), user_file: Path | None = None
    ):
        super().__init__(autowrap_functions=tuple(autowrap_functions))
        self.leaf_names = set(leaf_modules)
        self._user_file = str(user_file) if user_file else None
        self._is_user_file: dict[str, bool] = {}

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """fx's ``create_node``, then the user-code stack trace on the node."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if not node.stack_trace:
            trace = self._user_stack()
            if trace:
                node.stack_trace = trace
        return node

    def _user_stack(self) -> str:
        frames = []
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            user = self._is_user_file.get(filename)
            if user is None:
                user = self._classify(filename)
                self._is_user_file[filename] = user
            if user:
                lineno = frame.f_lineno
                code = linecache.getline(filename, lineno).strip()
                frames.append(f'  File "{filename}", line {lineno}, in {frame.f_code.co_name}\n    {code}\n')
            frame = frame.f_back
        return "".join(reversed(frames))

    def _classify(self, filename: str) -> bool:
        if filename == self._user_file:
            return True
        if filename.startswith("<") or not os.path.isabs(filename):
            return False  # generated code, or a frozen bundle's library (relative archive names)
        return not any(filename.startswith(root) for root in _LIBRARY_ROOTS)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        """Leaf when named by path, class name or dotted class path, or one of the modules that
        torch.ao quantization keeps whole (``quantization_leaf``); else fx's default rule."""
        cls = type(m)
        if (
            module_qualified_name in self.leaf_names
            or cls.__name__ in self.leaf_names
            or f"{cls.__module__}.{cls.__qualname__}" in self.leaf_names
            or quantization_leaf(m)
        ):
            return True
        return super().is_leaf_module(m, module_qualified_name)


_TORCHAO_LEAVES = (("torchao.quantization.pt2e.observer", "ObserverBase"),
                   ("torchao.quantization.pt2e.fake_quantize", "FakeQuantizeBase"))
"""torchao's observer and fake-quantize bases (never imported here: only looked up once loaded)."""


def quantization_leaf(m: nn.Module) -> bool:
    """Whether ``m`` is a module torch.ao quantization treats as one call: an observer or fake
    quantizer (``prepare_fx``, ``prepare_pt2e``) or a fused module (``fuse_fx``: ``ConvReLU2d``...).
    Tracing through them would fail on their data-dependent statistics code, or split a fused
    module back into its parts, so a graph exported after such a pass traces back to the same calls."""
    from torch.ao.quantization import FakeQuantizeBase, ObserverBase  # imported once torch is

    if isinstance(m, (ObserverBase, FakeQuantizeBase)):
        return True
    for module_name, class_name in _TORCHAO_LEAVES:  # torchao's own (PT2E) observers, if torchao is loaded
        cls = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(cls, type) and isinstance(m, cls):
            return True
    fused = fx_compat.fused_module_class()
    return isinstance(m, fused) if fused is not None else fx_compat.fused_module_fallback(m)


def _check_leaf_names(root: nn.Module, names: Sequence[str]) -> None:
    known_paths, known_classes = set(), set()
    for path, m in root.named_modules():
        known_paths.add(path)
        known_classes.update({type(m).__name__, f"{type(m).__module__}.{type(m).__qualname__}"})
    unknown = [n for n in names if n not in known_paths and n not in known_classes]
    if unknown:
        sample = ", ".join(sorted(p for p in known_paths if p)[:8])
        raise LoadError(
            f"--leaf-module {unknown[0]}: no submodule path or module class of the model has that name "
            f"(submodules include: {sample or 'none'})."
        )


def resolve_functions(names: Sequence[str], user_module: types.ModuleType | None) -> list:
    """Function objects for ``names``: a name in the model file, or a dotted ``package.module.fn``."""
    found = []
    for name in names:
        fn = getattr(user_module, name, None) if user_module is not None and "." not in name else None
        if fn is None and "." in name:
            mod_name, _, attr = name.rpartition(".")
            try:
                fn = getattr(importlib.import_module(mod_name), attr, None)
            except ImportError:
                fn = None
        if not callable(fn):
            raise LoadError(
                f"--autowrap {name}: no such function in the model file or importable by that dotted path."
            )
        found.append(fn)
    return found


def trace_fx(
    root: nn.Module,
    *,
    display: str,
    user_file: Path | None,
    concrete_args: dict | None = None,
    leaf_modules: Sequence[str] = (),
    autowrap_functions: Sequence = (),
) -> torch.fx.GraphModule:
    """``symbolic_trace`` of ``root`` with stack traces recorded; ``TraceError`` naming the user's line."""
    _check_leaf_names(root, leaf_modules)
    tracer = StudioTracer(leaf_modules, autowrap_functions, user_file)
    try:
        graph = tracer.trace(root, concrete_args=concrete_args or None)
    except Exception as exc:  # noqa: BLE001 - anything the user's forward raises under tracing
        raise trace_error(exc, tracer="fx", root=root, user_file=user_file, display=display) from None
    name = root.__class__.__name__ if isinstance(root, nn.Module) else root.__name__
    return torch.fx.GraphModule(tracer.root, graph, name)


def trace_export(
    root: nn.Module,
    example_inputs: tuple,
    *,
    display: str,
    user_file: Path | None,
) -> tuple[torch.fx.GraphModule, Any]:
    """``torch.export.export`` (non-strict) and its ``.module()``.

    ``example_inputs`` already hold any concrete args in their positional slots (see
    ``loading.merge_concrete_args``); export specializes on such non-tensor values.
    """
    try:
        with quiet_torch_logs():
            ep = torch.export.export(root, tuple(example_inputs), strict=False)
            gm = ep.module()
    except Exception as exc:  # noqa: BLE001 - export raises many error types
        raise trace_error(exc, tracer="export", root=root, user_file=user_file, display=display) from None
    return gm, ep


_NOISY_LOGGERS = ("torch.fx.experimental.symbolic_shapes", "torch._dynamo", "torch.export", "torch._export")


@contextlib.contextmanager
def quiet_torch_logs():
    """Silence export's own warnings and its stderr dump of the partial graph on failure (the
    ``TraceError`` says what matters); on success whatever it printed is passed on.
    """
    with STDERR_LOCK:  # stderr and logger levels are process-wide: one load at a time here
        saved = [(logging.getLogger(n), logging.getLogger(n).level) for n in _NOISY_LOGGERS]
        for logger, _ in saved:
            logger.setLevel(logging.ERROR)
        captured = io.StringIO()
        try:
            with contextlib.redirect_stderr(captured):
                yield
        except BaseException:
            raise
        else:
            if captured.getvalue():
                sys.stderr.write(captured.getvalue())
        finally:
            for logger, level in saved:
                logger.setLevel(level)
