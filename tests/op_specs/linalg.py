"""Linear algebra: matmul, mm, bmm, dot, outer, linear, baddbmm, einsum; diagonals, addmm and friends,
products, decompositions, solvers, norms and the torch.linalg functions (flow.linalg).

The references multiply with broadcasting and sum: in float64 for floating dtypes (then rounded to the
dtype), in the dtype itself for integers (which wrap the same in any order of summation).
"""

import warnings

import numpy as np
import opinfo
from opinfo import ALL, FLOATS, NUMERIC, OpSpec, Sample, make, register

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


# ---- diagonals, products, decompositions, solvers and torch.linalg (compat) ------------------------------
# References: NumPy formulas, and np.linalg in the input's dtype for the LAPACK factorizations (whose sign
# conventions a formula cannot reproduce); tests/test_linalg_compat.py checks their defining properties
# (Q R = A, U S Vh = A, L L^T = A, A X = B, ...) and compares with PyTorch where it is installed.
LIN = (flow.float32, flow.float64)
_LIN_TOL = {"atol": 1e-4, "rtol": 1e-4}


_RNG = np.random.default_rng(2024)


def _own_stream(fn):
    """``fn`` (a samples generator) drawing from this section's own random stream, so these specs leave the
    shared stream of ``make`` (and so the other specs' samples) as they were."""
    def samples(*args):
        saved, opinfo._rng = opinfo._rng, _RNG
        try:
            return list(fn(*args))
        finally:
            opinfo._rng = saved
    return samples


def _register_own(*specs):
    for spec in specs:
        spec.samples = _own_stream(spec.samples)
        if spec.grad_samples is not None:
            spec.grad_samples = _own_stream(spec.grad_samples)
    register(*specs)


def _diagonal_ref(x, offset=0, dim1=0, dim2=1):
    return np.diagonal(x, offset, dim1, dim2).copy()


def _diagonal_samples(dtype):
    for shape, args in (((3, 4), ()), ((3, 4), (1,)), ((3, 4), (-2,)), ((2, 3, 4), (0, 2, 0)),
                        ((2, 3, 4), (-1, -1, 0)), ((3, 3), (5,)), ((0, 3), ()), ((2, 2, 2), (1, -3, -1))):
        yield Sample((make(shape, dtype),) + args, name=f"{shape} {args}")


def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    idx = np.arange(x.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = x
    nd = out.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    order = [None] * nd
    order[d1], order[d2] = nd - 2, nd - 1
    rest = iter(range(nd - 2))
    return out.transpose([o if o is not None else next(rest) for o in order])


def _diag_embed_samples(dtype):
    for shape, args in (((3,), ()), ((2, 3), (1,)), ((2, 3), (-1, 0, 2)), ((2, 3), (0, 2, 0)), ((0,), (2,)),
                        ((2, 0), ())):
        yield Sample((make(shape, dtype),) + args, name=f"{shape} {args}")


def _diag_ref(x, diagonal=0):
    return np.diag(x, diagonal).copy()


def _diag_samples(dtype):
    for shape, k in (((3,), 0), ((3,), 1), ((3,), -2), ((3, 4), 0), ((3, 4), 2), ((3, 4), -1), ((0,), 0)):
        yield Sample((make(shape, dtype), k), name=f"{shape} k={k}")


def _trace_ref(x):
    return np.asarray(np.trace(x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64))).astype(
        x.dtype if x.dtype.kind == "f" else np.int64)


def _wide(x):
    return x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)


def _addmm_ref(product):
    def ref(inp, a, b, *, beta=1, alpha=1):
        dt = np.result_type(inp, a, b)
        p = product(_wide(a), _wide(b))
        out = alpha * p if beta == 0 else beta * _wide(inp) + alpha * p
        return np.asarray(np.broadcast_to(out, p.shape)).astype(dt)
    return ref


def _addmm_samples(shapes):
    def samples(dtype):
        floating = dtype.is_floating_point
        for si, s1, s2, coef in shapes:
            kwargs = ({"beta": 0.5, "alpha": -2.0} if floating else {"beta": 2, "alpha": -3}) if coef else {}
            if dtype is flow.bool:
                kwargs = {"beta": False} if coef else {}
            yield Sample((make(si, dtype), make(s1, dtype), make(s2, dtype)), kwargs, name=f"{si},{s1},{s2}")
        if floating:
            si, s1, s2, _ = shapes[0]
            yield Sample((np.full(si, np.nan, dtype.np_dtype), make(s1, dtype), make(s2, dtype)), {"beta": 0},
                         name="beta 0 ignores nan")
    return samples


def _kron_ref(a, b):
    return np.kron(a, b)


def _tensordot_ref(a, b, dims=2):
    dt = np.result_type(a, b)
    return np.asarray(np.tensordot(_wide(a), _wide(b), dims)).astype(dt)


def _tensordot_samples(dtype):
    yield Sample((make((2, 3, 4), dtype), make((3, 4, 5), dtype)), name="dims 2")
    yield Sample((make((2, 3), dtype), make((3, 2), dtype), 1), name="dims 1")
    yield Sample((make((2, 3), dtype), make((4,), dtype), 0), name="dims 0")
    yield Sample((make((2, 3, 4), dtype), make((4, 2, 3), dtype), ([1, 2], [2, 0])), name="lists")


def _chain_ref(*ms):
    dt = ms[0].dtype
    out = _wide(ms[0])
    for m in ms[1:]:
        out = out @ _wide(m)
    return out.astype(dt)


def _multi_dot_ref(ms):
    dt = ms[0].dtype
    mats = [_wide(m) for m in ms]
    out = np.linalg.multi_dot(mats) if len(mats) > 2 else mats[0] @ mats[1]
    return np.asarray(out).astype(dt)


def _cross_ref(dim_default):
    def ref(a, b, dim=dim_default):
        shape = np.broadcast_shapes(a.shape, b.shape)
        if dim is None:
            dim = shape.index(3)
        return np.cross(np.broadcast_to(a, shape), np.broadcast_to(b, shape), axis=dim)
    return ref


def _cross_samples(dtype):
    yield Sample((make((4, 3), dtype), make((4, 3), dtype)), name="rows")
    yield Sample((make((2, 3, 2), dtype), make((1, 3, 1), dtype)), {"dim": 1}, name="broadcast dim 1")
    yield Sample((make((1, 3), dtype), make((2, 3), dtype)), name="broadcast")


