"""Numbers that say how far two runs are apart: flattened outputs, per-tensor errors, timings.

Every figure is computed on the run's device and reduced to Python floats; only the scatter and
histogram samples (a few thousand values) are brought back to the CPU as numpy arrays.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.fx

from fxstudio.core.compare import fused_diff

SAMPLE_LIMIT = 20_000
"""At most this many values of an output are kept for the GUI's scatter and histogram."""


def flatten_outputs(value: Any, prefix: str = "out") -> list[tuple[str, Any]]:
    """The leaves of a nested output with their paths, e.g. ``[("out[0]['logits']", tensor)]``.

    Tuples, lists, dicts and namedtuples are walked (namedtuple fields by name, as ``out.logits``);
    anything else (a tensor, a number, None) is a leaf.
    """
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        items: list[tuple[str, Any]] = []
        for field in value._fields:
            items += flatten_outputs(getattr(value, field), f"{prefix}.{field}")
        return items
    if isinstance(value, (tuple, list)):
        items = []
        for i, item in enumerate(value):
            items += flatten_outputs(item, f"{prefix}[{i}]")
        return items
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            items += flatten_outputs(item, f"{prefix}[{key!r}]")
        return items
    return [(prefix, value)]


@dataclass
class TensorDiff:
    """How an edited value differs from its reference.

    ``score`` is the largest ``|e - o| / (atol + rtol * |o|)`` over the elements: the value is
    ``allclose`` at those tolerances exactly when ``score <= 1``. A shape or dtype-kind mismatch,
    or a NaN where the reference has none, gives ``inf``.
    """

    max_abs: float
    max_rel: float
    score: float
    allclose: bool
    cosine: float | None
    equal: bool
    note: str = ""

    @staticmethod
    def mismatch(note: str) -> "TensorDiff":
        """A difference that is not numeric: other shape, a tensor against a non-tensor, ..."""
        inf = math.inf
        return TensorDiff(inf, inf, inf, False, None, False, note)


_NUMPY_EQUAL_DTYPES = {torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.int16,
                       torch.int8, torch.uint8, torch.bool}
_NUMPY_EQUAL_MIN = 4096


def tensors_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``torch.equal`` (same shape, every element ``==``; NaN is not equal to NaN), faster.

    For large CPU tensors numpy's ``array_equal`` does the same test about four times faster than
    ``torch.equal`` on one thread (measured: 52 µs vs 193 µs for 1 MiB), which is the bulk of a
    node-by-node comparison; small tensors and other devices or dtypes use ``torch.equal``.
    """
    if (a.device.type == "cpu" and b.device.type == "cpu" and a.dtype == b.dtype and a.dtype in _NUMPY_EQUAL_DTYPES
            and a.numel() >= _NUMPY_EQUAL_MIN and a.shape == b.shape):
        try:
            return bool(np.array_equal(a.detach().numpy(), b.detach().numpy()))
        except (RuntimeError, TypeError):  # conjugate/negative views, subclasses: torch knows best
            pass
    return torch.equal(a, b)


def fast_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``tensors_equal`` for two tensors of one dtype, shape and device; False when unsure
    (quantized, sparse and other layouts go the full way through ``diff_tensors``)."""
    if a.layout != torch.strided or b.layout != torch.strided or a.is_quantized or b.is_quantized:
        return False
    try:
        return tensors_equal(a, b)
    except (RuntimeError, TypeError):
        return False


def _float(t: torch.Tensor) -> float:
    return float(t.item())


_WORK_DTYPE = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
               torch.float64: torch.float64}
_PLAIN_TYPES = (int, bool, str, type(None), torch.Size)
# Inside a run (values just computed, in cache) torch.equal beats numpy's test up to about this
# many elements (measured on the transformer's 16K-32K and the CNN's 256K-1M element values).
_NODE_NUMPY_EQUAL_MIN = 1 << 16
_np_max = np.maximum.reduce  # ndarray.max without its Python wrapper; NaN propagates the same
_np_all = np.logical_and.reduce
try:  # what np.errstate(all="ignore") sets, made once (numpy 2's private state; errstate otherwise)
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj
    _QUIET = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):
    _extobj_contextvar = _QUIET = None
