"""The numba kernel behind ``fused_diff`` (imported only through it: importing this imports numba).

The maxima are taken over the bit patterns as unsigned integers: for non-negative floats the
order of the patterns is the order of the values, and every NaN pattern (either sign) is above
+inf's. That makes the reductions integer maxima, which LLVM vectorises without fast-math (a float
maximum that must propagate NaN is not vectorised), while the arithmetic stays plain IEEE.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _bits(typingctx, x):
    """The bit pattern of a float32/float64 as uint32/uint64."""
    if x == types.float32:
        width, result = 32, types.uint32
    elif x == types.float64:
        width, result = 64, types.uint64
    else:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))
    return result(x), codegen


@intrinsic
def _float_of_bits(typingctx, b):
    """The float32/float64 whose bit pattern is the uint32/uint64 ``b``."""
    if b == types.uint32:
        result, llty = types.float32, ir.FloatType()
    elif b == types.uint64:
        result, llty = types.float64, ir.DoubleType()
    else:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llty)
    return result(b), codegen


@intrinsic
def _limit_bits(typingctx, x):
    """``(0, bits of +inf)`` in the unsigned type of ``_bits(x)``, for a float32/float64 ``x``."""
    if x == types.float32:
        width, result, inf = 32, types.uint32, 0x7F800000
    elif x == types.float64:
        width, result, inf = 64, types.uint64, 0x7FF0000000000000
    else:
        return None

    def codegen(context, builder, signature, args):
        ty = ir.IntType(width)
        return context.make_tuple(builder, signature.return_type, [ty(0), ty(inf)])
    return types.UniTuple(result, 2)(x), codegen


@intrinsic
def _pointer(typingctx, address, like):
    """The integer ``address`` as a pointer to values of the type of ``like`` (a float scalar)."""
    if not isinstance(address, types.Integer) or like not in (types.float32, types.float64):
        return None
    pointer = types.CPointer(like)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(pointer))
    return pointer(address, like), codegen


# error_model="numpy": x / 0 gives inf or NaN as IEEE says, instead of raising ZeroDivisionError.
# The arrays come as addresses: typing two ints at the call costs far less than two arrays, and
# numba's dispatch is most of the time for the small values of a batch-1 model.
@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def fused(x_address, y_address, n, r, a):
    """``(max_abs, score, saw_nan, all_equal)`` of the ``n`` values at two addresses, of the float
    type of ``r`` and ``a``: see ``fused_diff.fused_max_abs_and_score``."""
    x = _pointer(x_address, r)
    y = _pointer(y_address, r)
    zero, inf_bits = _limit_bits(r)
    mb = zero
    sb = zero
    unequal = 0
    for i in range(n):
        xi = x[i]
        yi = y[i]
        d = abs(yi - xi)
        s = d / (abs(xi) * r + a)
        db = _bits(d)
        sbi = _bits(s)
        mb = db if db > mb else mb
        sb = sbi if sbi > sb else sb
        unequal |= xi != yi
    saw_nan = mb > inf_bits
    max_abs = float(_float_of_bits(mb)) if not saw_nan else np.nan
    score = float(_float_of_bits(sb)) if sb <= inf_bits else np.nan
    return max_abs, score, saw_nan, unequal == 0
