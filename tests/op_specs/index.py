"""Indexing ops: gather, scatter, scatter_add, index_select, index_add, index_put, masked_fill, masked_select,
nonzero, count_nonzero, and advanced __getitem__ / __setitem__.

The references are written element by element (loops over the index) or with NumPy's own indexing, which
agrees with PyTorch's whenever ints and index arrays are not mixed (the samples here do not mix them;
test_ops_index.py covers that case).
"""

import numpy as np
from opinfo import ALL, INTS, NUMERIC, OpSpec, Sample, broadcast_pairs, make, register

import oneflow_lite as flow

_rng = np.random.default_rng(7)


def _index(shape, high):
    """An int64 index array of ``shape`` with values in [0, high)."""
    return _rng.integers(0, max(high, 1), size=shape).astype(np.int64) if high else np.zeros(shape, np.int64)


def _unique_index(shape, dim, size):
    """An int64 index of ``shape`` whose entries along ``dim`` are distinct (a scatter without collisions)."""
    out = np.empty(shape, np.int64)
    for pos in np.ndindex(*[s for d, s in enumerate(shape) if d != dim]):
        line = _rng.permutation(size)[:shape[dim]]
        idx = list(pos)
        idx.insert(dim, slice(None))
        out[tuple(idx)] = line
    return out


def _value(dtype):
    return True if dtype is flow.bool else 2.5 if dtype.is_floating_point else 3


# ---- gather ------------------------------------------------------------------------------------
def gather_ref(x, dim, index, **_):
    x1 = x.reshape(1) if x.ndim == 0 else x
    i1 = index.reshape(1) if index.ndim == 0 else index
    dim %= x1.ndim
    out = np.empty(i1.shape, x.dtype)
    for pos in np.ndindex(*i1.shape):
        src = list(pos)
        src[dim] = i1[pos]
        out[pos] = x1[tuple(src)]
    return out.reshape(index.shape)


def gather_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 0, _index((2, 4), 3)), name="dim0")
    yield Sample((x, 1, _index((3, 6), 4)), name="dim1-repeats")
    yield Sample((x, -1, _index((2, 2), 4)), name="dim-1-smaller")
    yield Sample((make((2, 3, 4), dtype), 1, _index((2, 5, 3), 3)), name="3d")
    yield Sample((make((), dtype), 0, np.array(0)), name="0d")
    yield Sample((make((), dtype), 0, np.zeros(3, np.int64)), name="0d-input-1d-index")
    yield Sample((x, 0, _index((0, 4), 3)), name="empty-index")
    yield Sample((make((0, 3), dtype), 1, _index((0, 2), 3)), name="empty")


# ---- scatter / scatter_add ----------------------------------------------------------------------------
def _scatter(x, dim, index, src, combine):
    out = x.copy()
    o1 = out.reshape(1) if out.ndim == 0 else out
    i1 = index.reshape(1) if index.ndim == 0 else index
    s1 = src.reshape(1) if isinstance(src, np.ndarray) and src.ndim == 0 else src
    dim %= o1.ndim
    for pos in np.ndindex(*i1.shape):
        tgt = list(pos)
        tgt[dim] = i1[pos]
        v = s1[pos] if isinstance(s1, np.ndarray) else np.array(s1).astype(x.dtype)
        o1[tuple(tgt)] = combine(o1[tuple(tgt)], v)
    return out


def scatter_ref(x, dim, index, src, reduce=None):
    combine = {None: lambda a, b: b, "add": lambda a, b: a + b if a.dtype != np.bool_ else a | b,
               "multiply": lambda a, b: a * b if a.dtype != np.bool_ else a & b}[reduce]
    return _scatter(x, dim, index, src, combine)


