"""cpu kernels of the indexing ops (ops/index.py).

Index values are checked here, the only place that sees them, with PyTorch's
messages: gather / scatter / index_select / index_add take indices in
``[0, size)``; advanced indexing also takes negative ones (``[-size, size)``).
Scatter-like kernels write into a copy of the input (the eager interpreter
copies the result into the written tensor for in-place calls).
"""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import int32, int64
from oneflow_lite.kernels.registration import cpu_kernel

_int64 = np.dtype(np.int64)
_bool = np.dtype(np.bool_)


def _scalar(ctx, np_dtype):
    """The op's Python scalar (int_operand / float_operand) as a 0-d array of ``np_dtype`` (floats truncate
    toward zero for integer dtypes, anything nonzero is True for bool, as PyTorch converts scalars)."""
    attrs = ctx.attrs
    value = attrs["float_operand"] if attrs["has_float_operand"] else attrs["int_operand"]
    return np.array(value).astype(np_dtype)


def _check_bounds(op, index, size, dim):
    """Indices in [0, size): PyTorch's gather / scatter check."""
    if index.size:
        lo, hi = index.min(), index.max()
        if lo < 0 or hi >= size:
            raise RuntimeError(f"{op}: index {lo if lo < 0 else hi} is out of bounds for dimension {dim} "
                               f"with size {size}")


def _check_wrapped_bounds(index, size, dim):
    """Indices in [-size, size): advanced indexing."""
    if index.size:
        lo, hi = index.min(), index.max()
        if lo < -size or hi >= size:
            raise IndexError(f"index {lo if lo < -size else hi} is out of bounds for dimension {dim} "
                             f"with size {size}")


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


def _leading(shape):
    """The index of the block ``[:s0, :s1, ...]`` of ``shape``."""
    return tuple(slice(0, s) for s in shape)


# ---- gather / scatter ------------------------------------------------------------------------------
@cpu_kernel("dim_gather", dtype_in("index", int64))
def dim_gather_cpu(ctx, x, index):
    dim = ctx.attrs["dim"]
    shape = index.shape
    x, index = _at_least_1d(x), _at_least_1d(index)
    _check_bounds("gather", index, x.shape[dim], dim)
    block = tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(index.shape))
    return np.take_along_axis(x[block], index, axis=dim).reshape(shape)


def _scatter_target(ctx, x, index):
    """(a copy of x, its at-least-1-d view, the coordinates index addresses along ``dim``)."""
    dim = ctx.attrs["dim"]
    out = x.copy()
    target = _at_least_1d(out)
    index = _at_least_1d(index)
    _check_bounds("scatter", index, target.shape[dim], dim)
    coords = list(np.indices(index.shape, sparse=True))
    coords[dim] = index
    return out, target, tuple(coords)


def _scatter_kernel(name, reduce):
    def kernel(ctx, x, index, src):
        out, target, coords = _scatter_target(ctx, x, index)
        src = _at_least_1d(src)[_leading(coords[ctx.attrs["dim"]].shape)]
        if reduce is None:
            target[coords] = src
        else:
            reduce.at(target, coords, src)
        return out
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _scatter_scalar_kernel(name, reduce):
    def kernel(ctx, x, index):
        out, target, coords = _scatter_target(ctx, x, index)
        value = _scalar(ctx, x.dtype)
        if reduce is None:
            target[coords] = value
        else:
            reduce.at(target, coords, value)
        return out
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


for _op, _reduce in (("dim_scatter_update", None), ("dim_scatter_add", np.add), ("dim_scatter_mul", np.multiply)):
    cpu_kernel(_op, dtype_in("index", int64))(_scatter_kernel(_op + "_cpu", _reduce))
    cpu_kernel(_op + "_scalar", dtype_in("index", int64))(_scatter_scalar_kernel(_op + "_scalar_cpu", _reduce))



