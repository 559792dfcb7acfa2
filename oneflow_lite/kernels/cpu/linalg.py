"""cpu kernels of ``linear``, ``baddbmm``, ``einsum``, ``diagonal`` and the decompositions and solvers of
ops/linalg.py (NumPy's LAPACK routines, batched over the leading dims; a batched LU of our own, as NumPy
has none).

float16 is computed in float32 and rounded once at the end, as PyTorch's cpu
kernels accumulate half products in float. Integer results wrap on overflow.
PyTorch has no bool matmul on cpu, so bool inputs find no kernel.
"""

import math

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import NUMERIC_DTYPES, bfloat16, float32, float64
from oneflow_lite.framework.errors import LinAlgError
from oneflow_lite.kernels.registration import cpu_kernel

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_BF16 = bfloat16.np_dtype
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


@cpu_kernel("einsum", dtype_in("in", *NUMERIC_DTYPES, bfloat16))
def einsum_cpu(ctx, *xs):
    """float16 / bfloat16 operands are summed in float32 and rounded once (PyTorch's cpu kernels)."""
    equation = ctx.attrs["equation"]
    m = ctx.out_metas[0]
    half = m.np_dtype in (_F16, _BF16)
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
    return y.astype(m.np_dtype) if half else y


# ---- diagonal ---------------------------------------------------------------------------------------
def _diagonal_view(x, offset, d1, d2):
    """The ``offset`` diagonal of ``x`` over dims ``d1``, ``d2`` as a writable view, its dim last."""
    nd = x.ndim
    d1, d2 = d1 % nd, d2 % nd
    y = np.moveaxis(x, (d1, d2), (-2, -1))
    y = y[..., :, offset:] if offset >= 0 else y[..., -offset:, :]
    n = max(0, min(y.shape[-2], y.shape[-1]))
    return np.lib.stride_tricks.as_strided(y, y.shape[:-2] + (n,), y.strides[:-2] + (y.strides[-2] + y.strides[-1],))


@cpu_kernel("diagonal")
def diagonal_cpu(ctx, x):
    """A view sharing ``x``'s memory, as ``torch.diagonal`` (Note [Shape ops and views] in kernels/cpu/shape.py)."""
    a = ctx.attrs
    return _diagonal_view(x, a["offset"], a["dim1"], a["dim2"])


@cpu_kernel("diagonal_grad")
def diagonal_grad_cpu(ctx, dy):
    a = ctx.attrs
    out = np.zeros(ctx.out_metas[0].shape, dy.dtype)
    _diagonal_view(out, a["offset"], a["dim1"], a["dim2"])[...] = dy
    return out


# ---- decompositions and solvers (Note [Linear-algebra ops] in ops/linalg.py) --------------------------------
_REAL = dtype_in("A", float32, float64)
_lin = np.linalg


def _batch_message(name, info, message):
    """PyTorch's error for the first failing matrix: ``(Batch element i): `` before the message in a batch."""
    flat = np.asarray(info).reshape(-1)
    i = int(np.flatnonzero(flat)[0])
    where = f"(Batch element {i}): " if np.ndim(info) else ""
    return f"{name}: {where}{message.format(int(flat[i]))}"


def lu_factor(a):
    """Batched LU with partial pivoting (LAPACK getrf): (LU, 1-based int32 pivots, info), info the first
    zero pivot's 1-based position (0 when there is none)."""
    *batch, m, n = a.shape
    k = min(m, n)
    lu = np.array(a, dtype=np.result_type(a.dtype, np.float32)).reshape(math.prod(batch), m, n)
    rows = np.arange(lu.shape[0])
    piv = np.zeros((lu.shape[0], k), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            swap = lu[rows, p].copy()
            lu[rows, p] = lu[:, j]
            lu[:, j] = swap
            pivot = lu[:, j, j]
            zero = pivot == 0
            info[(info == 0) & zero] = j + 1
            lu[:, j + 1:, j] /= np.where(zero, 1, pivot)[:, None]
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, None, j, j + 1:]
    return lu.reshape(a.shape), piv.reshape(*batch, k), info.reshape(batch)


def _singular_info(a):
    """The 1-based index of the first zero pivot of each matrix's LU (0 for an invertible one)."""
    return lu_factor(a)[2]


def _has_nan(a):
    """Per matrix, whether it holds a NaN (Note [NaN in LAPACK-style drivers])."""
    return np.isnan(a).any(axis=(-2, -1))


