"""cpu kernels of the ops that exist for backward formulas."""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES
from oneflow_lite.kernels.cpu.activation import RELU_ZEROS
from oneflow_lite.kernels.registration import cpu_kernel

_zeros = np.zeros
_where = np.where
_greater = np.greater


@cpu_kernel("relu_grad", dtype_in("dy", *FLOATING_DTYPES))
def relu_grad_cpu(ctx, dy, y):
    zero = RELU_ZEROS[dy.dtype]  # a shared 0-d zero: no conversion of a Python 0 per call
    return _where(_greater(y, zero), dy, zero)


@cpu_kernel("slice_grad")
def slice_grad_cpu(ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    dx = _zeros(m.shape, m.np_dtype)
    dx[tuple(map(slice, attrs["start"], attrs["stop"], attrs["step"]))] = dy
    return dx
