"""Keep shape metadata true after an edit: recompute ``tensor_meta``/``fxs_shape``/``fxs_dtype`` of
the nodes an edit touched, under ``FakeTensorMode`` (no real activations), and of their users
while the result keeps changing. A node whose shape cannot be computed loses its shape keys (so no
stale shape is shown); when the cause is a real error (a shape mismatch after a rewire) it is kept
in ``node.meta["fxs_shape_error"]``. A node of a pass's result takes the shape the result's trial
run measured instead, while that still holds (``passes.ran_shape``: written by the pass runner only):
fake tensors cannot evaluate observers or quantized modules, and get some quantized dtypes wrong.
"""

from __future__ import annotations

import contextlib
import heapq
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import fx_compat, heavy_imports
from fxstudio.core import trust
from fxstudio.core.edits.fake_results import (UNKNOWN, MetaOnly, NoKey, function_kind, key_of, remember,
                                              result_cache)
from fxstudio.core.edits.ledger import ledger_of
from fxstudio.core.edits.pointwise_results import pointwise_result
from fxstudio.core.edits.work import meta_nbytes, shape_of, value_nbytes
from fxstudio.core.errors import EditRefused
from fxstudio.core.metadata import dtype_name
from fxstudio.core.module_state import CannotCopy, run_copy
from fxstudio.core.passes import RUN_META_KEY, ran_shape

DEFAULT_BUDGET = 128  # node evaluations per edit (~0.3-1 ms each) before the rest is marked unknown
_UNKNOWN = UNKNOWN  # a value that cannot be told before a run (data-dependent, or not evaluable here)
_FAILED = object()  # a value that cannot be computed: the call, or one of its inputs, fails (a run stops there)
_LOCAL = threading.local()  # the fake mode of each thread that edits (a mode is not thread-safe)
_MAX_DEPTH = 64  # how far up to evaluate inputs that recorded no metadata (x.shape[0] chains)
_UNKNOWN_KEY = "fxs_shape_unknown"  # node_text.META_SHAPE_UNKNOWN: why a shape reads "unknown"
_META_KEYS = ("tensor_meta", "fxs_shape", "fxs_dtype", "fxs_shape_error", _UNKNOWN_KEY)
META_KEYS = _META_KEYS
"""The ``node.meta`` keys the shape refresh writes (a transaction saves them to roll back)."""


