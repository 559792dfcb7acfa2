"""cpu kernels of the ops in ops/binary.py.

Note [Integer division by zero]
Integer floor / trunc division, fmod and remainder by zero raise RuntimeError
"ZeroDivisionError", as PyTorch's cpu kernels do; a floating division by zero is
IEEE (inf or nan) without NumPy's warnings. Integer overflow wraps (``INT_MIN //
-1`` is ``INT_MIN``). float16 computes in float32 and rounds once, as PyTorch's
``opmath`` does (trunc(a / b) would otherwise round twice).

Note [Integer powers]
PyTorch's ``powi``: an integer to a negative integer power is 1 for base 1, +-1
for base -1 and 0 otherwise (NumPy raises instead). A tensor to a negative
Python int power is rejected earlier, by the functor, as PyTorch does.
"""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in, inputs_dtype_in
from oneflow_lite.framework.dtype import (
    ALL_DTYPES, FLOATING_DTYPES, INTEGRAL_DTYPES, LIMITED_UNSIGNED, NUMERIC_DTYPES, WITH_LIMITED_UNSIGNED, bool_,
)
from oneflow_lite.kernels.cpu import special
from oneflow_lite.kernels.cpu.math import scalar_operand
from oneflow_lite.kernels.registration import cpu_kernel

_errstate = np.errstate
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_where = np.where
_divmod = np.divmod


def _check_divisor(op_type, x, y):
    """Note [Integer division by zero]; an empty result divides nothing."""
    if x.size and not y.all():
        raise RuntimeError(f"{op_type}: ZeroDivisionError (integer division by zero)")


def _int_truncdiv(a, b):
    q, r = _divmod(a, b)
    return q + ((r != 0) & ((a < 0) != (b < 0)))


def _float_truncdiv(a, b):
    return np.trunc(a / b)


def _int_pow(a, b):
    """``a ** b`` in the inputs' integer dtype (Note [Integer powers])."""
    neg = b < 0
    if not neg.any():
        return np.power(a, b)
    special = _where(a == -1, 1 - 2 * (b & 1), a == 1)
    return _where(neg, special, np.power(a, _where(neg, 0, b)))


def _dividing(op_type, fn):
    """``fn`` after the divisor check of Note [Integer division by zero]."""
    def checked(a, b):
        _check_divisor(op_type, a, b)
        return fn(a, b)
    return checked


def _binary(op_type, predicate, fn):
    """Register ``fn(x, y)`` (float16 in float32) as a kernel of ``op_type`` for ``predicate``'s dtypes."""
    def kernel(ctx, x, y):
        with _errstate(all="ignore"):
            if x.dtype == _F16:
                return fn(x.astype(_F32), y.astype(_F32)).astype(_F16)
            return fn(x, y)
    kernel.__name__ = kernel.__qualname__ = op_type + "_cpu"
    cpu_kernel(op_type, predicate)(kernel)


def _scalar(op_type, predicate, fn, reverse=False):
    """Register ``fn(in, operand)`` (``fn(operand, in)`` when ``reverse``) as a kernel of ``op_type``."""
    def kernel(ctx, x):
        with _errstate(all="ignore"):
            if x.dtype == _F16:
                s = scalar_operand(ctx, _F32)
                x = x.astype(_F32)
                return (fn(s, x) if reverse else fn(x, s)).astype(_F16)
            s = scalar_operand(ctx, x.dtype)
            return fn(s, x) if reverse else fn(x, s)
    kernel.__name__ = kernel.__qualname__ = op_type + "_cpu"
    cpu_kernel(op_type, predicate)(kernel)


_FLOAT_X = dtype_in("x", *FLOATING_DTYPES)
_INT_X = dtype_in("x", *INTEGRAL_DTYPES)
_NUMERIC_X = dtype_in("x", *NUMERIC_DTYPES)
_BITS_X = dtype_in("x", bool_, *INTEGRAL_DTYPES)
_BITS_UNSIGNED_TOO_X = dtype_in("x", bool_, *INTEGRAL_DTYPES, *LIMITED_UNSIGNED)  # Note [Limited unsigned dtypes]
_FLOAT_IN = dtype_in("in", *FLOATING_DTYPES)
_INT_IN = dtype_in("in", *INTEGRAL_DTYPES)

