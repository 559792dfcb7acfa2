"""Reductions, scans and sorting: sum, mean, prod, max, min, amax, amin, argmax, argmin, var, std, logsumexp,
norm, all, any, cumsum, cumprod, sort, argsort, topk; statistics and searching: median, nanmedian, mode,
kthvalue, cummax, cummin, logcumsumexp, quantile, nanquantile, nansum, nanmean, std_mean, var_mean, aminmax,
msort, argwhere, histc, histogram, bincount, searchsorted, bucketize, unique, unique_consecutive, trapezoid,
trapz, cumulative_trapezoid, isclose, dist, renorm, cdist, pdist.

References compute in float64 (int64 for integer accumulations) with NumPy and round to the expected dtype.
"""

import math
import warnings

import numpy as np
import opinfo
from opinfo import ALL, FLOATS, INTS, NUMERIC, OpSpec, Sample, make, register

import oneflow_lite as flow

# (shape, dim, keepdim) for reductions over a dim list; None reduces everything.
_REDUCE_CASES = [
    ((), None, False), ((), 0, True), ((), (-1,), False),
    ((5,), None, False), ((5,), 0, True), ((5,), -1, False),
    ((3, 4), None, True), ((3, 4), 1, False), ((3, 4), (0, 1), False), ((3, 4), (-1, 0), True),
    ((2, 3, 4), (0, 2), False), ((2, 3, 4), 1, True), ((2, 3, 4), (), False),
    ((0,), None, False), ((2, 0, 3), 1, False), ((2, 0, 3), (0, 2), True), ((2, 0, 3), None, True),
]
# (shape, dim, keepdim) for ops along one dim that need a non-empty slice (max / min / argmax ...).
_DIM_CASES = [((), 0, False), ((), -1, True), ((5,), 0, False), ((3, 4), 1, True), ((3, 4), -2, False),
              ((2, 3, 4), 1, False), ((2, 3, 4), -1, True), ((0, 3), 1, False), ((2, 0, 3), 2, True)]
_SCAN_CASES = [((), 0), ((), -1), ((5,), 0), ((3, 4), 1), ((3, 4), -2), ((2, 3, 4), 2), ((0,), 0), ((2, 0, 3), 2),
               ((2, 0, 3), 1)]
_SORT_CASES = [((), -1), ((6,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((0,), 0), ((2, 0, 3), 1),
               ((2, 0, 3), 2)]


def _axes(shape, dim):
    """The reduced axes as a tuple (NumPy form); every axis for None or ()."""
    if dim is None or dim == ():
        return tuple(range(len(shape)))
    dims = (dim,) if isinstance(dim, int) else dim
    return tuple(d % len(shape) for d in dims) if shape else ()


def _reduce_samples(cases=_REDUCE_CASES, nonempty=False, low=None, high=None):
    def samples(dtype):
        for shape, dim, keepdim in cases:
            if nonempty and 0 in [shape[a] for a in _axes(shape, dim)]:
                continue
            kwargs = {} if dim is None else {"dim": dim}
            if keepdim:
                kwargs["keepdim"] = True
            yield Sample((make(shape, dtype, low, high),), kwargs, name=f"{shape} dim={dim} keepdim={keepdim}")
    return samples


def _as(r, dtype):
    return np.asarray(r).astype(dtype)


def _wide(x):
    """x as float64 (floats) or int64 (integers, bool)."""
    return x.astype(np.float64) if x.dtype.kind == "f" else x.astype(np.int64)


def _float_result(x):
    """The dtype of a result that is floating: x's for floats, the default float dtype otherwise."""
    return x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)


def _sum_ref(x, dim=None, keepdim=False, dtype=None):
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.int64)
    return _as(np.sum(_wide(x), axis=_axes(x.shape, dim), keepdims=keepdim), out)


def _mean_ref(x, dim=None, keepdim=False):
    axes = _axes(x.shape, dim)
    n = math.prod(x.shape[a] for a in axes)
    with np.errstate(all="ignore"):
        return _as(np.sum(x.astype(np.float64), axis=axes, keepdims=keepdim) / n, x.dtype)


def _prod_ref(x, dim=None, keepdim=False):
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.int64)
    return _as(np.prod(_wide(x), axis=_axes(x.shape, dim), keepdims=keepdim), out)


def _prod_samples(dtype):
    for shape, dim, keepdim in [((), None, False), ((), 0, True), ((5,), None, False), ((5,), 0, True),
                                ((3, 4), 1, False), ((3, 4), -2, True), ((2, 3, 4), 1, False), ((0,), None, False),
                                ((2, 0, 3), 1, False), ((2, 0, 3), 2, True)]:
        kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
        yield Sample((make(shape, dtype, -2, 3),), kwargs, name=f"{shape} dim={dim}")
    if dtype is flow.float64:
        yield Sample((np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]]),), {"dim": 1}, name="zeros")


