"""Shape ops: reshapes, permutations, expand / repeat, joining and splitting, flip / roll / tril / triu, pad,
contiguous / clone. Every one takes every dtype."""

import itertools
import math

import numpy as np
from opinfo import ALL, INTS, OpSpec, Sample, make, register

import oneflow_lite as flow


def _x(shape, dtype):
    return make(shape, dtype)


def _gen(*cases):
    """samples(dtype) from ``cases``: (tuple of shapes or non-array args, kwargs or None, name); a tuple of
    ints as an argument is a shape, made into an array; other arguments pass as they are."""
    def samples(dtype):
        for args, kwargs, name in cases:
            made = tuple(_x(a, dtype) if isinstance(a, Shape) else a for a in args)
            yield Sample(made, dict(kwargs or {}), name=name)
    return samples


class Shape(tuple):
    """Marks an argument of ``_gen`` that is a shape to make an array of."""


def S(*dims):
    return Shape(dims)


def _moved(x, dim):
    return np.moveaxis(x, dim, 0)


def _along(x, dim, start, stop):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, stop)
    return x[tuple(index)]


# ---- references (NumPy formulas written independently of the library) ------------------------------
def _ref_flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


def _ref_unflatten(x, dim, sizes):
    dim %= x.ndim
    sizes = list(sizes)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[dim] // -math.prod(sizes)
    return x.reshape(x.shape[:dim] + tuple(sizes) + x.shape[dim + 1:])


def _ref_squeeze(x, dim=None):
    if dim is None:
        return x.reshape([d for d in x.shape if d != 1])
    dims = {d % max(x.ndim, 1) for d in ((dim,) if isinstance(dim, int) else dim)}
    return x.reshape([d for i, d in enumerate(x.shape) if not (i in dims and d == 1)])