# Note [NaN in LAPACK-style drivers]
# LAPACK's getrf only stops at an exactly zero pivot: a NaN (or one made from Inf) runs through the elimination,
# so PyTorch's inv / solve / det of a matrix holding a NaN return NaN with info 0. NumPy's drivers report such a
# matrix singular instead (and det gives 0), so the kernels below ask NumPy per matrix, give NaN to the matrices
# holding a NaN or still refused, and take info from our own LU (``lu_factor``), which runs through a NaN as
# getrf does: an error is raised only for a zero pivot.
def _apply_per_matrix(fn, ok, fill, out_shape, *args):
    """``fn`` of the matrices (of ``args``, batched alike) where ``ok`` holds, ``fill`` elsewhere; NaN for a
    matrix NumPy refuses all the same (Note [NaN in LAPACK-style drivers])."""
    out = np.full(out_shape, fill, args[0].dtype)
    if not ok.any():
        return out
    with np.errstate(all="ignore"):
        try:
            out[ok] = fn(*(x[ok] for x in args))
        except _lin.LinAlgError:  # one at a time, then
            for i in map(tuple, np.argwhere(ok)):
                try:
                    out[i] = fn(*(x[i] for x in args))
                except _lin.LinAlgError:
                    out[i] = np.nan
    return out


@cpu_kernel("linalg_inv", _REAL)
def linalg_inv_cpu(ctx, a):
    info = np.zeros(a.shape[:-2], np.int32)
    try:
        return _lin.inv(a), info
    except _lin.LinAlgError:
        info = _singular_info(a)
    if ctx.attrs["check_errors"] and info.any():
        raise LinAlgError(_batch_message("linalg.inv", info, "The diagonal element {} is zero, the inversion could "
                                         "not be completed because the input matrix is singular."))
    nan = _has_nan(a)
    out = _apply_per_matrix(_lin.inv, (info == 0) & ~nan, np.inf, a.shape, a)
    out[nan] = np.nan
    return out, info


@cpu_kernel("linalg_det", _REAL)
def linalg_det_cpu(ctx, a):
    with np.errstate(all="ignore"):
        det = np.asarray(_lin.det(a), a.dtype)
    return np.where(_has_nan(a), np.nan, det).astype(a.dtype)  # NumPy's det of a NaN-holding matrix is 0


@cpu_kernel("linalg_slogdet", _REAL)
def linalg_slogdet_cpu(ctx, a):
    """NumPy's, with a NaN log-determinant for a matrix holding a NaN (NumPy: sign 0, -inf)."""
    with np.errstate(all="ignore"):
        sign, logabsdet = _lin.slogdet(a)
    return np.asarray(sign, a.dtype), np.where(_has_nan(a), np.nan, logabsdet).astype(a.dtype)


@cpu_kernel("linalg_solve", _REAL)
def linalg_solve_cpu(ctx, a, b):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    info = np.zeros(batch, np.int32)
    try:
        return _lin.solve(a, b), info
    except _lin.LinAlgError:
        info = _singular_info(a)
    if ctx.attrs["check_errors"] and info.any():
        raise LinAlgError(_batch_message("torch.linalg.solve", info, "The solver failed because the input matrix "
                                         "is singular."))
    return _apply_per_matrix(_lin.solve, (info == 0) & ~_has_nan(a), np.nan, b.shape, a, b), info