def _minmax_ref(fn, argfn):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return fn(x)
        if x.ndim == 0:
            return x, np.array(0, np.int64)
        idx = argfn(x, axis=dim, keepdims=True)
        values = np.take_along_axis(x, idx, axis=dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return values, idx.astype(np.int64)
    return ref


def _minmax_samples(dtype):
    for shape in [(), (5,), (3, 4)]:
        yield Sample((make(shape, dtype),), name=f"{shape} all")
    for shape, dim, keepdim in _DIM_CASES:
        yield Sample((make(shape, dtype), dim), {"keepdim": keepdim} if keepdim else {},
                     name=f"{shape} dim={dim} keepdim={keepdim}")


def _minmax_grad_samples():
    rng = np.random.default_rng(5)
    yield Sample((rng.standard_normal((3, 4)),), name="all")
    yield Sample((rng.standard_normal((3, 4)), 1), name="dim 1")
    yield Sample((rng.standard_normal((2, 3, 2)), 0), {"keepdim": True}, name="dim 0 keepdim")
    yield Sample((np.array(1.5), 0), name="0-d")


def _amax_ref(fn):
    def ref(x, dim=(), keepdim=False):
        return _as(fn(x, axis=_axes(x.shape, dim), keepdims=keepdim), x.dtype)
    return ref


def _amax_grad_samples():
    rng = np.random.default_rng(6)
    yield Sample((rng.standard_normal((3, 4)),), {"dim": 1})
    yield Sample((rng.standard_normal((2, 3, 2)),), {"dim": (0, 2), "keepdim": True})


def _argmax_ref(fn):
    def ref(x, dim=None, keepdim=False):
        if dim is not None and x.ndim == 0:
            return np.array(0, np.int64)
        return _as(fn(x, axis=dim, keepdims=keepdim), np.int64)
    return ref


def _argmax_samples(dtype):
    for shape in [(), (5,), (3, 4)]:
        yield Sample((make(shape, dtype),), name=f"{shape} flat")
        yield Sample((make(shape, dtype),), {"keepdim": True}, name=f"{shape} flat keepdim")
    for shape, dim, keepdim in _DIM_CASES:
        yield Sample((make(shape, dtype), dim, keepdim), name=f"{shape} dim={dim} keepdim={keepdim}")


def _var_ref(sqrt):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        if isinstance(dim, bool):  # var(x, unbiased)
            dim, unbiased = None, dim
        if correction is None:
            correction = 0 if unbiased is False else 1
        axes = _axes(x.shape, dim)
        a = x.astype(np.float64)
        n = math.prod(x.shape[i] for i in axes)
        with np.errstate(all="ignore"):
            dev = a - np.sum(a, axis=axes, keepdims=True) / n
            r = np.sum(dev * dev, axis=axes, keepdims=keepdim) / max(0, n - correction)
        return _as(np.sqrt(r) if sqrt else r, x.dtype)
    return ref


def _var_samples(dtype):
    for shape, dim, keepdim in _REDUCE_CASES:
        kwargs = {} if dim is None else {"dim": dim}
        if keepdim:
            kwargs["keepdim"] = True
        yield Sample((make(shape, dtype),), kwargs, name=f"{shape} dim={dim} keepdim={keepdim}")
    x = make((3, 4), dtype)
    yield Sample((x,), {"dim": 1, "unbiased": False}, name="unbiased=False")
    yield Sample((x, False), name="var(x, False)")
    yield Sample((x, 0, True, True), name="positional dim unbiased keepdim")
    yield Sample((x,), {"dim": 0, "correction": 0}, name="correction=0")
    yield Sample((x,), {"dim": 1, "correction": 2.5, "keepdim": True}, name="correction=2.5")
    yield Sample((x,), {"dim": 1, "correction": 4}, name="correction=N (inf)")
    yield Sample((make((1, 3), dtype),), {"dim": 0}, name="N=1 unbiased (nan)")


def _var_grad_samples():
    rng = np.random.default_rng(7)
    yield Sample((rng.standard_normal((3, 4)),), {"dim": 1})
    yield Sample((rng.standard_normal((2, 3, 2)),), {"dim": (0, 2), "keepdim": True, "correction": 0})
    yield Sample((rng.standard_normal((4,)),))


def _logsumexp_ref(x, dim, keepdim=False):
    axes = _axes(x.shape, dim)
    a = x.astype(np.float64)
    with np.errstate(all="ignore"):
        r = np.log(np.sum(np.exp(a), axis=axes, keepdims=keepdim))  # samples are small: no overflow here
    return _as(r, _float_result(x))


def _logsumexp_samples(dtype):
    for shape, dim, keepdim in _REDUCE_CASES:
        if dim is None:
            dim = ()
        yield Sample((make(shape, dtype), dim), {"keepdim": keepdim} if keepdim else {},
                     name=f"{shape} dim={dim} keepdim={keepdim}")


def _norm_ref(x, p=None, dim=None, keepdim=False):
    p = 2.0 if p is None or p == "fro" else p
    axes = _axes(x.shape, dim)
    a = np.abs(x.astype(np.float64))
    with np.errstate(all="ignore"):
        if p == math.inf:
            r = np.max(a, axis=axes, keepdims=keepdim)
        elif p == -math.inf:
            r = np.min(a, axis=axes, keepdims=keepdim)
        elif p == 0:
            r = np.sum(a != 0, axis=axes, keepdims=keepdim)
        else:
            r = np.sum(a ** p, axis=axes, keepdims=keepdim) ** (1 / p)
    return _as(r, x.dtype)


def _norm_samples(dtype):
    for shape, dim, keepdim in _REDUCE_CASES:
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            continue
        yield Sample((make(shape, dtype),), {"dim": dim, "keepdim": keepdim}, name=f"{shape} dim={dim}")
    x = make((3, 4), dtype)
    for p in (1, 2, 3, 0.5, 0, math.inf, -math.inf, -1.5, "fro"):
        yield Sample((x, p, 1), name=f"p={p}")
    yield Sample((x, 1.0), name="p=1 all dims")
    yield Sample((x, "fro", (0, 1)), name="fro over 2 dims")
    yield Sample((np.zeros((2, 3), dtype.np_dtype), -1.0, 1), name="negative order of zeros")


def _norm_grad_samples():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4))
    for p in (2, 1, 3, 0.5, 1.5, math.inf, -math.inf, -2.0, 0):
        yield Sample((x, p, 1), name=f"p={p}")
    yield Sample((x,), name="fro")
    yield Sample((np.array([[0.0, 0.0], [1.0, -2.0]]), 2, 1), name="p=2 with a zero norm")