def _ref_expand(x, size):
    lead = len(size) - x.ndim
    target = [x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
    return np.broadcast_to(x, target)


def _ref_cat(*xs, dim=0):
    kept = [x for x in xs if x.shape != (0,)] or [xs[0]]
    return np.concatenate(kept, axis=dim)


def _ref_split(x, split_size_or_sections, dim=0):
    size = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        return tuple(_along(x, dim, i, i + s) for i in range(0, max(size, 1), s))
    bounds = np.cumsum([0, *split_size_or_sections])
    return tuple(_along(x, dim, a, b) for a, b in itertools.pairwise(bounds))


def _ref_chunk(x, chunks, dim=0):
    size = x.shape[dim]
    if size == 0:
        return (x,) * chunks
    step = -(-size // chunks)
    return tuple(_along(x, dim, i, i + step) for i in range(0, size, step))


def _ref_narrow(x, dim, start, length):
    if start < 0:
        start += x.shape[dim]
    return _along(x, dim, start, start + length)


def _ref_roll(x, shifts, dims=None):
    if dims is None:
        flat = x.reshape(-1)
        k = shifts if isinstance(shifts, int) else shifts[0]
        n = flat.size
        return flat[(np.arange(n) - k) % n if n else []].reshape(x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else shifts
    dims = (dims,) if isinstance(dims, int) else dims
    for k, d in zip(shifts, dims):
        n = x.shape[d]
        x = np.take(x, (np.arange(n) - k) % n, axis=d)
    return x


def _ref_triangle(lower):
    def ref(x, diagonal=0):
        rows = np.arange(x.shape[-2])[:, None]
        cols = np.arange(x.shape[-1])[None, :]
        keep = cols - rows <= diagonal if lower else cols - rows >= diagonal
        return np.where(keep, x, np.zeros((), x.dtype))
    return ref


def _ref_pad(x, pad, mode="constant", value=None):
    if not pad:
        return x.copy()
    widths = [[0, 0] for _ in range(x.ndim)]
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = [pad[2 * i], pad[2 * i + 1]]
    if mode == "constant":
        # negative widths crop first
        x = x[tuple(slice(max(0, -b), x.shape[d] - max(0, -a)) for d, (b, a) in enumerate(widths))]
        fill = np.array(0.0 if value is None else value).astype(x.dtype)
        return np.pad(x, [[max(0, b), max(0, a)] for b, a in widths], constant_values=fill)
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


def _varargs(fn):
    """``fn(tensors, dim)`` called as ``op(*tensors, dim=...)``, so gradcheck sees the tensors."""
    def op(*tensors, dim=0):
        return fn(list(tensors), dim)
    return op


_NUMERIC_SHAPES = ((S(3, 4),), (S(),), (S(0,),), (S(2, 0, 3),), (S(5,),))

register(
    OpSpec("reshape", lambda x, shape: x.reshape(shape), _gen(
        ((S(3, 4), (4, 3)), None, "2d"), ((S(3, 4), (-1,)), None, "infer"), ((S(), (1, 1)), None, "0d"),
        ((S(0,), (0, 5)), None, "empty"), ((S(2, 0, 3), (0, 6)), None, "empty3d"),
        ((S(2, 3, 4), (4, -1)), None, "3d")), dtypes=ALL, method="reshape", gradgrad=True),
    OpSpec("view", lambda x, shape: x.reshape(shape), _gen(
        ((S(3, 4), (2, 6)), None, "2d"), ((S(), ()), None, "0d"), ((S(2, 0, 3), (-1, 3)), None, "empty")),
        dtypes=ALL, method="view"),
    OpSpec("transpose", lambda x, d0, d1: np.swapaxes(x, d0, d1) if x.ndim else x, _gen(
        ((S(3, 4), 0, 1), None, "2d"), ((S(2, 3, 4), -1, 0), None, "3d"), ((S(), 0, -1), None, "0d"),
        ((S(2, 0, 3), 0, 2), None, "empty"), ((S(5,), 0, 0), None, "1d")), dtypes=ALL, method="transpose"),
    OpSpec("permute", np.transpose, _gen(
        ((S(2, 3, 4), (2, 0, 1)), None, "3d"), ((S(3, 4), (-1, 0)), None, "2d"), ((S(), ()), None, "0d"),
        ((S(2, 0, 3), (1, 2, 0)), None, "empty"), ((S(5,), (0,)), None, "1d")), dtypes=ALL, method="permute"),
    OpSpec("t", lambda x: x.T if x.ndim == 2 else x, _gen(
        ((S(3, 4),), None, "2d"), ((S(5,),), None, "1d"), ((S(),), None, "0d"), ((S(0, 3),), None, "empty")),
        dtypes=ALL, method="t"),
    OpSpec("flatten", _ref_flatten, _gen(
        ((S(2, 3, 4),), None, "all"), ((S(2, 3, 4), 1), None, "from1"), ((S(2, 3, 4), 0, 1), None, "0to1"),
        ((S(),), None, "0d"), ((S(2, 0, 3), 1, 2), None, "empty"), ((S(5,),), None, "1d"),
        ((S(2, 3, 4), -2, -1), None, "negative")), dtypes=ALL, method="flatten"),
    OpSpec("unflatten", _ref_unflatten, _gen(
        ((S(2, 12), 1, (3, 4)), None, "2d"), ((S(2, 12), -1, (2, -1, 3)), None, "infer"),
        ((S(0, 6), 1, (2, 3)), None, "empty"), ((S(6,), 0, (6,)), None, "1d")), dtypes=ALL, method="unflatten"),
    OpSpec("squeeze", _ref_squeeze, _gen(
        ((S(1, 3, 1),), None, "all"), ((S(1, 3, 1), 0), None, "dim0"), ((S(1, 3, 1), (0, 2)), None, "tuple"),
        ((S(3, 4), 1), None, "not1"), ((S(),), None, "0d"), ((S(1, 0, 1), -1), None, "empty")),
        dtypes=ALL, method="squeeze"),
    OpSpec("unsqueeze", np.expand_dims, _gen(
        ((S(3, 4), 0), None, "front"), ((S(3, 4), -1), None, "back"), ((S(), 0), None, "0d"),
        ((S(2, 0, 3), 1), None, "empty")), dtypes=ALL, method="unsqueeze"),
    OpSpec("expand", _ref_expand, _gen(
        ((S(3, 1), (3, 4)), None, "stretch"), ((S(1, 4), (2, -1, 4)), None, "lead"), ((S(), (2, 3)), None, "0d"),
        ((S(5,), (0, 5)), None, "lead0"), ((S(1, 0), (3, 0)), None, "empty")), dtypes=ALL, method="expand"),
    OpSpec("broadcast_to", _ref_expand, _gen(
        ((S(3, 1), (2, 3, 4)), None, "stretch"), ((S(), (3,)), None, "0d"), ((S(1, 0), (2, 0)), None, "empty")),
        dtypes=ALL, method="broadcast_to"),
    OpSpec("expand_as", lambda x, other: np.broadcast_to(x, other.shape), _gen(
        ((S(3, 1), S(2, 3, 4)), None, "stretch"), ((S(), S(3,)), None, "0d"), ((S(1, 0), S(2, 0)), None, "empty")),
        dtypes=ALL, method="expand_as", grad_samples=lambda: [Sample((_x((3, 1), flow.float64),
                                                                      _x((2, 3, 4), flow.float64)), grad_args=(0,))]),
    OpSpec("repeat", np.tile, _gen(
        ((S(2, 3), (2, 1)), None, "2d"), ((S(2, 3), (1, 2, 2)), None, "lead"), ((S(), (3,)), None, "0d"),
        ((S(0, 2), (2, 2)), None, "empty"), ((S(5,), (0,)), None, "zero")), dtypes=ALL, method="repeat",
        gradgrad=True),
    OpSpec("tile", np.tile, _gen(
        ((S(2, 3), (2,)), None, "short"), ((S(2, 3), (1, 2, 2)), None, "lead"), ((S(), (2,)), None, "0d"),
        ((S(0, 2), (3, 1)), None, "empty")), dtypes=ALL, method="tile"),
    OpSpec("cat", _ref_cat, _gen(
        ((S(2, 3), S(4, 3)), {"dim": 0}, "dim0"), ((S(2, 3), S(2, 1), S(2, 2)), {"dim": -1}, "three"),
        ((S(0, 3), S(2, 3)), None, "empty"), ((S(0,), S(2, 3)), {"dim": 1}, "legacy_skip"),
        ((S(3,),), None, "one")), dtypes=ALL, op=_varargs(flow.cat), gradgrad=True),
    OpSpec("concat", _ref_cat, _gen(((S(2, 3), S(2, 2)), {"dim": 1}, "dim1")), dtypes=ALL,
           op=_varargs(flow.concat)),
    OpSpec("stack", lambda *xs, dim=0: np.stack(xs, axis=dim), _gen(
        ((S(2, 3), S(2, 3)), None, "dim0"), ((S(2, 3), S(2, 3), S(2, 3)), {"dim": -1}, "last"),
        ((S(), S()), None, "0d"), ((S(0, 3), S(0, 3)), {"dim": 1}, "empty")), dtypes=ALL,
        op=_varargs(flow.stack)),
    OpSpec("split", _ref_split, _gen(
        ((S(5, 4), 2), None, "size"), ((S(5, 4), 3, 1), None, "dim1"), ((S(5, 4), [1, 0, 4]), None, "sections"),
        ((S(5, 4), (2, 2), -1), None, "sections_dim"), ((S(0, 3), 2), None, "empty"), ((S(3,), 5), None, "big")),
        dtypes=ALL, method="split", gradgrad=True),
    OpSpec("chunk", _ref_chunk, _gen(
        ((S(5, 4), 2), None, "2"), ((S(6, 4), 4), None, "fewer"), ((S(5, 4), 3, -1), None, "dim"),
        ((S(0, 3), 3), None, "empty"), ((S(2,), 5), None, "more")), dtypes=ALL, method="chunk"),
    OpSpec("unbind", lambda x, dim=0: tuple(_moved(x, dim)), _gen(
        ((S(3, 4),), None, "dim0"), ((S(2, 3, 4), -1), None, "last"), ((S(0, 3),), None, "empty0"),
        ((S(3, 0),), None, "empty")), dtypes=ALL, method="unbind", gradgrad=True),
    OpSpec("narrow", _ref_narrow, _gen(
        ((S(5, 4), 0, 1, 3), None, "dim0"), ((S(5, 4), -1, -2, 2), None, "negative"),
        ((S(0, 3), 1, 0, 2), None, "empty"), ((S(5,), 0, 5, 0), None, "end")), dtypes=ALL, method="narrow"),
    OpSpec("flip", lambda x, dims: np.flip(x, dims), _gen(
        ((S(3, 4), (0,)), None, "dim0"), ((S(2, 3, 4), (0, -1)), None, "two"), ((S(), ()), None, "0d"),
        ((S(2, 0, 3), (1,)), None, "empty")), dtypes=ALL, method="flip"),
    OpSpec("roll", _ref_roll, _gen(
        ((S(3, 4), 1), None, "flat"), ((S(3, 4), (1, -2), (0, 1)), None, "two"), ((S(3, 4), -5, 0), None, "big"),
        ((S(), 2), None, "0d"), ((S(0, 3), 1, 1), None, "empty")), dtypes=ALL, method="roll"),
    OpSpec("tril", _ref_triangle(True), _gen(
        ((S(3, 4),), None, "2d"), ((S(3, 4), 1), None, "above"), ((S(2, 3, 4), -1), None, "batched"),
        ((S(0, 3),), None, "empty"), ((S(2, 0, 2), 2), None, "empty3d")), dtypes=ALL, method="tril"),
    OpSpec("triu", _ref_triangle(False), _gen(
        ((S(3, 4),), None, "2d"), ((S(4, 3), 1), None, "above"), ((S(2, 3, 4), -2), None, "batched"),
        ((S(0, 3),), None, "empty")), dtypes=ALL, method="triu"),
    OpSpec("pad", _ref_pad, _gen(
        ((S(2, 3), (1, 2)), None, "last"), ((S(2, 3), (1, 0, 0, 2), "constant", 1.5), None, "value"),
        ((S(4, 5), (-1, 2, 0, -1)), None, "crop"), ((S(2, 3, 4), (2, 1), "reflect"), None, "reflect"),
        ((S(2, 3, 4), (1, 1, 2, 0), "reflect"), None, "reflect2"), ((S(2, 3, 4), (2, 3), "replicate"), None,
                                                                     "replicate"),
        ((S(2, 3, 4), (1, 0, 3, 2), "replicate"), None, "replicate2"),
        ((S(2, 3, 4), (1, 2), "circular"), None, "circular"), ((S(), ()), None, "0d"),
        ((S(0, 3), (1, 1)), None, "empty")), dtypes=ALL, gradgrad=True,
        grad_samples=lambda: [Sample((_x(s, flow.float64), p, m)) for s, p, m in (
            ((2, 3), (1, 2), "constant"), ((4, 5), (-1, 2, 0, -1), "constant"), ((2, 4), (2, 1, 1, 0), "reflect"),
            ((2, 3), (2, 3), "replicate"), ((2, 3), (1, 3, 2, 0), "circular"))]),
    OpSpec("contiguous", lambda x: np.array(x, order="C"), _gen(*[(a, None, str(a)) for a in _NUMERIC_SHAPES]),
           dtypes=ALL, method="contiguous"),
    OpSpec("clone", np.copy, _gen(*[(a, None, str(a)) for a in _NUMERIC_SHAPES]), dtypes=ALL, method="clone"),
)


# ---- [compat s3] more shape, joining, splitting and strided functions ---------------------------------------
def _ref_block_diag(*xs):
    mats = [x.reshape(1, -1) if x.ndim < 2 else x for x in xs]
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)), np.result_type(*mats))
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def _ref_combinations(x, r=2, with_replacement=False):
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [list(c) for c in pick(x.tolist(), r)]
    return np.array(rows, x.dtype).reshape(len(rows), r) if r else np.array([], x.dtype)