def scatter_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 0, _unique_index((2, 4), 0, 3), make((2, 4), dtype)), name="dim0")
    yield Sample((x, 1, _unique_index((3, 2), 1, 4), make((3, 5), dtype)), name="dim1-src-larger")
    yield Sample((x, -1, _unique_index((2, 3), 1, 4), make((2, 3), dtype)), name="dim-1")
    yield Sample((x, 0, _unique_index((2, 4), 0, 3), _value(dtype)), name="scalar-value")
    yield Sample((x, 0, _index((4, 4), 3), make((4, 4), dtype)), {"reduce": "add"}, name="reduce-add")
    yield Sample((x, 1, _index((3, 3), 4), make((3, 3), dtype, 1, 3)), {"reduce": "multiply"}, name="reduce-mul")
    yield Sample((x, 1, _index((3, 3), 4), _value(dtype)), {"reduce": "add"}, name="scalar-reduce-add")
    yield Sample((make((), dtype), 0, np.array(0), make((), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), 1, _index((0, 2), 3), make((0, 2), dtype)), name="empty")


def scatter_add_ref(x, dim, index, src):
    return scatter_ref(x, dim, index, src, "add")


def scatter_add_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 0, _index((5, 4), 3), make((5, 4), dtype)), name="dim0-repeats")
    yield Sample((x, 1, _index((3, 2), 4), make((3, 5), dtype)), name="dim1-src-larger")
    yield Sample((make((2, 3, 4), dtype), 2, _index((2, 3, 6), 4), make((2, 3, 6), dtype)), name="3d")
    yield Sample((make((), dtype), 0, np.array(0), make((), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), 1, _index((0, 2), 3), make((0, 2), dtype)), name="empty")


# ---- index_select / index_add ---------------------------------------------------------------------------
def index_select_ref(x, dim, index):
    if x.ndim == 0:
        return x.copy()
    dim %= x.ndim
    return np.stack([np.take(x, int(i), axis=dim) for i in index.reshape(-1)], axis=dim) if index.size else \
        np.zeros(x.shape[:dim] + (0,) + x.shape[dim + 1:], x.dtype)


def index_select_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 0, np.array([2, 0, 2, 1])), name="dim0-repeats")
    yield Sample((x, 1, np.array([3, 1], np.int32)), name="dim1-int32")
    yield Sample((x, -1, np.array(2)), name="0d-index")
    yield Sample((make((2, 3, 4), dtype), 1, np.array([1])), name="3d")
    yield Sample((make((), dtype), 0, np.array([0])), name="0d")
    yield Sample((x, 0, np.zeros(0, np.int64)), name="empty-index")
    yield Sample((make((0, 3), dtype), 1, np.array([0, 2])), name="empty")


def index_add_ref(x, dim, index, source, alpha=1):
    out = x.copy()
    if x.ndim == 0:
        s = source.reshape(())
        return out | s if x.dtype == np.bool_ else (out + alpha * s).astype(x.dtype)
    dim %= x.ndim
    for i, j in enumerate(index.reshape(-1)):
        tgt = (slice(None),) * dim + (j,)
        src = (slice(None),) * dim + (i,)
        out[tgt] = out[tgt] + alpha * source[src] if x.dtype != np.bool_ else out[tgt] | source[src]
    return out.astype(x.dtype)


def index_add_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 0, np.array([2, 0, 2]), make((3, 4), dtype)), name="dim0-repeats")
    yield Sample((x, 1, np.array([3, 1], np.int32), make((3, 2), dtype)), name="dim1-int32")
    if dtype is not flow.bool:
        yield Sample((x, 1, np.array([0, 0]), make((3, 2), dtype)), {"alpha": 2}, name="alpha")
    yield Sample((make((), dtype), 0, np.array([0]), make((), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), 1, np.array([0]), make((0, 1), dtype)), name="empty")


# ---- index_put, advanced getitem / setitem -------------------------------------------------------------
def index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, tuple(indices), values)
    else:
        out[tuple(indices)] = values
    return out