def _cov_ref(x, correction=1, fweights=None, aweights=None):
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    if aweights is not None:  # PyTorch's result type of the input and the weights (float64 weights: float64)
        out = np.result_type(out, np.asarray(aweights).dtype)
    a = np.atleast_2d(x.astype(np.float64))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c = np.cov(a, ddof=correction, fweights=fweights, aweights=aweights)
    return np.asarray(c).astype(out)


def _cov_samples(dtype):
    x = make((3, 5), dtype)
    yield Sample((x,), name="rows")
    yield Sample((make((5,), dtype),), name="1-d")
    yield Sample((x,), {"correction": 0}, name="correction 0")
    yield Sample((x,), {"fweights": np.array([1, 2, 1, 3, 1])}, name="fweights")
    yield Sample((x,), {"aweights": np.array([0.5, 1.0, 2.0, 1.5, 1.0]), "fweights": np.array([1, 2, 1, 1, 2])},
                 name="aweights fweights")


def _corrcoef_ref(x):
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.clip(np.asarray(np.corrcoef(x.astype(np.float64))), -1, 1).astype(out)


def _square(dtype, shapes=((3, 3), (2, 4, 4), (1, 1), (0, 2, 2)), shift=4.0):
    """Well-conditioned square matrices (``shift`` on the diagonal)."""
    def samples(d=dtype):
        for s in shapes:
            yield make(s, d, -1, 1) + np.eye(s[-1], dtype=d.np_dtype) * d.np_dtype.type(shift)
    return samples()


def _spd(dtype, shapes=((3, 3), (2, 4, 4), (1, 1))):
    for s in shapes:
        a = make(s, dtype, -1, 1)
        yield (a @ np.swapaxes(a, -1, -2) + np.eye(s[-1]) * 2).astype(dtype.np_dtype)


def _one(samples_of):
    """An op spec's samples: one Sample per matrix of ``samples_of(dtype)``."""
    return lambda dtype: (Sample((a,), name=str(a.shape)) for a in samples_of(dtype))


def _np(fn, *, index=None):
    """A reference applying ``fn`` in the input's own dtype (LAPACK's results, as the kernels')."""
    def ref(*args, **kwargs):
        r = fn(*args, **kwargs)
        return r if index is None else r[index]
    return ref


def _matrix_power_ref(a, n):
    if n < 0:
        a, n = np.linalg.inv(a.astype(np.float64)).astype(a.dtype), -n
    if n == 0:
        return np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
    out = a.copy()  # not eye @ a: its zeros times an Inf of a would be NaN
    for _ in range(n - 1):  # each product term by term, so a NaN or Inf reaches only the entries it is in
        with np.errstate(all="ignore"):
            out = (_wide(out)[..., :, :, None] * _wide(a)[..., None, :, :]).sum(-2).astype(a.dtype)
    return out


def _matrix_power_samples(dtype):
    for a in _square(dtype, ((3, 3), (2, 2, 2)), shift=1.0):
        for n in (2, 0, 1, 5) + ((-1, -2) if dtype in LIN else ()):
            yield Sample((a if dtype.is_floating_point else make(a.shape, dtype, -2, 3), n), name=f"{a.shape} n={n}")


def _expm_ref(a):
    """The Taylor series to convergence after scaling by 2^-s, then squaring (float64)."""
    x = a.astype(np.float64)
    if x.shape[-1] == 1:  # exp of the one entry (also of Inf or NaN, where the scaling below has no meaning)
        return np.exp(x).astype(a.dtype)
    bad = ~np.isfinite(x).all((-2, -1), keepdims=True)  # a matrix with Inf or NaN: NaN throughout, as PyTorch
    x = np.where(bad, 0.0, x)
    s = int(max(0, np.ceil(np.log2(max(np.abs(x).sum(-2).max(initial=0), 1e-300))) + 1)) if x.size else 0
    b = x / 2 ** s
    term = np.broadcast_to(np.eye(x.shape[-1]), x.shape).copy()
    out = term.copy()
    for k in range(1, 40):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return np.where(bad, np.nan, out).astype(a.dtype)


def _cholesky_ref(a, upper=False):
    low = np.linalg.cholesky(a.astype(np.float64)).astype(a.dtype) if a.size else a.copy()
    if np.isnan(np.diagonal(low, axis1=-2, axis2=-1)).any():  # LAPACK's potrf (PyTorch's) stops at a NaN pivot
        raise np.linalg.LinAlgError("not positive-definite: a NaN pivot")
    return np.swapaxes(low, -1, -2) if upper else low


def _sym(t):
    return t + t.transpose(-2, -1)


def _cholesky_samples(dtype):
    for a in _spd(dtype):
        yield Sample((a,), name=str(a.shape))
        yield Sample((a,), {"upper": True}, name=f"{a.shape} upper")


def _solve_ref(a, b, left=True):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if not left:
        return np.swapaxes(np.linalg.solve(np.swapaxes(a64, -1, -2), np.swapaxes(b64, -1, -2)), -1, -2).astype(a.dtype)
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if vector:
        return np.linalg.solve(a64, b64[..., None])[..., 0].astype(a.dtype)
    return np.linalg.solve(a64, b64).astype(a.dtype)


def _solve_samples(dtype):
    mats = list(_square(dtype, ((3, 3), (2, 4, 4))))
    yield Sample((mats[0], make((3, 2), dtype)), name="matrix")
    yield Sample((mats[0], make((3,), dtype)), name="vector")
    yield Sample((mats[1], make((2, 4), dtype)), name="batch of vectors")
    yield Sample((mats[1], make((4, 3), dtype)), name="broadcast B")
    yield Sample((mats[0], make((2, 3, 1), dtype)), name="broadcast A")
    yield Sample((mats[1], make((2, 3, 4), dtype)), {"left": False}, name="left=False")


def _triangle(a, upper, unit):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t.copy()
        idx = np.arange(t.shape[-1])
        t[..., idx, idx] = 1
    return t


def _solve_triangular_ref(a, b, *, upper, left=True, unitriangular=False):
    t = _triangle(a.astype(np.float64), upper, unitriangular)
    b64 = b.astype(np.float64)
    x = np.linalg.solve(t, b64) if left else np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2),
                                                                          np.swapaxes(b64, -1, -2)), -1, -2)
    return x.astype(a.dtype)


def _solve_triangular_samples(dtype):
    a = next(_square(dtype, ((2, 3, 3),)))
    for upper in (True, False):
        for left, b in ((True, make((3, 2), dtype)), (False, make((2, 4, 3), dtype))):
            for unit in (False, True):
                yield Sample((a, b), {"upper": upper, "left": left, "unitriangular": unit},
                             name=f"upper={upper} left={left} unit={unit}")