def _all_any_ref(fn):
    def ref(x, dim=None, keepdim=False):  # dim=() reduces no dim (PyTorch 2.x): each element's truth
        axes = () if dim == () else _axes(x.shape, dim)
        r = np.asarray(fn(x, axis=axes, keepdims=keepdim))
        return r.astype(np.uint8) if x.dtype == np.uint8 else r
    return ref


def _hash_tensor_ref(x, dim=None, keepdim=False):
    """PyTorch's documented hash: each element upcast to float64 / int64 (uint64 for bool and unsigned), its
    bits xor-reduced."""
    kind = x.dtype.kind
    bits = (x.astype(np.int64).view(np.uint64) if kind == "i" else x.astype(np.uint64) if kind in "bu"
            else x.astype(np.float64).view(np.uint64))
    return np.asarray(np.bitwise_xor.reduce(bits, axis=_axes(x.shape, dim), keepdims=keepdim))


def _hash_tensor_samples(dtype):
    for shape, dim, keepdim in _REDUCE_CASES:
        if 0 in [shape[a] for a in _axes(shape, dim)] or (dim is None and 0 in shape):
            continue  # PyTorch's IndexError / RuntimeError (tests/test_compat_view_dtype_masks.py)
        kwargs = {} if dim is None else {"dim": dim}
        if keepdim:
            kwargs["keepdim"] = True
        yield Sample((make(shape, dtype),), kwargs, name=f"{shape} dim={dim} keepdim={keepdim}")


def _all_any_samples(dtype):
    for sample in _reduce_samples(low=0, high=2)(dtype):
        if dtype.is_floating_point:  # many zeros, so both results occur
            sample.args = (np.asarray(np.floor(sample.args[0])),)
        yield sample
    yield Sample((np.array([[0.0, np.nan], [1.0, 2.0]]).astype(dtype.np_dtype) if dtype.is_floating_point
                  else make((2, 2), dtype),), {"dim": 1}, name="nan is true")


def _scan_ref(fn):
    def ref(x, dim, dtype=None):
        out = x.dtype if x.dtype.kind == "f" else np.dtype(np.int64)
        if x.ndim == 0:
            return x.astype(out)
        return _as(fn(_wide(x), axis=dim), out)
    return ref


def _scan_samples(low=None, high=None):
    def samples(dtype):
        for shape, dim in _SCAN_CASES:
            yield Sample((make(shape, dtype, low, high), dim), name=f"{shape} dim={dim}")
    return samples


def _cumprod_grad_samples():
    rng = np.random.default_rng(9)
    yield Sample((rng.standard_normal((3, 4)), 1))
    yield Sample((rng.standard_normal((2, 3, 2)), 0))
    yield Sample((np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 3.0, 0.0, 2.0], [2.0, -1.0, 0.5, 0.0]]), 1), name="zeros")


def _sort_order(x, dim, descending):
    """Stable order along ``dim`` by a lexicographic sort on (value, position)."""
    a = np.moveaxis(x.astype(np.float64), dim, -1)
    if a.size == 0:
        return np.zeros(x.shape, np.int64)
    n = a.shape[-1]
    key = -a if descending else a
    flat = key.reshape(-1, n)
    order = np.stack([np.lexsort((np.arange(n), row)) for row in flat])
    return np.moveaxis(order.reshape(a.shape), -1, dim).astype(np.int64)