def index_put_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, [np.array([0, 2])], make((2, 4), dtype)), name="rows")
    yield Sample((x, [np.array([0, 2]), np.array([1, -1])], make((2,), dtype)), name="points")
    yield Sample((x, [np.array([[0], [2]]), np.array([1, 3])], make((), dtype)), name="broadcast")
    yield Sample((x, [make((3, 4), flow.bool)], make((), dtype)), name="mask")
    if dtype is not flow.bool:
        yield Sample((x, [np.array([1, 1, 0])], make((3, 4), dtype), True), name="accumulate-repeats")
    yield Sample((make((0, 3), dtype), [np.zeros(0, np.int64)], make((0, 3), dtype)), name="empty")


def getitem_ref(x, index):
    return x[index]


def getitem_samples(dtype):
    x = make((3, 4, 5), dtype)
    yield Sample((x, np.array([2, 0, 2])), name="list-like")
    yield Sample((x, (slice(None), np.array([[1, 0], [3, 3]]))), name="2d-index")
    yield Sample((x, (np.array([0, 2]), slice(1, 3), np.array([4, 0]))), name="separated")
    yield Sample((x, (Ellipsis, np.array([-1, 0]))), name="negative")
    yield Sample((x, (slice(None), np.array([0, 1]), np.array([[2], [3]]))), name="adjacent-broadcast")
    yield Sample((x, (np.array([1]), slice(None, None, 2))), name="with-step")
    yield Sample((make((0, 3), dtype), (slice(None), np.array([0, 2]))), name="empty")
    yield Sample((make((4,), dtype), np.array(1)), name="0d-index")


def getitem_mask_samples(dtype):
    x = make((3, 4, 5), dtype)
    yield Sample((x, make((3, 4), flow.bool)), name="mask")
    yield Sample((x, (slice(None), make((4,), flow.bool), None)), name="mask-and-none")
    yield Sample((x, (np.array([True, False, True]), slice(1, 3), np.array([0, 4]))), name="mask-and-index")
    yield Sample((x, np.zeros((3, 4, 5), bool)), name="none-selected")
    yield Sample((make((), dtype), np.array(True)), name="0d")
    yield Sample((make((0, 3), dtype), make((0, 3), flow.bool)), name="empty")


def setitem_op(x, index, value):
    y = x.to(x.dtype, copy=True)
    y[index] = value
    return y


def setitem_ref(x, index, value):
    y = x.copy()
    y[index] = value
    return y


def setitem_samples(dtype):
    x = make((3, 4, 5), dtype)
    yield Sample((x, (0, slice(1, 3)), make((5,), dtype)), name="basic-broadcast")
    yield Sample((x, (Ellipsis, None, 1), make((3, 4, 1), dtype)), name="ellipsis-none")
    yield Sample((x, np.array([2, 0]), make((2, 4, 5), dtype)), name="rows")
    yield Sample((x, (slice(None), np.array([0, 3]), np.array([1, 4])), make((3, 1), dtype)), name="adjacent")
    yield Sample((x, (np.array([0, 2]), slice(None), np.array([1, 4])), make((4,), dtype)), name="separated")
    yield Sample((x, make((3, 4), flow.bool), make((5,), dtype)), name="mask")
    yield Sample((x, (Ellipsis, slice(0, 5, 2)), _value(dtype)), name="scalar")
    yield Sample((make((), dtype), Ellipsis, make((), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), (slice(None), 1), make((1,), dtype)), name="empty")


# ---- masked_fill / masked_select ------------------------------------------------------------------------
def masked_fill_ref(x, mask, value):
    v = value if isinstance(value, np.ndarray) else np.array(value).astype(x.dtype)
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.array([vb if mb else xb for xb, mb, vb in
                     np.broadcast(np.broadcast_to(x, shape), np.broadcast_to(mask, shape), v)],
                    dtype=x.dtype).reshape(shape)


def masked_fill_samples(dtype):
    for xs, ms in broadcast_pairs():
        yield Sample((make(xs, dtype), make(ms, flow.bool), _value(dtype)), name=f"scalar-{xs}-{ms}")
    yield Sample((make((3, 4), dtype), make((4,), flow.bool), make((), dtype)), name="0d-tensor-value")
    yield Sample((make((), dtype), np.array(True), make((), dtype)), name="0d")


