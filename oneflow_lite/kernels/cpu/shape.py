"""cpu kernels of shape ops.

Note [Shape ops and views]
The ops PyTorch returns as views return NumPy views of their input here, so the
result shares memory (and, through the eager interpreter, the version counter)
with the input: ``transpose`` (also permute / t), ``slice`` (also narrow),
``expand`` (a read-only broadcast view, as writing to it would write one element
many times), ``split`` and ``unbind`` (one view per output), and ``reshape``,
``flatten``, ``squeeze``, ``expand_dims`` when the input's strides allow it
(always for a contiguous input; otherwise a copy, like ``torch.reshape``). The
others copy, as in PyTorch: ``cat``, ``stack``, ``repeat``, ``flip``, ``roll``,
``tril``, ``triu``, ``pad``, ``pad_grad``.
"""

import numpy as np

from oneflow_lite.framework.dtype import float16
from oneflow_lite.framework.storage import array_geometry, required_size, storage_array, storage_index, strided_view
from oneflow_lite.kernels.registration import cpu_kernel


@cpu_kernel("reshape")
def reshape_cpu(ctx, x):
    return x.reshape(ctx.out_metas[0].shape)


@cpu_kernel("transpose")
def transpose_cpu(ctx, x):
    return x.transpose(ctx.attrs["perm"])


@cpu_kernel("slice")
def slice_cpu(ctx, x):
    attrs = ctx.attrs
    # The leading Ellipsis keeps a 0-d result an array view (``x[()]`` would give a NumPy scalar).
    return x[(Ellipsis, *map(slice, attrs["start"], attrs["stop"], attrs["step"]))]


def _reshape_to_output(ctx, x):
    return x.reshape(ctx.out_metas[0].shape)


for _op in ("flatten", "squeeze", "expand_dims"):
    cpu_kernel(_op)(_reshape_to_output)


@cpu_kernel("expand")
def expand_cpu(ctx, x):
    return np.broadcast_to(x, ctx.out_metas[0].shape)


@cpu_kernel("repeat")
def repeat_cpu(ctx, x):
    return np.tile(x, ctx.attrs["repeats"])


@cpu_kernel("cat")
def cat_cpu(ctx, *xs):
    return np.concatenate(xs, axis=ctx.attrs["axis"])


@cpu_kernel("stack")
def stack_cpu(ctx, *xs):
    return np.stack(xs, axis=ctx.attrs["axis"])


def _outputs(arrays):
    """A kernel's result: the array itself for one output, else the tuple."""
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


@cpu_kernel("split")
def split_cpu(ctx, x):
    """Views of ``x`` by basic slicing along ``axis`` (np.split's Python layers cost more than the slices)."""
    attrs = ctx.attrs
    lead = (slice(None),) * attrs["axis"]
    pieces, start = [], 0
    for size in attrs["sizes"]:
        pieces.append(x[(*lead, slice(start, start + size))])
        start += size
    return _outputs(pieces)


@cpu_kernel("unbind")
def unbind_cpu(ctx, x):
    return _outputs(list(np.moveaxis(x, ctx.attrs["axis"], 0)))


@cpu_kernel("flip")
def flip_cpu(ctx, x):
    return np.flip(x, ctx.attrs["dims"]).copy()


@cpu_kernel("roll")
def roll_cpu(ctx, x):
    attrs = ctx.attrs
    dims = attrs["dims"]
    return np.roll(x, attrs["shifts"] if dims else attrs["shifts"][0], axis=dims or None)


@cpu_kernel("tril")
def tril_cpu(ctx, x):
    return np.tril(x, ctx.attrs["diagonal"])


@cpu_kernel("triu")
def triu_cpu(ctx, x):
    return np.triu(x, ctx.attrs["diagonal"])


