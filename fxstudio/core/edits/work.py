"""What a node costs, told from shapes alone (no run): the bytes of its output and an estimate of
its work, for the edit budgets (``fxstudio.core.budgets``, ``edits/ledger.py``).

Work is counted in elementary operations: every element a call reads or writes (its tensor
operands and results), plus, for the calls whose work grows faster than their operands and result,
the multiply-adds of a contraction counted as two operations each: products (``matmul``, ``mm``,
``bmm``, ``addmm``, ``linear``, ``einsum``, ``tensordot``, attention), convolutions and pooling
windows, distance matrices, and a cubic count for matrix decompositions and inverses (``torch.linalg``).
The same formulas serve a node of the graph (shapes from ``node.meta["tensor_meta"]``) and a call
an edit is about to make (shapes of fake tensors), so a node costs the same either way.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

from fxstudio.core import fx_compat, trust

_CONV_MODULES = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d,
                 torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)
_WEIGHTED_MODULES = (torch.nn.Linear, torch.nn.Bilinear, *_CONV_MODULES)  # the formulas that read the weight


class Shape(tuple):
    """The shape of a tensor operand or result (a tuple of ints)."""

    __slots__ = ()

    @property
    def numel(self) -> int:
        """Elements of a tensor of this shape (exact Python int)."""
        count = 1
        for size in self:
            count *= size
        return count


def shape_of(value: Any) -> Any:
    """``value`` with every tensor, ``TensorMetadata`` or fake tensor replaced by its ``Shape``
    (lists and tuples kept); other values as they are, None where a size is not an int."""
    if isinstance(value, TensorMetadata):
        return _shape(value.shape)
    if isinstance(value, torch.Tensor):
        return _shape(value.shape)
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return type(value)(shape_of(v) for v in value) if isinstance(value, list) else tuple(shape_of(v) for v in value)
    return value


def _shape(sizes) -> Shape | None:
    try:
        return Shape(map(int, sizes))
    except Exception:  # noqa: BLE001 - symbolic sizes
        return None


def itemsize(dtype: Any) -> int:
    """Bytes of one element of ``dtype`` (16, the widest, when torch does not say)."""
    size = getattr(dtype, "itemsize", None)
    return size if isinstance(size, int) and size > 0 else 16


def meta_nbytes(meta: Any) -> int:
    """Bytes of the dense tensors a ``tensor_meta`` (or a list/tuple of them) describes; 0 when unknown."""
    if isinstance(meta, TensorMetadata):
        shape = _shape(meta.shape)
        return shape.numel * itemsize(meta.dtype) if shape is not None else 0
    if isinstance(meta, (list, tuple)):
        return sum(meta_nbytes(m) for m in meta)
    return 0


def value_nbytes(value: Any) -> int:
    """Bytes of the (fake) tensors in ``value``; 0 for anything else."""
    if isinstance(value, torch.Tensor):
        shape = _shape(value.shape)
        return shape.numel * itemsize(value.dtype) if shape is not None else 0
    if isinstance(value, (list, tuple)):
        return sum(value_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(value_nbytes(v) for v in value.values())
    return 0


def node_cost(node: torch.fx.Node, gm: torch.nn.Module | None,
              modules: dict[str, torch.nn.Module] | None = None) -> tuple[int, int]:
    """(bytes of ``node``'s output, its work), from the shape metadata of the node and its inputs.
    ``modules``: ``dict(gm.named_modules())`` when the caller counts many nodes (a lookup per node
    through ``get_submodule`` costs more than the formula)."""
    meta = node.meta.get("tensor_meta")
    nbytes = meta_nbytes(meta)
    if node.op not in ("call_function", "call_method", "call_module"):
        return nbytes, 0

    def operand(n: torch.fx.Node) -> Any:
        m = n.meta.get("tensor_meta")
        return shape_of(m) if m is not None else None

    args = torch.fx.node.map_arg(node.args, operand)
    kwargs = torch.fx.node.map_arg(node.kwargs, operand)
    module = None
    if node.op == "call_module" and modules is not None:
        module = modules.get(str(node.target))
    elif node.op == "call_module" and gm is not None:
        try:
            module = gm.get_submodule(str(node.target))
        except AttributeError:
            module = None
    return nbytes, call_work(node.op, node.target, args, kwargs, shape_of(meta), module)


def call_work(op: str, target: Any, args: tuple, kwargs: dict, out: Any, module: Any = None) -> int:
    """The work of one call whose tensor operands and results are given as ``Shape``s (see the
    module docstring); unknown shapes count nothing."""
    elements = _elements(args) + _elements(kwargs) + _elements(out)
    try:
        extra = _extra_work(op, target, args, kwargs, out, module)
    except Exception:  # noqa: BLE001 - operands that do not fit the formula: the call itself will fail
        extra = 0
    return elements + max(int(extra), 0)


def _elements(value: Any) -> int:
    if isinstance(value, Shape):
        return value.numel
    if isinstance(value, (list, tuple)):
        return sum(_elements(v) for v in value)
    if isinstance(value, dict):
        return sum(_elements(v) for v in value.values())
    return 0


# ----------------------------------------------------------------------------- formulas


_NAMES: dict[Any, str] = {}


def call_name(op: str, target: Any) -> str:
    """The operator name the formulas know a call by (``mm``, ``conv2d``, ``linalg_inv``), or ''."""
    if op == "call_method":
        return target if isinstance(target, str) else ""
    try:
        name = _NAMES.get(target)
    except TypeError:  # unhashable
        return _call_name(op, target)
    if name is None:
        name = _call_name(op, target)
        if len(_NAMES) > 4096:
            _NAMES.clear()
        _NAMES[target] = name
    return name


def _call_name(op: str, target: Any) -> str:
    if op == "call_method":
        return target if isinstance(target, str) else ""
    if op != "call_function":
        return ""
    if target in (operator.matmul, operator.imatmul):
        return "matmul"
    if isinstance(target, fx_compat.OP_TYPES):
        return str(getattr(target, "__name__", "")).split(".")[0]
    if trust.makes_tensors(target) or getattr(target, "__objclass__", None) is fx_compat.TENSOR_BASE:
        return str(getattr(target, "__name__", ""))
    return ""


_MATMUL = frozenset({"matmul", "mm", "bmm", "__matmul__", "__rmatmul__", "linalg_matmul", "_unsafe_mm"})
_ADDMM = frozenset({"addmm", "addmm_", "baddbmm", "baddbmm_", "addbmm", "addbmm_", "addmv", "addmv_",
                    "_addmm_activation"})
_LINEAR = frozenset({"linear", "_linear"})
_CONV = frozenset({"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_tbc", "_conv_depthwise2d",
                   "mkldnn_convolution", "cudnn_convolution", "slow_conv3d", "thnn_conv2d", "_slow_conv2d_forward",
                   "slow_conv_dilated2d", "slow_conv_dilated3d"})
_CONV_T = frozenset({"conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "slow_conv_transpose2d",
                     "slow_conv_transpose3d", "cudnn_convolution_transpose"})
_POOL = frozenset({"max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                   "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
                   "max_pool3d_with_indices", "_max_pool1d", "_max_pool2d", "_max_pool3d",
                   "fractional_max_pool2d", "fractional_max_pool3d", "mkldnn_max_pool2d", "max_unpool1d",
                   "max_unpool2d", "max_unpool3d"})
_ATTENTION = frozenset({"scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                        "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_cudnn_attention",
                        "_scaled_dot_product_fused_attention_overrideable"})
_CUBIC = frozenset({
    "inverse", "linalg_inv", "linalg_inv_ex", "det", "linalg_det", "_linalg_det", "logdet", "slogdet",
    "linalg_slogdet", "_linalg_slogdet", "svd", "linalg_svd", "_linalg_svd", "linalg_svdvals", "pinverse",
    "linalg_pinv", "linalg_eig", "linalg_eigvals", "linalg_eigh", "_linalg_eigh", "linalg_eigvalsh", "qr",
    "linalg_qr", "cholesky", "linalg_cholesky", "linalg_cholesky_ex", "cholesky_inverse", "cholesky_solve",
    "_cholesky_solve_helper", "lu", "linalg_lu", "linalg_lu_factor", "linalg_lu_factor_ex", "lu_solve",
    "linalg_lu_solve", "lu_unpack", "linalg_solve", "linalg_solve_ex", "_linalg_solve_ex", "triangular_solve",
    "linalg_solve_triangular", "linalg_lstsq", "lstsq", "linalg_matrix_exp", "matrix_exp", "linalg_matrix_rank",
    "linalg_cond", "geqrf", "ormqr", "orgqr", "linalg_householder_product", "linalg_ldl_factor",
    "linalg_ldl_factor_ex", "linalg_ldl_solve", "eig", "symeig", "lobpcg", "svd_lowrank", "pca_lowrank",
    "linalg_tensorinv", "linalg_tensorsolve", "_linalg_eigvals", "linalg_multi_dot", "chain_matmul",
    "matrix_power", "linalg_matrix_power",
})
_MATRIX_NORMS = frozenset({"norm", "linalg_norm", "linalg_matrix_norm", "nuclear_norm"})
_LOG_LINEAR = ("sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "quantile", "nanquantile",
               "unique", "unique_consecutive", "_unique", "_unique2", "mode", "fft", "stft", "istft")


_FORMULAS = frozenset(_MATMUL | _ADDMM | _LINEAR | _CONV | _CONV_T | _POOL | _ATTENTION | _CUBIC | _MATRIX_NORMS | {
    "bilinear", "einsum", "_einsum", "tensordot", "cdist", "_cdist_forward", "_euclidean_dist", "pdist",
    "_pdist_forward"})


def _arg(args: tuple, kwargs: dict, index: int, *names: str) -> Any:
    if len(args) > index:
        return args[index]
    for name in names:
        if name in kwargs:
            return kwargs[name]
    return None


def _is(shape: Any, ndim: int = 1) -> bool:
    return isinstance(shape, Shape) and len(shape) >= ndim


def _extra_work(op: str, target: Any, args: tuple, kwargs: dict, out: Any, module: Any) -> int:
    if op == "call_module":
        return _module_work(module, args, kwargs, out)
    name = call_name(op, target)
    if not name or (name not in _FORMULAS and not name.startswith(_LOG_LINEAR)):
        return 0
    if name in _MATMUL:
        a, b = _arg(args, kwargs, 0, "input", "self"), _arg(args, kwargs, 1, "other", "mat2")
        if name == "__rmatmul__":
            a, b = b, a
        return _matmul(a, b, out)
    if name in _ADDMM:
        m1, m2 = _arg(args, kwargs, 1, "mat1", "batch1", "mat", "mat2"), _arg(args, kwargs, 2, "mat2", "batch2", "vec")
        return 2 * m1.numel * (m2[-1] if _is(m2, 2) else 1) if _is(m1) else 0
    if name in _LINEAR:
        x, w = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
        return 2 * x.numel * (w[0] if _is(w, 2) else 1) if _is(x) else 0
    if name == "bilinear":
        x, w = _arg(args, kwargs, 0, "input1"), _arg(args, kwargs, 2, "weight")
        return 2 * x.numel * w[0] * w[2] if _is(x) and _is(w, 3) else 0
    if name in ("einsum", "_einsum"):
        return _einsum(args)
    if name == "tensordot":
        return _tensordot(args, kwargs)
    if name in _CONV or name in _CONV_T:
        x, w = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "weight")
        transposed = name in _CONV_T or (name in ("convolution", "_convolution") and bool(_arg(args, kwargs, 6, "transposed")))
        if name == "conv_tbc":
            return 2 * out.numel * w[0] * w[1] if _is(out) and _is(w, 3) else 0
        return _conv(x, w, out, transposed)
    if name in _POOL:
        return _pool(name, _arg(args, kwargs, 1, "kernel_size"), out)
    if name in _ATTENTION:
        return _attention(_arg(args, kwargs, 0, "query"), _arg(args, kwargs, 1, "key"), _arg(args, kwargs, 2, "value"))
    if name in ("cdist", "_cdist_forward", "_euclidean_dist"):
        x1 = _arg(args, kwargs, 0, "x1")
        return 2 * _elements(out) * x1[-1] if _is(x1) else 0
    if name in ("pdist", "_pdist_forward"):
        x = _arg(args, kwargs, 0, "input")
        return 2 * _elements(out) * x[-1] if _is(x) else 0
    if name in ("linalg_multi_dot", "chain_matmul"):
        return _chain(args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args)
    if name in _CUBIC or (name in _MATRIX_NORMS and _arg(args, kwargs, 1, "ord", "p") in (2, -2, "nuc")):
        return _cubic(name, args, kwargs)
    if name.startswith(_LOG_LINEAR):
        count = _elements(out) + _elements(args)
        return count * max(count.bit_length(), 1)
    return 0


def _matmul(a: Any, b: Any, out: Any) -> int:
    if not (_is(a) and _is(b)):
        return 0
    k = a[-1]
    if _is(out, 0) and isinstance(out, Shape):
        return 2 * max(out.numel, 1) * k
    return 2 * a.numel * (b[-1] if len(b) >= 2 else 1)


def _einsum(args: tuple) -> int:
    if not args or not isinstance(args[0], str):
        return 0
    equation = args[0].replace(" ", "")
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)) and not isinstance(operands[0], Shape):
        operands = tuple(operands[0])
    inputs = equation.split("->")[0].split(",")
    sizes: dict[str, int] = {}
    ellipsis = 1
    for letters, shape in zip(inputs, operands):
        if not isinstance(shape, Shape):
            return 0
        if "..." in letters:
            head, tail = letters.split("...", 1)
            rest = len(shape) - len(head) - len(tail)
            ellipsis = max(ellipsis, math.prod(shape[len(head):len(head) + rest]) if rest > 0 else 1)
            pairs = list(zip(head, shape)) + list(zip(tail, shape[len(shape) - len(tail):]))
        else:
            pairs = list(zip(letters, shape))
        for letter, size in pairs:
            sizes[letter] = max(sizes.get(letter, 1), size)
    return 2 * math.prod(sizes.values()) * ellipsis


def _tensordot(args: tuple, kwargs: dict) -> int:
    a, b = _arg(args, kwargs, 0, "a"), _arg(args, kwargs, 1, "b")
    dims = _arg(args, kwargs, 2, "dims")
    if not (_is(a) and _is(b)):
        return 0
    if dims is None:
        dims = 2
    if isinstance(dims, int):
        contracted = math.prod(a[len(a) - dims:]) if dims else 1
    elif isinstance(dims, (list, tuple)) and dims and isinstance(dims[0], (list, tuple)):
        contracted = math.prod(a[d] for d in dims[0])
    else:
        return 0
    return 2 * a.numel * b.numel // max(contracted, 1)


def _conv(x: Any, w: Any, out: Any, transposed: bool) -> int:
    if not _is(w, 2) or w[0] == 0:
        return 0
    per = w.numel // w[0]
    if transposed:
        return 2 * x.numel * per if _is(x) else 0
    return 2 * out.numel * per if isinstance(out, Shape) else 0


def _window(kernel: Any, name: str) -> int:
    if isinstance(kernel, int):
        digits = [c for c in name if c.isdigit()]
        return kernel ** (int(digits[0]) if digits else 2)
    if isinstance(kernel, (list, tuple)) and all(isinstance(k, int) for k in kernel):
        return math.prod(kernel)
    return 1


def _pool(name: str, kernel: Any, out: Any) -> int:
    return _elements(out) * _window(kernel, name)


def _attention(q: Any, k: Any, v: Any) -> int:
    if not (_is(q, 2) and _is(k, 2) and _is(v, 1)) or q[-1] == 0:
        return 0
    rows, length = q.numel // q[-1], k[-2]
    return 2 * rows * length * (q[-1] + v[-1])


def _chain(shapes: Any) -> int:
    total, current = 0, None
    for shape in shapes:
        if not _is(shape):
            return 0
        shape = Shape((1, shape[0])) if len(shape) == 1 and current is None else shape
        if current is None:
            current = shape
            continue
        cols = shape[-1] if len(shape) >= 2 else 1
        total += 2 * current[0] * current[-1] * cols
        current = Shape((current[0], cols))
    return total


def _cubic(name: str, args: tuple, kwargs: dict) -> int:
    first = next((a for a in (*args, *kwargs.values()) if isinstance(a, Shape)), None)
    if first is None:
        first = next((s for a in args if isinstance(a, (list, tuple)) for s in a if isinstance(s, Shape)), None)
    if first is None or not first:
        return 0
    if "tensor" in name:  # tensorinv / tensorsolve: a square matrix of all the elements
        n = math.isqrt(first.numel) + 1
        return 20 * n ** 3
    n = max(first[-2:]) if len(first) >= 2 else first[-1]
    batch = first.numel // max(first[-1] * (first[-2] if len(first) >= 2 else 1), 1)
    count = 20 * max(batch, 1) * n ** 3
    if "matrix_power" in name:
        power = _arg(args, kwargs, 1, "n")
        count *= 2 * max(abs(power).bit_length(), 1) if isinstance(power, int) else 64
    return count


def _module_work(module: Any, args: tuple, kwargs: dict, out: Any) -> int:
    if not isinstance(module, torch.nn.Module):
        return 0
    x = args[0] if args else next(iter(kwargs.values()), None)
    w = None
    if isinstance(module, _WEIGHTED_MODULES):  # (a missing attribute costs a raise in nn.Module.__getattr__)
        weight = getattr(module, "weight", None)
        w = _shape(weight.shape) if isinstance(weight, torch.Tensor) and not _uninitialized(weight) else None
    if isinstance(module, torch.nn.Linear):
        return 2 * x.numel * w[0] if _is(x) and _is(w, 2) else 0
    if isinstance(module, torch.nn.Bilinear):
        return 2 * x.numel * w[0] * w[2] if _is(x) and _is(w, 3) else 0
    if isinstance(module, _CONV_MODULES):
        transposed = bool(getattr(module, "transposed", False))
        return _conv(x, w, out if isinstance(out, Shape) else (out[0] if isinstance(out, tuple) and out else None),
                     transposed)
    kernel = getattr(module, "kernel_size", None)
    if kernel is not None and "Pool" in type(module).__name__:
        return _pool(type(module).__name__.lower(), kernel, out)
    if not _is(x) or x[-1] == 0:
        return 0
    rows = x.numel // x[-1]
    recurrent = isinstance(module, (torch.nn.RNNBase, torch.nn.RNNCellBase))
    attention = isinstance(module, torch.nn.MultiheadAttention) or "Transformer" in type(module).__name__
    if not (recurrent or attention):
        return 0
    params = sum(p.numel() for p in module.parameters() if not _uninitialized(p))
    if recurrent:
        return 2 * rows * params
    if attention:
        first_batch = bool(getattr(module, "batch_first", False))
        seq = x[1] if first_batch and len(x) >= 3 else x[0]
        return 2 * rows * params + 4 * rows * seq * x[-1]
    return 0


def _uninitialized(t: torch.Tensor) -> bool:
    return isinstance(t, torch.nn.parameter.UninitializedTensorMixin)


__all__ = ["Shape", "call_name", "call_work", "itemsize", "meta_nbytes", "node_cost", "shape_of", "value_nbytes"]