def _triangular_solve_ref(b, a, upper=True, transpose=False, unitriangular=False):
    t = _triangle(a.astype(np.float64), upper, unitriangular)
    if transpose:
        t = np.swapaxes(t, -1, -2)
    return np.linalg.solve(t, b.astype(np.float64)).astype(a.dtype), a.copy()


def _triangular_solve_samples(dtype):
    a = next(_square(dtype, ((3, 3),)))
    for kwargs in ({}, {"upper": False}, {"transpose": True}, {"upper": False, "unitriangular": True}):
        yield Sample((make((3, 2), dtype), a), kwargs, name=str(kwargs))


def _cholesky_solve_ref(b, low, upper=False):
    low64 = low.astype(np.float64)
    a = np.swapaxes(low64, -1, -2) @ low64 if upper else low64 @ np.swapaxes(low64, -1, -2)
    return np.linalg.solve(a, b.astype(np.float64)).astype(low.dtype)


def _cholesky_solve_samples(dtype):
    for upper in (False, True):
        for a in _spd(dtype, ((3, 3), (2, 4, 4))):
            low = np.linalg.cholesky(a.astype(np.float64))
            factor = np.swapaxes(low, -1, -2) if upper else low
            yield Sample((make(a.shape[:-1] + (2,), dtype), factor.astype(dtype.np_dtype), upper),
                         name=f"{a.shape} upper={upper}")


def _qr_samples(dtype):
    for s in ((4, 3), (3, 4), (2, 3, 3), (0, 2)):
        a = make(s, dtype)
        yield Sample((a,), name=str(s))
        yield Sample((a, "complete"), name=f"{s} complete")
        yield Sample((a, "r"), name=f"{s} r")


def _qr_ref(a, mode="reduced"):
    if a.size == 0:
        m, n = a.shape[-2:]
        k = m if mode == "complete" else min(m, n)
        q = np.zeros((0,), a.dtype) if mode == "r" else np.broadcast_to(np.eye(m, k, dtype=a.dtype),
                                                                           a.shape[:-2] + (m, k))
        return q, np.zeros(a.shape[:-2] + (k, n), a.dtype)
    if mode == "r":
        return np.zeros((0,), a.dtype), np.linalg.qr(a, mode="r")
    return np.linalg.qr(a, mode=mode)


def _svd(a, **kwargs):
    """NumPy's SVD, refusing non-finite input as PyTorch does (LAPACK's gesdd may never return on Inf)."""
    if not np.isfinite(a).all():
        raise np.linalg.LinAlgError("SVD of a matrix holding NaN or Inf")
    return np.linalg.svd(a, **kwargs)


def _svd_ref(a, full_matrices=True):
    return _svd(a, full_matrices=full_matrices)


def _svd_samples(dtype):
    for s in ((4, 3), (3, 5), (2, 3, 3)):
        a = make(s, dtype)
        yield Sample((a,), name=str(s))
        yield Sample((a, False), name=f"{s} reduced")


def _lu_factor_ref(a):
    """Doolittle elimination with partial pivoting (the larger |pivot|, the first on ties), as getrf."""
    lu = a.astype(np.float64).copy()
    m, n = a.shape[-2:]
    piv = np.zeros(a.shape[:-2] + (min(m, n),), np.int32)
    for idx in np.ndindex(*a.shape[:-2]):
        mat = lu[idx]
        for j in range(min(m, n)):
            p = j + int(np.argmax(np.abs(mat[j:, j])))
            piv[idx + (j,)] = p + 1
            mat[[j, p]] = mat[[p, j]]
            if mat[j, j] != 0:
                mat[j + 1:, j] /= mat[j, j]
            mat[j + 1:, j + 1:] -= np.outer(mat[j + 1:, j], mat[j, j + 1:])
    return lu.astype(a.dtype), piv


def _lu_samples(dtype):
    for s in ((3, 3), (2, 4, 4), (3, 5), (5, 2)):
        yield Sample((make(s, dtype),), name=str(s))


def _unpack_ref(lu, piv, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    p = np.zeros(lu.shape[:-2] + (m, m), lu.dtype)
    for idx in np.ndindex(*lu.shape[:-2]):
        perm = list(range(m))
        for j, q in enumerate(piv[idx]):
            perm[j], perm[q - 1] = perm[q - 1], perm[j]
        p[idx][perm, np.arange(m)] = 1
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    return p, low, np.triu(lu[..., :k, :])


def _linalg_lu_ref(a):
    return _unpack_ref(*_lu_factor_ref(a))


def _lu_unpack_samples(dtype):
    for s in ((3, 3), (2, 4, 4), (3, 5), (5, 2)):
        yield Sample(_lu_factor_ref(make(s, dtype)), name=str(s))


def _lu_solve_ref(lu, piv, b, *, left=True, adjoint=False):
    p, low, up = (x.astype(np.float64) for x in _unpack_ref(lu, piv))
    a = p @ low @ up
    if adjoint:
        a = np.swapaxes(a, -1, -2)
    b64 = b.astype(np.float64)
    x = np.linalg.solve(a, b64) if left else np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2),
                                                                          np.swapaxes(b64, -1, -2)), -1, -2)
    return x.astype(lu.dtype)


def _lu_solve_samples(dtype):
    lu, piv = _lu_factor_ref(next(_square(dtype, ((2, 3, 3),))))
    for left in (True, False):
        for adjoint in (False, True):
            yield Sample((lu, piv, make((2, 3, 3), dtype)), {"left": left, "adjoint": adjoint},
                         name=f"left={left} adjoint={adjoint}", grad_args=(0, 2))


def _torch_lu_solve_samples(dtype):
    lu, piv = _lu_factor_ref(next(_square(dtype, ((2, 3, 3),))))
    yield Sample((make((2, 3, 2), dtype), lu, piv), name="b, LU, pivots", grad_args=(0, 1))


def _pinv_ref(a, atol=None, rtol=None, hermitian=False):
    u, s, vh = _svd(a.astype(np.float64), full_matrices=False)
    if rtol is None:
        rtol = 0.0 if atol is not None else np.finfo(a.dtype).eps * max(a.shape[-2:])
    tol = np.maximum(atol or 0.0, rtol * s.max(-1, initial=0))[..., None]
    inv = np.where(s > tol, 1 / np.where(s > tol, s, 1), 0)
    return (np.swapaxes(vh, -1, -2) * inv[..., None, :] @ np.swapaxes(u, -1, -2)).astype(a.dtype)


