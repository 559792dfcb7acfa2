"""cpu kernels of the reductions, scans and sorts (ops/reduce.py).

Note [Reduction accumulation]
float16 inputs accumulate in float32 and round once at the end, as PyTorch's
cpu kernels do (``acc_type``). Variances and standard deviations of float16
and float32 take their two passes in float64 (PyTorch's Welford loop runs in
double on cpu), so a float32 ``std([1e30, 1, 2])`` is 5.77e29, not inf. Norms
of an order other than 0, 1 and +-inf are taken of ``|x| / m`` and scaled back
by ``m`` (the largest ``|x|`` for a positive order, the smallest for a
negative one), so neither ``|x| ** p`` nor its sum overflows or underflows
where the norm itself is finite: ``norm(4.379, p=100)`` is 4.379, the
2-norm of ``[1e30, 1e30]`` is 1.41e30 (PyTorch gives inf for both, except for
one-element inputs). Empty reductions follow IEEE without NumPy's
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
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES, INTEGRAL_DTYPES, NUMERIC_DTYPES, WITH_LIMITED_UNSIGNED
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
_ALL_UNSIGNED_TOO = dtype_in("input_tensor", *WITH_LIMITED_UNSIGNED)  # Note [Limited unsigned dtypes]
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


@cpu_kernel("hash_tensor")  # every dtype, bfloat16 and uint16/32/64 included
def hash_tensor_cpu(ctx, x):
    """PyTorch's mode 0: each element upcast to float64 / int64 / uint64, its bits xor-reduced."""
    kind = x.dtype.kind
    if kind == "i":
        bits = x.astype(np.int64).view(np.uint64)
    elif kind in "bu":  # bool and unsigned: zero-extended
        bits = x.astype(np.uint64)
    else:  # floating, bfloat16 (an ml_dtypes "V" dtype) included
        bits = x.astype(np.float64).view(np.uint64)
    attrs = ctx.attrs
    return _asarray(np.bitwise_xor.reduce(bits, axis=attrs["axis"], keepdims=attrs["keepdims"]))


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


cpu_kernel("reduce_all", _ALL_UNSIGNED_TOO)(_logical_kernel(np.all, "reduce_all_cpu"))
cpu_kernel("reduce_any", _ALL_UNSIGNED_TOO)(_logical_kernel(np.any, "reduce_any_cpu"))


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
    """Sum of squared deviations over ``max(0, N - correction)`` (nan or inf when that is 0, as in PyTorch;
    nan for no element whatever the correction), in float64 (Note [Reduction accumulation])."""
    axes = attrs["axis"]
    a = x.astype(_F64) if x.dtype != _F64 else x
    n = _count(x.shape, axes)
    dof = max(0.0, n - attrs["correction"]) if n else 0.0
    with _errstate(all="ignore"):
        dev = a - np.sum(a, axis=axes, keepdims=True) / n
        return np.sum(dev * dev, axis=axes, keepdims=attrs["keepdims"]) / dof


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
        if p == 1:
            r = np.sum(np.abs(a), axis=axes, keepdims=keep)
        elif p == 0:
            r = np.sum(a != 0, axis=axes, keepdims=keep, dtype=a.dtype)
        elif p == math.inf:
            r = np.max(np.abs(a), axis=axes, keepdims=keep)
        elif p == -math.inf:
            r = np.min(np.abs(a), axis=axes, keepdims=keep)
        else:
            r = _scaled_norm(np.abs(a), axes, keep, p)
    return _out(r, x.dtype)


def _scaled_norm(absx, axes, keep, p):
    """``sum(|x| ** p) ** (1 / p)`` as ``m * sum((|x| / m) ** p) ** (1 / p)`` (Note [Reduction accumulation]);
    ``m`` where it is 0 or infinite (the norm is then ``m``, or NaN with a NaN in the slice)."""
    if not absx.size:  # an empty slice: 0 (a negative order refuses it in inference)
        return np.sum(absx, axis=axes, keepdims=keep)
    m = (np.max if p > 0 else np.min)(absx, axis=axes, keepdims=True)
    plain = (m == 0) | np.isinf(m)
    scale = np.where(plain, absx.dtype.type(1), m)
    r = m * np.sum((absx / scale) ** p, axis=axes, keepdims=True) ** (1.0 / p)
    r = np.where(plain & ~np.isnan(r), m, r)
    return r if keep else np.squeeze(r, axis=axes)


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


