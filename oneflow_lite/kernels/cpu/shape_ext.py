"""cpu kernels of the strided views (ops/shape_ext.py).

``as_strided`` and ``unfold_tensor`` return views of the input's storage (Note [Storage of a tensor]); the
other kernels work on a virtual storage (Note [Strided ops and virtual storage] in ops/shape_ext.py).
"""

import numpy as np

from oneflow_lite.framework.storage import array_geometry, required_size, storage_array, storage_index, strided_view
from oneflow_lite.kernels.registration import cpu_kernel


def _extent(*indices) -> int:
    """The size of a virtual storage holding every position in ``indices``."""
    return max([int(i.max()) + 1 for i in indices if i.size] or [0])


def _placed(x, index, n):
    """A virtual storage of ``n`` elements holding ``x`` at ``index`` (zeros elsewhere)."""
    storage = np.zeros(n, x.dtype)
    storage[index] = x
    return storage


@cpu_kernel("as_strided")
def as_strided_cpu(ctx, x):
    a = ctx.attrs
    size, stride, offset = a["size"], a["stride"], a["storage_offset"]
    flat = storage_array(x)
    if flat is not None and array_geometry(x) == (tuple(a["in_stride"]), a["in_offset"]):
        need = required_size(size, stride, offset)
        if need > flat.size:
            item = flat.itemsize
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
                               f"and itemsize {item} requiring a storage size of {need * item} are out of "
                               f"bounds for storage of size {flat.size * item}")
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