def masked_select_ref(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    xb, mb = np.broadcast_to(x, shape).reshape(-1), np.broadcast_to(mask, shape).reshape(-1)
    return np.array([a for a, m in zip(xb, mb) if m], dtype=x.dtype)


def masked_select_samples(dtype):
    for xs, ms in broadcast_pairs():
        yield Sample((make(xs, dtype), make(ms, flow.bool)), name=f"{xs}-{ms}")
    yield Sample((make((2, 3), dtype), np.zeros((2, 3), bool)), name="none-selected")


# ---- nonzero / count_nonzero -------------------------------------------------------------------------
def nonzero_ref(x):
    found = [pos for pos in np.ndindex(*x.shape) if x[pos] != 0]
    return np.array(found, np.int64).reshape(len(found), x.ndim)


def _sparse(shape, dtype):
    a = make(shape, dtype)
    return np.where(make(shape, flow.bool), a, np.zeros((), a.dtype)).astype(a.dtype)


def nonzero_samples(dtype):
    for shape in [(), (6,), (3, 4), (0,), (2, 0, 3), (2, 3, 2)]:
        yield Sample((_sparse(shape, dtype),), name=f"shape{shape}")
    yield Sample((np.ones((), dtype.np_dtype),), name="0d-nonzero")


def count_nonzero_ref(x, dim=None):
    axes = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else dim
    axes = tuple(a % max(x.ndim, 1) for a in axes)
    return np.sum(x != 0, axis=axes if x.ndim else None, dtype=np.int64)


def count_nonzero_samples(dtype):
    yield Sample((_sparse((3, 4), dtype),), name="all")
    yield Sample((_sparse((3, 4), dtype), 1), name="dim1")
    yield Sample((_sparse((2, 3, 4), dtype), (0, -1)), name="dims")
    yield Sample((_sparse((), dtype),), name="0d")
    yield Sample((_sparse((0, 3), dtype), 0), name="empty")


register(
    OpSpec("gather", gather_ref, gather_samples, dtypes=ALL, method="gather", gradgrad=True),
    OpSpec("scatter", scatter_ref, scatter_samples, dtypes=ALL, method="scatter"),
    OpSpec("scatter_add", scatter_add_ref, scatter_add_samples, dtypes=ALL, method="scatter_add", gradgrad=True),
    OpSpec("index_select", index_select_ref, index_select_samples, dtypes=ALL, method="index_select",
           gradgrad=True),
    OpSpec("index_add", index_add_ref, index_add_samples, dtypes=ALL, method="index_add"),
    OpSpec("index_put", index_put_ref, index_put_samples, dtypes=ALL, method="index_put"),
    OpSpec("getitem_advanced", getitem_ref, getitem_samples, dtypes=ALL, op=lambda x, index: x[index],
           gradgrad=True),
    OpSpec("getitem_mask", getitem_ref, getitem_mask_samples, dtypes=ALL, op=lambda x, index: x[index],
           meta=False),
    OpSpec("setitem", setitem_ref, setitem_samples, dtypes=ALL, op=setitem_op),
    OpSpec("masked_fill", masked_fill_ref, masked_fill_samples, dtypes=ALL, method="masked_fill"),
    OpSpec("masked_select", masked_select_ref, masked_select_samples, dtypes=ALL, method="masked_select",
           meta=False, gradgrad=True),
    OpSpec("nonzero", nonzero_ref, nonzero_samples, dtypes=ALL, method="nonzero", differentiable=False,
           meta=False),
    OpSpec("count_nonzero", count_nonzero_ref, count_nonzero_samples, dtypes=ALL, method="count_nonzero",
           differentiable=False),
)


# ---- [compat s3] scatter_reduce, index_reduce / index_copy / index_fill, take, put, masked_scatter, ... ------
def _reduce_values(values, reduce, dtype):
    a = np.array(values, dtype)
    if dtype == np.bool_:
        return {"sum": a.any(), "prod": a.all(), "amax": a.any(), "amin": a.all()}[reduce]
    if reduce == "sum":
        return np.add.reduce(a, dtype=dtype)
    if reduce == "prod":
        return np.multiply.reduce(a, dtype=dtype)
    if reduce == "mean":
        total = np.add.reduce(a, dtype=dtype)
        return total // len(a) if a.dtype.kind in "iu" else total / len(a)
    return a.max() if reduce == "amax" else a.min()


def scatter_reduce_ref(x, dim, index, src, reduce, include_self=True):
    out = x.copy()
    o1 = out.reshape(1) if out.ndim == 0 else out
    i1 = index.reshape(1) if index.ndim == 0 else index
    s1 = src.reshape(1) if src.ndim == 0 else src
    dim %= o1.ndim
    groups = {}
    for pos in np.ndindex(*i1.shape):
        tgt = list(pos)
        tgt[dim] = i1[pos]
        groups.setdefault(tuple(tgt), []).append(s1[pos])
    for tgt, values in groups.items():
        o1[tgt] = _reduce_values(([o1[tgt]] if include_self else []) + values, reduce, x.dtype)
    return out


def _scatter_reduce_samples(reduce):
    def samples(dtype):
        x = make((3, 4), dtype, 1, 4) if reduce == "prod" else make((3, 4), dtype)
        src = (lambda s: make(s, dtype, 1, 3)) if reduce == "prod" else (lambda s: make(s, dtype))
        yield Sample((x, 0, _index((4, 4), 3), src((4, 4)), reduce), name="dim0")
        yield Sample((x, 1, _index((3, 3), 4), src((3, 5)), reduce), {"include_self": False}, name="exclude-self")
        yield Sample((make((2, 3, 4), dtype), -1, _index((2, 3, 6), 4), src((2, 3, 6)), reduce), name="3d")
        yield Sample((make((), dtype), 0, np.array(0), src(()), reduce), name="0d")
        yield Sample((make((0, 3), dtype), 1, _index((0, 2), 3), src((0, 2)), reduce), name="empty")
    return samples


def index_reduce_ref(x, dim, index, source, reduce, include_self=True):
    d = dim % x.ndim
    view = [1] * x.ndim
    view[d] = index.size
    full = np.broadcast_to(index.reshape(view), source.shape)
    return scatter_reduce_ref(x, d, full, source, reduce, include_self)


def index_reduce_samples(dtype):
    x = make((3, 4), dtype)
    for reduce in ("prod", "mean", "amax", "amin"):
        if reduce == "mean" and dtype is flow.bool:
            continue
        yield Sample((x, 1, np.array([0, 3, 0]), make((3, 3), dtype), reduce), name=reduce)
        yield Sample((x, 0, np.array([2, 2]), make((2, 4), dtype), reduce), {"include_self": False},
                     name=f"{reduce}-exclude")
    yield Sample((make((0, 3), dtype), 1, np.array([1]), make((0, 1), dtype), "amax"), name="empty")


def index_copy_ref(x, dim, index, source):
    out = x.copy()
    if x.ndim == 0:
        return source.reshape(-1)[-1].reshape(()) if index.size else out
    dim %= x.ndim
    for i, j in enumerate(index.reshape(-1)):
        out[(slice(None),) * dim + (j,)] = source[(slice(None),) * dim + (i,)]
    return out


def index_copy_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 1, np.array([3, 0]), make((3, 2), dtype)), name="dim1")
    yield Sample((x, 0, np.array([2, 0, 1]), make((3, 4), dtype)), name="permute-rows")
    yield Sample((x, -1, np.array(2), make((3, 1), dtype)), name="0d-index")
    yield Sample((make((), dtype), 0, np.array([0]), make((), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), 1, np.array([0]), make((0, 1), dtype)), name="empty")