@cpu_kernel("sort", dtype_in("in", *WITH_LIMITED_UNSIGNED))
def sort_cpu(ctx, x):
    if x.ndim == 0:
        return x.copy(), np.zeros((), _I64)
    attrs = ctx.attrs
    d = _dim(attrs["dim"], x.ndim)
    idx = _argsort(x, d, attrs["descending"])
    return np.take_along_axis(x, idx, axis=d), _out(idx, _I64)


@cpu_kernel("arg_sort", dtype_in("in", *WITH_LIMITED_UNSIGNED))
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
    elements with ``|x| == y`` (none when y is NaN); otherwise ``dy * sign(x) (|x| / y)^(p-1)``, 0 where
    y is 0 and where x is 0."""
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
            mask = absx == n  # none where y is NaN: a zero gradient, as PyTorch's
            count = np.maximum(np.sum(mask, axis=axes, keepdims=True, dtype=a.dtype), a.dtype.type(1))
            dx = np.where(mask, sign * (g / count), zero_t)
        else:  # dy * sign(x) * (|x| / y) ** (p - 1): no power of x or y alone, which would overflow
            scaled = sign * np.where(a == 0, zero_t, (absx / n) ** (p - 1))
            dx = np.where(n == 0, zero_t, g * scaled)
    return _out(dx, x.dtype)


# ---- order statistics (Note [Order statistics] in ops/reduce.py) ---------------------------------------
_NUMERIC_IN = dtype_in("input", *NUMERIC_DTYPES)


def _pick_sorted(a, pos):
    """(values, indices) of the element at sorted position ``pos`` (one per row) of each row of ``a``'s last
    axis, in the stable sort order (NaN last)."""
    idx = np.argsort(a, axis=-1, kind="stable")
    chosen = np.take_along_axis(idx, np.asarray(pos)[..., None], axis=-1)
    return np.take_along_axis(a, chosen, axis=-1)[..., 0], chosen[..., 0].astype(_I64)


def _median_position(a, ignore_nan):
    """The sorted position of the lower median of each row: the first NaN when a row holds one (unless
    ``ignore_nan``, which takes the median of the rest)."""
    n = a.shape[-1]
    if a.dtype.kind != "f":
        return np.full(a.shape[:-1], (n - 1) // 2, _I64)
    valid = n - np.isnan(a).sum(axis=-1)
    if ignore_nan:
        return np.maximum(valid - 1, 0) // 2
    return np.where(valid < n, valid, (n - 1) // 2)


def _along_last(fn):
    """A kernel ``(values, indices)`` along ``dim`` from ``fn(a, attrs)`` working on rows of the last axis."""
    def kernel(ctx, x):
        attrs = ctx.attrs
        if x.ndim == 0:
            return x.copy(), np.zeros((), _I64)
        d = _dim(attrs["dim"], x.ndim)
        values, indices = fn(np.moveaxis(x, d, -1), attrs)
        if attrs["keepdim"]:
            values, indices = np.expand_dims(values, d), np.expand_dims(indices, d)
        return _out(values, x.dtype), _out(indices, _I64)
    kernel.__name__ = kernel.__qualname__ = fn.__name__ + "_cpu"
    return kernel


def median_dim(a, attrs):
    return _pick_sorted(a, _median_position(a, attrs["ignore_nan"]))


def kthvalue(a, attrs):
    return _pick_sorted(a, np.full(a.shape[:-1], attrs["k"] - 1, _I64))


def mode(a, attrs):
    """The smallest of the most frequent values of each row, and the last index holding it."""
    n = a.shape[-1]
    idx = np.argsort(a, axis=-1, kind="stable")
    s = np.take_along_axis(a, idx, axis=-1)
    same = s[..., 1:] == s[..., :-1]
    if a.dtype.kind == "f":
        same |= np.isnan(s[..., 1:]) & np.isnan(s[..., :-1])
    edge = np.ones(a.shape[:-1] + (1,), bool)
    pos = np.arange(n)
    start = np.maximum.accumulate(np.where(np.concatenate([edge, ~same], -1), pos, 0), axis=-1)
    end_marks = np.where(np.concatenate([~same, edge], -1), pos, n - 1)
    end = np.flip(np.minimum.accumulate(np.flip(end_marks, -1), axis=-1), -1)
    best = np.argmax(end - start, axis=-1)[..., None]
    last = np.take_along_axis(end, best, axis=-1)
    return np.take_along_axis(s, best, axis=-1)[..., 0], np.take_along_axis(idx, last, axis=-1)[..., 0]


cpu_kernel("median_dim", _NUMERIC_IN)(_along_last(median_dim))
cpu_kernel("kthvalue", _NUMERIC_IN)(_along_last(kthvalue))
cpu_kernel("mode", dtype_in("input", *ALL_DTYPES))(_along_last(mode))


@cpu_kernel("reduce_median", _NUMERIC)
def reduce_median_cpu(ctx, x):
    attrs = ctx.attrs
    axes = tuple(sorted(_dim(a, x.ndim) for a in attrs["axis"])) if x.ndim else ()
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    rows = moved.reshape(moved.shape[:x.ndim - len(axes)] + (_count(x.shape, axes),))
    if rows.shape[-1] == 0:
        values = np.full(rows.shape[:-1], np.nan)
    else:
        values = _pick_sorted(rows, _median_position(rows, attrs["ignore_nan"]))[0]
    if attrs["keepdims"]:
        values = values.reshape(tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    return _out(values, x.dtype)


def _cumulative_extreme(ufunc, name):
    """cummax / cummin: the running extreme and the index of the last element equal to it (of the NaN,
    once one is met: NaN propagates)."""
    def kernel(ctx, x):
        if x.ndim == 0:
            return x.copy(), np.zeros((), _I64)
        d = _dim(ctx.attrs["dim"], x.ndim)
        values = ufunc.accumulate(x, axis=d)
        hit = x == values
        if x.dtype.kind == "f":
            hit |= np.isnan(x)
        shape = [1] * x.ndim
        shape[d] = x.shape[d]
        positions = np.where(hit, np.arange(x.shape[d]).reshape(shape), 0)
        return values, _out(np.maximum.accumulate(positions, axis=d), _I64)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


cpu_kernel("cummax", dtype_in("x", *ALL_DTYPES))(_cumulative_extreme(np.maximum, "cummax_cpu"))
cpu_kernel("cummin", dtype_in("x", *ALL_DTYPES))(_cumulative_extreme(np.minimum, "cummin_cpu"))


@cpu_kernel("logcumsumexp", dtype_in("x", *FLOATING_DTYPES))
def logcumsumexp_cpu(ctx, x):
    if x.ndim == 0:
        return x.copy()
    with _errstate(all="ignore"):
        return _out(np.logaddexp.accumulate(_acc(x), axis=_dim(ctx.attrs["dim"], x.ndim)), x.dtype)


# ---- histograms, bincount, searchsorted, unique ------------------------------------------------------
@cpu_kernel("histc", dtype_in("input", *FLOATING_DTYPES))
def histc_cpu(ctx, x):
    """PyTorch's linear binning: bin ``int((x - min) * bins / (max - min))`` in the input's dtype, the max
    itself in the last bin, values outside ``[min, max]`` (and NaN) left out. ``min == max`` takes the
    data's range (widened by 1 each side when that is a point too)."""
    attrs = ctx.attrs
    bins = attrs["bins"]
    a = _acc(x).ravel()
    lo, hi = attrs["min"], attrs["max"]
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    lo_t, hi_t = a.dtype.type(lo), a.dtype.type(hi)
    inside = a[(a >= lo_t) & (a <= hi_t)]
    with _errstate(all="ignore"):
        pos = ((inside - lo_t) * a.dtype.type(bins) / (hi_t - lo_t)).astype(_I64)
    np.minimum(pos, bins - 1, out=pos)
    return np.bincount(pos, minlength=bins).astype(x.dtype)