def _sort_ref(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return x, np.array(0, np.int64)
    idx = _sort_order(x, dim, descending)
    return np.take_along_axis(x, idx, axis=dim), idx


def _argsort_ref(x, dim=-1, descending=False, stable=False):
    return _sort_ref(x, dim, descending)[1]


def _sort_samples(dtype):
    for shape, dim in _SORT_CASES:
        # few distinct values, so ties occur and the stable order is checked
        x = make(shape, dtype, -3, 3)
        if dtype.is_floating_point:
            x = np.asarray(np.round(x))
        yield Sample((x, dim), name=f"{shape} dim={dim}")
        yield Sample((x,), {"dim": dim, "descending": True}, name=f"{shape} dim={dim} descending")
    yield Sample((make((3, 5), dtype),), {"stable": True}, name="stable=True")


def _sort_grad_samples():
    rng = np.random.default_rng(10)
    yield Sample((rng.standard_normal((3, 4)),))
    yield Sample((rng.standard_normal((3, 4)), 0, True))
    yield Sample((np.array(2.0),))


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    if x.ndim == 0:
        return x, np.array(0, np.int64)
    idx = _sort_order(x, dim, largest)
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(x, idx, axis=dim), idx


def _topk_samples(dtype):
    for shape, dim in _SORT_CASES:
        size = shape[dim] if shape else 1
        x = make(shape, dtype, -3, 3)
        for k in sorted({0, min(2, size), size}):
            yield Sample((x, k, dim), name=f"{shape} k={k} dim={dim}")
            yield Sample((x, k), {"dim": dim, "largest": False}, name=f"{shape} k={k} dim={dim} smallest")


def _topk_grad_samples():
    rng = np.random.default_rng(11)
    yield Sample((rng.standard_normal((3, 5)), 2))
    yield Sample((rng.standard_normal((3, 4)), 2, 0, False))


register(
    OpSpec("sum", _sum_ref, _reduce_samples(), dtypes=ALL, method="sum", gradgrad=True),
    OpSpec("mean", _mean_ref, _reduce_samples(), dtypes=FLOATS, method="mean", gradgrad=True,
           unsupported_error=RuntimeError),
    OpSpec("prod", _prod_ref, _prod_samples, dtypes=ALL, method="prod"),
    OpSpec("max", _minmax_ref(np.max, np.argmax), _minmax_samples, dtypes=ALL, method="max", gradgrad=True,
           grad_samples=_minmax_grad_samples),
    OpSpec("min", _minmax_ref(np.min, np.argmin), _minmax_samples, dtypes=ALL, method="min", gradgrad=True,
           grad_samples=_minmax_grad_samples),
    OpSpec("amax", _amax_ref(np.max), _reduce_samples(nonempty=True), dtypes=ALL, method="amax", gradgrad=True,
           grad_samples=_amax_grad_samples),
    OpSpec("amin", _amax_ref(np.min), _reduce_samples(nonempty=True), dtypes=ALL, method="amin", gradgrad=True,
           grad_samples=_amax_grad_samples),
    OpSpec("argmax", _argmax_ref(np.argmax), _argmax_samples, dtypes=NUMERIC, differentiable=False,
           method="argmax"),
    OpSpec("argmin", _argmax_ref(np.argmin), _argmax_samples, dtypes=NUMERIC, differentiable=False,
           method="argmin"),
    OpSpec("var", _var_ref(False), _var_samples, dtypes=FLOATS, method="var", gradgrad=True,
           unsupported_error=RuntimeError, grad_samples=_var_grad_samples),
    OpSpec("std", _var_ref(True), _var_samples, dtypes=FLOATS, method="std", gradgrad=True,
           unsupported_error=RuntimeError, grad_samples=_var_grad_samples),
    OpSpec("logsumexp", _logsumexp_ref, _logsumexp_samples, dtypes=ALL, method="logsumexp", gradgrad=True),
    OpSpec("norm", _norm_ref, _norm_samples, dtypes=FLOATS, method="norm", unsupported_error=RuntimeError,
           grad_samples=_norm_grad_samples),
    OpSpec("hash_tensor", _hash_tensor_ref, _hash_tensor_samples, dtypes=ALL, differentiable=False,
           method="hash_tensor"),
    OpSpec("all", _all_any_ref(np.all), _all_any_samples, dtypes=ALL, differentiable=False, method="all"),
    OpSpec("any", _all_any_ref(np.any), _all_any_samples, dtypes=ALL, differentiable=False, method="any"),
    OpSpec("cumsum", _scan_ref(np.cumsum), _scan_samples(), dtypes=ALL, method="cumsum", gradgrad=True),
    OpSpec("cumprod", _scan_ref(np.cumprod), _scan_samples(-2, 3), dtypes=ALL, method="cumprod",
           grad_samples=_cumprod_grad_samples),
    OpSpec("sort", _sort_ref, _sort_samples, dtypes=ALL, method="sort", gradgrad=True,
           grad_samples=_sort_grad_samples),
    OpSpec("argsort", _argsort_ref, _sort_samples, dtypes=ALL, differentiable=False, method="argsort"),
    OpSpec("topk", _topk_ref, _topk_samples, dtypes=NUMERIC, method="topk", gradgrad=True,
           grad_samples=_topk_grad_samples),
)


# ---- statistics, order statistics, searching (compat) -------------------------------------------------
# References: NumPy's own functions where they define the same thing (quantile, histogram, unique,
# searchsorted, trapezoid), else short formulas on a stable sort (np.argsort(kind="stable"), NaN last).
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


def _rows_last(x, dim):
    return np.moveaxis(x, dim, -1)


def _sorted_pick(a, pos):
    """(values, int64 indices) at sorted position ``pos`` of each row of ``a``'s last axis."""
    idx = np.argsort(a, axis=-1, kind="stable")
    chosen = np.take_along_axis(idx, np.asarray(pos, np.int64)[..., None], -1)
    return np.take_along_axis(a, chosen, -1)[..., 0], chosen[..., 0].astype(np.int64)


def _median_pos(a, ignore_nan):
    n = a.shape[-1]
    nans = np.isnan(a).sum(-1) if a.dtype.kind == "f" else np.zeros(a.shape[:-1], np.int64)
    if ignore_nan:
        return np.maximum(n - nans - 1, 0) // 2
    return np.where(nans > 0, n - nans, (n - 1) // 2)


def _median_ref(ignore_nan):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            if x.size == 0:
                return np.array(np.nan, x.dtype)
            a = x.reshape(1, -1)
            return np.asarray(_sorted_pick(a, _median_pos(a, ignore_nan))[0][0])
        if x.ndim == 0:
            return x, np.array(0, np.int64)
        a = _rows_last(x, dim)
        v, i = _sorted_pick(a, _median_pos(a, ignore_nan))
        if keepdim:
            v, i = np.expand_dims(v, dim), np.expand_dims(i, dim)
        return v, i
    return ref


def _median_samples(dtype):
    floating = dtype.is_floating_point
    for shape in [(), (5,), (3, 4)] + ([(0,)] if floating else []):
        yield Sample((make(shape, dtype),), name=f"{shape} all")
    for shape, dim, keepdim in _DIM_CASES:
        yield Sample((make(shape, dtype), dim), {"keepdim": keepdim} if keepdim else {}, name=f"{shape} dim={dim}")
    if floating:
        x = make((3, 4), dtype)
        x[0, 1] = x[2, 0] = x[2, 3] = np.nan
        x[1, :] = np.nan
        yield Sample((x,), name="nan all")
        yield Sample((x, 1), name="nan rows")


def _grad_rows(seed, *shapes):
    """Samples of float64 rows of distinct values (no ties), for ops that select an element."""
    rng = np.random.default_rng(seed)
    return lambda: [Sample((rng.permutation(math.prod(s)).reshape(s) * 0.5 + rng.random(s) * 0.1,), name=str(s))
                    for s in shapes]


def _with_dim(samples, *args, **kwargs):
    def gen():
        for s in samples():
            yield Sample(s.args + args, kwargs, name=s.name)
    return gen


def _mode_ref(x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0, np.int64)
    a = _rows_last(x, dim)
    values, indices = np.empty(a.shape[:-1], x.dtype), np.empty(a.shape[:-1], np.int64)
    for pos in np.ndindex(*a.shape[:-1]):
        row = a[pos]
        uniq, counts = np.unique(row, return_counts=True)
        best = uniq[np.argmax(counts)]  # np.unique sorts: the first maximum is the smallest mode
        values[pos] = best
        indices[pos] = np.flatnonzero(row == best)[-1]
    if keepdim:
        values, indices = np.expand_dims(values, dim), np.expand_dims(indices, dim)
    return values, indices


def _mode_samples(dtype):
    for shape, dim, keepdim in _DIM_CASES:
        x = make(shape, dtype, 0, 3)  # few values: repeated ones
        if dtype.is_floating_point:
            x = np.asarray(np.floor(x))
        yield Sample((x, dim), {"keepdim": keepdim} if keepdim else {}, name=f"{shape} dim={dim}")


def _kthvalue_ref(x, k, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0, np.int64)
    a = _rows_last(x, dim)
    v, i = _sorted_pick(a, np.full(a.shape[:-1], k - 1))
    if keepdim:
        v, i = np.expand_dims(v, dim), np.expand_dims(i, dim)
    return v, i


def _kthvalue_samples(dtype):
    for shape, dim, keepdim in _DIM_CASES:
        size = shape[dim] if shape else 1
        if size == 0:
            continue
        for k in sorted({1, size}):
            yield Sample((make(shape, dtype), k, dim), {"keepdim": keepdim}, name=f"{shape} k={k} dim={dim}")


def _cumext_ref(fn):
    def ref(x, dim):
        if x.ndim == 0:
            return x, np.array(0, np.int64)
        a = _rows_last(x, dim)
        values, indices = np.empty_like(a), np.zeros(a.shape, np.int64)
        for pos in np.ndindex(*a.shape[:-1]):
            best, where = None, 0
            for j, v in enumerate(a[pos]):
                if best is None or (isinstance(best, float) and np.isnan(best)):
                    take = best is None or np.isnan(v)
                else:
                    take = np.isnan(v) if a.dtype.kind == "f" else False
                    take = take or fn(v, best) or v == best
                if take:
                    best, where = v, j
                values[pos + (j,)], indices[pos + (j,)] = best, where
        return np.moveaxis(values, -1, dim), np.moveaxis(indices, -1, dim)
    return ref


def _cumext_samples(dtype):
    for shape, dim in _SCAN_CASES:
        yield Sample((make(shape, dtype, 0, 4), dim), name=f"{shape} dim={dim}")  # ties occur
    if dtype.is_floating_point:
        yield Sample((np.array([1.0, 3.0, np.nan, 5.0, 2.0]).astype(dtype.np_dtype), 0), name="nan")


def _logcumsumexp_ref(x, dim):
    if x.ndim == 0:
        return x
    with np.errstate(all="ignore"):
        return np.log(np.cumsum(np.exp(x.astype(np.float64)), axis=dim)).astype(x.dtype)


def _quantile_ref(nan):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        fn = np.nanquantile if nan else np.quantile
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = fn(x.astype(np.float64), np.asarray(q, np.float64), axis=dim, keepdims=keepdim, method=interpolation)
        return np.asarray(r).astype(x.dtype)
    return ref


def _quantile_samples(dtype):
    x = make((3, 5), dtype)
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        yield Sample((x, 0.3), {"dim": 1, "interpolation": method}, name=method)
    yield Sample((x, np.array([0.0, 0.25, 0.5, 1.0], dtype.np_dtype)), name="q tensor, all dims")
    yield Sample((x, np.array([0.1, 0.9], dtype.np_dtype), 0, True), name="q tensor, keepdim")
    yield Sample((x, 0.5, None, True), name="all dims keepdim")
    yield Sample((make((), dtype), 0.5), name="0-d")
    yield Sample((x, np.array(0.75, dtype.np_dtype), -1), name="0-d q")
    y = x.copy()
    y[0, 1] = y[2, :] = np.nan
    yield Sample((y, 0.5, 1), name="nan")
    yield Sample((y, np.array([0.2, 0.8], dtype.np_dtype)), name="nan all dims")


def _quantile_grad_samples():
    x = _grad_rows(12, (3, 5))()[0].args[0]
    return [Sample((x, 0.3, 1)), Sample((x, 0.6), {"interpolation": "midpoint"})]


def _nansum_ref(x, dim=None, keepdim=False, dtype=None):
    axes = _axes(x.shape, dim)
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.int64)
    return _as(np.nansum(_wide(x), axis=axes, keepdims=keepdim), out)


def _nanmean_ref(x, dim=None, keepdim=False, dtype=None):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _as(np.nanmean(x.astype(np.float64), axis=_axes(x.shape, dim), keepdims=keepdim), x.dtype)


def _nan_samples(dtype):
    for sample in _reduce_samples()(dtype):
        if dtype.is_floating_point and sample.args[0].size > 2:
            x = sample.args[0].copy()
            x.flat[::3] = np.nan
            sample.args = (x,)
        yield sample


def _with_mean_ref(sqrt):
    spread = _var_ref(sqrt)

    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        if isinstance(dim, bool):
            return spread(x, dim), _mean_ref(x)
        return spread(x, dim, unbiased, keepdim, correction), _mean_ref(x, dim, keepdim)
    return ref


def _aminmax_ref(x, dim=None, keepdim=False):
    axes = None if dim is None else dim
    if x.ndim == 0:
        axes = None
    return (_as(np.min(x, axis=axes, keepdims=keepdim), x.dtype), _as(np.max(x, axis=axes, keepdims=keepdim),
                                                                        x.dtype))


def _aminmax_samples(dtype):
    for shape in [(), (5,), (3, 4)]:
        yield Sample((make(shape, dtype),), name=f"{shape}")
        yield Sample((make(shape, dtype),), {"keepdim": True}, name=f"{shape} keepdim")
    for shape, dim, keepdim in _DIM_CASES:
        if shape and shape[dim] == 0:
            continue
        yield Sample((make(shape, dtype),), {"dim": dim, "keepdim": keepdim}, name=f"{shape} dim={dim}")


def _histc_ref(x, bins=100, lo=0, hi=0):
    a = x.astype(np.float32 if x.dtype == np.float16 else x.dtype).ravel()
    lo, hi = float(lo), float(hi)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"histc: range [{lo}, {hi}] is not finite")  # as PyTorch
    counts = np.zeros(bins)
    for v in a:
        if lo <= v <= hi:
            b = int((v - a.dtype.type(lo)) * a.dtype.type(bins) / (a.dtype.type(hi) - a.dtype.type(lo)))
            counts[min(b, bins - 1)] += 1
    return counts.astype(x.dtype)