def index_fill_ref(x, dim, index, value):
    out = x.copy()
    v = np.asarray(value).astype(x.dtype)
    if x.ndim == 0:
        return v.reshape(()) if index.size else out
    out[(slice(None),) * (dim % x.ndim) + (index.reshape(-1),)] = v
    return out


def index_fill_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, 1, np.array([3, 0]), _value(dtype)), name="scalar")
    yield Sample((x, 0, np.array([-1]), make((), dtype)), name="tensor-value-negative-index")
    yield Sample((x, -1, np.array(2), _value(dtype)), name="0d-index")
    yield Sample((make((), dtype), 0, np.array([0]), make((), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), 1, np.array([0, 2]), _value(dtype)), name="empty")


def take_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, np.array([[0, 5], [-1, 11]])), name="2d-index")
    yield Sample((x, np.array(7)), name="0d-index")
    yield Sample((make((), dtype), np.array([0, -1])), name="0d")
    yield Sample((x, np.zeros((0,), np.int64)), name="empty-index")


def take_along_dim_ref(x, indices, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), indices.reshape(-1), 0)
    shape = list(np.broadcast_shapes(x.shape[:dim % x.ndim] + (1,) + x.shape[dim % x.ndim + 1:], indices.shape))
    shape[dim % x.ndim] = x.shape[dim % x.ndim]
    return np.take_along_axis(np.broadcast_to(x, shape), indices, dim)