@cpu_kernel("histogram", dtype_in("input", *FLOATING_DTYPES[1:]))  # PyTorch has no float16 histogram
def histogram_cpu(ctx, x, *optional):
    """NumPy's histogram (its edges for a bin count are computed in float64, then rounded). The optional
    inputs are the edges (when ``with_edges``), then the weights."""
    attrs = ctx.attrs
    bins = optional[0] if attrs["with_edges"] else None
    weight = optional[-1] if len(optional) > attrs["with_edges"] else None
    edges = attrs["bin_count"] if bins is None else bins.astype(_F64)
    value_range = (attrs["min"], attrs["max"]) if attrs["has_range"] and bins is None else None
    a = x.astype(_F64).ravel()
    w = None if weight is None else weight.astype(_F64).ravel()
    if value_range is not None and not all(map(math.isfinite, value_range)):
        raise ValueError(f"torch.histogram(): range of [{value_range[0]}, {value_range[1]}] is not finite")
    if bins is not None and (edges.size < 1 or np.any(edges[1:] < edges[:-1])):
        raise ValueError("torch.histogram(): bin edges must be a 1-D tensor of increasing values")
    with _errstate(all="ignore"):
        hist, out_edges = np.histogram(a, bins=edges, range=value_range, weights=w, density=attrs["density"])
    return hist.astype(x.dtype), out_edges.astype(x.dtype)