def _histc_samples(dtype):
    x = make((4, 5), dtype)
    yield Sample((x,), name="default")
    yield Sample((x, 7, -1, 1), name="range")
    yield Sample((np.array([2.0, 2.0], dtype.np_dtype), 4), name="point")
    yield Sample((np.zeros((0,), dtype.np_dtype), 3), name="empty")
    yield Sample((np.array([0.0, 1.0, 2.0, np.nan, 3.0], dtype.np_dtype), 3, 0, 3), name="nan, max edge")


def _histogram_ref(x, bins, range=None, weight=None, density=False):
    edges = bins.astype(np.float64) if isinstance(bins, np.ndarray) else bins
    hist, e = np.histogram(x.astype(np.float64).ravel(), edges, range=None if isinstance(bins, np.ndarray) else range,
                           weights=None if weight is None else weight.astype(np.float64).ravel(), density=density)
    return hist.astype(x.dtype), e.astype(x.dtype)


def _histogram_samples(dtype):
    x = make((3, 5), dtype)
    yield Sample((x, 4), name="count")
    yield Sample((x, 3), {"range": (-1.0, 1.0), "weight": np.abs(x), "density": True}, name="range weight density")
    yield Sample((x, np.array([-2.0, -0.5, 0.0, 2.0], dtype.np_dtype)), name="edges")
    yield Sample((x, np.array([-2.0, 0.0, 2.0], dtype.np_dtype)), {"weight": np.abs(x)}, name="edges weight")