def _pinv_samples(dtype):
    yield Sample((make((3, 4), dtype),), name="wide")
    yield Sample((make((2, 4, 3), dtype),), name="tall")
    rank1 = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 2.0]).astype(dtype.np_dtype)
    yield Sample((rank1,), name="rank 1")
    yield Sample((make((3, 3), dtype),), {"rtol": 0.5}, name="rtol")
    yield Sample((make((3, 3), dtype),), {"atol": 1.0}, name="atol")
    yield Sample((next(_spd(dtype)),), {"hermitian": True}, name="hermitian")


def _matrix_rank_ref(a, atol=None, rtol=None, hermitian=False):
    s = _svd(a.astype(np.float64), compute_uv=False)
    if rtol is None:
        rtol = 0.0 if atol is not None else np.finfo(a.dtype).eps * max(a.shape[-2:])
    tol = np.maximum(atol or 0.0, rtol * s.max(-1, initial=0))[..., None]
    return (s > tol).sum(-1).astype(np.int64)


def _matrix_rank_samples(dtype):
    yield Sample((make((3, 4), dtype),), name="full")
    yield Sample((np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 2.0, 1.0]).astype(dtype.np_dtype),), name="rank 1")
    yield Sample((np.zeros((2, 3, 3), dtype.np_dtype),), name="zeros")
    yield Sample((make((3, 3), dtype),), {"atol": 100.0}, name="atol")
    yield Sample((next(_spd(dtype)),), {"hermitian": True}, name="hermitian")


def _lstsq_ref(a, b, rcond=None, driver=None):
    x = _pinv_ref(a).astype(np.float64) @ b.astype(np.float64)
    driver = driver or "gelsy"
    m, n = a.shape[-2:]
    rank = _matrix_rank_ref(a) if driver != "gels" else np.zeros((0,), np.int64)
    sv = _svd(a.astype(np.float64), compute_uv=False) if driver in ("gelsd", "gelss") else np.zeros(0)
    res = np.zeros(0)
    if m > n and driver != "gelsy" and (driver == "gels" or (rank == n).all()):
        res = ((a.astype(np.float64) @ x - b.astype(np.float64)) ** 2).sum(-2)
    return x.astype(a.dtype), res.astype(a.dtype), rank, sv.astype(a.dtype)


def _lstsq_samples(dtype):
    for driver in (None, "gels", "gelsd", "gelss"):
        yield Sample((make((5, 3), dtype), make((5, 2), dtype)), {"driver": driver}, name=f"tall {driver}")
    yield Sample((make((2, 3, 4), dtype), make((2, 3, 2), dtype)), name="wide batch")