@cpu_kernel("bincount", dtype_in("input", *INTEGRAL_DTYPES))
def bincount_cpu(ctx, x, weights=None):
    size = ctx.attrs["size"]
    m = ctx.out_metas[0]
    w = None if weights is None else weights.astype(_F64)
    if x.size and (x.min() < 0 or x.max() >= size):
        raise RuntimeError(f"bincount: the values of input must lie in [0, {size}) (the length given), got "
                           f"[{x.min()}, {x.max()}]")
    return np.bincount(x.astype(_I64), weights=w, minlength=size).astype(m.np_dtype)


@cpu_kernel("searchsorted", dtype_in("sorted_sequence", *NUMERIC_DTYPES))
def searchsorted_cpu(ctx, seq, values, sorter=None):
    """One ``np.searchsorted`` per row of a batched sequence (its leading dims are the values')."""
    side = "right" if ctx.attrs["right"] else "left"
    if sorter is not None:
        n = seq.shape[-1]
        if sorter.size and (sorter.min() < 0 or sorter.max() >= n):
            raise RuntimeError(f"torch.searchsorted(): sorter index out of range, expected values in [0, {n})")
        seq = np.take_along_axis(seq, sorter, axis=-1)
    if not values.size or not seq.shape[-1]:  # no value, or an empty sequence: every index is 0
        return np.zeros(values.shape, ctx.out_metas[0].np_dtype)
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        rows = seq.reshape(-1, seq.shape[-1])
        vals = values.reshape(rows.shape[0], -1)
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(rows, vals)]).reshape(values.shape)
    return _out(out, ctx.out_metas[0].np_dtype)


def _unique(x, attrs):
    """(unique values or slices, inverse indices, counts): sorted, or of runs when ``consecutive``; NaNs
    are all distinct, as in PyTorch."""
    d = _dim(attrs["dim"], x.ndim) if attrs["has_dim"] else None
    if not attrs["consecutive"]:
        out, inverse, counts = np.unique(x.ravel() if d is None else x, return_inverse=True, return_counts=True,
                                         axis=d, equal_nan=False)
        return out, inverse.reshape(x.shape if d is None else (-1,)), counts
    rows = x.reshape(-1, 1) if d is None else np.moveaxis(x, d, 0).reshape(x.shape[d], x.size // max(x.shape[d], 1))
    change = np.ones(rows.shape[0], bool)
    change[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    inverse = np.cumsum(change) - 1
    starts = np.flatnonzero(change)
    counts = np.diff(np.append(starts, rows.shape[0]))
    if d is None:
        return x.ravel()[starts], inverse.reshape(x.shape), counts
    return np.take(x, starts, axis=d), inverse, counts


@cpu_kernel("unique_count", dtype_in("input", *WITH_LIMITED_UNSIGNED))
def unique_count_cpu(ctx, x):
    return np.array(_unique(x, ctx.attrs)[0].shape[ctx.attrs["dim"] if ctx.attrs["has_dim"] else 0], _I64)


@cpu_kernel("unique", dtype_in("input", *WITH_LIMITED_UNSIGNED))
def unique_cpu(ctx, x):
    out, inverse, counts = _unique(x, ctx.attrs)
    if counts.shape[0] != ctx.attrs["count"]:
        raise RuntimeError(f"unique: the input has {counts.shape[0]} unique elements, but the op was built for "
                           f"{ctx.attrs['count']} (Note [Value-dependent shapes])")
    return out, _out(inverse, _I64), _out(counts, _I64)