class ShapeRefresher:
    """Recomputes shapes of one edited module incrementally; made once per document.

    ``traced``: also call the targets ``gm``'s graph calls now (made with the document, that is
    the traced graph) even where ``trust.evaluable`` would not.
    """

    def __init__(self, gm: torch.fx.GraphModule, traced: bool = True):
        self.gm = gm
        self.enabled = any("tensor_meta" in n.meta for n in fx_compat.placeholders(gm.graph))
        self.complete = True
        self.budget = DEFAULT_BUDGET
        # what the traced graph calls (it ran under a fake mode when the model was loaded); taken
        # when the document is made, so nothing added to the graph later counts as traced
        self._traced = {id(n.target) for n in gm.graph.nodes if n.op == "call_function"} if traced else set()
        self._journal: Callable[[torch.fx.Node], None] | None = None
        self._lazy: contextlib.ExitStack | None = None  # refresh: the fake mode, entered at the first miss
        self.evaluated: list[torch.fx.Node] = []  # the nodes the last refresh evaluated
        self.unknown: list[torch.fx.Node] = []  # ... whose value it could not tell (no error either)

    @property
    def mode(self):
        """The fake mode of this thread, shared by all its documents (see ``fake_mode``)."""
        return fake_mode()

    def refresh(self, nodes: list[torch.fx.Node], budget: int | None | str = "default",
                journal: Callable[[torch.fx.Node], None] | None = None) -> set[torch.fx.Node]:
        """Recompute ``nodes`` and, transitively, users whose inputs changed; returns the nodes
        whose shape metadata changed. Every node evaluated gets its entry in the module's cost
        ledger (``edits/ledger.py``) updated. The first refresh after an edit skips the nodes the
        edit's budget check just evaluated (``Ledger.fresh``).

        After ``budget`` evaluations the rest of the wave is not computed but cleared (shape
        unknown, never stale) and ``complete`` turns False until a refresh without budget.
        ``journal(node)`` is called before a node's metadata is first written (a transaction
        keeps what it was, to roll back).
        """
        ledger = ledger_of(self.gm)
        if journal is None and ledger is not None and ledger.fresh:
            fresh, ledger.fresh = ledger.fresh, set()  # evaluated by the edit's own check, just now
            nodes = [n for n in nodes if n.meta.get("fxs_id") not in fresh]
        self.evaluated, self.unknown = [], []
        if not self.enabled or not nodes:
            return set()
        self._journal = journal
        if budget == "default":
            budget = self.budget
        heap = list({n for n in nodes if not fx_compat.node_erased(n)})
        heapq.heapify(heap)
        queued = set(heap)
        values: dict[torch.fx.Node, Any] = {}
        changed: set[torch.fx.Node] = set()
        try:
            with contextlib.ExitStack() as lazy:
                self._lazy = lazy  # results from the cache need no fake mode: entered on the first miss
                self._wave(heap, queued, values, changed, budget, journal)
        finally:
            self._lazy = None
            self._journal = None
        return changed

    def _wave(self, heap: list, queued: set, values: dict, changed: set, budget: int | None, journal) -> None:
        """The evaluation loop of ``refresh``."""
        evaluations = 0
        while heap:
            node = heapq.heappop(heap)
            if node.op == "placeholder":
                continue
            if budget is not None and evaluations >= budget:
                self.complete = False
                changed |= _clear_downstream([node, *heap], ledger_of(self.gm), journal)
                break
            evaluations += 1
            self.evaluated.append(node)
            # a node of a pass's result: what the result's trial run measured, while that holds (fake
            # tensors cannot evaluate observers or quantized modules, and give quantize_per_tensor a float dtype)
            ran = ran_shape(node) if RUN_META_KEY in node.meta else None
            value, error = (MetaOnly(ran), None) if ran is not None else self._evaluate(node, values)
            if value is _UNKNOWN and error is None:
                self.unknown.append(node)
            values[node] = value
            if self._write(node, value, error):
                changed.add(node)
                for user in node.users:
                    if user not in queued:
                        queued.add(user)
                        heapq.heappush(heap, user)

    def _enter_fake(self) -> None:
        """Inside ``refresh``: enter the fake mode (and no-grad, quiet warnings) if not yet done."""
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            lazy.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore")
            lazy.enter_context(torch.no_grad())
            lazy.enter_context(fx_compat.fake_tensor_logs_off())
            lazy.enter_context(self.mode)

    def _value_of(self, node: torch.fx.Node, values: dict, depth: int) -> Any:
        """A fake value for an input: from its recorded metadata, or evaluated (non-tensor nodes such
        as ``x.shape[0]`` record no metadata)."""
        if node in values:
            value = values[node]
            if isinstance(value, MetaOnly):  # a cached result: made a fake tensor when first needed
                value = values[node] = self._fake_from_meta(value.meta)
            return value
        meta = node.meta.get("tensor_meta")
        if meta is not None:
            value = self._fake_from_meta(meta)
        elif node.op == "placeholder" or depth > _MAX_DEPTH:
            value = _UNKNOWN
        else:
            value, _ = self._evaluate(node, values, depth + 1)
            if isinstance(value, MetaOnly):
                value = self._fake_from_meta(value.meta)
        values[node] = value
        return value

    def _fake_from_meta(self, meta: Any) -> Any:
        if isinstance(meta, TensorMetadata):  # called inside the fake mode
            if meta.is_quantized:  # a quantized fake tensor cannot be made (QuantizedMeta has no empty)
                return _UNKNOWN
            try:
                return torch.empty_strided(tuple(meta.shape), tuple(meta.stride), dtype=meta.dtype)
            except Exception:  # noqa: BLE001 - a dtype or layout fake tensors cannot make
                return _UNKNOWN
        if isinstance(meta, (list, tuple)):
            return type(meta)(self._fake_from_meta(m) for m in meta) if isinstance(meta, list) \
                else tuple(self._fake_from_meta(m) for m in meta)
        return _UNKNOWN

    def _evaluate(self, node: torch.fx.Node, values: dict, depth: int = 0) -> tuple[Any, str | None]:
        key = self.cache_key(node.op, node.target, node.args, node.kwargs, values)
        if key is not None:
            hit = result_cache().get(key)
            if hit is not None:
                return MetaOnly(list(hit) if isinstance(hit, list) else hit), None
            told = pointwise_result(self, node.op, node.target, node.args, node.kwargs, values)
            if told is not None:  # no fake mode needed (edits/pointwise_results.py)
                remember(key, told.meta)
                return told, None
        value, error = self._evaluate_now(node, values, depth)
        if key is not None and error is None:
            remember(key, _tensor_meta(value))
        return value, error

    def cache_key(self, op: str, target: Any, node_args: tuple, node_kwargs: dict, values: dict) -> Any:
        """What a call's fake result depends on, or None when it cannot be told without evaluating:
        the target and the shape, stride, dtype (device, grad) of every tensor operand, from the
        values of this refresh or the recorded metadata, and every literal exactly (with its type).

        Fake results depend on nothing else, so a graph of repeated blocks, or a script of repeated
        inserts, evaluates each distinct call once. Not cached: submodule calls, calls this
        refresher may not make, in-place calls (they may change their operand's metadata) and
        operands that are fake constants (their values may decide a shape)."""
        if op == "call_function":
            kind = function_kind(target)
            if kind == "no" or (kind == "traced" and id(target) not in self._traced):
                return None
        elif op == "call_method":
            if not isinstance(target, str) or target.startswith("_") or target.endswith("_") \
                    or target in trust.TENSOR_METHODS_DENIED:
                return None
        else:
            return None
        try:
            args = tuple(key_of(a, values) for a in node_args)
            kwargs = tuple((k, key_of(v, values)) for k, v in node_kwargs.items())
            if op == "call_method" and not (args and args[0][0] == "T"):
                return None  # the receiver must be a tensor
            key = (op, target, args, kwargs, torch.get_default_dtype())
            hash(key)
        except NoKey:
            return None
        except TypeError:  # an unhashable target
            return None
        return key

    def _evaluate_now(self, node: torch.fx.Node, values: dict, depth: int = 0) -> tuple[Any, str | None]:
        self._enter_fake()
        unknown = []

        failed = []

        def fetch(n: torch.fx.Node) -> Any:
            v = self._value_of(n, values, depth)
            kind = _missing(v)
            if kind is not None:
                (unknown if kind is _UNKNOWN else failed).append(n)
            return v

        args = torch.fx.node.map_arg(node.args, fetch)
        kwargs = torch.fx.node.map_arg(node.kwargs, fetch)
        if unknown:
            return _UNKNOWN, None
        if failed:  # downstream of an error: a run stops there first
            return _FAILED, None
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
            return _FAILED, torch_message(exc)
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
        """Store the metadata for ``value`` and count the node in the module's ledger; True when
        the metadata differs from what was there."""
        if self._journal is not None:
            self._journal(node)
        changed = self._write_meta(node, value, error)
        ledger = ledger_of(self.gm)
        if ledger is not None:
            ledger.update(node, self.gm)
        return changed

    def _write_meta(self, node: torch.fx.Node, value: Any, error: str | None) -> bool:
        before = (_signature(node.meta.get("tensor_meta")), node.meta.get("fxs_shape_error"), node.meta.get(_UNKNOWN_KEY))
        meta = _tensor_meta(value)
        if meta is None:
            for key in _META_KEYS:
                node.meta.pop(key, None)
            missing = _missing(value)
            if error:
                node.meta["fxs_shape_error"] = error  # torch rejects the node (node_text.rejection_text)
            elif missing is not None:  # not a Python value: a tensor whose shape cannot be told
                node.meta[_UNKNOWN_KEY] = "upstream" if missing is _FAILED else "fake"
        else:
            node.meta["tensor_meta"] = meta
            node.meta.pop("fxs_shape_error", None)
            node.meta.pop(_UNKNOWN_KEY, None)
            if isinstance(meta, TensorMetadata):
                node.meta["fxs_shape"] = tuple(int(s) for s in meta.shape)
                node.meta["fxs_dtype"] = dtype_name(meta.dtype)
            else:
                node.meta["fxs_shape"] = [tuple(int(s) for s in m.shape) if m is not None else None for m in meta]
                node.meta["fxs_dtype"] = [dtype_name(m.dtype) if m is not None else None for m in meta]
        after = (_signature(node.meta.get("tensor_meta")), node.meta.get("fxs_shape_error"), node.meta.get(_UNKNOWN_KEY))
        # non-tensor results (sizes, tuples of ints) are not recorded: always let users recompute
        return before != after or (meta is None and _missing(value) is None)


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
            made.append(_checker(gm) if isinstance(gm, torch.fx.GraphModule) else None)
        refresher = made[0]
        if refresher is None or not refresher.enabled:
            return trust.UNKNOWN
        if node not in values and isinstance(node.meta.get("tensor_meta"), TensorMetadata):
            return trust.TENSOR_LIKE  # a tensor: all the cost bound asks (no fake mode to make)
        with warnings.catch_warnings(), torch.no_grad(), fx_compat.fake_tensor_logs_off(), refresher.mode:
            warnings.simplefilter("ignore")
            value = refresher._value_of(node, values, 0)
        if _missing(value) is not None:
            # past what fake propagation computes (data-dependent shapes): a submodule's or torch
            # operator's result is still a tensor; a Python value stays unknown
            if (node.op == "call_module" or (node.op == "call_function" and trust.makes_tensors(node.target))
                    or (node.op == "call_method" and node.target not in _PYTHON_VALUED_METHODS)):
                return trust.TENSOR_LIKE
            return trust.UNKNOWN
        return value

    return value_of


