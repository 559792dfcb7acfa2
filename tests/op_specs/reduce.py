"""Reductions, scans and sorting: sum, mean, prod, max, min, amax, amin, argmax, argmin, var, std, logsumexp,
norm, all, any, cumsum, cumprod, sort, argsort, topk.

References compute in float64 (int64 for integer accumulations) with NumPy and round to the expected dtype.
"""

import math

import numpy as np
from opinfo import ALL, FLOATS, NUMERIC, OpSpec, Sample, make, register

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
    def ref(x, dim=None, keepdim=False):
        r = np.asarray(fn(x, axis=_axes(x.shape, dim), keepdims=keepdim))
        return r.astype(np.uint8) if x.dtype == np.uint8 else r
    return ref


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