for _op, _scalar_op, _float_fn, _int_fn in (
        ("broadcast_floordiv", "scalar_floordiv", np.floor_divide, np.floor_divide),
        ("broadcast_truncdiv", "scalar_truncdiv", _float_truncdiv, _int_truncdiv),
        ("broadcast_fmod", "scalar_fmod", np.fmod, np.fmod),
        ("broadcast_floor_mod", "scalar_floor_mod", np.remainder, np.remainder)):
    _binary(_op, _FLOAT_X, _float_fn)
    _binary(_op, _INT_X, _dividing(_op, _int_fn))
    _scalar(_scalar_op, _FLOAT_IN, _float_fn)
    _scalar(_scalar_op, _INT_IN, _dividing(_scalar_op, _int_fn))

_binary("broadcast_pow", _FLOAT_X, np.power)
_binary("broadcast_pow", _INT_X, _int_pow)
_scalar("scalar_pow", _FLOAT_IN, np.power)
_scalar("scalar_reverse_pow", _FLOAT_IN, np.power, reverse=True)
_scalar("scalar_reverse_pow", _INT_IN, _int_pow, reverse=True)


@cpu_kernel("scalar_pow", _INT_IN)
def scalar_pow_int_cpu(ctx, x):
    """An integer exponent is used as int64, not wrapped to the input's dtype (``int8 ** 1000``)."""
    attrs = ctx.attrs
    if attrs["has_float_operand"]:
        raise RuntimeError("scalar_pow: a float exponent needs a floating input (functors promote it first)")
    return _int_pow(x, np.array(attrs["int_operand"], _I64)).astype(x.dtype, copy=False)


# maximum / minimum propagate NaN (NumPy's maximum / minimum do), as PyTorch's do.
_binary("broadcast_maximum", dtype_in("x", *ALL_DTYPES), np.maximum)
_binary("broadcast_minimum", dtype_in("x", *ALL_DTYPES), np.minimum)
_binary("broadcast_atan2", _FLOAT_X, np.arctan2)
_binary("broadcast_bitwise_and", _BITS_UNSIGNED_TOO_X, np.bitwise_and)
_binary("broadcast_bitwise_or", _BITS_UNSIGNED_TOO_X, np.bitwise_or)
_binary("broadcast_bitwise_xor", _BITS_UNSIGNED_TOO_X, np.bitwise_xor)


def _logical(op_type, ufunc):
    def kernel(ctx, x, y):
        return ufunc(x, y)
    kernel.__name__ = kernel.__qualname__ = op_type + "_cpu"
    cpu_kernel(op_type, inputs_dtype_in(*ALL_DTYPES))(kernel)


_logical("broadcast_logical_and", np.logical_and)
_logical("broadcast_logical_or", np.logical_or)
_logical("broadcast_logical_xor", np.logical_xor)

_invert = np.invert


@cpu_kernel("bitwise_not", _BITS_X)
def bitwise_not_cpu(ctx, x):
    return _invert(x)  # on bool: logical not


@cpu_kernel("where", dtype_in("x", *WITH_LIMITED_UNSIGNED))
def where_cpu(ctx, condition, x, y):
    return _where(condition, x, y)


# ---- lerp, addcmul, addcdiv ------------------------------------------------------------------------
def _lerp(start, end, weight):
    """PyTorch's formula: exact at both ends (``weight`` 0 gives ``start``, 1 gives ``end``)."""
    diff = end - start
    return _where(np.abs(weight) < 0.5, start + weight * diff, end - diff * (1 - weight))


@cpu_kernel("lerp", dtype_in("start", *FLOATING_DTYPES))
def lerp_cpu(ctx, start, end, weight):
    with _errstate(all="ignore"):
        if start.dtype == _F16:
            return _lerp(start.astype(_F32), end.astype(_F32), weight.astype(_F32)).astype(_F16)
        return _lerp(start, end, weight)


@cpu_kernel("scalar_lerp", dtype_in("start", *FLOATING_DTYPES))
def scalar_lerp_cpu(ctx, start, end):
    w = ctx.attrs["weight"]
    dt = start.dtype
    if dt == _F16:
        start, end = start.astype(_F32), end.astype(_F32)
    with _errstate(all="ignore"):
        diff = end - start
        out = start + w * diff if abs(w) < 0.5 else end - diff * (1 - w)
    return out.astype(dt, copy=False)