def _constant_regions(shape, before, after):
    """(region of the unpadded tensor, region of the padded one) that hold the same values."""
    inner, outer = [], []
    for s, b, a in zip(shape, before, after):
        lo, hi = max(0, -b), s - max(0, -a)  # negative padding crops
        inner.append(slice(lo, max(lo, hi)))
        outer.append(slice(max(0, b), max(0, b) + max(0, hi - lo)))
    return tuple(inner), tuple(outer)


def _source_index(mode, n, before, after):
    """For each position of a dim of size ``n`` padded by ``before`` / ``after``, the input index it copies."""
    p = np.arange(-before, n + after)
    if mode == "reflect":
        p = np.abs(p)
        return np.where(p >= n, 2 * (n - 1) - p, p)
    if mode == "replicate":
        return np.clip(p, 0, n - 1)
    return p % n  # circular


@cpu_kernel("pad")
def pad_cpu(ctx, x):
    """See Note [Pad modes]."""
    attrs = ctx.attrs
    before, after = attrs["padding_before"], attrs["padding_after"]
    mode = attrs["mode"]
    if mode == "constant":
        m = ctx.out_metas[0]
        y = np.full(m.shape, attrs["value"], dtype=m.np_dtype)  # cast as Tensor.fill_ does (checked by infer)
        inner, outer = _constant_regions(x.shape, before, after)
        y[outer] = x[inner]
        return y
    y = x
    for d, (n, b, a) in enumerate(zip(x.shape, before, after)):
        if b or a:
            y = np.take(y, _source_index(mode, n, b, a), axis=d)
    return y.copy() if y is x else y


@cpu_kernel("pad_grad")
def pad_grad_cpu(ctx, dy):
    """The gradient of ``pad``: each element of ``dy`` is added to the input element it was copied from."""
    attrs = ctx.attrs
    before, after = attrs["padding_before"], attrs["padding_after"]
    m = ctx.out_metas[0]
    if attrs["mode"] == "constant":
        dx = np.zeros(m.shape, m.np_dtype)
        inner, outer = _constant_regions(m.shape, before, after)
        dx[inner] = dy[outer]
        return dx
    acc_dtype = np.float32 if m.dtype is float16 else m.np_dtype
    g = dy
    for d, (n, b, a) in enumerate(zip(m.shape, before, after)):
        if b or a:
            moved = np.moveaxis(g, d, 0)
            acc = np.zeros((n, *moved.shape[1:]), acc_dtype)
            np.add.at(acc, _source_index(attrs["mode"], n, b, a), moved)
            g = np.moveaxis(acc, 0, d)
    return g.astype(m.np_dtype)  # a copy: never dy itself


