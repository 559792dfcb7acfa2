"""Linear algebra: matmul, mm, bmm, dot, outer, linear, baddbmm, einsum.

The references multiply with broadcasting and sum: in float64 for floating dtypes (then rounded to the
dtype), in the dtype itself for integers (which wrap the same in any order of summation).
"""

import numpy as np
from opinfo import ALL, NUMERIC, OpSpec, Sample, make, register

import oneflow_lite as flow


def _acc(a):
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _sum(a, axis, dtype):
    """Sum in the accumulation dtype (float64, or the integer dtype itself so it wraps)."""
    return a.sum(axis=axis, dtype=np.float64 if dtype.kind == "f" else dtype)


def _ref_matmul(a, b):
    dt = a.dtype
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    r = _sum(_acc(a2)[..., :, :, None] * _acc(b2)[..., None, :, :], -2, dt)
    if a.ndim == 1:
        r = r[..., 0, :]
    if b.ndim == 1:
        r = r[..., 0]
    return np.asarray(r).astype(dt)


def _pairs(*shape_pairs):
    def samples(dtype):
        for sa, sb in shape_pairs:
            yield Sample((make(sa, dtype), make(sb, dtype)), name=f"{sa}@{sb}")
    return samples


def _ref_linear(x, weight, bias=None):
    dt = x.dtype
    w = weight.T if weight.ndim == 2 else weight
    y = _ref_matmul(x, w).astype(np.float64 if dt.kind == "f" else dt)
    if bias is not None:
        y = y + _acc(bias)
    return np.asarray(y).astype(dt)


def _linear_samples(dtype):
    for sx, sw, sb in (((2, 3), (4, 3), (4,)), ((5, 3), (4, 3), None), ((2, 2, 3), (4, 3), (4,)),
                       ((3,), (4, 3), (4,)), ((2, 3), (3,), ()), ((0, 3), (4, 3), (4,)), ((2, 0), (4, 0), (4,)),
                       ((2, 3), (4, 3), (1,))):
        args = (make(sx, dtype), make(sw, dtype)) + (() if sb is None else (make(sb, dtype),))
        yield Sample(args, name=f"{sx},{sw},{sb}")


def _ref_baddbmm(inp, batch1, batch2, *, beta=1, alpha=1):
    dt = inp.dtype
    prod = _ref_matmul(batch1, batch2)
    if dt.kind == "f":
        r = alpha * prod.astype(np.float64)
        if beta != 0:
            r = r + beta * inp.astype(np.float64)
        return np.asarray(r).astype(dt)
    r = prod * np.array(alpha).astype(dt)
    if beta != 0:
        r = r + inp * np.array(beta).astype(dt)
    return np.asarray(r).astype(dt)


def _baddbmm_samples(dtype):
    floating = dtype.is_floating_point
    coefficients = {"beta": 0.5, "alpha": -2.0} if floating else {"beta": 2, "alpha": -3}
    for si, s1, s2, kwargs in (((2, 3, 4), (2, 3, 5), (2, 5, 4), coefficients), ((4,), (2, 3, 2), (2, 2, 4), {}),
                               ((3, 1), (2, 3, 2), (2, 2, 4), coefficients), ((), (1, 2, 3), (1, 3, 2), {}),
                               ((3, 4), (0, 3, 2), (0, 2, 4), {}), ((2, 1, 1), (2, 1, 0), (2, 0, 3), coefficients)):
        yield Sample((make(si, dtype), make(s1, dtype), make(s2, dtype)), kwargs, name=f"{si},{s1},{s2}")
    if floating:  # beta 0 ignores the input, NaN included
        yield Sample((np.full((2, 3, 4), np.nan, dtype.np_dtype), make((2, 3, 5), dtype), make((2, 5, 4), dtype)),
                     {"beta": 0}, name="beta0")


# einsum: each equation of the samples with an independent formula
def _diag(a):
    i = np.arange(a.shape[0])
    return a[i, i]


def _ein(f):
    """A reference computing ``f`` on accumulation-dtype arrays and rounding to the operands' dtype."""
    def ref(*xs):
        dt = xs[0].dtype
        return np.asarray(f(dt, *[_acc(x) for x in xs])).astype(dt)
    return ref