def _ref_tensor_split(x, spec, dim=0):
    if isinstance(spec, np.ndarray):
        spec = int(spec) if spec.ndim == 0 else spec.tolist()
    parts = np.array_split(x, spec, axis=dim) if isinstance(spec, int) else np.split(x, spec, axis=dim)
    return tuple(parts)


def _ref_split_with_sizes(x, sizes, dim=0):
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


def _ref_diff(x, n=1, dim=-1, prepend=None, append=None):
    kwargs = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    if n == 0:
        parts = [p for p in (prepend, x, append) if p is not None]
        return np.concatenate(parts, axis=dim)
    return np.diff(x, n, axis=dim, **kwargs)


def _ref_repeat_interleave(x, repeats=None, dim=None, output_size=None):
    if repeats is None:  # repeat_interleave(repeats): int32 repeats give int32 indices, others int64
        return np.repeat(np.arange(x.size, dtype=np.int32 if x.dtype == np.int32 else np.int64), x)
    return np.repeat(x, repeats, axis=dim)


def _ref_vander(x, N=None, increasing=False):
    if x.dtype.kind != "f":
        x = x.astype(np.int64)
    return np.vander(x, N, increasing=increasing).astype(x.dtype)


def _strided_index(size, stride, offset):
    index = np.full(size, offset, np.int64)
    for d, (s, st) in enumerate(zip(size, stride)):
        index += (np.arange(s) * st).reshape((s,) + (1,) * (len(size) - d - 1))
    return index