# ---- scatter_reduce ------------------------------------------------------------------------------------------
_REDUCE_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _identity(reduce, dtype):
    """The value a position starts from when ``include_self`` is False."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype == _bool:
        return reduce == "amin"
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    extreme = -np.inf if reduce == "amax" else np.inf
    return extreme if dtype.kind == "f" else (info.min if reduce == "amax" else info.max)


@cpu_kernel("dim_scatter_reduce", dtype_in("index", int64))
def dim_scatter_reduce_cpu(ctx, x, index, src):
    attrs = ctx.attrs
    reduce, dim = attrs["reduce"], attrs["dim"]
    out, target, coords = _scatter_target(ctx, x, index)
    src = _at_least_1d(src)[_leading(coords[dim].shape)]
    counts = np.zeros(target.shape, np.int64)
    np.add.at(counts, coords, 1)
    touched = counts > 0
    if not attrs["include_self"]:
        target[touched] = _identity(reduce, target.dtype)
    else:
        counts += 1
    _REDUCE_UFUNCS[reduce].at(target, coords, src)
    if reduce == "mean":
        divide = np.floor_divide if target.dtype.kind in "iu" else np.true_divide
        target[touched] = divide(target[touched], counts[touched]).astype(target.dtype)
    return out

# ---- index_select / index_add -------------------------------------------------------------------------
def _check_index_range(op, index, size):
    if index.size and (index.min() < 0 or index.max() >= size):
        raise IndexError(f"{op}(): index out of range in self")


@cpu_kernel("index_select", dtype_in("index", int32, int64))
def index_select_cpu(ctx, x, index):
    index = index.reshape(-1)
    if x.ndim == 0:
        _check_index_range("index_select", index, 1)
        return x.copy()
    dim = ctx.attrs["dim"]
    _check_index_range("index_select", index, x.shape[dim])
    return np.take(x, index, axis=dim)


@cpu_kernel("index_add", dtype_in("index", int32, int64))
def index_add_cpu(ctx, x, index, source):
    index = index.reshape(-1)
    out = x.copy()
    if x.ndim == 0:
        _check_index_range("index_add", index, 1)
        np.add.at(out.reshape(1), index, source.reshape(-1))
        return out
    dim = ctx.attrs["dim"]
    _check_index_range("index_add", index, x.shape[dim])
    np.add.at(out, (slice(None),) * dim + (index,), source)
    return out


# ---- masked_fill ----------------------------------------------------------------------------------
@cpu_kernel("masked_fill")
def masked_fill_cpu(ctx, x, mask):
    return np.where(mask, _scalar(ctx, x.dtype), x)


@cpu_kernel("masked_fill_tensor")
def masked_fill_tensor_cpu(ctx, x, mask, value):
    return np.where(mask, value, x)


# ---- count_nonzero, masked_select, nonzero ------------------------------------------------------------
@cpu_kernel("count_nonzero")
def count_nonzero_cpu(ctx, x):
    dims = ctx.attrs["dims"]
    if not dims:
        return np.array(np.count_nonzero(x), _int64)
    return np.asarray(np.count_nonzero(x, axis=dims), _int64)


def _check_count(op, got, count):
    if got != count:
        raise RuntimeError(f"{op}: the input has {got} selected element(s) but the op's count attr is {count} "
                           f"(it was computed from other values)")


@cpu_kernel("masked_select")
def masked_select_cpu(ctx, x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]
    _check_count("masked_select", out.shape[0], ctx.attrs["count"])
    return out


@cpu_kernel("masked_select_grad")
def masked_select_grad_cpu(ctx, dy, mask):
    like = ctx.out_metas[0].shape
    mask = np.broadcast_to(mask, like)
    _check_count("masked_select_grad", int(np.count_nonzero(mask)), dy.shape[0])
    out = np.zeros(like, dy.dtype)
    out[mask] = dy
    return out


@cpu_kernel("nonzero")
def nonzero_cpu(ctx, x):
    out = np.argwhere(x).astype(_int64, copy=False)
    _check_count("nonzero", out.shape[0], ctx.attrs["count"])
    return out


# ---- advanced indexing (Note [Advanced indexing ops] in ops/index.py) ----------------------------------
@cpu_kernel("index", dtype_in("indices", int32, int64))
def index_cpu(ctx, x, *indices):
    dims = ctx.attrs["dims"]
    key = [slice(None)] * (dims[-1] + 1)
    for d, index in zip(dims, indices):
        _check_wrapped_bounds(index, x.shape[d], d)
        key[d] = index
    return x[tuple(key)]


def _basic_key(kinds, values) -> tuple:
    """The NumPy basic index encoded by ``kinds`` / ``values``, ending with ``...`` so it always gives a view."""
    key = []
    k = 0
    for kind in kinds:
        if kind == 0:
            key.append(values[k])
            k += 1
        elif kind == 1:
            key.append(slice(values[k], values[k + 1], values[k + 2]))
            k += 3
        else:
            key.append(None)
    key.append(Ellipsis)
    return tuple(key)


def _advanced_key(view, dims, indices) -> tuple:
    """The NumPy index of ``view`` addressing ``indices`` at ``dims``: bool masks as their nonzero
    coordinates, integer indices bounds-checked."""
    key = []
    pos = 0
    for d, index in zip(dims, indices):
        key.extend([slice(None)] * (d - pos))
        if index.dtype == _bool:
            key.extend(np.nonzero(index))
            pos = d + index.ndim
        else:
            _check_wrapped_bounds(index, view.shape[d], d)
            key.append(index)
            pos = d + 1
    return tuple(key)


def _setitem(ctx, x, value, indices, value_shape):
    attrs = ctx.attrs
    out = x.copy()
    view = out[_basic_key(attrs["kinds"], attrs["values"])]
    key = _advanced_key(view, attrs["adv_dims"], indices)
    try:
        if attrs["accumulate"]:
            if key:
                np.add.at(view, key, value)
            else:
                view += value
        else:
            view[key] = value
    except ValueError:  # only reachable with bool masks: inference checks the other cases
        raise RuntimeError(f"tensor_setitem: shape mismatch: value tensor of shape {list(value_shape)} cannot be "
                           f"broadcast to indexing result of shape {list(view[key].shape)}") from None
    return out


@cpu_kernel("tensor_setitem")
def tensor_setitem_cpu(ctx, x, value, *indices):
    shape = value.shape
    lead = 0
    while lead < value.ndim and shape[lead] == 1:
        lead += 1
    return _setitem(ctx, x, value.reshape(shape[lead:]), indices, shape)


@cpu_kernel("tensor_setitem_scalar")
def tensor_setitem_scalar_cpu(ctx, x, *indices):
    return _setitem(ctx, x, _scalar(ctx, x.dtype), indices, ())