_EINSUM = {
    "ij,jk->ik": _ein(lambda dt, a, b: _sum(a[:, :, None] * b[None], 1, dt)),
    "ij,jk": _ein(lambda dt, a, b: _sum(a[:, :, None] * b[None], 1, dt)),
    "bij,bjk->bik": _ein(lambda dt, a, b: _sum(a[:, :, :, None] * b[:, None], 2, dt)),
    "ii->i": _ein(lambda dt, a: _diag(a)),
    "ii": _ein(lambda dt, a: _sum(_diag(a), None, dt)),
    "i,j": _ein(lambda dt, a, b: a[:, None] * b[None, :]),
    "i,i->": _ein(lambda dt, a, b: _sum(a * b, None, dt)),
    "ij->": _ein(lambda dt, a: _sum(a, None, dt)),
    "ij->j": _ein(lambda dt, a: _sum(a, 0, dt)),
    "ijk->kji": _ein(lambda dt, a: a.transpose(2, 1, 0)),
    "...ij->...ji": _ein(lambda dt, a: np.swapaxes(a, -1, -2)),
    "b...,b...->b": _ein(lambda dt, a, b: _sum((a * b).reshape(a.shape[0], -1), 1, dt)),
    "...i,i->...": _ein(lambda dt, a, b: _sum(a * b, -1, dt)),
    "bn,anm,bm->ba": _ein(lambda dt, x, w, y: _sum(x[:, None, :, None] * w[None] * y[:, None, None, :], (2, 3), dt)),
    "ij,ij->ij": _ein(lambda dt, a, b: a * b),
    "i,i": _ein(lambda dt, a, b: _sum(a * b, None, dt)),
    "ij,j->i": _ein(lambda dt, a, b: _sum(a * b, 1, dt)),
    ",->": _ein(lambda dt, a, b: a * b),
    "iij->j": _ein(lambda dt, a: _sum(a[np.arange(a.shape[0]), np.arange(a.shape[0])], 0, dt)),
    "Ab,bA->A": _ein(lambda dt, a, b: _sum(a * b.T, 1, dt)),
}
_EINSUM_CASES = (
    ("ij,jk->ik", (2, 3), (3, 4)), ("ij,jk", (0, 3), (3, 2)), ("bij,bjk->bik", (2, 3, 4), (2, 4, 2)),
    ("ii->i", (3, 3)), ("ii", (4, 4)), ("i,j", (3,), (2,)), ("i,i->", (0,), (0,)), ("ij->", (2, 3)),
    ("ij->j", (3, 2)), ("ijk->kji", (2, 3, 4)), ("...ij->...ji", (2, 3, 4)), ("b...,b...->b", (2, 3, 1), (2, 1, 4)),
    ("...i,i->...", (2, 3, 4), (4,)), ("bn,anm,bm->ba", (2, 3), (4, 3, 2), (2, 2)), ("ij,ij->ij", (2, 3), (2, 3)),
    ("i,i", (3,), (1,)), ("ij,j->i", (2, 3), (1,)), (",->", (), ()), ("iij->j", (2, 2, 3)),
    ("Ab,bA->A", (3, 2), (2, 3)),
)


def _einsum_samples(dtype, cases=_EINSUM_CASES):
    for eq, *shapes in cases:
        yield Sample((eq, *[make(s, dtype) for s in shapes]), name=eq)


def _einsum_grad_samples():
    cases = [c for c in _EINSUM_CASES if all(np.prod(s) for s in c[1:])]
    return list(_einsum_samples(flow.float64, cases))


register(
    OpSpec("matmul", _ref_matmul, _pairs(((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                         ((2, 1, 3, 4), (3, 4, 2)), ((5, 2, 3), (3,)), ((4,), (2, 4, 3)),
                                         ((0, 3), (3, 4)), ((2, 0), (0, 3))),
           dtypes=NUMERIC, method="matmul", gradgrad=True),
    OpSpec("mm", _ref_matmul, _pairs(((2, 3), (3, 4)), ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((1, 1), (1, 1))),
           dtypes=NUMERIC, method="mm"),
    OpSpec("bmm", _ref_matmul, _pairs(((2, 3, 4), (2, 4, 5)), ((0, 2, 3), (0, 3, 1)), ((2, 0, 3), (2, 3, 2))),
           dtypes=NUMERIC, method="bmm"),
    OpSpec("dot", _ref_matmul, _pairs(((5,), (5,)), ((0,), (0,)), ((1,), (1,))), dtypes=NUMERIC, method="dot"),
    OpSpec("outer", lambda a, b: a[:, None] * b[None, :], _pairs(((3,), (4,)), ((0,), (2,)), ((1,), (1,))),
           dtypes=ALL, method="outer"),
    OpSpec("linear", _ref_linear, _linear_samples, dtypes=NUMERIC, gradgrad=True),
    OpSpec("baddbmm", _ref_baddbmm, _baddbmm_samples, dtypes=NUMERIC, method="baddbmm", gradgrad=True),
    OpSpec("einsum", lambda eq, *xs: _EINSUM[eq](*xs), _einsum_samples, dtypes=NUMERIC,
           grad_samples=_einsum_grad_samples, gradgrad=True),
)
