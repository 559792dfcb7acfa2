"""cpu kernels of conversion ops.

Note [Cast semantics]
``cast`` follows PyTorch on cpu: float -> integer truncates toward zero, and an
out-of-range value wraps (float -> int64 first, then to the narrower type, so
``-1.5 -> uint8`` is 255 on every platform); anything -> bool is ``!= 0``
(NaN is True); NaN / inf -> integer is unspecified, as in PyTorch (no warning);
narrowing float casts overflow to inf. The kernel choice is by predicate, so a
call pays for none of these decisions.
"""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in, output_dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES, INTEGRAL_DTYPES, float16, float32, float64, int32, int64
from oneflow_lite.kernels.registration import cpu_kernel

_int64 = np.dtype(np.int64)
_errstate = np.errstate


@cpu_kernel("cast")
def cast_cpu(ctx, x):
    return x.astype(ctx.out_metas[0].np_dtype)


@cpu_kernel("cast", dtype_in("in", *FLOATING_DTYPES) & output_dtype_in("out", *INTEGRAL_DTYPES), priority=1)
def cast_float_to_int_cpu(ctx, x):
    with _errstate(invalid="ignore", over="ignore"):
        return x.astype(_int64).astype(ctx.out_metas[0].np_dtype, copy=False)


# Casts that can overflow to inf: float64 -> float32 / float16, float32 / int32 / int64 -> float16.
@cpu_kernel("cast", (dtype_in("in", float64) & output_dtype_in("out", float16, float32))
            | (dtype_in("in", float32, int32, int64) & output_dtype_in("out", float16)), priority=1)
def cast_narrowing_cpu(ctx, x):
    with _errstate(over="ignore"):
        return x.astype(ctx.out_metas[0].np_dtype)


@cpu_kernel("copy")
def copy_cpu(ctx, x):
    return x.copy()


@cpu_kernel("hierarchical_parallel_cast")
def hierarchical_parallel_cast_cpu(ctx, x):
    return x.copy()
