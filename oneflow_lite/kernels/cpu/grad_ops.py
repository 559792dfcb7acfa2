"""cpu kernels of the ops that exist for backward formulas."""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES
from oneflow_lite.kernels.cpu.activation import RELU_ZEROS
from oneflow_lite.kernels.registration import cpu_kernel

_zeros = np.zeros
_empty = np.empty
_where = np.where
_greater = np.greater
_copyto = np.copyto
_negative = np.negative
_bitwise_and = np.bitwise_and
_BITS = {np.dtype(f): np.dtype(i) for f, i in ((np.float16, np.int16), (np.float32, np.int32), (np.float64, np.int64))}
# Note [relu_grad by bit masks]
# relu_grad is ``dy`` where ``y > 0``, else +0 (NaN in dy kept where y > 0, dropped elsewhere), so it is
# not ``dy * (y > 0)`` (NaN * 0 is NaN, -1 * 0 is -0). ``np.where(mask, dy, 0)`` is exact but slow on a
# random mask (19 us on (64, 256) float32, against 6 us for the multiply); from this many elements the
# kernel instead ANDs dy's bits with an all-ones / all-zeros integer mask made from ``y > 0`` (copy, negate,
# and: 6 us, exact), written into the result's own buffer.
_BITS_MIN_SIZE = 2048


@cpu_kernel("relu_grad", dtype_in("dy", *FLOATING_DTYPES))
def relu_grad_cpu(ctx, dy, y):
    zero = RELU_ZEROS[dy.dtype]  # a shared 0-d zero: no conversion of a Python 0 per call
    if dy.size < _BITS_MIN_SIZE:
        return _where(_greater(y, zero), dy, zero)
    ints = _BITS[dy.dtype]  # Note [relu_grad by bit masks]
    dx = _empty(dy.shape, dy.dtype)
    mask = dx.view(ints)
    _copyto(mask, _greater(y, zero))
    _negative(mask, out=mask)
    _bitwise_and(dy.view(ints), mask, out=mask)
    return dx


@cpu_kernel("slice_grad")
def slice_grad_cpu(ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    dx = _zeros(m.shape, m.np_dtype)
    dx[tuple(map(slice, attrs["start"], attrs["stop"], attrs["step"]))] = dy
    return dx
