"""Indexing ops: gather, scatter, scatter_add, index_select, index_add, index_put, masked_fill, masked_select,
nonzero, count_nonzero, and advanced __getitem__ / __setitem__.

The references are written element by element (loops over the index) or with NumPy's own indexing, which
agrees with PyTorch's whenever ints and index arrays are not mixed (the samples here do not mix them;
test_ops_index.py covers that case).
"""

import numpy as np
from opinfo import ALL, OpSpec, Sample, broadcast_pairs, make, register

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