def _matrix_norm_ref(a, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    x = np.moveaxis(a.astype(np.float64), dim, (-2, -1))
    if ord == "fro":
        r = np.sqrt((x ** 2).sum((-2, -1)))
    elif ord in ("nuc", 2, -2):
        s = _svd(x, compute_uv=False)
        r = s.sum(-1) if ord == "nuc" else (s.max(-1) if ord == 2 else s.min(-1))
    elif ord in (1, -1):
        c = np.abs(x).sum(-2)
        r = c.max(-1) if ord == 1 else c.min(-1)
    else:
        c = np.abs(x).sum(-1)
        r = c.max(-1) if ord > 0 else c.min(-1)
    if keepdim:
        for d in sorted(d % a.ndim for d in dim):
            r = np.expand_dims(r, d)
    return r.astype(a.dtype)


def _matrix_norm_samples(dtype):
    a = make((2, 3, 4), dtype)
    svd = dtype is not flow.float16  # no float16 SVD, as PyTorch's cpu
    for o in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        if svd or o not in ("nuc", 2, -2):
            yield Sample((a, o), name=f"ord={o}")
    yield Sample((a, 1, (0, 2), True), name="dims keepdim")
    if svd:
        yield Sample((a, "nuc", (-1, 0)), name="nuc dims")


def _norm_ref(a, ord=None, dim=None, keepdim=False, dtype=None):
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None and dim is None:
        return np.asarray(np.sqrt((a.astype(np.float64) ** 2).sum())).astype(a.dtype)
    if dim is None:
        dim = tuple(range(a.ndim))
    if len(dim) == 2:
        return _matrix_norm_ref(a, "fro" if ord is None else ord, dim, keepdim)
    return np.asarray(np.linalg.norm(a.astype(np.float64), 2 if ord is None else ord, axis=dim[0],
                                     keepdims=keepdim)).astype(a.dtype)


def _linalg_norm_samples(dtype):
    a = make((2, 3, 4), dtype)
    yield Sample((a,), name="flat")
    if dtype is not flow.float16:  # no float16 SVD, as PyTorch's cpu
        yield Sample((a[0], "nuc"), name="2-d nuc")
    yield Sample((a[0, 0], 3), name="1-d ord 3")
    yield Sample((a, None, (1, 2)), name="matrix fro")
    yield Sample((a, np.inf, 1, True), name="vector inf keepdim")


def _vector_norm_ref(x, ord=2, dim=None, keepdim=False, dtype=None):
    return _norm_vec(x, ord, dim, keepdim)


def _norm_vec(x, p, dim, keepdim):
    axes = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    a = np.abs(x.astype(np.float64))
    if p == np.inf:
        r = a.max(axes, keepdims=keepdim)
    elif p == -np.inf:
        r = a.min(axes, keepdims=keepdim)
    elif p == 0:
        r = (a != 0).sum(axes, keepdims=keepdim)
    else:
        r = (a ** p).sum(axes, keepdims=keepdim) ** (1 / p)
    return np.asarray(r).astype(x.dtype)


def _cond_ref(a, p=None):
    a64 = a.astype(np.float64)
    if p in (None, 2, -2):
        s = _svd(a64, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        r = _matrix_norm_ref(a64, p) * _matrix_norm_ref(np.linalg.inv(a64), p)
    return np.asarray(r).astype(a.dtype)


def _cond_samples(dtype):
    a = next(_square(dtype, ((2, 3, 3),), shift=1.0))
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        yield Sample((a,) if p is None else (a, p), name=f"p={p}")
    yield Sample((make((3, 5), dtype),), name="wide, p=None")


def _tensorinv_ref(a, ind=2):
    return np.linalg.tensorinv(a.astype(np.float64), ind).astype(a.dtype)


def _tensorsolve_ref(a, b, dims=None):
    return np.linalg.tensorsolve(a.astype(np.float64), b.astype(np.float64), dims).astype(a.dtype)


def _tensor_samples(dtype):
    a = (make((6, 6), dtype, -1, 1) + np.eye(6, dtype=dtype.np_dtype) * 4).reshape(6, 2, 3)
    yield Sample((a, 1), name="ind 1")
    yield Sample((a.reshape(2, 3, 2, 3),), name="ind 2")


def _tensorsolve_samples(dtype):
    a = (make((6, 6), dtype, -1, 1) + np.eye(6, dtype=dtype.np_dtype) * 4).reshape(2, 3, 6)
    yield Sample((a, make((2, 3), dtype)), name="plain")
    yield Sample((a.reshape(2, 3, 2, 3).transpose(2, 0, 1, 3).copy(), make((2, 3), dtype)), {"dims": (0,)},
                 name="dims")


def _vander_ref(x, N=None):
    n = x.shape[-1] if N is None else N
    with np.errstate(all="ignore"):
        return x[..., None] ** np.arange(n).astype(x.dtype)


def _vander_samples(dtype):
    yield Sample((make((4,), dtype, -2, 3),), name="square")
    yield Sample((make((2, 3), dtype, -2, 3),), {"N": 5}, name="batched N")


def _slogdet_ref(a):
    sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    return np.asarray(sign).astype(a.dtype), np.asarray(logabs).astype(a.dtype)


def _logdet_ref(a):
    sign, logabs = np.linalg.slogdet(a.astype(np.float64))
    with np.errstate(all="ignore"):
        return np.asarray(np.where(sign < 0, np.nan, logabs)).astype(a.dtype)


def _det_samples(dtype):
    for a in _square(dtype, ((3, 3), (2, 4, 4), (1, 1), (0, 2, 2)), shift=1.0):
        yield Sample((a,), name=str(a.shape))
    yield Sample((np.array([[1.0, 2.0], [2.0, 4.0]], dtype.np_dtype),), name="singular")
    yield Sample((np.array([[0.0, 1.0], [1.0, 0.0]], dtype.np_dtype),), name="negative")


def _det_grad_samples():
    yield from (s for s in _det_samples(flow.float64) if s.name != "(0, 2, 2)" and s.name != "singular")
    yield Sample((np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),), name="singular")


def _diagonal_scatter_ref(x, src, offset=0, dim1=0, dim2=1):
    out = x.copy()
    np.einsum("...ii->...i", np.moveaxis(out, (dim1, dim2), (-2, -1))[..., :, max(offset, 0):][
        ..., max(-offset, 0):, :][..., :src.shape[-1], :src.shape[-1]])[...] = src
    return out


def _diagonal_scatter_samples(dtype):
    for shape, args in (((3, 4), ()), ((3, 4), (1,)), ((2, 3, 4), (-1, 0, 2)), ((3, 3), (5,))):
        x = make(shape, dtype)
        yield Sample((x, _diagonal_ref(make(shape, dtype), *args)) + args, name=f"{shape} {args}")


def _fill_diagonal_ref(x, value, wrap=False):
    out = x.copy()
    n = min(x.shape)
    out[(np.arange(n),) * x.ndim] = value
    if wrap and x.ndim == 2:
        for start in range(x.shape[1] + 1, x.shape[0], x.shape[1] + 1):
            k = min(x.shape[1], x.shape[0] - start)
            out[start + np.arange(k), np.arange(k)] = value
    return out


def _fill_diagonal_samples(dtype):
    value = 1 if dtype is flow.bool else 7
    for shape, wrap in (((3, 3), False), ((5, 2), True), ((5, 2), False), ((2, 4), True), ((2, 2, 2), False)):
        yield Sample((make(shape, dtype), value, wrap), name=f"{shape} wrap={wrap}")


def _householder_ref(a, tau, columns=None):
    """The product of the reflectors ``I - tau_i v_i v_i^T`` (unit-diagonal columns of ``a`` below it)."""
    m, n = a.shape[-2:]
    out = np.empty(a.shape[:-2] + (m, n if columns is None else columns))
    for idx in np.ndindex(*a.shape[:-2]):
        q = np.eye(m)
        for i in range(tau.shape[-1]):
            v = np.zeros(m)
            v[i] = 1.0
            v[i + 1:] = a[idx][i + 1:, i]
            q = q @ (np.eye(m) - tau[idx][i] * np.outer(v, v))
        out[idx] = q[:, :out.shape[-1]]
    return out.astype(a.dtype)


def _geqrf_ref(a):
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's geqrf, transposed
    return np.swapaxes(h, -1, -2).astype(a.dtype), tau.astype(a.dtype)


def _torch_svd_ref(a, some=True, compute_uv=True):
    u, s, vh = _svd(a, full_matrices=not some)
    return u, s, np.swapaxes(vh, -1, -2)


def _geqrf_samples(dtype):
    for s in ((4, 3), (2, 3, 3), (3, 5)):
        yield Sample((make(s, dtype),), name=str(s))


def _householder_samples(dtype):
    for s in ((4, 3), (2, 3, 3), (5, 2)):
        h, tau = np.linalg.qr(make(s, dtype), mode="raw")
        yield Sample((np.swapaxes(h, -1, -2).astype(dtype.np_dtype).copy(), tau.astype(dtype.np_dtype)),
                     name=str(s))


def _ormqr_ref(a, tau, other, left=True, transpose=False):
    q = _householder_ref(a, tau, a.shape[-2]).astype(np.float64)
    if transpose:
        q = np.swapaxes(q, -1, -2)
    return (q @ other if left else other @ q).astype(a.dtype)


def _ormqr_samples(dtype):
    for sample in _householder_samples(dtype):
        a, tau = sample.args
        m = a.shape[-2]
        for left in (True, False):
            for transpose in (False, True):
                other = make(a.shape[:-2] + ((m, 2) if left else (2, m)), dtype)
                yield Sample((a, tau, other, left, transpose), name=f"{sample.name} left={left} T={transpose}")


def _inv_samples(dtype):
    return _one(_square)(dtype)


def _square_grad(shapes=((3, 3), (2, 2, 2))):
    return lambda: [Sample((a,), name=str(a.shape)) for a in _square(flow.float64, shapes)]


def _sym_np(a):
    return a + np.swapaxes(a, -1, -2)


def _half_sym(t):
    """``(t + t^T) / 2``: ``t`` itself for the symmetric samples, and a function of every entry, so that
    gradcheck's perturbations of one triangle match the symmetric gradient (PyTorch's convention)."""
    return (t + t.transpose(-2, -1)) * 0.5 if t.dtype.is_floating_point else t


_register_own(
    OpSpec("diagonal", _diagonal_ref, _diagonal_samples, dtypes=ALL, method="diagonal", gradgrad=True),
    OpSpec("linalg.diagonal", lambda a, offset=0, dim1=-2, dim2=-1: _diagonal_ref(a, offset, dim1, dim2),
           lambda d: (Sample((make(s, d),), kw, name=f"{s} {kw}") for s, kw in
                      (((3, 4), {}), ((2, 3, 4), {"offset": 1}), ((2, 3, 4), {"dim1": 0, "dim2": 2}))),
           dtypes=ALL, op=flow.linalg.diagonal),
    OpSpec("diag", _diag_ref, _diag_samples, dtypes=ALL, method="diag", gradgrad=True),
    OpSpec("diag_embed", _diag_embed_ref, _diag_embed_samples, dtypes=ALL, method="diag_embed", gradgrad=True),
    OpSpec("diagflat", lambda x, offset=0: np.diagflat(x, offset), lambda d: (
        Sample((make(s, d),) + a, name=f"{s} {a}") for s, a in (((3,), ()), ((2, 2), (1,)), ((), (-1,)), ((0,), ()))),
           dtypes=ALL, method="diagflat"),
    OpSpec("diagonal_copy", _diagonal_ref, _diagonal_samples, dtypes=ALL),
    OpSpec("diagonal_scatter", _diagonal_scatter_ref, _diagonal_scatter_samples, dtypes=ALL,
           method="diagonal_scatter", gradgrad=True),
    OpSpec("fill_diagonal_", _fill_diagonal_ref, _fill_diagonal_samples, dtypes=ALL, method="fill_diagonal_",
           differentiable=False),
    OpSpec("trace", _trace_ref, lambda d: (Sample((make(s, d),), name=str(s)) for s in ((3, 3), (2, 4), (4, 2), (0, 3))),
           dtypes=NUMERIC, method="trace", gradgrad=True),
    OpSpec("addmm", _addmm_ref(lambda a, b: a @ b), _addmm_samples(
        [((2, 4), (2, 3), (3, 4), True), ((4,), (2, 3), (3, 4), False), ((), (0, 3), (3, 2), True),
         ((2, 1), (2, 0), (0, 3), False)]), dtypes=NUMERIC, method="addmm", gradgrad=True),
    OpSpec("addbmm", _addmm_ref(lambda a, b: (a @ b).sum(0)), _addmm_samples(
        [((2, 4), (3, 2, 5), (3, 5, 4), True), ((4,), (2, 2, 3), (2, 3, 4), False)]), dtypes=NUMERIC,
           method="addbmm", gradgrad=True),
    OpSpec("addmv", _addmm_ref(lambda a, b: a @ b), _addmm_samples(
        [((2,), (2, 3), (3,), True), ((), (4, 3), (3,), False), ((0,), (0, 2), (2,), False)]), dtypes=NUMERIC,
           method="addmv", gradgrad=True),
    OpSpec("addr", _addmm_ref(lambda a, b: a[:, None] * b[None, :]), _addmm_samples(
        [((2, 3), (2,), (3,), True), ((3,), (4,), (3,), False)]), dtypes=ALL, method="addr", gradgrad=True),
    OpSpec("mv", lambda a, b: (_wide(a) @ _wide(b)).astype(a.dtype), _pairs(((2, 3), (3,)), ((0, 2), (2,)),
                                                                          ((2, 0), (0,))),
           dtypes=NUMERIC, method="mv", gradgrad=True),
    OpSpec("vdot", lambda a, b: np.asarray(_wide(a) @ _wide(b)).astype(a.dtype), _pairs(((4,), (4,)), ((0,), (0,))),
           dtypes=NUMERIC, method="vdot"),
    OpSpec("inner", lambda a, b: np.asarray(np.inner(_wide(a), _wide(b))).astype(a.dtype),
           _pairs(((2, 3), (4, 3)), ((3,), (3,)), ((), (2, 3)), ((2, 1, 3), (3,)), ((0, 2), (2,))),
           dtypes=NUMERIC, method="inner", gradgrad=True),
    OpSpec("kron", _kron_ref, _pairs(((2, 3), (2, 2)), ((2,), (3, 2)), ((), (2,)), ((2, 0), (1, 3))), dtypes=ALL,
           method="kron", gradgrad=True),
    OpSpec("tensordot", _tensordot_ref, _tensordot_samples, dtypes=NUMERIC, gradgrad=True),
    OpSpec("chain_matmul", _chain_ref, lambda d: (Sample(tuple(make(s, d) for s in ss), name=str(ss)) for ss in
                                                  (((2, 3), (3, 4), (4, 1)), ((3, 3),), ((2, 5), (5, 2)))),
           dtypes=NUMERIC),
    OpSpec("linalg.multi_dot", _multi_dot_ref, lambda d: (Sample(([make(s, d) for s in ss],), name=str(ss)) for ss in
                                                          (((3,), (3, 4), (4, 2), (2,)), ((2, 3), (3, 4)),
                                                           ((5, 2), (2, 6), (6, 3), (3, 4)))),
           dtypes=NUMERIC, op=flow.linalg.multi_dot, grad_samples=lambda: [
               Sample(tuple(make(s, flow.float64) for s in ((3,), (3, 4), (4, 2)))),
               Sample(tuple(make(s, flow.float64) for s in ((2, 3), (3, 4), (4, 2))))]),
    OpSpec("cross", _cross_ref(None), _cross_samples, dtypes=NUMERIC, method="cross", gradgrad=True,
           unsupported_error=RuntimeError),
    OpSpec("linalg.cross", _cross_ref(-1), lambda d: (s for s in _cross_samples(d) if "dim" not in s.kwargs),
           dtypes=NUMERIC, op=flow.linalg.cross, unsupported_error=RuntimeError),
    OpSpec("cov", _cov_ref, _cov_samples, dtypes=NUMERIC, method="cov", gradgrad=True, atol=1e-5, rtol=1e-4,
           unsupported_error=RuntimeError),
    OpSpec("corrcoef", _corrcoef_ref, lambda d: (Sample((make(s, d),), name=str(s)) for s in ((3, 5), (4,), (2, 6))),
           dtypes=NUMERIC, method="corrcoef", atol=1e-5, rtol=1e-4, unsupported_error=RuntimeError),
    OpSpec("linalg.vecdot", lambda x, y, dim=-1: np.asarray((_wide(x) * _wide(y)).sum(dim)).astype(np.result_type(x, y)),
           _pairs(((2, 3), (2, 3)), ((4,), (2, 4)), ((0, 3), (3,))), dtypes=FLOATS, op=flow.linalg.vecdot,
           unsupported_error=RuntimeError, gradgrad=True),
    OpSpec("det", lambda a: np.asarray(np.linalg.det(a.astype(np.float64))).astype(a.dtype), _det_samples,
           dtypes=LIN, method="det", unsupported_error=RuntimeError, grad_samples=_det_grad_samples, gradgrad=True,
           **_LIN_TOL),
    OpSpec("linalg.det", lambda a: np.asarray(np.linalg.det(a.astype(np.float64))).astype(a.dtype), _det_samples,
           dtypes=LIN, op=flow.linalg.det, unsupported_error=RuntimeError, grad_samples=_det_grad_samples,
           **_LIN_TOL),
    OpSpec("logdet", _logdet_ref, _det_samples, dtypes=LIN, method="logdet", unsupported_error=RuntimeError,
           grad_samples=lambda: [Sample((next(_spd(flow.float64)),))], gradgrad=True, **_LIN_TOL),
    OpSpec("slogdet", _slogdet_ref, _det_samples, dtypes=LIN, method="slogdet", unsupported_error=RuntimeError,
           grad_samples=_square_grad(), gradgrad=True, **_LIN_TOL),
    OpSpec("linalg.slogdet", _slogdet_ref, _det_samples, dtypes=LIN, op=flow.linalg.slogdet,
           unsupported_error=RuntimeError, grad_samples=_square_grad(), **_LIN_TOL),
    OpSpec("inverse", lambda a: np.linalg.inv(a.astype(np.float64)).astype(a.dtype), _inv_samples, dtypes=LIN,
           method="inverse", unsupported_error=RuntimeError, grad_samples=_square_grad(), gradgrad=True, **_LIN_TOL),
    OpSpec("linalg.inv", lambda a: np.linalg.inv(a.astype(np.float64)).astype(a.dtype), _inv_samples, dtypes=LIN,
           op=flow.linalg.inv, unsupported_error=RuntimeError, grad_samples=_square_grad(), **_LIN_TOL),
    OpSpec("linalg.inv_ex", lambda a, check_errors=False: (np.linalg.inv(a.astype(np.float64)).astype(a.dtype),
                                                           np.zeros(a.shape[:-2], np.int32)),
           _inv_samples, dtypes=LIN, op=flow.linalg.inv_ex, unsupported_error=RuntimeError,
           grad_samples=_square_grad(), **_LIN_TOL),
    OpSpec("pinverse", lambda a, rcond=1e-15: _pinv_ref(a, rtol=rcond), lambda d: (
        s for s in _pinv_samples(d) if not s.kwargs), dtypes=LIN, method="pinverse", unsupported_error=RuntimeError,
           grad_samples=lambda: [s for s in _pinv_samples(flow.float64) if not s.kwargs and s.name != "rank 1"],
           **_LIN_TOL),
    OpSpec("linalg.pinv", _pinv_ref, _pinv_samples, dtypes=LIN, op=flow.linalg.pinv, unsupported_error=RuntimeError,
           grad_samples=lambda: [s for s in _pinv_samples(flow.float64) if not s.kwargs and s.name != "rank 1"],
           gradgrad=True,
           **_LIN_TOL),
    OpSpec("matrix_power", _matrix_power_ref, _matrix_power_samples, dtypes=NUMERIC, method="matrix_power",
           grad_samples=lambda: [s for s in _matrix_power_samples(flow.float64) if s.args[1] in (2, -2)],
           gradgrad=True, atol=1e-4, rtol=1e-4),
    OpSpec("linalg.matrix_power", _matrix_power_ref, _matrix_power_samples, dtypes=NUMERIC,
           op=flow.linalg.matrix_power, differentiable=False, atol=1e-4, rtol=1e-4),
    OpSpec("matrix_exp", _expm_ref, _one(lambda d: _square(d, ((3, 3), (2, 4, 4), (1, 1), (0, 2, 2)), shift=2.0)),
           dtypes=LIN, method="matrix_exp", unsupported_error=RuntimeError, gradgrad=True, atol=1e-5, rtol=1e-4),
    OpSpec("linalg.matrix_exp", _expm_ref, _one(lambda d: (make(s, d) for s in ((3, 3), (2, 2, 2)))), dtypes=LIN,
           op=flow.linalg.matrix_exp, unsupported_error=RuntimeError, differentiable=False, atol=1e-5, rtol=1e-4),
    OpSpec("cholesky", _cholesky_ref, _cholesky_samples, dtypes=LIN, method="cholesky",
           unsupported_error=RuntimeError, op=lambda a, upper=False: flow.cholesky(_half_sym(a), upper),
           grad_samples=lambda: [Sample((a,)) for a in _spd(flow.float64)], **_LIN_TOL),
    OpSpec("linalg.cholesky", _cholesky_ref, _cholesky_samples, dtypes=LIN, unsupported_error=RuntimeError,
           op=lambda a, upper=False: flow.linalg.cholesky(_half_sym(a), upper=upper), gradgrad=True,
           grad_samples=lambda: [Sample((a,)) for a in _spd(flow.float64, ((3, 3),))], **_LIN_TOL),
    OpSpec("cholesky_solve", _cholesky_solve_ref, _cholesky_solve_samples, dtypes=LIN, method="cholesky_solve",
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("cholesky_inverse", lambda low, upper=False: _cholesky_solve_ref(
        np.broadcast_to(np.eye(low.shape[-1], dtype=low.dtype), low.shape), low, upper),
           lambda d: (Sample(s.args[1:], name=s.name) for s in _cholesky_solve_samples(d)), dtypes=LIN,
           method="cholesky_inverse", unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("linalg.solve", _solve_ref, _solve_samples, dtypes=LIN, op=flow.linalg.solve,
           unsupported_error=RuntimeError, gradgrad=True, **_LIN_TOL),
    OpSpec("linalg.solve_triangular", _solve_triangular_ref, _solve_triangular_samples, dtypes=LIN,
           op=flow.linalg.solve_triangular, unsupported_error=RuntimeError, gradgrad=True, **_LIN_TOL),
    OpSpec("triangular_solve", _triangular_solve_ref, _triangular_solve_samples, dtypes=LIN,
           method="triangular_solve", unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("linalg.qr", _np(_qr_ref), _qr_samples, dtypes=LIN, op=flow.linalg.qr, unsupported_error=RuntimeError,
           grad_samples=lambda: [s for s in _qr_samples(flow.float64) if len(s.args) == 1 and s.args[0].size],
           gradgrad=True, **_LIN_TOL),
    OpSpec("qr", lambda a, some=True: _qr_ref(a, "reduced" if some else "complete"),
           lambda d: (Sample((make(s, d),) + a, name=f"{s} {a}") for s, a in (((4, 3), ()), ((3, 4), (False,)))),
           dtypes=LIN, method="qr", unsupported_error=RuntimeError, differentiable=False, **_LIN_TOL),
    OpSpec("linalg.svd", _np(_svd_ref), _svd_samples, dtypes=LIN, op=flow.linalg.svd,
           unsupported_error=RuntimeError, differentiable=False, **_LIN_TOL),
    OpSpec("svd", _torch_svd_ref, _svd_samples, dtypes=LIN, method="svd",
           unsupported_error=RuntimeError, differentiable=False, **_LIN_TOL),
    OpSpec("linalg.svdvals", lambda a: _svd(a.astype(np.float64), compute_uv=False).astype(a.dtype),
           _one(lambda d: (make(s, d) for s in ((4, 3), (3, 5), (2, 3, 3), (0, 2)))), dtypes=LIN,
           op=flow.linalg.svdvals, unsupported_error=RuntimeError, gradgrad=True, **_LIN_TOL),
    OpSpec("linalg.eigh", lambda a, UPLO="L": np.linalg.eigh(_sym_np(a)), _one(lambda d: _spd(d)), dtypes=LIN,
           op=lambda a, UPLO="L": flow.linalg.eigh(_sym(a), UPLO), unsupported_error=RuntimeError,
           differentiable=False, **_LIN_TOL),
    OpSpec("linalg.eigvalsh", lambda a, UPLO="L": np.linalg.eigvalsh(_sym_np(a).astype(np.float64)).astype(a.dtype),
           _one(lambda d: _spd(d)), dtypes=LIN, op=lambda a, UPLO="L": flow.linalg.eigvalsh(_sym(a), UPLO),
           unsupported_error=RuntimeError, gradgrad=True, **_LIN_TOL),
    OpSpec("linalg.lu_factor", _lu_factor_ref, _lu_samples, dtypes=LIN, op=flow.linalg.lu_factor,
           unsupported_error=RuntimeError, gradgrad=True, **_LIN_TOL),
    OpSpec("linalg.lu", _linalg_lu_ref, _lu_samples, dtypes=LIN, op=flow.linalg.lu, unsupported_error=RuntimeError,
           **_LIN_TOL),
    OpSpec("lu_unpack", _unpack_ref, _lu_unpack_samples, dtypes=LIN, unsupported_error=RuntimeError,
           grad_samples=lambda: [Sample(s.args, grad_args=(0,)) for s in _lu_unpack_samples(flow.float64)],
           gradgrad=True),
    OpSpec("linalg.lu_solve", _lu_solve_ref, _lu_solve_samples, dtypes=LIN, op=flow.linalg.lu_solve,
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("lu_solve", lambda b, lu, piv: _lu_solve_ref(lu, piv, b), _torch_lu_solve_samples, dtypes=LIN,
           method="lu_solve", unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("linalg.lstsq", _lstsq_ref, _lstsq_samples, dtypes=LIN, op=flow.linalg.lstsq,
           unsupported_error=RuntimeError, grad_samples=lambda: [next(_lstsq_samples(flow.float64))], **_LIN_TOL),
    OpSpec("linalg.matrix_rank", _matrix_rank_ref, _matrix_rank_samples, dtypes=LIN, op=flow.linalg.matrix_rank,
           unsupported_error=RuntimeError, differentiable=False),
    OpSpec("linalg.cond", _cond_ref, _cond_samples, dtypes=LIN, op=flow.linalg.cond, unsupported_error=RuntimeError,
           grad_samples=lambda: list(_cond_samples(flow.float64))[:4], atol=1e-3, rtol=1e-4),
    OpSpec("linalg.matrix_norm", _matrix_norm_ref, _matrix_norm_samples, dtypes=FLOATS, op=flow.linalg.matrix_norm,
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("linalg.norm", _norm_ref, _linalg_norm_samples, dtypes=FLOATS, op=flow.linalg.norm,
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("linalg.vector_norm", _vector_norm_ref, lambda d: (Sample((make((3, 4), d),) + a, name=str(a)) for a in
                                                              ((), (1,), (np.inf, 1, True), (0.5, (0, 1)),
                                                               (-np.inf, 0))),
           dtypes=FLOATS, op=flow.linalg.vector_norm, unsupported_error=RuntimeError),
    OpSpec("nuclear_norm", lambda a, *args: _matrix_norm_ref(a, "nuc", *(args if len(args) > 1 or (
        args and not isinstance(args[0], bool)) else ((0, 1),) + args)),
           lambda d: (Sample((make(s, d),) + a, name=f"{s} {a}") for s, a in
                      (((3, 4), ()), ((3, 4), (True,)), ((2, 3, 4), ((1, 2),)), ((2, 3, 4), ((0, 2), True)))),
           dtypes=LIN, unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("frobenius_norm", lambda a, dim=None, keepdim=False: _norm_vec(a, 2, dim, keepdim),
           lambda d: (Sample((make((2, 3, 4), d),) + a, name=str(a)) for a in (((1, 2),), ((0, 2), True), ())),
           dtypes=FLOATS, unsupported_error=RuntimeError),
    OpSpec("linalg.tensorinv", _tensorinv_ref, _tensor_samples, dtypes=LIN, op=flow.linalg.tensorinv,
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("linalg.tensorsolve", _tensorsolve_ref, _tensorsolve_samples, dtypes=LIN, op=flow.linalg.tensorsolve,
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("geqrf", _geqrf_ref, _geqrf_samples, dtypes=LIN, method="geqrf", unsupported_error=RuntimeError,
           differentiable=False, **_LIN_TOL),
    OpSpec("linalg.householder_product", _householder_ref, _householder_samples, dtypes=LIN,
           op=flow.linalg.householder_product, unsupported_error=RuntimeError, gradgrad=True, **_LIN_TOL),
    OpSpec("orgqr", _householder_ref, _householder_samples, dtypes=LIN, method="orgqr",
           unsupported_error=RuntimeError, **_LIN_TOL),
    OpSpec("ormqr", _ormqr_ref, _ormqr_samples, dtypes=LIN, method="ormqr", unsupported_error=RuntimeError,
           grad_samples=lambda: list(_ormqr_samples(flow.float64))[:4], **_LIN_TOL),
    OpSpec("linalg.vander", _vander_ref, _vander_samples, dtypes=NUMERIC, op=flow.linalg.vander,
           unsupported_error=RuntimeError),
)