_SCALARS: dict[tuple, tuple] = {}
_DIFF_CHUNK = 1 << 16
"""Elements per slice in the CPU difference pass: two work slices of this size stay in the cache,
and no full-size temporaries are made (a fresh multi-MiB buffer costs page faults on every call).
Measured best of 32K..4M elements per slice on 1 MiB and 4 MiB float32 values (64K-128K)."""


def node_diff(ref: Any, new: Any, *, rtol: float, atol: float, expect_equal: bool = True,
              scratch: "DiffScratch | None" = None) -> TensorDiff | None:
    """What a node-by-node run needs of ``diff_values(ref, new, with_rel=False, with_cosine=False)``:
    None when the values are equal (``diff_values`` returns None or an ``equal`` diff), else the same
    ``TensorDiff`` (same ``max_abs``, ``score``, ``allclose`` and ``note``), computed faster.

    Two float tensors of one dtype, shape and device take one fused pass: ``|e - o|``, its maximum
    and the tolerance score, slice by slice on the CPU. A zero maximum means every element is equal
    (IEEE: ``e - o == 0`` exactly when ``e == o`` for non-NaN values), confirmed by an equality test; a
    NaN anywhere sends the pair to ``diff_values``, which handles NaN matching. ``expect_equal``
    (the node is expected to be unchanged) tries an equality test first where the fused pass is not
    available (numba missing, other dtypes or memory layouts). Anything else
    (other dtypes, shapes, devices, layouts, subclasses, non-tensors) goes to ``diff_values``.
    ``scratch``: working memory reused across calls (see ``DiffScratch``); fresh arrays without.
    """
    if type(ref) is torch.Tensor and type(new) is torch.Tensor:
        dtype = ref.dtype
        if dtype is new.dtype and fused_diff.worth(ref.numel()):
            fast = _fast_scalars(dtype, rtol, atol)
            # The common case in a run, with the fewest checks: two contiguous float32/float64 CPU
            # tensors of one shape, read in one fused pass (what _float_diff does for them). Also
            # for values expected equal, at any size: on equal values the pass divides nothing,
            # and inside a run it beats numpy's equality test (2.8 against 4.3 ms per run on the
            # residual CNN at batch 16, whose values are 0.5-1 MiB), which writes a mask.
            if (fast is not None
                    and ref.shape == new.shape and ref.is_cpu and new.is_cpu and ref.layout is torch.strided
                    and new.layout is torch.strided and ref.is_contiguous() and new.is_contiguous()
                    and not ref.is_neg() and not new.is_neg()):
                found = fused_diff.fused_max_abs_and_score(ref.data_ptr(), new.data_ptr(), ref.numel(), *fast)
                if found is not None:
                    return _from_fused(ref, new, found, rtol, atol)
        work = _WORK_DTYPE.get(dtype)
        if (work is not None and new.dtype is dtype and ref.layout is torch.strided and new.layout is torch.strided
                and ref.shape == new.shape and ref.device == new.device):
            # The fused pass tests equality itself, in the same read, and beats torch.equal below
            # 64K elements; above, numpy's equality test is ~2x faster than it (no division), so
            # it goes first unless the first elements already differ.
            if expect_equal and not (fused_diff.worth(ref.numel()) and ref.is_cpu and work is dtype
                                     and (ref.numel() < _NODE_NUMPY_EQUAL_MIN or _head_differs(ref, new))):
                # tensors_equal's test, without its checks (done above) and numpy's wrapper
                if dtype is torch.bfloat16 or ref.numel() < _NODE_NUMPY_EQUAL_MIN or not ref.is_cpu:
                    if torch.equal(ref, new):
                        return None
                else:
                    x = _as_numpy(ref)
                    if _np_all(np.equal(x, _as_numpy(new), out=_work_arrays(scratch, x, 1, np.bool_)[0]), axis=None):
                        return None
            return _float_diff(ref, new, work, rtol=rtol, atol=atol, confirm=not expect_equal, scratch=scratch)
        if dtype == new.dtype and ref.shape == new.shape and ref.device == new.device and fast_equal(ref, new):
            return None
    elif type(ref) is type(new) and type(ref) in _PLAIN_TYPES and ref == new:
        return None  # what diff_values finds for two equal ints, sizes, strings, bools, None
    diff = diff_values(ref, new, rtol=rtol, atol=atol, with_rel=False, with_cosine=False)
    return None if diff is None or diff.equal else diff


