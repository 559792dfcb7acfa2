"""cpu kernels of activation ops."""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.kernels.registration import cpu_kernel
from oneflow_lite.framework.dtype import NUMERIC_DTYPES

_maximum = np.maximum


@cpu_kernel("relu", dtype_in("x", *NUMERIC_DTYPES))
def relu_cpu(ctx, x):
    return _maximum(x, 0)