@dataclass(frozen=True)
class Prospect:
    """What a call an edit is about to make would return, told on fake tensors before the node
    exists: its result and operands as ``work.Shape``s (literals as they are) and the result's bytes."""

    out: Any
    args: tuple
    kwargs: dict
    nbytes: int


def prospective_call(gm: torch.fx.GraphModule | None, op: str, target: Any, args: tuple,
                     kwargs: dict) -> Prospect | None:
    """The ``Prospect`` of ``target(*args, **kwargs)`` as a node of kind ``op`` of the edited graph
    ``gm`` (node operands from their recorded metadata, through the result cache); None when it
    cannot be told (no shapes, an operand of unknown shape, a call that fails or may not run here)."""
    if op not in ("call_function", "call_method", "call_module") or not isinstance(gm, torch.fx.GraphModule):
        return None
    refresher = _checker(gm)  # the edited graph now: only what trust allows runs
    if not refresher.enabled:
        return None
    values: dict[torch.fx.Node, Any] = {}
    unknown = []

    def meta_shape(n: torch.fx.Node) -> Any:
        meta = n.meta.get("tensor_meta")
        if meta is None:
            unknown.append(n)
        return shape_of(meta)

    key = refresher.cache_key(op, target, args, kwargs, values)
    hit = result_cache().get(key) if key is not None else None
    if hit is None and key is not None:
        told = pointwise_result(refresher, op, target, args, kwargs, values)
        if told is not None:  # no fake mode needed (edits/pointwise_results.py)
            hit = told.meta
            remember(key, hit)
    if hit is not None:
        shaped_args = torch.fx.node.map_arg(args, meta_shape)
        shaped_kwargs = torch.fx.node.map_arg(kwargs, meta_shape)
        if not unknown:
            return Prospect(shape_of(hit), shaped_args, dict(shaped_kwargs), meta_nbytes(hit))

    def fetch(n: torch.fx.Node) -> Any:
        v = refresher._value_of(n, values, 0)
        if _missing(v) is not None:
            unknown.append(n)
        return v

    unknown.clear()
    with warnings.catch_warnings(), torch.no_grad(), fx_compat.fake_tensor_logs_off(), refresher.mode:
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
    if key is not None:
        remember(key, _tensor_meta(out))
    return Prospect(shape_of(out), shape_of(tuple(fake_args)), {k: shape_of(v) for k, v in fake_kwargs.items()},
                    value_nbytes(out))