def _as_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach() if t.requires_grad else t
    return t.resolve_neg().numpy() if t.is_neg() else t.numpy()


class DiffScratch:
    """Working memory for ``node_diff``'s CPU passes, reused from one comparison to the next:
    ``with DiffScratch() as scratch: node_diff(..., scratch=scratch)`` (released at the end).

    One byte buffer, allocated through torch (so that torch's allocator and memory accounting see
    it: a node-by-node run's peak memory includes it) and grown to the largest request; arrays of
    a given shape and dtype over it are kept, as making them costs more than small comparisons.
    """

    __slots__ = ("_buffer", "_raw", "_views")

    def __init__(self):
        self._buffer: torch.Tensor | None = None
        self._raw: np.ndarray | None = None
        self._views: dict[tuple, list[np.ndarray]] = {}

    def __enter__(self) -> "DiffScratch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def arrays(self, shape: tuple[int, ...], dtype: np.dtype, count: int) -> list[np.ndarray]:
        """``count`` disjoint C-contiguous arrays of ``shape`` and ``dtype`` (contents undefined)."""
        key = (shape, dtype, count)
        views = self._views.get(key)
        if views is not None:
            return views
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if self._raw is None or self._raw.shape[0] < size * count:
            self._buffer = torch.empty(size * count, dtype=torch.uint8)
            self._raw = self._buffer.numpy()
            self._views.clear()
        views = [self._raw[i * size:(i + 1) * size].view(dtype).reshape(shape) for i in range(count)]
        self._views[key] = views
        return views

    def release(self) -> None:
        """Free the buffer (the next request allocates again)."""
        self._buffer = self._raw = None
        self._views.clear()


def _work_arrays(scratch: DiffScratch | None, like: np.ndarray | tuple, count: int,
                 dtype: Any = None) -> list[np.ndarray]:
    shape = like.shape if isinstance(like, np.ndarray) else like
    dtype = dtype or like.dtype
    if scratch is None:
        return [np.empty(shape, dtype) for _ in range(count)]
    return scratch.arrays(shape, dtype, count)


def _float_diff(ref: torch.Tensor, new: torch.Tensor, work: torch.dtype, *, rtol: float, atol: float,
                confirm: bool, scratch: DiffScratch | None) -> TensorDiff | None:
    """``node_diff`` of two float tensors of one dtype, shape and device; the arithmetic is
    ``diff_tensors``' (same ops in the same working dtype, so the same figures)."""
    n = ref.numel()
    if n == 0:
        return None
    o = ref.detach() if ref.requires_grad else ref
    e = new.detach() if new.requires_grad else new
    if work is not ref.dtype:
        o, e = o.to(work), e.to(work)
    if o.is_neg() or e.is_neg():  # a lazily negated view: its memory holds the other sign
        o, e = o.resolve_neg(), e.resolve_neg()
    if o.is_cpu and fused_diff.worth(n) and rtol >= 0 and atol >= 0:
        fused = _fused_cpu(o, e, rtol, atol)
        if fused is not None:
            return _from_fused(ref, new, fused, rtol, atol)
    if o.is_cpu:
        # numpy's floating-point warnings off: inf - inf and 0/0 are expected (torch is silent)
        if _QUIET is not None:
            token = _extobj_contextvar.set(_QUIET)  # np.errstate's own mechanism, at a third of its cost
            try:
                found = _cpu_max_abs_and_score(o, e, n, rtol, atol, scratch)
            finally:
                _extobj_contextvar.reset(token)
        else:
            with np.errstate(all="ignore"):
                found = _cpu_max_abs_and_score(o, e, n, rtol, atol, scratch)
    else:
        d = torch.sub(e, o).abs_()
        max_abs = _float(d.max())
        score = math.nan
        if max_abs > 0 and (atol > 0 or rtol > 0):
            score = _float(d.div_(o.abs().mul_(rtol).add_(atol)).max())
        found = (max_abs, score)
    max_abs, score = found if found is not None else (math.nan, math.nan)
    if max_abs == 0.0:
        # Every element equal, unless a flush-to-zero mode rounded a tiny difference away.
        if confirm and tensors_equal(ref, new):
            return None
        max_abs = math.nan
    if math.isnan(max_abs):  # NaN somewhere (or the corner above): the full comparison decides
        diff = diff_tensors(ref, new, rtol=rtol, atol=atol, with_rel=False, with_cosine=False)
        return None if diff.equal else diff
    return _float_result(max_abs, score, rtol, atol)


