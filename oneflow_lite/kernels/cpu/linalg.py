"""cpu kernels of ``linear``, ``baddbmm`` and ``einsum``.

float16 is computed in float32 and rounded once at the end, as PyTorch's cpu
kernels accumulate half products in float. Integer results wrap on overflow.
PyTorch has no bool matmul on cpu, so bool inputs find no kernel.
"""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import NUMERIC_DTYPES
from oneflow_lite.kernels.registration import cpu_kernel

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_matmul = np.matmul


def _coefficient(value, dt):
    """``value`` (an attr, a Python float) as a scalar of ``dt``; integers wrap as PyTorch's casts do."""
    if dt.kind == "f":
        return value
    return np.array(int(value), _I64).astype(dt)


@cpu_kernel("linear", dtype_in("x", *NUMERIC_DTYPES))
def linear_cpu(ctx, x, weight, bias=None):
    half = x.dtype == _F16
    if half:
        x, weight = x.astype(_F32), weight.astype(_F32)
        bias = None if bias is None else bias.astype(_F32)
    y = np.asarray(_matmul(x, weight.T if weight.ndim == 2 else weight))
    if bias is not None:
        np.add(y, bias, out=y)
    return y.astype(_F16) if half else y


@cpu_kernel("baddbmm", dtype_in("input", *NUMERIC_DTYPES))
def baddbmm_cpu(ctx, inp, batch1, batch2):
    """``beta * input + alpha * (batch1 @ batch2)``; with beta 0 the input is ignored (NaN included)."""
    attrs = ctx.attrs
    half = inp.dtype == _F16
    if half:
        inp, batch1, batch2 = inp.astype(_F32), batch1.astype(_F32), batch2.astype(_F32)
    dt = inp.dtype
    y = _matmul(batch1, batch2)
    alpha, beta = attrs["alpha"], attrs["beta"]
    if alpha != 1:
        np.multiply(y, _coefficient(alpha, dt), out=y)
    if beta != 0:
        np.add(y, inp if beta == 1 else inp * _coefficient(beta, dt), out=y)
    return y.astype(_F16) if half else y


# Note [Normalised einsum equations] (ops/linalg.py): an output letter that repeats or that no
# operand has needs a plan: einsum into the output's distinct letters that the operands have, then
# write that into the diagonal (a writable view NumPy's einsum gives) of a zero tensor of the full shape.
_plans: dict = {}


def _plan(equation):
    """None for a plain equation; else (reduced equation, diagonal equation, whether each distinct output
    letter is one the operands have)."""
    plan = _plans.get(equation, False)
    if plan is False:
        lhs, out = equation.split("->")
        present = set(lhs)
        distinct = "".join(dict.fromkeys(out))
        if len(distinct) == len(out) and present.issuperset(out):
            plan = None
        else:
            reduced = "".join(c for c in distinct if c in present)
            plan = (f"{lhs}->{reduced}", f"{out}->{distinct}", tuple(c in present for c in distinct))
        if len(_plans) >= 1024:
            _plans.clear()
        _plans[equation] = plan
    return plan


@cpu_kernel("einsum", dtype_in("in", *NUMERIC_DTYPES))
def einsum_cpu(ctx, *xs):
    equation = ctx.attrs["equation"]
    m = ctx.out_metas[0]
    half = m.np_dtype == _F16
    if half:
        xs = [x.astype(_F32) for x in xs]
    optimize = "greedy" if len(xs) > 1 else False
    plan = _plan(equation)
    if plan is None:
        y = np.asarray(np.einsum(equation, *xs, optimize=optimize))
        if len(xs) == 1 and np.may_share_memory(y, xs[0]):  # a permutation or diagonal view: copy
            y = y.copy()
    else:
        reduced, diagonal, present = plan
        r = np.einsum(reduced, *xs, optimize=optimize)
        dims = iter(np.shape(r))
        y = np.zeros(m.shape, xs[0].dtype)
        np.einsum(diagonal, y)[...] = np.reshape(r, [next(dims) if p else 1 for p in present])
    return y.astype(_F16) if half else y