def _bincount_ref(x, weights=None, minlength=0):
    if weights is None:
        return np.bincount(x.astype(np.int64), minlength=minlength).astype(np.int64)
    out = np.float64 if weights.dtype not in (np.float32, np.float64) else weights.dtype
    return np.bincount(x.astype(np.int64), weights.astype(np.float64), minlength).astype(out)


def _bincount_samples(dtype):
    x = make((7,), dtype, 0, 6)
    yield Sample((x,), name="counts")
    yield Sample((x,), {"minlength": 10}, name="minlength")
    yield Sample((np.zeros((0,), dtype.np_dtype),), {"minlength": 2}, name="empty")
    for wd in (np.float32, np.float64, np.int64):
        yield Sample((x, np.arange(7).astype(wd)), name=f"weights {np.dtype(wd)}")


def _searchsorted_ref(seq, values, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, -1)
    if seq.ndim == 1:
        r = np.searchsorted(seq, values, side=side)
    else:
        r = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq.reshape(-1, seq.shape[-1]),
                                                                         values.reshape(seq.shape[0], -1))])
        r = r.reshape(values.shape)
    return np.asarray(r).astype(np.int32 if out_int32 else np.int64)


def _searchsorted_samples(dtype):
    seq = np.sort(make((6,), dtype, -5, 5))
    v = make((2, 3), dtype, -6, 6)
    yield Sample((seq, v), name="1-d")
    yield Sample((seq, v), {"right": True, "out_int32": True}, name="right int32")
    yield Sample((seq, v), {"side": "right"}, name="side")
    yield Sample((np.sort(make((2, 4), dtype, -5, 5), -1), v), name="batched")
    unsorted = make((5,), dtype, -5, 5)
    yield Sample((unsorted, v), {"sorter": np.argsort(unsorted, kind="stable").astype(np.int64)}, name="sorter")
    yield Sample((seq, make((0,), dtype)), name="no values")


def _bucketize_ref(x, boundaries, out_int32=False, right=False):
    return _searchsorted_ref(boundaries, x, out_int32, right)


def _bucketize_samples(dtype):
    b = np.unique(make((5,), dtype, -5, 5))
    yield Sample((make((3, 4), dtype, -6, 6), b), name="2-d")
    yield Sample((make((4,), dtype, -6, 6), b), {"right": True}, name="right")


def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    out, inverse, counts = np.unique(x.ravel() if dim is None else x, return_inverse=True, return_counts=True,
                                     axis=dim, equal_nan=False)
    inverse = inverse.reshape(x.shape if dim is None else (-1,)).astype(np.int64)
    extra = ((inverse,) if return_inverse else ()) + ((counts.astype(np.int64),) if return_counts else ())
    return (out,) + extra if extra else out


def _unique_samples(dtype):
    x = make((3, 4), dtype, 0, 4)
    yield Sample((x,), name="values")
    yield Sample((x,), {"return_inverse": True, "return_counts": True}, name="inverse counts")
    yield Sample((make((), dtype),), {"return_inverse": True}, name="0-d")
    yield Sample((make((0, 2), dtype),), {"return_counts": True}, name="empty")
    rows = np.concatenate([x[:2], x[:1]])
    yield Sample((rows,), {"dim": 0, "return_inverse": True, "return_counts": True}, name="dim 0")
    yield Sample((rows,), {"dim": -1}, name="dim -1")