def _substitute(t, b, lower):
    """Forward (``lower``) or back substitution for triangular ``t``; a zero diagonal gives inf / NaN, as
    LAPACK's trtrs without its check."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], np.result_type(t, b))
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)  # only the solved entries: no Inf * 0 from the rest
            acc = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, done], x[..., done, :])
            x[..., i, :] = acc / t[..., i, i, None]
    return x


@cpu_kernel("linalg_solve_triangular", _REAL)
def linalg_solve_triangular_cpu(ctx, a, b):
    """The triangle of ``a`` (with a unit diagonal when ``unitriangular``) solved by LAPACK's general solver,
    or by substitution when it is singular. ``left=False`` solves ``X A = B`` as ``A^T X^T = B^T``."""
    attrs = ctx.attrs
    upper, left = attrs["upper"], attrs["left"]
    t = np.triu(a) if upper else np.tril(a)
    if attrs["unitriangular"]:
        idx = np.arange(t.shape[-1])
        t[..., idx, idx] = 1
    if not left:
        t, b, upper = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not upper
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    if t.shape[-1] == 0 or b.shape[-1] == 0:
        x = np.zeros(batch + b.shape[-2:], a.dtype)
    else:
        try:
            x = _lin.solve(np.broadcast_to(t, batch + t.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))
        except _lin.LinAlgError:
            x = _substitute(t, b, lower=not upper)
    return x if left else np.swapaxes(x, -1, -2).copy()


def _cholesky_info(a):
    """The order of the first leading minor that is not positive-definite, per matrix (0 when none)."""
    flat = a.reshape(-1, *a.shape[-2:])
    info = np.zeros(flat.shape[0], np.int32)
    for i, m in enumerate(flat):
        for k in range(1, m.shape[-1] + 1):
            try:
                nan_pivot = np.isnan(_lin.cholesky(m[:k, :k])[k - 1, k - 1])
            except _lin.LinAlgError:
                nan_pivot = True
            if nan_pivot:
                info[i] = k
                break
    return info.reshape(a.shape[:-2])


@cpu_kernel("linalg_cholesky", _REAL)
def linalg_cholesky_cpu(ctx, a):
    """LAPACK's potrf on the lower triangle (the upper one for ``upper``), as PyTorch."""
    upper = ctx.attrs["upper"]
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2) if not upper else \
        np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    try:
        low = _lin.cholesky(sym)
        info = _nan_pivots(low)
    except _lin.LinAlgError:
        low, info = None, _cholesky_info(sym)
    if info.any():
        if ctx.attrs["check_errors"]:
            raise LinAlgError(_batch_message("linalg.cholesky", info, "The factorization could not be completed "
                                             "because the input is not positive-definite (the leading minor of "
                                             "order {} is not positive-definite)."))
        low = _apply_per_matrix(_lin.cholesky, info == 0, np.nan, sym.shape, sym)
    return (np.swapaxes(low, -1, -2).copy() if upper else low), info


def _nan_pivots(low):
    """Per matrix, the order of the first NaN pivot of a computed factor (0 when none): LAPACK's potrf stops
    there as at a pivot <= 0 (``AJJ.LE.ZERO .OR. DISNAN(AJJ)``), which NumPy's copy does not check."""
    bad = np.isnan(np.diagonal(low, axis1=-2, axis2=-1))
    return np.where(bad.any(-1), bad.argmax(-1) + 1, 0).astype(np.int32)


def _eye_batch(batch, rows, cols, dtype):
    return np.broadcast_to(np.eye(rows, cols, dtype=dtype), batch + (rows, cols)).copy()


@cpu_kernel("linalg_qr", _REAL)
def linalg_qr_cpu(ctx, a):
    mode = ctx.attrs["mode"]
    q_shape, r_shape = ctx.out_metas[0].shape, ctx.out_metas[1].shape
    if a.size == 0:
        q = np.zeros(q_shape, a.dtype) if mode == "r" else _eye_batch(a.shape[:-2], *q_shape[-2:], a.dtype)
        return q, np.zeros(r_shape, a.dtype)
    if mode == "r":
        return np.zeros((0,), a.dtype), _lin.qr(a, mode="r")
    q, r = _lin.qr(a, mode=mode)
    return q, r


def _check_finite_for_svd(a, name="linalg.svd"):
    """LAPACK's SVD drivers can loop forever on Inf (OpenBLAS gesdd): refuse non-finite input first, with
    PyTorch's message."""
    if not np.isfinite(a).all():
        raise LinAlgError(f"{name}: The algorithm failed to converge because the input matrix contained "
                          f"non-finite values.")


@cpu_kernel("linalg_svd", _REAL)
def linalg_svd_cpu(ctx, a):
    u_shape, s_shape, v_shape = (m.shape for m in ctx.out_metas)
    if a.size == 0:
        return (_eye_batch(a.shape[:-2], *u_shape[-2:], a.dtype), np.zeros(s_shape, a.dtype),
                _eye_batch(a.shape[:-2], *v_shape[-2:], a.dtype))
    _check_finite_for_svd(a)
    return _lin.svd(a, full_matrices=ctx.attrs["full_matrices"])


@cpu_kernel("linalg_eigh", _REAL)
def linalg_eigh_cpu(ctx, a):
    if a.size == 0:
        return np.zeros(a.shape[:-1], a.dtype), np.zeros(a.shape, a.dtype)
    w, v = _lin.eigh(a, UPLO=ctx.attrs["UPLO"])
    return w, v