def _ref_as_strided(x, size, stride, storage_offset=0):
    return x.reshape(-1)[_strided_index(size, stride, storage_offset)]


def _ref_as_strided_scatter(x, src, size, stride, storage_offset=0):
    out = x.copy().reshape(-1)
    out[_strided_index(size, stride, storage_offset)] = src
    return out.reshape(x.shape)


def _ref_unfold(x, dimension, size, step):
    if x.ndim == 0:
        return x.reshape(1)[:size]
    dimension %= x.ndim
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dimension)
    index = [slice(None)] * windows.ndim
    index[dimension] = slice(None, None, step)
    return windows[tuple(index)]


def _ref_slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _ref_select(x, dim, index):
    return np.take(x, index, axis=dim)


def _sequence(fn):
    """``fn(tensors)`` called as ``op(*tensors)``, so gradcheck sees each tensor."""
    return lambda *tensors, **kwargs: fn(tensors, **kwargs)


def _int_array(*values):
    return np.array(values, np.int64).reshape(-1) if len(values) != 1 else np.array(values[0], np.int64)


_STACKING = ((S(3,), S(3,)), (S(2, 3), S(2, 3)), (S(), S()), (S(2, 3, 2), S(2, 3, 2)))

register(
    *[OpSpec(f"atleast_{k}d", ref, _gen(*[((S(*([2] * n)),), None, f"{n}d") for n in range(5)]), dtypes=ALL)
      for k, ref in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d))],
    OpSpec("block_diag", _ref_block_diag, _gen(
        ((S(), S(2,), S(2, 3)), None, "mixed"), ((S(2, 2),), None, "one"), ((S(0, 2), S(2, 0)), None, "empty"),
        ((S(1, 3), S(3, 1)), None, "rows")), dtypes=ALL, gradgrad=True),
    OpSpec("broadcast_tensors", lambda *xs: tuple(np.broadcast_arrays(*xs)), _gen(
        ((S(3, 1), S(4)), None, "two"), ((S(), S(2, 3), S(3)), None, "three"), ((S(2, 0), S(1, 1)), None, "empty"),
        ((S(2, 3),), None, "one")), dtypes=ALL),
    OpSpec("cartesian_prod", lambda *xs: np.array(list(itertools.product(*xs)), xs[0].dtype).reshape(
        -1, len(xs)) if len(xs) > 1 else xs[0], _gen(
        ((S(2), S(3)), None, "two"), ((S(2), S(1), S(2)), None, "three"), ((S(3),), None, "one"),
        ((S(2), S(0)), None, "empty")), dtypes=ALL),
    OpSpec("combinations", _ref_combinations, _gen(
        ((S(4),), None, "pairs"), ((S(4), 3), None, "triples"), ((S(3), 2, True), None, "replacement"),
        ((S(3), 0), None, "r0"), ((S(2), 3), None, "too_long")), dtypes=ALL),
    OpSpec("meshgrid", lambda *xs, indexing: tuple(np.meshgrid(*xs, indexing=indexing)), _gen(
        ((S(2), S(3)), {"indexing": "ij"}, "ij"), ((S(2), S(3), S(4)), {"indexing": "xy"}, "xy"),
        ((S(), S(3)), {"indexing": "ij"}, "0d"), ((S(3),), {"indexing": "xy"}, "one")), dtypes=ALL),
    OpSpec("column_stack", lambda *xs: np.column_stack(xs), _gen(*[(a, None, str(len(a[0]))) for a in _STACKING]),
           dtypes=ALL, op=_sequence(flow.column_stack)),
    OpSpec("hstack", lambda *xs: np.hstack(xs), _gen(*[(a, None, str(len(a[0]))) for a in _STACKING]),
           dtypes=ALL, op=_sequence(flow.hstack)),
    OpSpec("vstack", lambda *xs: np.vstack(xs), _gen(*[(a, None, str(len(a[0]))) for a in _STACKING]),
           dtypes=ALL, op=_sequence(flow.vstack)),
    OpSpec("row_stack", lambda *xs: np.vstack(xs), _gen(((S(3,), S(2, 3)), None, "mixed")), dtypes=ALL,
           op=_sequence(flow.row_stack)),
    OpSpec("dstack", lambda *xs: np.dstack(xs), _gen(*[(a, None, str(len(a[0]))) for a in _STACKING]),
           dtypes=ALL, op=_sequence(flow.dstack)),
    OpSpec("concatenate", lambda *xs, axis=0: np.concatenate(xs, axis=axis), _gen(
        ((S(2, 3), S(2, 1)), {"axis": 1}, "axis"), ((S(2, 3), S(1, 3)), None, "default")), dtypes=ALL,
        op=lambda *ts, axis=0: flow.concatenate(ts, axis=axis)),
    OpSpec("tensor_split", _ref_tensor_split, _gen(
        ((S(7, 4), 3), None, "sections"), ((S(7, 4), [1, 5], 0), None, "indices"),
        ((S(3, 4), [3, 1], 1), None, "unsorted"), ((S(3, 4), [-1, 9], -1), None, "negative_and_big"),
        ((S(0, 2), 2), None, "empty")), dtypes=ALL, method="tensor_split", gradgrad=True),
    OpSpec("tensor_split_tensor", _ref_tensor_split, _gen(
        ((S(5,), _int_array(2)), None, "sections"), ((S(5, 2), _int_array(1, 3)), None, "indices")), dtypes=ALL,
        op=flow.tensor_split, meta=False),
    *[OpSpec(name, ref, _gen(*cases), dtypes=ALL, method=name) for name, ref, cases in (
        ("hsplit", np.hsplit, (((S(3, 4), 2), None, "2d"), ((S(6,), 3), None, "1d"), ((S(3, 4), [1, 3]), None,
                                                                                     "indices"))),
        ("vsplit", np.vsplit, (((S(4, 3), 2), None, "2d"), ((S(3, 4), [2]), None, "indices"))),
        ("dsplit", np.dsplit, (((S(2, 3, 4), 2), None, "3d"), ((S(2, 3, 4), [1, 3]), None, "indices"))))],
    OpSpec("split_with_sizes", _ref_split_with_sizes, _gen(
        ((S(5, 4), [1, 0, 4]), None, "sizes"), ((S(5, 4), (2, 2), -1), None, "dim")), dtypes=ALL,
        method="split_with_sizes"),
    OpSpec("unsafe_split", _ref_split, _gen(((S(5, 4), 2), None, "size"), ((S(5, 4), 3, 1), None, "dim1")),
           dtypes=ALL, method="unsafe_split"),
    OpSpec("unsafe_chunk", _ref_chunk, _gen(((S(5, 4), 2), None, "2"), ((S(5, 4), 3, -1), None, "dim")),
           dtypes=ALL, method="unsafe_chunk"),
    OpSpec("unsafe_split_with_sizes", _ref_split_with_sizes, _gen(((S(5, 4), [1, 4]), None, "sizes")), dtypes=ALL,
           method="unsafe_split_with_sizes"),
    *[OpSpec(name, np.moveaxis, _gen(
        ((S(2, 3, 4), 0, 2), None, "int"), ((S(2, 3, 4), (0, 1), (2, 0)), None, "tuple"),
        ((S(2, 3, 4), -1, 0), None, "negative"), ((S(2, 0, 3), (1,), (0,)), None, "empty")), dtypes=ALL,
        method=name) for name in ("movedim", "moveaxis")],
    *[OpSpec(name, np.swapaxes, _gen(((S(2, 3, 4), 0, 2), None, "3d"), ((S(3, 4), -1, 0), None, "2d")), dtypes=ALL,
             method=name) for name in ("swapaxes", "swapdims")],
    OpSpec("adjoint", lambda x: np.swapaxes(x, -2, -1), _gen(((S(3, 4),), None, "2d"), ((S(2, 3, 4),), None, "3d")),
           dtypes=ALL, method="adjoint"),
    OpSpec("ravel", np.ravel, _gen(*[(a, None, str(a)) for a in _NUMERIC_SHAPES]), dtypes=ALL, method="ravel"),
    OpSpec("rot90", lambda x, k=1, dims=(0, 1): np.rot90(x, k, axes=dims), _gen(
        ((S(3, 4),), None, "default"), ((S(3, 4), 2), None, "k2"), ((S(3, 4), -1), None, "k-1"),
        ((S(2, 3, 4), 3, [2, 0]), None, "dims"), ((S(3, 4), 4), None, "k4"), ((S(0, 3), 1), None, "empty")),
        dtypes=ALL, method="rot90"),
    OpSpec("fliplr", np.fliplr, _gen(((S(3, 4),), None, "2d"), ((S(2, 3, 4),), None, "3d")), dtypes=ALL,
           method="fliplr"),
    OpSpec("flipud", np.flipud, _gen(((S(3),), None, "1d"), ((S(3, 4),), None, "2d")), dtypes=ALL,
           method="flipud"),
    OpSpec("diff", _ref_diff, _gen(
        ((S(5),), None, "1d"), ((S(3, 4), 2, 0), None, "n2"), ((S(3, 4), 1, -1, S(3, 2), S(3, 1)), None, "pend"),
        ((S(3, 4), 0), None, "n0"), ((S(3, 2), 3), None, "long"), ((S(0, 3),), None, "empty")), dtypes=ALL,
        method="diff"),
    OpSpec("repeat_interleave", _ref_repeat_interleave, _gen(
        ((S(3, 4), 2), None, "int_flat"), ((S(3, 4), 2, 1), None, "int_dim"), ((S(), 3), None, "0d"),
        ((S(0, 2), 2, 0), None, "empty")), dtypes=ALL, method="repeat_interleave", gradgrad=True),
    OpSpec("repeat_interleave_tensor", _ref_repeat_interleave, _gen(
        ((S(3, 4), _int_array(1, 0, 2), 0), None, "tensor"), ((S(3, 4), _int_array(3), -1), None, "tensor_0d"),
        ((S(3, 2), _int_array(2, 1, 1, 0, 3, 1)), None, "flat")), dtypes=ALL, op=flow.repeat_interleave,
        meta=False),
    OpSpec("repeat_interleave_indices", _ref_repeat_interleave, lambda dtype: [
        Sample((np.array([1, 0, 3], dtype.np_dtype),), name="counts"), Sample((np.zeros(0, dtype.np_dtype),),
                                                                              name="empty")],
        dtypes=INTS, differentiable=False, op=flow.repeat_interleave, meta=False,
        unsupported_error=NotImplementedError),
    OpSpec("vander", _ref_vander, _gen(
        ((S(3),), None, "square"), ((S(4), 2, True), None, "increasing"), ((S(2), 0), None, "N0"),
        ((S(0),), None, "empty")), dtypes=ALL),
    OpSpec("constant_pad_nd", lambda x, pad, value=0: _ref_pad(x, pad, "constant", value), _gen(
        ((S(2, 3), (1, 2)), None, "last"), ((S(2, 3), (1, 0, 0, 2), 1), None, "value"),
        ((S(4, 5), (-1, 2)), None, "crop")), dtypes=ALL),
    OpSpec("select", _ref_select, _gen(
        ((S(3, 4), 0, 1), None, "dim0"), ((S(3, 4), -1, -1), None, "negative"), ((S(2, 0, 3), 2, 2), None,
                                                                               "empty")),
        dtypes=ALL, method="select", gradgrad=True),
    OpSpec("as_strided", _ref_as_strided, _gen(
        ((S(3, 4), (2, 2), (1, 2)), None, "transposed"), ((S(3, 4), (3, 3), (2, 1), 1), None, "overlap"),
        ((S(6,), (2, 3), (0, 1)), None, "stride0"), ((S(3, 4), (0, 2), (1, 1)), None, "empty"),
        ((S(5,), (), (), 4), None, "0d")), dtypes=ALL, method="as_strided", gradgrad=True),
    OpSpec("as_strided_scatter", _ref_as_strided_scatter, _gen(
        ((S(3, 4), S(2, 2), (2, 2), (1, 2)), None, "transposed"), ((S(6,), S(2, 2), (2, 2), (2, 1), 1), None,
                                                                    "offset"),
        ((S(3, 4), S(0, 2), (0, 2), (1, 1)), None, "empty")), dtypes=ALL, method="as_strided_scatter",
        gradgrad=True),
    OpSpec("unfold_tensor", _ref_unfold, _gen(
        ((S(7,), 0, 3, 2), None, "1d"), ((S(3, 4), 1, 2, 1), None, "overlap"), ((S(3, 5), -2, 2, 2), None, "dim0"),
        ((S(), 0, 1, 1), None, "0d"), ((S(3, 4), 1, 0, 2), None, "size0")), dtypes=ALL,
        op=lambda x, *a: x.unfold(*a), gradgrad=True),
    OpSpec("narrow_copy", _ref_narrow, _gen(((S(5, 4), 0, 1, 3), None, "dim0"), ((S(5, 4), -1, -2, 2), None,
                                                                                 "negative")),
           dtypes=ALL, method="narrow_copy"),
    *[OpSpec(name, ref, _gen(*cases), dtypes=ALL, differentiable=name != "detach_copy") for name, ref, cases in (
        ("alias_copy", np.copy, (((S(3, 4),), None, "2d"),)),
        ("detach_copy", np.copy, (((S(3, 4),), None, "2d"),)),
        ("as_strided_copy", _ref_as_strided, (((S(3, 4), (2, 2), (1, 2), 1), None, "2d"),)),
        ("expand_copy", _ref_expand, (((S(3, 1), (2, 3, 4)), None, "stretch"),)),
        ("permute_copy", np.transpose, (((S(2, 3, 4), (2, 0, 1)), None, "3d"),)),
        ("select_copy", _ref_select, (((S(3, 4), 1, 2), None, "2d"),)),
        ("slice_copy", _ref_slice, (((S(5, 4), 0, 1, 4, 2), None, "step"), ((S(5, 4), 1, -3), None, "negative"),
                                    ((S(5, 4),), None, "default"))),
        ("split_copy", _ref_split, (((S(5, 4), 2), None, "size"),)),
        ("split_with_sizes_copy", _ref_split_with_sizes, (((S(5, 4), [1, 4]), None, "sizes"),)),
        ("squeeze_copy", _ref_squeeze, (((S(1, 3, 1),), None, "all"), ((S(1, 3, 1), (0, 2)), None, "dims"))),
        ("t_copy", lambda x: x.T, (((S(3, 4),), None, "2d"),)),
        ("transpose_copy", np.swapaxes, (((S(2, 3, 4), 0, 2), None, "3d"),)),
        ("unbind_copy", lambda x, dim=0: tuple(_moved(x, dim)), (((S(3, 4), 1), None, "dim1"),)),
        ("unfold_copy", _ref_unfold, (((S(7,), 0, 3, 2), None, "1d"),)),
        ("unsqueeze_copy", np.expand_dims, (((S(3, 4), 1), None, "mid"),)),
        ("view_copy", lambda x, shape: x.reshape(shape), (((S(3, 4), (2, 6)), None, "2d"),)))],
)