def take_along_dim_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, _index((3, 2), 4), 1), name="dim1")
    yield Sample((x, _index((2, 4), 3), -2), name="dim0")
    yield Sample((x, _index((5,), 12)), name="flat")
    yield Sample((make((2, 3, 1), dtype), _index((1, 1, 4), 1), 2), name="broadcast")
    yield Sample((x, _index((0, 4), 3), 0), name="empty")


def put_ref(x, index, source, accumulate=False):
    out = x.copy().reshape(-1)
    if accumulate:
        np.add.at(out, index.reshape(-1), source.reshape(-1))
    else:
        out[index.reshape(-1)] = source.reshape(-1)
    return out.reshape(x.shape)


def put_samples(dtype):
    x = make((3, 4), dtype)
    yield Sample((x, np.array([[0, 11], [-2, 5]]), make((4,), dtype)), name="2d-index")
    yield Sample((x, np.array([1, 1, 7]), make((3,), dtype), True), name="accumulate-repeats")
    yield Sample((make((), dtype), np.array([0]), make((1,), dtype)), name="0d")
    yield Sample((x, np.zeros(0, np.int64), make((0,), dtype)), name="empty")


def masked_scatter_ref(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.broadcast_to(x, shape).copy()
    m = np.broadcast_to(mask, shape)
    out[m] = source.reshape(-1)[:int(m.sum())]
    return out


def masked_scatter_samples(dtype):
    yield Sample((make((3, 4), dtype), make((3, 4), flow.bool), make((12,), dtype)), name="full")
    yield Sample((make((3, 4), dtype), make((4,), flow.bool), make((4, 5), dtype)), name="broadcast-mask")
    yield Sample((make((4,), dtype), make((2, 4), flow.bool), make((9,), dtype)), name="broadcast-input")
    yield Sample((make((), dtype), np.array(True), make((2,), dtype)), name="0d")
    yield Sample((make((0, 3), dtype), make((0, 3), flow.bool), make((2,), dtype)), name="empty")


def nonzero_static_ref(x, size, fill_value=-1):
    found = np.argwhere(x).astype(np.int64)
    if len(found) >= size:
        return found[:size]
    return np.concatenate([found, np.full((size - len(found), x.ndim), fill_value, np.int64)])


def nonzero_static_samples(dtype):
    x = _sparse((3, 4), dtype)
    yield Sample((x,), {"size": 20}, name="padded")
    yield Sample((x,), {"size": 1, "fill_value": 7}, name="cut")
    yield Sample((_sparse((), dtype),), {"size": 2}, name="0d")


def unravel_index_ref(indices, shape):
    return tuple(np.asarray(c, np.int64) for c in np.unravel_index(indices.astype(np.int64) % int(np.prod(shape)),
                                                                    shape))


def unravel_index_samples(dtype):
    yield Sample((np.array([4, 1, 23], dtype.np_dtype), (2, 3, 4)), name="1d")
    yield Sample((np.array([[5, 0]], dtype.np_dtype), (6,)), name="2d-indices")
    yield Sample((np.array(23, dtype.np_dtype), [4, 6]), name="0d")
    if dtype.is_signed:
        yield Sample((np.array([-1, -7], dtype.np_dtype), (2, 3)), name="negative")


def select_scatter_ref(x, src, dim, index):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (index,)] = src
    return out