def _ternary(op_type, predicate, fn):
    """Register ``fn(input, tensor1, tensor2, value)`` (float16 in float32) as the kernel of ``op_type``."""
    def kernel(ctx, x, t1, t2):
        with _errstate(all="ignore"):
            if x.dtype == _F16:
                return fn(x.astype(_F32), t1.astype(_F32), t2.astype(_F32), scalar_operand(ctx, _F32)).astype(_F16)
            return fn(x, t1, t2, scalar_operand(ctx, x.dtype))
    kernel.__name__ = kernel.__qualname__ = op_type + "_cpu"
    cpu_kernel(op_type, predicate)(kernel)


_ternary("addcmul", dtype_in("input", *NUMERIC_DTYPES), lambda x, t1, t2, v: x + v * t1 * t2)
_ternary("addcdiv", dtype_in("input", *FLOATING_DTYPES), lambda x, t1, t2, v: x + v * t1 / t2)


# ---- more elementwise binary ops -------------------------------------------------------------------------
# cpu kernels of the ops in ops/binary.py.
#
# Note [Shift counts]
# PyTorch's shifts on a count outside ``[0, bits)``: a left shift gives 0; a right shift of a signed integer
# fills with its sign bit (0 or -1), of an unsigned one gives 0. Inside, a left shift wraps in the dtype (``1 <<
# 7`` is -128 in int8) and a right shift is arithmetic.


_F64 = np.dtype(np.float64)
_NUMERIC_OR_BOOL_X = dtype_in("x", *ALL_DTYPES)


def _quiet(fn, name):
    def kernel(ctx, x, y):
        with _errstate(all="ignore"):
            return fn(x, y)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _xlogy(x, y):
    """``x * log(y)``, 0 where ``x`` is 0, NaN where ``y`` is NaN (PyTorch's order of the two checks)."""
    t = x.dtype.type
    return np.where(np.isnan(y), t(np.nan), np.where(x == 0, t(0), x * np.log(y)))


def _in_float64(fn):
    def compute(x, y):
        return fn(x.astype(_F64, copy=False), y.astype(_F64, copy=False)).astype(x.dtype, copy=False)
    return compute


for _op, _fn in (("hypot", np.hypot), ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2),
                 ("xlogy", _xlogy), ("nextafter", np.nextafter), ("igamma", _in_float64(special.igamma)),
                 ("igammac", _in_float64(special.igammac))):
    cpu_kernel("broadcast_" + _op, _FLOAT_X)(_quiet(_fn, _op + "_cpu"))
for _op, _fn in (("fmax", np.fmax), ("fmin", np.fmin)):
    cpu_kernel("broadcast_" + _op, _NUMERIC_OR_BOOL_X)(_quiet(_fn, _op + "_cpu"))
for _op, _fn in (("gcd", np.gcd), ("lcm", np.lcm)):
    cpu_kernel("broadcast_" + _op, _INT_X)(_quiet(_fn, _op + "_cpu"))


@cpu_kernel("broadcast_heaviside", _NUMERIC_OR_BOOL_X)
def heaviside_cpu(ctx, x, y):
    """``y`` where ``x`` is 0, else ``x > 0`` (so 0 for a NaN ``x``, as PyTorch; NumPy's gives NaN)."""
    return np.where(x == 0, y, (x > 0).astype(x.dtype))


def _shift_counts(x, y):
    """The counts as int64 and the mask of those inside ``[0, bits)`` (Note [Shift counts])."""
    counts = y.astype(np.int64)
    inside = (counts >= 0) & (counts < x.dtype.itemsize * 8)
    return np.where(inside, counts, 0).astype(x.dtype), inside


@cpu_kernel("broadcast_bitwise_left_shift", _INT_X)
def bitwise_left_shift_cpu(ctx, x, y):
    counts, inside = _shift_counts(x, y)
    return np.where(inside, np.left_shift(x, counts), x.dtype.type(0))


@cpu_kernel("broadcast_bitwise_right_shift", _INT_X)
def bitwise_right_shift_cpu(ctx, x, y):
    counts, inside = _shift_counts(x, y)
    fill = (x < 0).astype(x.dtype) * x.dtype.type(-1) if x.dtype.kind == "i" else np.zeros_like(x)
    return np.where(inside, np.right_shift(x, counts), fill)