@cpu_kernel("linalg_pinv", _REAL)
def linalg_pinv_cpu(ctx, a):
    """``V diag(1/s) U^T`` keeping the singular values above ``max(atol, rtol * s_max)``; without either,
    rtol is ``eps * max(m, n)`` (with atol alone, rtol is 0), as ``torch.linalg.pinv``."""
    attrs = ctx.attrs
    m, n = a.shape[-2:]
    atol, rtol = attrs["atol"], attrs["rtol"]
    if rtol < 0:
        rtol = np.finfo(a.dtype).eps * max(m, n) if atol < 0 else 0.0
    atol = max(atol, 0.0)
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if attrs["hermitian"]:
        w, v = _lin.eigh(a)
        s, left, right = np.abs(w), v * np.sign(w)[..., None, :], v
    else:
        _check_finite_for_svd(a, "linalg.pinv")
        left, s, vh = _lin.svd(a, full_matrices=False)
        right = np.swapaxes(vh, -1, -2)
    tol = np.maximum(atol, rtol * s.max(axis=-1, initial=0.0))[..., None]
    with np.errstate(all="ignore"):
        inv = np.where(s > tol, 1 / np.where(s > tol, s, 1), 0)
    return np.asarray((right * inv[..., None, :]) @ np.swapaxes(left, -1, -2), a.dtype)


@cpu_kernel("matrix_exp", _REAL)
def matrix_exp_cpu(ctx, a):
    """Scaling and squaring: ``exp(A) = exp(A / 2^s)^(2^s)`` with ``|A / 2^s|_1 <= 1/2`` and the Taylor
    polynomial of degree 18 (truncation below 1e-22 relative), in float64."""
    x = a.astype(np.float64)
    n = x.shape[-1]
    if x.size == 0:
        return np.zeros(a.shape, a.dtype)
    norm = np.abs(x).sum(axis=-2).max(axis=-1)
    with np.errstate(all="ignore"):
        s = np.where(np.isfinite(norm) & (norm > 0.5), np.ceil(np.log2(np.where(norm > 0.5, norm, 1) / 0.5)), 0)
    s = s.astype(np.int64)
    b = x / np.exp2(s)[..., None, None]
    eye = np.eye(n)
    r = eye + b / 18
    for k in range(17, 0, -1):
        r = eye + (b @ r) / k
    for i in range(int(s.max(initial=0))):
        r = np.where((s > i)[..., None, None], r @ r, r)
    return r.astype(a.dtype)


@cpu_kernel("linalg_lu_factor", _REAL)
def linalg_lu_factor_cpu(ctx, a):
    lu, piv, info = lu_factor(a)
    if ctx.attrs["check_errors"] and info.any():
        flat = info.reshape(-1)
        i = int(flat[np.flatnonzero(flat)[0]])
        raise RuntimeError(f"torch.linalg.lu_factor: U[{i},{i}] is zero and using it on lu_solve would result in a "
                           f"division by zero. If you still want to perform the factorization, consider calling "
                           f"linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return lu.astype(a.dtype), piv, info


def _permutation(piv, m, dtype):
    """The permutation matrices P (A = P L U) of LAPACK's 1-based row swaps ``piv``."""
    batch = piv.shape[:-1]
    flat = piv.reshape(-1, piv.shape[-1]).astype(np.int64) - 1
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        if (p < j).any() or (p >= m).any():
            raise RuntimeError(f"lu_unpack: the pivots must be in [{j + 1}, {m}] at position {j}")
        a, b = perm[rows, j].copy(), perm[rows, p].copy()
        perm[rows, j], perm[rows, p] = b, a
    out = np.zeros((flat.shape[0], m, m), dtype)
    out[rows[:, None], perm, np.arange(m)] = 1
    return out.reshape(batch + (m, m))


@cpu_kernel("lu_unpack", dtype_in("LU_data", float32, float64))
def lu_unpack_cpu(ctx, lu, piv):
    attrs = ctx.attrs
    m, n = lu.shape[-2:]
    k = min(m, n)
    p = _permutation(piv, m, lu.dtype) if attrs["unpack_pivots"] else np.zeros((0,), lu.dtype)
    if not attrs["unpack_data"]:
        return p, np.zeros((0,), lu.dtype), np.zeros((0,), lu.dtype)
    low = np.tril(lu[..., :, :k], -1)
    idx = np.arange(k)
    low[..., idx, idx] = 1
    return p, low, np.triu(lu[..., :k, :])


@cpu_kernel("geqrf", _REAL)
def geqrf_cpu(ctx, a):
    """LAPACK's geqrf through NumPy's ``qr(mode='raw')`` (which returns it transposed): R above the
    diagonal, the Householder vectors below it, and their scaling factors tau."""
    if a.size == 0:
        return a.copy(), np.zeros(ctx.out_metas[1].shape, a.dtype)
    h, tau = _lin.qr(a, mode="raw")
    return np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(a.dtype), tau.astype(a.dtype)