@cpu_kernel("slice_grad")
def slice_grad_cpu(ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    dx = np.zeros(m.shape, m.np_dtype)
    dx[tuple(map(slice, attrs["start"], attrs["stop"], attrs["step"]))] = dy
    return dx


# ---- strided views (as_strided, as_strided_scatter, Tensor.unfold) ------------------------------
# cpu kernels of the strided views (ops/shape.py).
#
# ``as_strided`` and ``unfold_tensor`` return views of the input's storage (Note [Storage of a tensor]); the
# other kernels work on a virtual storage (Note [Strided ops and virtual storage] in ops/shape.py).


def _extent(*indices) -> int:
    """The size of a virtual storage holding every position in ``indices``."""
    return max([int(i.max()) + 1 for i in indices if i.size] or [0])


def _placed(x, index, n):
    """A virtual storage of ``n`` elements holding ``x`` at ``index`` (zeros elsewhere)."""
    storage = np.zeros(n, x.dtype)
    storage[index] = x
    return storage


def _own_storage(op, x, a):
    """``x``'s storage when the functor saw its geometry (else None), checked to hold the requested view (PyTorch's
    setStorage error otherwise)."""
    flat = storage_array(x)
    if flat is None or array_geometry(x) != (tuple(a["in_stride"]), a["in_offset"]):
        return None
    size, stride, offset = a["size"], a["stride"], a["storage_offset"]
    need = required_size(size, stride, offset)
    if need > flat.size:
        item = flat.itemsize
        raise RuntimeError(f"{op}: setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
                           f"and itemsize {item} requiring a storage size of {need * item} are out of "
                           f"bounds for storage of size {flat.size * item}")
    return flat


@cpu_kernel("as_strided")
def as_strided_cpu(ctx, x):
    a = ctx.attrs
    size, stride, offset = a["size"], a["stride"], a["storage_offset"]
    flat = _own_storage("as_strided", x, a)
    if flat is not None:
        return strided_view(flat, size, stride, offset)
    # no storage to view (or not the one the functor saw): read a virtual one
    in_index = storage_index(x.shape, a["in_stride"], a["in_offset"])
    out_index = storage_index(size, stride, offset)
    return _placed(x, in_index, _extent(in_index, out_index))[out_index]


@cpu_kernel("strided_remap")
def strided_remap_cpu(ctx, x):
    a = ctx.attrs
    src = storage_index(x.shape, a["src_stride"], a["src_offset"]).reshape(-1)
    dst = storage_index(ctx.out_metas[0].shape, a["dst_stride"], a["dst_offset"])
    n = _extent(src, dst)
    values = x.reshape(-1)
    if a["divide_src"]:
        values = values / np.bincount(src, minlength=n)[src]
    storage = np.zeros(n, x.dtype)
    np.add.at(storage, src, values)
    out = storage[dst]
    if a["divide_dst"]:
        out = out / np.bincount(dst.reshape(-1), minlength=n)[dst]
    return out.astype(x.dtype, copy=False)


@cpu_kernel("as_strided_scatter")
def as_strided_scatter_cpu(ctx, x, src):
    a = ctx.attrs
    _own_storage("as_strided_scatter", x, a)
    in_index = storage_index(x.shape, a["in_stride"], a["in_offset"])
    out_index = storage_index(a["size"], a["stride"], a["storage_offset"])
    storage = _placed(x, in_index, _extent(in_index, out_index))
    storage[out_index] = src
    return storage[in_index]


# ---- Tensor.unfold ----------------------------------------------------------------------------------------
def _window_count(length, size, step):
    return (length - size) // step + 1


@cpu_kernel("unfold_tensor")
def unfold_tensor_cpu(ctx, x):
    a = ctx.attrs
    dim, size, step = a["dimension"], a["size"], a["step"]
    if x.ndim == 0:
        return x.reshape(1)[:size]
    n = _window_count(x.shape[dim], size, step)
    shape = (*x.shape[:dim], n, *x.shape[dim + 1:], size)
    flat = storage_array(x)
    if flat is not None:
        strides, offset = array_geometry(x)
        return strided_view(flat, shape, (*strides[:dim], strides[dim] * step, *strides[dim + 1:], strides[dim]),
                            offset)
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
    index = [slice(None)] * windows.ndim
    index[dim] = slice(None, None, step)
    return windows[tuple(index)].copy()


@cpu_kernel("unfold_tensor_grad")
def unfold_tensor_grad_cpu(ctx, dy):
    a = ctx.attrs
    dim, size, step = a["dimension"], a["size"], a["step"]
    like = tuple(a["like_shape"])
    dx = np.zeros(like, dy.dtype)
    if not like:
        dx.reshape(1)[:size] += dy
        return dx
    n = _window_count(like[dim], size, step)
    index = np.arange(n)[:, None] * step + np.arange(size)  # (window, offset) -> position along dim
    np.add.at(np.moveaxis(dx, dim, -1), (Ellipsis, index), np.moveaxis(dy, dim, -2))
    return dx


@cpu_kernel("view_dtype")
def view_dtype_cpu(ctx, x):
    """``Tensor.view(dtype)``: NumPy's reinterpreting view (the functor checked the strides)."""
    return x.view(ctx.out_metas[0].np_dtype)
