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


@intrinsic
def _or(typingctx, a, b):
    """``a | b`` for two unsigned integers of one width, in that width (numba widens to 64 bits,
    which halves the vector lanes)."""
    if a != b or not isinstance(a, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.or_(args[0], args[1])
    return a(a, b), codegen


@intrinsic
def _xor(typingctx, a, b):
    """``a ^ b`` for two unsigned integers of one width, in that width."""
    if a != b or not isinstance(a, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.xor(args[0], args[1])
    return a(a, b), codegen


@intrinsic
def _above(typingctx, a, b):
    """``a > b`` for two unsigned integers of one width, as 0 or 1 in that width."""
    if a != b or not isinstance(a, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.zext(builder.icmp_unsigned(">", args[0], args[1]), args[0].type)
    return a(a, b), codegen


CHUNK = 512
"""Elements per block: a block whose quotients may raise the score is read again (in L1) to
divide; measured against 128..4096 on 16K-1M element values."""


# error_model="numpy": x / 0 gives inf or NaN as IEEE says, instead of raising ZeroDivisionError.
# The arrays come as addresses: typing two ints at the call costs far less than two arrays, and
# numba's dispatch is most of the time for the small values of a batch-1 model.
@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def fused(x_address, y_address, n, r, a, lower, big, tiny):
    """``(max_abs, score, saw_nan, identical)`` of the ``n`` values at two addresses, of the float
    type of ``r`` and ``a``: see ``fused_diff.fused_max_abs_and_score``. ``lower`` is ``1 - 2**-20``
    (float32) or ``1 - 2**-49`` (float64) and ``big`` the largest finite value, in that type;
    ``tiny`` is ``2**-100`` (float32) or ``2**-1000`` (float64) as a Python float.

    The score is the largest quotient ``d / t`` (``d = |y - x|``, ``t = |x| * r + a``), and the
    division is most of the pass's time. So each block first computes, with a multiplication,
    ``p = min(t * m', big)`` for ``m' = fl(m * lower)`` below the score ``m`` so far (a minimum
    over bit patterns: a NaN product gives ``big``): ``d <= p`` (as bit patterns: an infinite or
    NaN ``d`` fails) proves ``d < t * m`` (``p <= t * m * lower * (1 + eps)**2``),
    hence ``fl(d / t) <= m``, and that element cannot raise the score. Only a block where some
    element fails is divided, with the same IEEE operations as without the test. The bound needs
    ``t * m'`` normal: ``t >= a``, so ``m' > 0`` only while ``m >= tiny`` and ``m * a >= tiny``;
    with ``a == 0`` (``t`` may be 0) every block is divided. Once the score is NaN it stays NaN.
    """
    x = _pointer(x_address, r)
    y = _pointer(y_address, r)
    zero, inf_bits = _limit_bits(r)
    mb = zero
    sb = zero
    differ = zero
    m_low = r - r  # m' above: no element is skipped until the score is known
    filtered = a > 0
    big_bits = _bits(big)
    start = 0
    while start < n:
        stop = min(start + CHUNK, n)
        raise_bits = zero
        for i in range(start, stop):
            xi = x[i]
            yi = y[i]
            db = _bits(abs(yi - xi))
            mb = db if db > mb else mb
            differ = _or(differ, _xor(_bits(xi), _bits(yi)))
            pb = _bits((abs(xi) * r + a) * m_low)
            pb = pb if pb < big_bits else big_bits  # NaN (0 * inf) and inf patterns are above big's
            raise_bits = _or(raise_bits, _above(db, pb))
        if (raise_bits != 0 or not filtered) and sb <= inf_bits:
            for i in range(start, stop):
                xi = x[i]
                s = abs(y[i] - xi) / (abs(xi) * r + a)
                sbi = _bits(s)
                sb = sbi if sbi > sb else sb
            if sb > inf_bits:
                m_low = big  # NaN: the score is final; p = big skips every finite difference
            else:
                m = _float_of_bits(sb)
                m_low = m * lower if float(m) >= tiny and float(m) * float(a) >= tiny else r - r
        start = stop
    saw_nan = mb > inf_bits
    max_abs = float(_float_of_bits(mb)) if not saw_nan else np.nan
    score = float(_float_of_bits(sb)) if sb <= inf_bits else np.nan
    return max_abs, score, saw_nan, differ == 0 and not saw_nan
