"""cpu kernels of the reductions, scans and sorts (ops/reduce.py).

Note [Reduction accumulation]
float16 inputs accumulate in float32 and round once at the end, as PyTorch's
cpu kernels do (``acc_type``). Empty reductions follow IEEE without NumPy's
warnings, as PyTorch is silent: a mean or variance of nothing is nan (0 / 0),
a logsumexp of nothing is -inf (log 0), a sum 0 and a product 1.

Note [Sort order]
Sorting is always stable, so ``stable=False`` (PyTorch's unspecified order of
ties) gives the stable order too. NaN sorts above every number, as in
PyTorch: last ascending, first descending. A descending stable sort is the
ascending stable sort of the reversed input, reversed, which keeps equal
elements in their original order. topk takes the first k of that order, so it
ranks NaN largest, like PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES, NUMERIC_DTYPES
from oneflow_lite.kernels.registration import cpu_kernel

_errstate = np.errstate
_asarray = np.asarray
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def _acc(x):
    """``x`` in the dtype it accumulates in (Note [Reduction accumulation])."""
    return x.astype(_F32) if x.dtype == _F16 else x


def _out(r, dtype):
    """A kernel result as an ndarray of ``dtype`` (NumPy reductions may return scalars)."""
    r = _asarray(r)
    return r if r.dtype == dtype else r.astype(dtype)


def _count(shape, axes) -> int:
    return math.prod(shape[a] for a in axes)


def _dim(d, ndim):
    return d + ndim if d < 0 else d


_ALL = dtype_in("input_tensor", *ALL_DTYPES)
_NUMERIC = dtype_in("input_tensor", *NUMERIC_DTYPES)
_FLOAT = dtype_in("input_tensor", *FLOATING_DTYPES)


# ---- reductions over several dims -----------------------------------------------------------------
@cpu_kernel("reduce_mean", _FLOAT)
def reduce_mean_cpu(ctx, x):
    attrs = ctx.attrs
    axes = attrs["axis"]
    with _errstate(all="ignore"):
        r = np.sum(_acc(x), axis=axes, keepdims=attrs["keepdims"]) / _count(x.shape, axes)
    return _out(r, x.dtype)


@cpu_kernel("reduce_prod", _NUMERIC)
def reduce_prod_cpu(ctx, x):
    attrs = ctx.attrs
    a = _acc(x)
    with _errstate(all="ignore"):  # float overflow is inf, as in PyTorch; integers wrap
        r = np.prod(a, axis=attrs["axis"], dtype=a.dtype, keepdims=attrs["keepdims"])
    return _out(r, x.dtype)


def _minmax_kernel(fn, name):
    def kernel(ctx, x):
        attrs = ctx.attrs
        return _out(fn(x, axis=attrs["axis"], keepdims=attrs["keepdims"]), x.dtype)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


cpu_kernel("reduce_max", _ALL)(_minmax_kernel(np.max, "reduce_max_cpu"))
cpu_kernel("reduce_min", _ALL)(_minmax_kernel(np.min, "reduce_min_cpu"))


def _logical_kernel(fn, name):
    def kernel(ctx, x):
        attrs = ctx.attrs
        return _out(fn(x, axis=attrs["axis"], keepdims=attrs["keepdims"]), ctx.out_metas[0].np_dtype)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


cpu_kernel("reduce_all", _ALL)(_logical_kernel(np.all, "reduce_all_cpu"))
cpu_kernel("reduce_any", _ALL)(_logical_kernel(np.any, "reduce_any_cpu"))


@cpu_kernel("reduce_logsumexp", _FLOAT)
def reduce_logsumexp_cpu(ctx, x):
    """``m + log(sum(exp(x - m)))`` with ``m`` the max (0 where it is infinite), as PyTorch computes it."""
    attrs = ctx.attrs
    axes, keep = attrs["axis"], attrs["keepdims"]
    a = _acc(x)
    with _errstate(all="ignore"):
        if a.size == 0:
            return _out(np.log(np.sum(np.exp(a), axis=axes, keepdims=keep)), x.dtype)
        m = np.max(a, axis=axes, keepdims=True)
        m = np.where(np.isfinite(m), m, a.dtype.type(0))
        r = np.log(np.sum(np.exp(a - m), axis=axes, keepdims=True)) + m
    return _out(r if keep else np.squeeze(r, axis=axes), x.dtype)


def _var(x, attrs):
    """Sum of squared deviations over ``max(0, N - correction)`` (nan or inf when that is 0, as in PyTorch)."""
    axes = attrs["axis"]
    a = _acc(x)
    n = _count(x.shape, axes)
    with _errstate(all="ignore"):
        dev = a - np.sum(a, axis=axes, keepdims=True) / n
        return np.sum(dev * dev, axis=axes, keepdims=attrs["keepdims"]) / max(0.0, n - attrs["correction"])


@cpu_kernel("reduce_var", _FLOAT)
def reduce_var_cpu(ctx, x):
    return _out(_var(x, ctx.attrs), x.dtype)


@cpu_kernel("reduce_std", _FLOAT)
def reduce_std_cpu(ctx, x):
    return _out(np.sqrt(_var(x, ctx.attrs)), x.dtype)


@cpu_kernel("vector_norm", _FLOAT)
def vector_norm_cpu(ctx, x):
    attrs = ctx.attrs
    axes, keep, p = attrs["axis"], attrs["keepdims"], attrs["ord"]
    a = _acc(x)
    with _errstate(all="ignore"):
        if p == 2:
            r = np.sqrt(np.sum(a * a, axis=axes, keepdims=keep))
        elif p == 1:
            r = np.sum(np.abs(a), axis=axes, keepdims=keep)
        elif p == 0:
            r = np.sum(a != 0, axis=axes, keepdims=keep, dtype=a.dtype)
        elif p == math.inf:
            r = np.max(np.abs(a), axis=axes, keepdims=keep)
        elif p == -math.inf:
            r = np.min(np.abs(a), axis=axes, keepdims=keep)
        else:
            r = np.sum(np.abs(a) ** p, axis=axes, keepdims=keep) ** (1.0 / p)
    return _out(r, x.dtype)


# ---- along one dim ------------------------------------------------------------------------------
def _values_indices_kernel(arg_fn, name):
    """(values, indices) of the max / min along ``dim``: the first occurrence, NaN counting as extreme."""
    def kernel(ctx, x):
        attrs = ctx.attrs
        if x.ndim == 0:
            return x.copy(), np.zeros((), _I64)
        d = _dim(attrs["dim"], x.ndim)
        idx = arg_fn(x, axis=d, keepdims=True)
        values = np.take_along_axis(x, idx, axis=d)
        if not attrs["keepdim"]:
            values, idx = values.squeeze(d), idx.squeeze(d)
        return values, _out(idx, _I64)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


cpu_kernel("reduce_max_dim", dtype_in("input", *ALL_DTYPES))(_values_indices_kernel(np.argmax, "reduce_max_dim_cpu"))
cpu_kernel("reduce_min_dim", dtype_in("input", *ALL_DTYPES))(_values_indices_kernel(np.argmin, "reduce_min_dim_cpu"))


def _arg_kernel(arg_fn, name):
    def kernel(ctx, x):
        attrs = ctx.attrs
        keep = attrs["keepdim"]
        if attrs["flatten"]:
            return _out(arg_fn(x, axis=None, keepdims=keep), _I64)
        if x.ndim == 0:
            return np.zeros((), _I64)
        return _out(arg_fn(x, axis=_dim(attrs["dim"], x.ndim), keepdims=keep), _I64)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


# PyTorch has no argmax / argmin of bool tensors.
cpu_kernel("argmax", dtype_in("in", *NUMERIC_DTYPES))(_arg_kernel(np.argmax, "argmax_cpu"))
cpu_kernel("argmin", dtype_in("in", *NUMERIC_DTYPES))(_arg_kernel(np.argmin, "argmin_cpu"))


def _scan_kernel(fn, name):
    def kernel(ctx, x):
        if x.ndim == 0:
            return x.copy()
        a = _acc(x)
        with _errstate(all="ignore"):
            return _out(fn(a, axis=_dim(ctx.attrs["dim"], x.ndim), dtype=a.dtype), x.dtype)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


# bool inputs are cast to int64 by the functors, as PyTorch's cumsum / cumprod do.
cpu_kernel("cumsum", dtype_in("x", *NUMERIC_DTYPES))(_scan_kernel(np.cumsum, "cumsum_cpu"))
cpu_kernel("cumprod", dtype_in("x", *NUMERIC_DTYPES))(_scan_kernel(np.cumprod, "cumprod_cpu"))


def _argsort(x, d, descending):
    """Stable sort indices along ``d`` (Note [Sort order])."""
    if not descending:
        return np.argsort(x, axis=d, kind="stable")
    idx = np.argsort(np.flip(x, axis=d), axis=d, kind="stable")
    return (x.shape[d] - 1) - np.flip(idx, axis=d)


@cpu_kernel("sort", dtype_in("in", *ALL_DTYPES))
def sort_cpu(ctx, x):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    attrs = ctx.attrs
    d = _dim(attrs["dim"], x.ndim)
    idx = _argsort(x, d, attrs["descending"])
    return np.take_along_axis(x, idx, axis=d), _out(idx, _I64)


@cpu_kernel("arg_sort", dtype_in("in", *ALL_DTYPES))
def arg_sort_cpu(ctx, x):
    if x.ndim == 0:
        return np.zeros((), _I64)
    attrs = ctx.attrs
    return _out(_argsort(x, _dim(attrs["dim"], x.ndim), attrs["descending"]), _I64)


# PyTorch has no topk of bool tensors.
@cpu_kernel("topk", dtype_in("in", *NUMERIC_DTYPES))
def topk_cpu(ctx, x):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    attrs = ctx.attrs
    d = _dim(attrs["dim"], x.ndim)
    idx = _argsort(x, d, attrs["largest"])
    idx = idx[(slice(None),) * d + (slice(0, attrs["k"]),)]
    return np.take_along_axis(x, idx, axis=d), _out(idx, _I64)


# ---- backward ops ---------------------------------------------------------------------------------
def _check_bounds(op, index, size, d):
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index.min() if index.min() < 0 else index.max()
        raise IndexError(f"{op}: index {bad} is out of bounds for dim {d} with size {size}")


@cpu_kernel("select_along_dim", dtype_in("x", *ALL_DTYPES))
def select_along_dim_cpu(ctx, x, index):
    if x.ndim == 0:
        _check_bounds("select_along_dim", index, 1, 0)
        return x.copy()
    d = _dim(ctx.attrs["dim"], x.ndim)
    _check_bounds("select_along_dim", index, x.shape[d], d)
    return np.take_along_axis(x, index, axis=d)


@cpu_kernel("select_along_dim_grad", dtype_in("dy", *FLOATING_DTYPES))
def select_along_dim_grad_cpu(ctx, dy, index):
    """Zeros with ``dy`` added at ``index`` along ``dim`` (repeated indices accumulate)."""
    m = ctx.out_metas[0]
    like = m.shape
    if not like:
        _check_bounds("select_along_dim_grad", index, 1, 0)
        return dy.copy()
    d = _dim(ctx.attrs["dim"], len(like))
    _check_bounds("select_along_dim_grad", index, like[d], d)
    coords = list(np.ogrid[tuple(slice(s) for s in index.shape)])
    coords[d] = index
    flat = np.ravel_multi_index(coords, like).ravel()
    summed = np.bincount(flat, weights=dy.ravel().astype(_F64), minlength=m.numel)
    return summed.astype(m.np_dtype).reshape(like)


def _move_to_end(a, axes):
    """``a`` with ``axes`` moved last and flattened into one: (rest..., n)."""
    k = len(axes)
    moved = np.moveaxis(a, axes, tuple(range(a.ndim - k, a.ndim)))
    return moved, moved.reshape(moved.shape[:a.ndim - k] + (-1,))


def _exclusive_cumprod(v):
    """``out[..., i] = prod(v[..., :i])``."""
    out = np.ones_like(v)
    if v.shape[-1] > 1:
        np.cumprod(v[..., :-1], axis=-1, out=out[..., 1:])
    return out


@cpu_kernel("reduce_prod_grad", dtype_in("dy", *FLOATING_DTYPES))
def reduce_prod_grad_cpu(ctx, dy, x):
    """``dx_i = dy * prod_{j != i} x_j`` over the reduced elements, as products of the elements before and
    after ``i`` (no division, so zeros in ``x`` are handled exactly)."""
    axes = tuple(sorted(_dim(a, x.ndim) for a in ctx.attrs["axis"])) if x.ndim else ()
    if x.size == 0 or not axes:
        return np.broadcast_to(dy, x.shape).copy()
    a = _acc(x)
    moved, v = _move_to_end(a, axes)
    with _errstate(all="ignore"):
        others = _exclusive_cumprod(v) * np.flip(_exclusive_cumprod(np.flip(v, -1)), -1)
        others = np.moveaxis(others.reshape(moved.shape), tuple(range(x.ndim - len(axes), x.ndim)), axes)
        return _out(_acc(dy) * others, x.dtype)


@cpu_kernel("cumprod_grad", dtype_in("dy", *FLOATING_DTYPES))
def cumprod_grad_cpu(ctx, dy, x):
    """``dx_i = sum_{j >= i} dy_j * prod_{k <= j, k != i} x_k`` along ``dim``, exact with zeros in ``x``.

    Before the first zero ``z`` of a slice it is ``sum_{i <= j < z} dy_j y_j / x_i``; at ``z`` it is
    ``sum_{j >= z} dy_j * cumprod(x with x_z = 1)_j``; after ``z`` it is 0.
    """
    if x.ndim == 0:
        return dy.copy()
    d = _dim(ctx.attrs["dim"], x.ndim)
    a = np.moveaxis(_acc(x), d, -1)
    g = np.moveaxis(_acc(dy), d, -1)
    n = a.shape[-1]
    if a.size == 0:
        return np.zeros(x.shape, x.dtype)
    zero = a == 0
    pos = np.arange(n)
    first_zero = np.where(zero.any(-1, keepdims=True), zero.argmax(-1, keepdims=True), n)
    before = pos < first_zero
    at = pos == first_zero
    zero_t = a.dtype.type(0)
    with _errstate(all="ignore"):
        w = np.where(before, g * np.cumprod(a, axis=-1), zero_t)
        tail = np.flip(np.cumsum(np.flip(w, -1), axis=-1), -1)
        dx = np.where(before, tail / np.where(before, a, a.dtype.type(1)), zero_t)
        skipped = np.cumprod(np.where(at, a.dtype.type(1), a), axis=-1)
        at_zero = np.sum(np.where(pos >= first_zero, g * skipped, zero_t), axis=-1, keepdims=True)
        dx = np.where(at, at_zero, dx)
    return _out(np.moveaxis(dx, -1, d), x.dtype)


@cpu_kernel("vector_norm_grad", dtype_in("dy", *FLOATING_DTYPES))
def vector_norm_grad_cpu(ctx, dy, x, y):
    """PyTorch's ``norm_backward``: 0 for p = 0; for p = +-inf ``dy * sign(x)`` split evenly among the
    elements with ``|x| == y`` (or NaN); otherwise ``dy * sign(x) |x|^(p-1) / y^(p-1)``, 0 where y is 0
    (and, for p < 1, where x is 0)."""
    attrs = ctx.attrs
    p = attrs["ord"]
    axes = attrs["axis"]
    if p == 0 or x.size == 0:
        return np.zeros(x.shape, x.dtype)
    a, g, n = _acc(x), _acc(dy), _acc(y)
    zero_t = a.dtype.type(0)
    with _errstate(all="ignore"):
        absx = np.abs(a)
        sign = np.sign(a)
        if math.isinf(p):
            mask = (absx == n) | np.isnan(absx)
            dx = sign * (g / np.sum(mask, axis=axes, keepdims=True, dtype=a.dtype)) * mask
        elif p < 1:
            scaled = np.where(a == 0, zero_t, sign * absx ** (p - 1))
            dx = scaled * g * n ** (1 - p)
        else:
            scaled = a * absx ** (p - 2) if p >= 2 else sign * absx ** (p - 1)
            dx = scaled * np.where(n == 0, zero_t, g / n ** (p - 1))
    return _out(dx, x.dtype)
