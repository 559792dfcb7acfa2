"""cpu kernels of the ops in ops/binary_ext.py.

Note [Shift counts]
PyTorch's shifts on a count outside ``[0, bits)``: a left shift gives 0; a right shift of a signed integer
fills with its sign bit (0 or -1), of an unsigned one gives 0. Inside, a left shift wraps in the dtype (``1 <<
7`` is -128 in int8) and a right shift is arithmetic.
"""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES, INTEGRAL_DTYPES
from oneflow_lite.kernels.cpu import special
from oneflow_lite.kernels.registration import cpu_kernel

_errstate = np.errstate
_F64 = np.dtype(np.float64)
_FLOAT_X = dtype_in("x", *FLOATING_DTYPES)
_INT_X = dtype_in("x", *INTEGRAL_DTYPES)
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
