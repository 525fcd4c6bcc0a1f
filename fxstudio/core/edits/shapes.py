"""Keep shape metadata true after an edit: recompute ``tensor_meta``/``fxs_shape``/``fxs_dtype`` of
the nodes an edit touched, under ``FakeTensorMode`` (no real activations), and of their users
while the result keeps changing. A node whose shape cannot be computed loses its shape keys (so no
stale shape is shown); when the cause is a real error (a shape mismatch after a rewire) it is kept
in ``node.meta["fxs_shape_error"]``.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import threading
import warnings
import weakref
from typing import Any, Callable

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import fx_compat
from fxstudio.core import trust
from fxstudio.core.errors import EditRefused
from fxstudio.core.metadata import dtype_name
from fxstudio.core.module_state import CannotCopy, run_copy

DEFAULT_BUDGET = 128  # node evaluations per edit (~0.3-1 ms each) before the rest is marked unknown
_UNKNOWN = object()
_LOCAL = threading.local()  # the fake mode of each thread that edits (a mode is not thread-safe)
_MAX_DEPTH = 64  # how far up to evaluate inputs that recorded no metadata (x.shape[0] chains)
_META_KEYS = ("tensor_meta", "fxs_shape", "fxs_dtype", "fxs_shape_error")


class ShapeRefresher:
    """Recomputes shapes of one edited module incrementally; made once per document.

    ``traced``: also call the targets ``gm``'s graph calls now (made with the document, that is
    the traced graph) even where ``trust.evaluable`` would not.
    """

    def __init__(self, gm: torch.fx.GraphModule, traced: bool = True):
        self.gm = gm
        self.enabled = any("tensor_meta" in n.meta for n in gm.graph.nodes if n.op == "placeholder")
        self.complete = True
        self.budget = DEFAULT_BUDGET
        # what the traced graph calls (it ran under a fake mode when the model was loaded); taken
        # when the document is made, so nothing added to the graph later counts as traced
        self._traced = {id(n.target) for n in gm.graph.nodes if n.op == "call_function"} if traced else set()

    @property
    def mode(self):
        """The fake mode of this thread, shared by all its documents (see ``fake_mode``)."""
        return fake_mode()

    def refresh(self, nodes: list[torch.fx.Node], budget: int | None | str = "default") -> set[torch.fx.Node]:
        """Recompute ``nodes`` and, transitively, users whose inputs changed; returns the nodes
        whose shape metadata changed.

        After ``budget`` evaluations the rest of the wave is not computed but cleared (shape
        unknown, never stale) and ``complete`` turns False until a refresh without budget.
        """
        if not self.enabled or not nodes:
            return set()
        if budget == "default":
            budget = self.budget
        evaluations = 0
        heap = list({n for n in nodes if not fx_compat.node_erased(n)})
        heapq.heapify(heap)
        queued = set(heap)
        values: dict[torch.fx.Node, Any] = {}
        changed: set[torch.fx.Node] = set()
        with warnings.catch_warnings(), torch.no_grad(), _fake_tensor_logs_off(), self.mode:
            warnings.simplefilter("ignore")
            while heap:
                node = heapq.heappop(heap)
                if node.op == "placeholder":
                    continue
                if budget is not None and evaluations >= budget:
                    self.complete = False
                    changed |= _clear_downstream([node, *heap])
                    break
                evaluations += 1
                value, error = self._evaluate(node, values)
                values[node] = value
                if self._write(node, value, error):
                    changed.add(node)
                    for user in node.users:
                        if user not in queued:
                            queued.add(user)
                            heapq.heappush(heap, user)
        return changed

    def _value_of(self, node: torch.fx.Node, values: dict, depth: int) -> Any:
        """A fake value for an input: from its recorded metadata, or evaluated (non-tensor nodes such
        as ``x.shape[0]`` record no metadata)."""
        if node in values:
            return values[node]
        meta = node.meta.get("tensor_meta")
        if meta is not None:
            value = self._fake_from_meta(meta)
        elif node.op == "placeholder" or depth > _MAX_DEPTH:
            value = _UNKNOWN
        else:
            value, _ = self._evaluate(node, values, depth + 1)
        values[node] = value
        return value

    def _fake_from_meta(self, meta: Any) -> Any:
        if isinstance(meta, TensorMetadata):  # called inside the fake mode
            return torch.empty_strided(tuple(meta.shape), tuple(meta.stride), dtype=meta.dtype)
        if isinstance(meta, (list, tuple)):
            return type(meta)(self._fake_from_meta(m) for m in meta) if isinstance(meta, list) \
                else tuple(self._fake_from_meta(m) for m in meta)
        return _UNKNOWN

    def _evaluate(self, node: torch.fx.Node, values: dict, depth: int = 0) -> tuple[Any, str | None]:
        unknown = []

        def fetch(n: torch.fx.Node) -> Any:
            v = self._value_of(n, values, depth)
            if v is _UNKNOWN or (isinstance(v, (list, tuple)) and any(x is _UNKNOWN for x in v)):
                unknown.append(n)
            return v

        args = torch.fx.node.map_arg(node.args, fetch)
        kwargs = torch.fx.node.map_arg(node.kwargs, fetch)
        if unknown:
            return _UNKNOWN, None
        try:  # inside the fake mode (see refresh)
            if node.op == "output":
                return args[0], None
            if node.op == "get_attr":
                obj = self.gm
                for part in str(node.target).split("."):
                    obj = getattr(obj, part)
                return (self.mode.from_tensor(obj) if isinstance(obj, torch.Tensor) else obj), None
            return self.call(node.op, node.target, args, kwargs), None
        except EditRefused:  # a cost bound: the value stays unknown, the edit's own check says why
            return _UNKNOWN, None
        except (RuntimeError, ValueError, TypeError, IndexError, AttributeError, KeyError, AssertionError) as exc:
            if _is_fake_limitation(exc):
                return _UNKNOWN, None
            return _UNKNOWN, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
        except Exception:  # noqa: BLE001 - anything else: shape unknown, not an error of the edit
            return _UNKNOWN, None
        return _UNKNOWN, None

    def call(self, op: str, target: Any, args: tuple, kwargs: dict) -> Any:
        """One call of a node of kind ``op`` on (fake) ``args``, inside this thread's fake mode;
        ``_UNKNOWN`` for what must not run here. Raises what the call raises."""
        if op == "call_function":
            if not trust.evaluable(target) and id(target) not in self._traced:
                return _UNKNOWN  # never call what the trust boundary would not resolve
            if trust.is_reviewed_stdlib(target):
                trust.check_cost(target, args, kwargs)  # Python arithmetic runs for real: bound it
            return target(*args, **kwargs)
        if op == "call_method":
            receiver = args[0] if args else None
            if not isinstance(receiver, torch.Tensor) or str(target).startswith("_") \
                    or target in trust.TENSOR_METHODS_DENIED:
                return _UNKNOWN  # only (fake) tensors' own methods run here
            return getattr(receiver, target)(*args[1:], **kwargs)
        if op == "call_module":
            try:
                module = _fake_module(self.gm.get_submodule(target))
            except CannotCopy:  # a TorchScript submodule: its shape stays unknown
                return _UNKNOWN
            return module(*args, **kwargs)
        return _UNKNOWN

    def _write(self, node: torch.fx.Node, value: Any, error: str | None) -> bool:
        """Store the metadata for ``value``; True when it differs from what was there."""
        before = (_signature(node.meta.get("tensor_meta")), node.meta.get("fxs_shape_error"))
        meta = _tensor_meta(value)
        if meta is None:
            for key in _META_KEYS:
                node.meta.pop(key, None)
            if error:
                node.meta["fxs_shape_error"] = error
        else:
            node.meta["tensor_meta"] = meta
            node.meta.pop("fxs_shape_error", None)
            if isinstance(meta, TensorMetadata):
                node.meta["fxs_shape"] = tuple(int(s) for s in meta.shape)
                node.meta["fxs_dtype"] = dtype_name(meta.dtype)
            else:
                node.meta["fxs_shape"] = [tuple(int(s) for s in m.shape) if m is not None else None for m in meta]
                node.meta["fxs_dtype"] = [dtype_name(m.dtype) if m is not None else None for m in meta]
        after = (_signature(node.meta.get("tensor_meta")), node.meta.get("fxs_shape_error"))
        # non-tensor results (sizes, tuples of ints) are not recorded: always let users recompute
        return before != after or (meta is None and value is not _UNKNOWN)


_PYTHON_VALUED_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "item", "tolist", "stride", "storage_offset",
    "element_size", "get_device", "data_ptr", "__len__", "__getitem__", "is_contiguous", "is_floating_point",
    "is_complex", "is_signed", "equal", "type",
})
"""Tensor methods whose result may be a Python value (an int, a list): not a tensor for the cost bound."""


def operand_values(gm: torch.fx.GraphModule | None) -> Callable[[torch.fx.Node], Any]:
    """``value_of(node)`` for the edit-time checks of ``fxstudio.core.trust``: a node's value as far
    as fake propagation knows it before any run (a fake tensor, a Python value such as
    ``x.shape[0]``), or ``trust.UNKNOWN``. Evaluated lazily, under this thread's fake mode, with the
    same guards as the shape refresh."""
    made: list[ShapeRefresher | None] = []  # made on first use: most edits never ask
    values: dict[torch.fx.Node, Any] = {}

    def value_of(node: torch.fx.Node) -> Any:
        if not made:
            made.append(ShapeRefresher(gm, traced=False) if isinstance(gm, torch.fx.GraphModule) else None)
        refresher = made[0]
        if refresher is None or not refresher.enabled:
            return trust.UNKNOWN
        with warnings.catch_warnings(), torch.no_grad(), _fake_tensor_logs_off(), refresher.mode:
            warnings.simplefilter("ignore")
            value = refresher._value_of(node, values, 0)
        if value is _UNKNOWN or (isinstance(value, (list, tuple)) and any(v is _UNKNOWN for v in value)):
            # past what fake propagation computes (data-dependent shapes): a submodule's or torch
            # operator's result is still a tensor; a Python value stays unknown
            if (node.op == "call_module" or (node.op == "call_function" and trust.makes_tensors(node.target))
                    or (node.op == "call_method" and node.target not in _PYTHON_VALUED_METHODS)):
                return trust.TENSOR_LIKE
            return trust.UNKNOWN
        return value

    return value_of


def result_elements(gm: torch.fx.GraphModule | None, op: str, target: Any, args: tuple,
                    kwargs: dict) -> tuple[int, int] | None:
    """(elements of the tensors a prospective call would return, elements of its largest tensor
    operand), computed on fake tensors before the node exists; None when that cannot be told."""
    if op not in ("call_function", "call_method", "call_module") or not isinstance(gm, torch.fx.GraphModule):
        return None
    refresher = ShapeRefresher(gm, traced=False)  # the edited graph now: only what trust allows runs
    if not refresher.enabled:
        return None
    values: dict[torch.fx.Node, Any] = {}
    unknown = []

    def fetch(n: torch.fx.Node) -> Any:
        v = refresher._value_of(n, values, 0)
        if v is _UNKNOWN or (isinstance(v, (list, tuple)) and any(x is _UNKNOWN for x in v)):
            unknown.append(n)
        return v

    with warnings.catch_warnings(), torch.no_grad(), _fake_tensor_logs_off(), refresher.mode:
        warnings.simplefilter("ignore")
        fake_args = torch.fx.node.map_arg(args, fetch)
        fake_kwargs = torch.fx.node.map_arg(kwargs, fetch)
        if unknown:
            return None
        try:
            out = refresher.call(op, target, fake_args, fake_kwargs)
        except Exception:  # noqa: BLE001 - the refresh after the edit reports real errors
            return None
    if out is _UNKNOWN:
        return None
    return _elements(out), max([_elements(v) for v in (*fake_args, *fake_kwargs.values())] + [0])


def _elements(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        try:
            return int(value.numel())
        except Exception:  # noqa: BLE001 - symbolic sizes
            return 0
    if isinstance(value, (list, tuple)):
        return sum(_elements(v) for v in value)
    if isinstance(value, dict):
        return sum(_elements(v) for v in value.values())
    return 0


def fake_mode():
    """The ``FakeTensorMode`` of the calling thread, made on first use and shared by every document
    edited on that thread. Making one is cheap once ``torch._dynamo`` is imported (which loading a
    model's shapes under a fake mode already does); its dispatch cache is process-wide."""
    mode = getattr(_LOCAL, "mode", None)
    if mode is None:
        mode = _LOCAL.mode = fx_compat.fake_tensor_mode(allow_non_fake_inputs=True)
        _LOCAL.modules = weakref.WeakKeyDictionary()
    return mode


def _fake_module(module: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``module`` whose parameters and buffers are fake tensors of this thread's mode,
    made once per module. A real module must not run here: under a fake mode an in-place op on
    real tensors still runs for real (a batch norm in training mode counts ``num_batches_tracked``
    up), and the document's modules share their tensors with the loaded model."""
    cache = _LOCAL.modules
    fake = cache.get(module)
    if fake is None:
        mode = fake_mode()
        fake = cache[module] = run_copy(module, parameters=mode.from_tensor, buffers=mode.from_tensor)
    return fake


@contextlib.contextmanager
def _fake_tensor_logs_off():
    """FakeTensorMode logs a traceback for an op that fails on its inputs; here that is an
    expected outcome (kept in ``fxs_shape_error``), not something to print."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


def _clear_downstream(nodes: list[torch.fx.Node]) -> set[torch.fx.Node]:
    """Remove the shape keys of ``nodes`` and everything that uses them (cheap: no evaluation)."""
    cleared: set[torch.fx.Node] = set()
    seen = set(nodes)
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if any(key in node.meta for key in _META_KEYS):
            for key in _META_KEYS:
                node.meta.pop(key, None)
            cleared.add(node)
        for user in node.users:
            if user not in seen:
                seen.add(user)
                stack.append(user)
    return cleared


def _signature(meta: Any) -> Any:
    """What matters of a ``tensor_meta`` for users of the node: shapes, dtypes, strides."""
    if isinstance(meta, TensorMetadata):
        return tuple(meta.shape), meta.dtype, tuple(meta.stride)
    if isinstance(meta, (list, tuple)):
        return tuple(_signature(m) for m in meta)
    return None


def _tensor_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        try:
            return fx_compat.extract_tensor_metadata(value)
        except Exception:  # noqa: BLE001 - symbolic sizes
            return None
    if isinstance(value, (list, tuple)) and value and any(isinstance(v, torch.Tensor) for v in value):
        metas = [_tensor_meta(v) if isinstance(v, torch.Tensor) else None for v in value]
        return metas if isinstance(value, list) else tuple(metas)
    return None


def _is_fake_limitation(exc: BaseException) -> bool:
    name = type(exc).__name__
    return any(word in name for word in ("Unsupported", "DataDependent", "DynamicOutputShape")) or \
        "FakeTensor" in str(exc)[:300]