def slice_scatter_ref(x, src, dim=0, start=None, end=None, step=1):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)] = src
    return out


register(
    *[OpSpec(f"scatter_reduce_{r}", scatter_reduce_ref, _scatter_reduce_samples(r),
             dtypes=ALL if r != "mean" else NUMERIC, op=flow.scatter_reduce, method="scatter_reduce",
             unsupported_error=NotImplementedError, gradgrad=r == "sum")
      for r in ("sum", "prod", "mean", "amax", "amin")],
    OpSpec("index_reduce", index_reduce_ref, index_reduce_samples, dtypes=ALL, method="index_reduce"),
    OpSpec("index_copy", index_copy_ref, index_copy_samples, dtypes=ALL, method="index_copy", gradgrad=True),
    OpSpec("index_fill", index_fill_ref, index_fill_samples, dtypes=ALL, method="index_fill"),
    OpSpec("take", lambda x, index: x.reshape(-1)[index], take_samples, dtypes=ALL, method="take", gradgrad=True),
    OpSpec("take_along_dim", take_along_dim_ref, take_along_dim_samples, dtypes=ALL, method="take_along_dim"),
    OpSpec("put", put_ref, put_samples, dtypes=ALL, method="put"),
    OpSpec("masked_scatter", masked_scatter_ref, masked_scatter_samples, dtypes=ALL, method="masked_scatter",
           meta=False),
    OpSpec("nonzero_static", nonzero_static_ref, nonzero_static_samples, dtypes=ALL, method="nonzero_static",
           differentiable=False),
    OpSpec("unravel_index", unravel_index_ref, unravel_index_samples, dtypes=INTS, differentiable=False,
           unsupported_error=TypeError),
    OpSpec("select_scatter", select_scatter_ref, lambda dtype: [
        Sample((make((3, 4), dtype), make((4,), dtype), 0, 1), name="row"),
        Sample((make((2, 3, 4), dtype), make((2, 3), dtype), -1, -1), name="last"),
        Sample((make((3, 0), dtype), make((0,), dtype), 0, 2), name="empty")],
        dtypes=ALL, method="select_scatter", gradgrad=True),
    OpSpec("slice_scatter", slice_scatter_ref, lambda dtype: [
        Sample((make((5, 4), dtype), make((2, 4), dtype)), {"start": 1, "end": 5, "step": 2}, name="step"),
        Sample((make((3, 4), dtype), make((3, 2), dtype), 1, -2), name="negative-start"),
        Sample((make((3, 4), dtype), make((3, 4), dtype)), name="all"),
        Sample((make((3, 4), dtype), make((3, 0), dtype), 1, 3, 1), name="empty")],
        dtypes=ALL, method="slice_scatter"),
    OpSpec("fill", lambda x, value: np.full_like(x, np.asarray(value).astype(x.dtype)), lambda dtype: [
        Sample((make((3, 4), dtype), _value(dtype)), name="scalar"),
        Sample((make((3, 4), dtype), make((), dtype)), name="tensor"),
        Sample((make((0, 2), dtype), make((), dtype)), name="empty")], dtypes=ALL),
)