def _unique_consecutive_ref(x, return_inverse=False, return_counts=False, dim=None):
    rows = x.reshape(-1, 1) if dim is None else np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    starts = [i for i in range(len(rows)) if i == 0 or not np.array_equal(rows[i], rows[i - 1])]
    out = x.ravel()[starts] if dim is None else np.take(x, starts, axis=dim)
    inverse = np.cumsum([i in starts for i in range(len(rows))]).astype(np.int64) - 1
    counts = np.diff(starts + [len(rows)]).astype(np.int64)
    extra = ((inverse.reshape(x.shape) if dim is None else inverse,) if return_inverse else ()) + \
        ((counts,) if return_counts else ())
    return (out,) + extra if extra else out


def _unique_consecutive_samples(dtype):
    x = make((12,), dtype, 0, 2)
    yield Sample((x,), name="values")
    yield Sample((x.reshape(3, 4),), {"return_inverse": True, "return_counts": True}, name="2-d inverse counts")
    rows = make((2, 3), dtype, 0, 2)[[0, 0, 1, 1, 0]]
    yield Sample((rows,), {"dim": 0, "return_inverse": True, "return_counts": True}, name="dim 0")
    yield Sample((make((0,), dtype),), {"return_counts": True}, name="empty")


def _float_of(y, x=None):
    """The result dtype: y's floating dtype (the default float for integers), promoted with x's."""
    d = y.dtype if y.dtype.kind == "f" else np.dtype(np.float32)
    return d if x is None else np.promote_types(d, x.dtype)


def _trapezoid_ref(y, x=None, dx=None, dim=-1):
    yy = y.astype(np.float64)
    if x is not None:
        r = np.trapezoid(yy, x.astype(np.float64), axis=dim)
    else:
        r = np.trapezoid(yy, dx=1.0 if dx is None else dx, axis=dim)
    if y.shape[dim] == 0:  # an empty dim: zeros of y's own dtype, as PyTorch
        return np.zeros(r.shape, y.dtype)
    return _as(r, _float_of(y, x))


def _cumulative_trapezoid_ref(y, x=None, dx=None, dim=-1):
    yy = np.moveaxis(y.astype(np.float64), dim, -1)
    mids = (yy[..., 1:] + yy[..., :-1]) / 2
    spacing = np.diff(x.astype(np.float64)) if x is not None else (1.0 if dx is None else dx)
    return _as(np.moveaxis(np.cumsum(mids * spacing, -1), -1, dim), _float_of(y, x))


def _trapezoid_samples(dtype):
    y = make((3, 4), dtype)
    yield Sample((y,), name="dx 1")
    yield Sample((y,), {"dx": 0.5, "dim": 0}, name="dx, dim 0")
    yield Sample((y, np.array([0.0, 1.0, 3.0, 3.5], np.float64)), name="x 1-d")
    yield Sample((y, np.array([0.0, 2.0, 3.0], np.float64)), {"dim": 0}, name="x dim 0")
    yield Sample((make((2, 0), dtype),), name="empty")
    yield Sample((make((2, 1), dtype),), name="one point")


def _isclose_ref(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if a.dtype == np.bool_:
        return a == b
    return np.isclose(a.astype(np.float64), b.astype(np.float64), rtol, atol, equal_nan)


def _isclose_samples(dtype):
    a = make((3, 4), dtype)
    b = a.copy()
    if dtype.is_floating_point:
        b = (a + np.linspace(-0.1, 0.1, 12).reshape(3, 4)).astype(dtype.np_dtype)
        a[0, :3] = [np.inf, np.nan, -np.inf]
        b[0, :3] = [np.inf, np.nan, np.inf]
    else:
        b.flat[::3] = make((4,), dtype).ravel()
    yield Sample((a, b), name="default")
    yield Sample((a, b), {"rtol": 0.0, "atol": 0.05, "equal_nan": True}, name="atol equal_nan")
    yield Sample((a, b), {"rtol": 0.5}, name="rtol")


def _dist_ref(a, b, p=2):
    return _norm_ref(a - b, p)


def _renorm_ref(x, p, dim, maxnorm):
    a = x.astype(np.float64)
    axes = tuple(i for i in range(x.ndim) if i != dim % x.ndim)
    norms = np.sum(np.abs(a) ** p, axis=axes, keepdims=True) ** (1 / p)
    return _as(a * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0), x.dtype)


def _cdist_ref(x1, x2, p=2.0, compute_mode=None):
    d = np.abs(x1.astype(np.float64)[..., :, None, :] - x2.astype(np.float64)[..., None, :, :])
    if p == 0:
        r = (d != 0).sum(-1)
    elif np.isinf(p):
        r = d.max(-1) if d.shape[-1] else np.zeros(d.shape[:-1])
    else:
        r = (d ** p).sum(-1) ** (1 / p)
    return _as(r, x1.dtype)


def _cdist_samples(dtype):
    for s1, s2, p in (((3, 4), (2, 4), 2.0), ((2, 3, 4), (2, 5, 4), 1.0), ((3, 2), (1, 3, 2), np.inf),
                      ((4, 3), (4, 3), 0.0), ((0, 3), (2, 3), 2.0), ((2, 3), (2, 3), 3.0)):
        yield Sample((make(s1, dtype), make(s2, dtype), p), name=f"{s1},{s2} p={p}")


def _argwhere_samples(dtype):
    for shape in [(), (5,), (3, 4), (0, 2)]:
        yield Sample((make(shape, dtype, -1, 2),), name=str(shape))


def _msort_samples(dtype):
    for shape in [(), (6,), (3, 4), (0,), (2, 0, 3)]:
        yield Sample((make(shape, dtype, -3, 3),), name=str(shape))  # ties: the stable order is checked