def _from_fused(ref: torch.Tensor, new: torch.Tensor, fused: tuple[float, float, bool, bool], rtol: float,
                atol: float) -> TensorDiff | None:
    """``node_diff``'s result from the fused pass's figures."""
    max_abs, score, saw_nan, identical = fused
    if identical:  # the same bits everywhere, no NaN: equal
        return None
    if saw_nan or max_abs == 0.0:  # NaN or infinities, -0 against +0, or a flush-to-zero mode
        diff = diff_tensors(ref, new, rtol=rtol, atol=atol, with_rel=False, with_cosine=False)
        return None if diff.equal else diff
    return _float_result(max_abs, score, rtol, atol)


_FAST: dict[tuple, tuple | None] = {}


def _fast_scalars(dtype: torch.dtype, rtol: float, atol: float) -> tuple | None:
    """rtol and atol as the fused pass takes them for ``dtype`` (float32/float64: the pass reads
    the tensors in place), None for other dtypes or tolerances it does not take."""
    key = (dtype, rtol, atol)
    try:
        return _FAST[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable tolerance
        return None
    np_dtype = _NUMPY_DTYPE.get(dtype)
    ok = np_dtype is not None and isinstance(rtol, (int, float)) and isinstance(atol, (int, float)) \
        and rtol >= 0 and atol >= 0
    found = _FAST[key] = _scalars(np_dtype, rtol, atol) if ok else None
    return found


def _float_result(max_abs: float, score: float, rtol: float, atol: float) -> TensorDiff:
    if not (atol > 0 or rtol > 0) or math.isnan(score):
        score = math.inf  # no tolerance at all, or 0/0 or inf/inf in the score: as diff_tensors
    note = "" if max_abs != math.inf else "infinite difference"
    return TensorDiff(max_abs, math.nan, score, score <= 1.0, None, False, note)


def _fused_cpu(o: torch.Tensor, e: torch.Tensor, rtol: float, atol: float) -> tuple[float, float, bool, bool] | None:
    """``fused_diff``'s one pass over two CPU tensors of the working dtype, read as flat arrays in
    memory order (every figure is invariant under a common permutation of the elements); None
    when they have no such common order (slices, expanded values), or the kernel is unavailable."""
    if not (o.is_contiguous() and e.is_contiguous()):
        order = sorted(range(o.dim()), key=lambda i: -o.stride(i))
        o = o.permute(order)
        e = e.permute(order)
        if not (o.is_contiguous() and e.is_contiguous()):
            return None
    r, a = _scalars(_NUMPY_DTYPE[o.dtype], rtol, atol)
    return fused_diff.fused_max_abs_and_score(o.data_ptr(), e.data_ptr(), o.numel(), r, a)


def _head_differs(ref: torch.Tensor, new: torch.Tensor) -> bool:
    """Whether the first elements in memory of two contiguous float32/float64 CPU tensors differ
    (False when unsure), by the fused kernel on a short head."""
    if not (ref.is_contiguous() and new.is_contiguous()) or ref.is_neg() or new.is_neg():
        return False
    found = fused_diff.fused_max_abs_and_score(ref.data_ptr(), new.data_ptr(), min(ref.numel(), _HEAD),
                                               *_scalars(_NUMPY_DTYPE[ref.dtype], 0.0, 1.0))
    return found is not None and not found[3]


_HEAD = 256
_NUMPY_DTYPE = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def _scalars(dtype: np.dtype, rtol: float, atol: float) -> tuple[Any, Any]:
    """rtol and atol in the working dtype, as torch rounds a Python scalar."""
    key = (dtype, rtol, atol)
    scalars = _SCALARS.get(key)
    if scalars is None:
        scalars = _SCALARS[key] = (dtype.type(rtol), dtype.type(atol))
    return scalars


def _cpu_max_abs_and_score(o: torch.Tensor, e: torch.Tensor, n: int, rtol: float, atol: float,
                           scratch: DiffScratch | None) -> tuple[float, float] | None:
    """``max |e - o|`` and ``max |e - o| / (atol + rtol |o|)`` of two CPU float tensors of the
    working dtype with numpy (the same IEEE operations as ``diff_tensors``, with less overhead per
    call); None when a NaN appears in the differences. The score is NaN when a division is 0/0 or
    inf/inf. Large tensors go in cache-sized slices through two work arrays."""
    x = o.numpy()
    y = e.numpy()
    r, a = _scalars(x.dtype, rtol, atol)
    need_score = atol > 0 or rtol > 0
    if n <= _DIFF_CHUNK:
        if x.ndim == 0:  # numpy gives scalars, not arrays, for 0-d operands
            x, y = x.reshape(1), y.reshape(1)
        d, q = _work_arrays(scratch, x, 2)
        np.subtract(y, x, out=d)
        np.abs(d, out=d)
        max_abs = float(_np_max(d, axis=None))
        if max_abs != max_abs:
            return None
        if max_abs == 0.0 or not need_score:
            return max_abs, math.nan
        np.abs(x, out=q)
        np.multiply(q, r, out=q)
        np.add(q, a, out=q)
        np.divide(d, q, out=d)
        return max_abs, float(_np_max(d, axis=None))
    x = x.reshape(-1)
    y = y.reshape(-1)
    d_buf, q_buf = _work_arrays(scratch, (_DIFF_CHUNK,), 2, x.dtype)
    max_abs = 0.0
    score = 0.0
    for start in range(0, n, _DIFF_CHUNK):
        xs = x[start:start + _DIFF_CHUNK]
        ys = y[start:start + _DIFF_CHUNK]
        k = xs.shape[0]
        d = d_buf if k == _DIFF_CHUNK else d_buf[:k]
        np.subtract(ys, xs, out=d)
        np.abs(d, out=d)
        m = float(_np_max(d, axis=None))
        if m != m:
            return None
        if m > max_abs:
            max_abs = m
        if not need_score or (m == 0.0 and atol > 0):
            continue  # all-zero differences over a positive denominator score 0
        q = q_buf if k == _DIFF_CHUNK else q_buf[:k]
        np.abs(xs, out=q)
        np.multiply(q, r, out=q)
        np.add(q, a, out=q)
        np.divide(d, q, out=d)
        s = float(_np_max(d, axis=None))
        if s != s:
            score = math.nan
        elif s > score:
            score = s
    return max_abs, score


def diff_tensors(ref: torch.Tensor, new: torch.Tensor, *, rtol: float, atol: float,
                 with_rel: bool = True, with_cosine: bool = True) -> TensorDiff:
    """Compare ``new`` against ``ref`` (same device). Bitwise-equal tensors cost one pass."""
    if ref.shape != new.shape:
        return TensorDiff.mismatch(f"shape {tuple(new.shape)} instead of {tuple(ref.shape)}")
    if ref.is_complex() or new.is_complex():
        ref, new = torch.view_as_real(ref.resolve_conj()), torch.view_as_real(new.resolve_conj())
    if ref.dtype == torch.bool or new.dtype == torch.bool:
        ref, new = ref.to(torch.uint8), new.to(torch.uint8)
    if ref.numel() == 0:
        return TensorDiff(0.0, 0.0, 0.0, True, 1.0, True)
    if ref.dtype == new.dtype and tensors_equal(ref, new):
        return TensorDiff(0.0, 0.0, 0.0, True, 1.0, True)
    if not ref.is_floating_point() and not new.is_floating_point():
        # Integer values: compare exactly, in float64 to avoid overflow of the difference.
        ref, new = ref.to(torch.float64), new.to(torch.float64)
    # Reductions in float32 at least: half-precision maxima lose digits, sums overflow.
    work = torch.promote_types(torch.promote_types(ref.dtype, new.dtype), torch.float32)
    o = ref.to(work)
    e = new.to(work)
    d = torch.sub(e, o).abs_()
    finite_match = torch.equal(torch.isnan(o), torch.isnan(e))
    d = torch.nan_to_num_(d, nan=0.0, posinf=math.inf) if finite_match else d
    # Equal infinities give nan in e - o; they are equal values, so they count as no error.
    max_abs = _float(d.max())
    oa = o.abs()
    denom = oa.mul(rtol).add_(atol)
    score = _float(torch.div(d, denom).max()) if atol > 0 or rtol > 0 else (0.0 if max_abs == 0 else math.inf)
    if not finite_match or math.isnan(score):
        score = math.inf
    max_rel = math.nan
    if with_rel:
        max_rel = _float(torch.div(d, oa.clamp_min_(torch.finfo(work).tiny)).max())
    cosine = cosine_similarity(o, e) if with_cosine else None
    note = "" if finite_match else "NaN where the reference has none (or the other way round)"
    if not math.isfinite(max_abs) and finite_match:
        note = "infinite difference"
    return TensorDiff(max_abs, max_rel, score, score <= 1.0, cosine, False, note)


def cosine_similarity(a: torch.Tensor, b: torch.Tensor) -> float | None:
    """Cosine similarity of the flattened tensors in float64; 1.0 for two zero tensors, None with NaNs."""
    a64 = a.reshape(-1).to(torch.float64)
    b64 = b.reshape(-1).to(torch.float64)
    na, nb = _float(a64.norm()), _float(b64.norm())
    if math.isnan(na) or math.isnan(nb):
        return None
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0 or not math.isfinite(na * nb):
        return 0.0 if na * nb == 0 else None
    return max(-1.0, min(1.0, _float(torch.dot(a64, b64)) / (na * nb)))


def diff_values(ref: Any, new: Any, *, rtol: float, atol: float, with_rel: bool = True,
                with_cosine: bool = True) -> TensorDiff | None:
    """Compare any two node values: tensors numerically, containers leaf by leaf, others by ``==``.

    Returns None when neither side holds a tensor and both are equal (nothing to report), a
    mismatch when the structures differ.
    """
    if isinstance(ref, torch.Tensor) and isinstance(new, torch.Tensor):
        if (ref.dtype == new.dtype and ref.shape == new.shape and ref.device == new.device
                and fast_equal(ref, new)):
            # Equal as torch.equal says (the common case of a node-by-node run): one pass, no
            # conversions. Not ``ref is new``: a tensor holding a NaN is not equal to itself.
            return TensorDiff(0.0, 0.0, 0.0, True, 1.0, True)
        if ref.device != new.device:
            new = new.to(ref.device)
        return diff_tensors(ref, new, rtol=rtol, atol=atol, with_rel=with_rel, with_cosine=with_cosine)
    if isinstance(ref, torch.Tensor) or isinstance(new, torch.Tensor):
        return TensorDiff.mismatch(f"{type(new).__name__} instead of {type(ref).__name__}")
    if isinstance(ref, torch.nn.Module) and isinstance(new, torch.nn.Module):
        return None if ref is new or _same_state(ref, new) else TensorDiff.mismatch(f"another {type(new).__name__}")
    ref_leaves = flatten_outputs(ref)
    new_leaves = flatten_outputs(new)
    if len(ref_leaves) == 1 and len(new_leaves) == 1 and ref_leaves[0][1] is ref:
        try:
            same = bool(ref == new)
        except Exception:  # noqa: BLE001 - objects whose == is not a bool are not comparable
            same = ref is new
        return None if same else TensorDiff.mismatch(f"{_short(new)} instead of {_short(ref)}")
    if [p for p, _ in ref_leaves] != [p for p, _ in new_leaves]:
        return TensorDiff.mismatch("a different structure of values")
    worst: TensorDiff | None = None
    for (_, r), (_, n) in zip(ref_leaves, new_leaves):
        d = diff_values(r, n, rtol=rtol, atol=atol, with_rel=with_rel, with_cosine=False)
        if d is not None and (worst is None or d.score > worst.score or math.isnan(worst.score)):
            worst = d
    return worst


def _same_state(ref: torch.nn.Module, new: torch.nn.Module) -> bool:
    """Two modules read as values (a higher-order op's body, read by ``get_attr``; what it computes
    is compared at the node calling it): the same class (any two graph modules) and equal state."""
    graphs = isinstance(ref, torch.fx.GraphModule), isinstance(new, torch.fx.GraphModule)
    if graphs[0] != graphs[1] or (not graphs[0] and type(ref) is not type(new)):
        return False
    a, b = ref.state_dict(keep_vars=True), new.state_dict(keep_vars=True)
    return a.keys() == b.keys() and all(
        isinstance(a[k], torch.Tensor) and isinstance(b[k], torch.Tensor) and a[k].shape == b[k].shape
        and a[k].dtype == b[k].dtype and torch.equal(a[k].detach(), b[k].detach().to(a[k].device)) for k in a)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def sample_pair(ref: torch.Tensor, new: torch.Tensor, limit: int = SAMPLE_LIMIT,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Matching subsamples (at most ``limit`` values) of two same-shape tensors, as float64 numpy."""
    a = ref.detach().reshape(-1)
    b = new.detach().reshape(-1)
    if a.numel() > limit:
        # Random positions with replacement: a permutation of a huge output would cost its size.
        gen = torch.Generator().manual_seed(seed)
        idx = torch.randint(0, a.numel(), (limit,), generator=gen).sort().values.to(a.device)
        a, b = a[idx], b[idx]
    if a.is_complex():
        a, b = a.abs(), b.abs()
    return (a.to("cpu", torch.float64).numpy(), b.to("cpu", torch.float64).numpy())


def reseed(seed: int, device: torch.device | str = "cpu") -> None:
    """Seed the generator random ops on ``device`` draw from (all of torch's for non-CPU devices).

    ``torch.manual_seed`` also queues seeding of every accelerator backend, which costs more than a
    small model's forward; a CPU run only needs the CPU generator.
    """
    if torch.device(device).type == "cpu":
        torch.default_generator.manual_seed(int(seed))
    else:
        torch.manual_seed(int(seed))


def synchronize(device: torch.device | str) -> None:
    """Wait for the device's queued work, so a timer measures the work and not its launch."""
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


def median_time_ms(fn: Callable[[], Any], *, device: torch.device | str, repeats: int,
                   warmup: int = 1, cancel: Callable[[], bool] | None = None,
                   budget_s: float | None = None) -> float:
    """Median wall time of ``fn()`` in milliseconds over ``repeats`` calls, after ``warmup`` untimed
    ones; with ``budget_s``, fewer (at least one) once the timed calls have taken that long."""
    for _ in range(max(0, warmup)):
        fn()
    synchronize(device)
    times = []
    for _ in range(max(1, repeats)):
        if cancel is not None and cancel():
            break
        if budget_s is not None and times and sum(times) >= budget_s * 1000.0:
            break
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times) if times else math.nan