def fake_check(refresher: "ShapeRefresher", op: str, target: Any, args: tuple, kwargs: dict) -> tuple[str, str | None]:
    """Whether torch accepts ``target(*args, **kwargs)`` as a node of kind ``op`` of the refresher's
    module, told on fake tensors before any edit (node operands from their recorded metadata):
    ``("fits", None)``, ``("rejected", torch's one-line message)``, or ``("unknown", None)`` when
    it cannot be told (no shapes, an operand of unknown shape, a call that may not run here)."""
    if op not in ("call_function", "call_method", "call_module") or not refresher.enabled:
        return "unknown", None
    values: dict[torch.fx.Node, Any] = {}
    unknown = []

    def fetch(n: torch.fx.Node) -> Any:
        v = refresher._value_of(n, values, 0)
        if _missing(v) is not None:
            unknown.append(n)
        return v

    with warnings.catch_warnings(), torch.no_grad(), fx_compat.fake_tensor_logs_off(), refresher.mode:
        warnings.simplefilter("ignore")
        try:
            fake_args = torch.fx.node.map_arg(args, fetch)
            fake_kwargs = torch.fx.node.map_arg(kwargs, fetch)
            if unknown:
                return "unknown", None
            out = refresher.call(op, target, fake_args, fake_kwargs)
        except EditRefused:  # a cost bound: the edit's own check says why
            return "unknown", None
        except (RuntimeError, ValueError, TypeError, IndexError, AttributeError, KeyError, AssertionError) as exc:
            if _is_fake_limitation(exc):
                return "unknown", None
            return "rejected", torch_message(exc)
        except Exception:  # noqa: BLE001 - anything else: not told here
            return "unknown", None
    return ("unknown", None) if _missing(out) is not None else ("fits", None)