_register_own(
    OpSpec("median", _median_ref(False), _median_samples, dtypes=NUMERIC, method="median", gradgrad=True,
           grad_samples=_grad_rows(20, (3, 4), (5,))),
    OpSpec("nanmedian", _median_ref(True), _median_samples, dtypes=NUMERIC, method="nanmedian",
           grad_samples=_with_dim(_grad_rows(21, (3, 4)), 1)),
    OpSpec("mode", _mode_ref, _mode_samples, dtypes=ALL, method="mode", grad_samples=_grad_rows(22, (3, 4))),
    OpSpec("kthvalue", _kthvalue_ref, _kthvalue_samples, dtypes=NUMERIC, method="kthvalue", gradgrad=True,
           grad_samples=_with_dim(_grad_rows(23, (3, 4)), 2, 0)),
    OpSpec("cummax", _cumext_ref(lambda v, b: v > b), _cumext_samples, dtypes=ALL, method="cummax", gradgrad=True,
           grad_samples=_with_dim(_grad_rows(24, (3, 4)), 1)),
    OpSpec("cummin", _cumext_ref(lambda v, b: v < b), _cumext_samples, dtypes=ALL, method="cummin",
           grad_samples=_with_dim(_grad_rows(25, (3, 4)), 0)),
    OpSpec("logcumsumexp", _logcumsumexp_ref, _scan_samples(), dtypes=FLOATS, method="logcumsumexp",
           gradgrad=True),
    OpSpec("quantile", _quantile_ref(False), _quantile_samples, dtypes=(flow.float32, flow.float64),
           method="quantile", unsupported_error=RuntimeError, grad_samples=_quantile_grad_samples, gradgrad=True),
    OpSpec("nanquantile", _quantile_ref(True), _quantile_samples, dtypes=(flow.float32, flow.float64),
           method="nanquantile", unsupported_error=RuntimeError, grad_samples=_quantile_grad_samples),
    OpSpec("nansum", _nansum_ref, _nan_samples, dtypes=ALL, method="nansum", gradgrad=True),
    OpSpec("nanmean", _nanmean_ref, _nan_samples, dtypes=FLOATS, method="nanmean", unsupported_error=RuntimeError),
    OpSpec("std_mean", _with_mean_ref(True), _var_samples, dtypes=FLOATS, unsupported_error=RuntimeError,
           grad_samples=_var_grad_samples, gradgrad=True),
    OpSpec("var_mean", _with_mean_ref(False), _var_samples, dtypes=FLOATS, unsupported_error=RuntimeError,
           grad_samples=_var_grad_samples),
    OpSpec("aminmax", _aminmax_ref, _aminmax_samples, dtypes=ALL, method="aminmax",
           grad_samples=_grad_rows(26, (3, 4))),
    OpSpec("msort", lambda x: np.sort(x, axis=0, kind="stable") if x.ndim else x, _msort_samples, dtypes=ALL,
           method="msort", grad_samples=_grad_rows(27, (3, 4))),
    OpSpec("argwhere", lambda x: np.argwhere(x).astype(np.int64), _argwhere_samples, dtypes=ALL,
           differentiable=False, meta=False, method="argwhere"),
    OpSpec("histc", _histc_ref, _histc_samples, dtypes=FLOATS, differentiable=False, method="histc"),
    OpSpec("histogram", _histogram_ref, _histogram_samples, dtypes=(flow.float32, flow.float64),
           differentiable=False, method="histogram"),
    OpSpec("bincount", _bincount_ref, _bincount_samples, dtypes=INTS, differentiable=False, meta=False,
           method="bincount", unsupported_error=RuntimeError),
    OpSpec("searchsorted", _searchsorted_ref, _searchsorted_samples, dtypes=NUMERIC, differentiable=False),
    OpSpec("bucketize", _bucketize_ref, _bucketize_samples, dtypes=NUMERIC, differentiable=False),
    OpSpec("unique", _unique_ref, _unique_samples, dtypes=ALL, differentiable=False, meta=False, method="unique"),
    OpSpec("unique_consecutive", _unique_consecutive_ref, _unique_consecutive_samples, dtypes=ALL,
           differentiable=False, meta=False, method="unique_consecutive"),
    OpSpec("trapezoid", _trapezoid_ref, _trapezoid_samples, dtypes=NUMERIC, gradgrad=True,
           unsupported_error=RuntimeError),
    OpSpec("trapz", _trapezoid_ref, _trapezoid_samples, dtypes=NUMERIC, unsupported_error=RuntimeError),
    OpSpec("cumulative_trapezoid", _cumulative_trapezoid_ref, _trapezoid_samples, dtypes=NUMERIC, gradgrad=True,
           unsupported_error=RuntimeError),
    OpSpec("isclose", _isclose_ref, _isclose_samples, dtypes=ALL, differentiable=False, method="isclose"),
    OpSpec("dist", _dist_ref, lambda d: (Sample((make(a, d), make(b, d)) + p, name=f"{a},{b},{p}") for a, b, p in
                                         (((3, 4), (3, 4), ()), ((3, 4), (4,), (1,)), ((2, 3), (), (np.inf,)),
                                          ((0, 2), (2,), (3,)), ((5,), (5,), (0.5,)))),
           dtypes=FLOATS, method="dist", unsupported_error=RuntimeError),
    OpSpec("renorm", _renorm_ref, lambda d: (Sample((make(s, d),) + a, name=f"{s} {a}") for s, a in
                                             (((3, 4), (2, 0, 1.0)), ((3, 4), (1, 1, 0.5)), ((2, 3, 2), (3, -1, 1.5)),
                                              ((3, 4), (2, 0, 100.0)))),
           dtypes=FLOATS, method="renorm", gradgrad=True, unsupported_error=RuntimeError,
           grad_samples=lambda: [Sample((_grad_rows(29, (3, 4))()[0].args[0], 2, d, 1.0), name=f"dim {d}")
                                 for d in (0, -1)]),
    OpSpec("cdist", _cdist_ref, _cdist_samples, dtypes=FLOATS, unsupported_error=RuntimeError,
           grad_samples=lambda: [s for s in _cdist_samples(flow.float64) if s.args[2] in (1.0, 2.0, 3.0)
                                 and s.args[0].size]),
)