def _missing(value: Any) -> Any:
    """``_UNKNOWN`` when ``value`` (or an item of it) cannot be told before a run, else ``_FAILED``
    when it (or an item) cannot be computed, else None."""
    if value is _UNKNOWN or value is _FAILED:
        return value
    if isinstance(value, (list, tuple)):
        if any(v is _UNKNOWN for v in value):
            return _UNKNOWN
        if any(v is _FAILED for v in value):
            return _FAILED
    return None


def _checker(gm: torch.fx.GraphModule) -> "ShapeRefresher":
    """A refresher for the checks of edits on ``gm`` (``traced=False``: only what trust allows runs)."""
    return ShapeRefresher(gm, traced=False)


def fake_mode():
    """The ``FakeTensorMode`` of the calling thread, made on first use and shared by every document
    edited on that thread. Making one is cheap once ``torch._dynamo`` is imported (which loading a
    model's shapes under a fake mode already does); its dispatch cache is process-wide."""
    mode = getattr(_LOCAL, "mode", None)
    if mode is None:
        with heavy_imports.importing():  # the first one imports torch._dynamo: one thread at a time
            mode = _LOCAL.mode = fx_compat.fake_tensor_mode(allow_non_fake_inputs=True)
        _LOCAL.modules = weakref.WeakKeyDictionary()
        _WARM.set()
    return mode


_WARM = threading.Event()  # set once a thread made a fake mode: making another is cheap from then on


def fake_mode_ready() -> bool:
    """Whether this thread's fake mode is made, or cheap to make: the first one of a process costs
    about a second (importing ``torch._dynamo``), the next ones little (``warm_fake_mode``)."""
    return _WARM.is_set() or getattr(_LOCAL, "mode", None) is not None


def warm_fake_mode() -> None:
    """Make this thread's fake mode: on a worker thread, so that the first fake-tensor check of
    another thread (the GUI's, while a drag waits for it) does not pay the import."""
    fake_mode()


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


def _clear_downstream(nodes: list[torch.fx.Node], ledger=None, journal=None) -> set[torch.fx.Node]:
    """Remove the shape keys of ``nodes`` and everything that uses them (cheap: no evaluation).
    The ledger keeps their last counts and marks them stale (the next edit evaluates them)."""
    cleared: set[torch.fx.Node] = set()
    seen = set(nodes)
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if any(key in node.meta for key in _META_KEYS) and node.meta.get(_UNKNOWN_KEY) != "budget":
            if journal is not None:
                journal(node)
            for key in _META_KEYS:
                node.meta.pop(key, None)
            node.meta[_UNKNOWN_KEY] = "budget"  # reads "unknown" until Document.refresh_shapes()
            cleared.add(node)
            if ledger is not None and "fxs_id" in node.meta:
                ledger.stale.add(node.meta["fxs_id"])
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
    if isinstance(value, MetaOnly):
        return value.meta
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
    """Whether ``exc`` says what fake tensors cannot do (a data-dependent size, an op without a
    fake kernel) rather than what torch rejects. Python's operand errors name the fake tensor's
    type (``unsupported operand type(s) for +: 'FakeTensor' and 'str'``): those are real errors."""
    name = type(exc).__name__
    if any(word in name for word in ("Unsupported", "DataDependent", "DynamicOutputShape")):
        return True
    text = str(exc)[:300]
    if isinstance(exc, TypeError) and 0 < text.count("'FakeTensor'") == text.count("FakeTensor"):
        return False
    return "FakeTensor" in text


def torch_message(exc: BaseException) -> str:
    """Torch's one-line message for an exception fake-tensor propagation raised at a node
    (``TypeError: unsupported operand type(s) for +: 'Tensor' and 'str'``: fake tensors are named as
    a real run names them), at most 200 characters."""
    text = str(exc).strip()
    line = text.splitlines()[0][:200] if text else ""
    return f"{type(exc).__name__}: {line.replace(_FAKE_NAME, _REAL_NAME)}"


_FAKE_NAME, _REAL_NAME = "'FakeTensor'", "'Tensor'"

