"""cpu kernels of the convolution, pooling, unpooling, im2col / col2im and upsampling ops (Notes [Convolution
ops], [Pooling ops], [Max pooling family], [im2col and col2im] and [Interpolation taps] in ops/conv.py).

Convolutions are im2col: ``sliding_window_view`` of the padded input, one copy into
``(groups, N * positions, C / groups * kernel)`` columns and a batched matmul per group; the input gradient
(col2im) adds one strided slice per kernel offset. Pooling takes the same windows; adaptive and fractional
pooling gather their windows of varying start with index arrays. Upsampling gathers along one spatial axis at a
time and its gradient scatters back by runs of equal indices. float16 computes in float32 and rounds once, as
PyTorch's cpu kernels accumulate half in float; so do the convolutions in bfloat16 (autocast's lower-precision
convolutions, Note [bfloat16 through float32] in kernels/cpu/bfloat16.py).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.dtype import FLOATING_DTYPES, INTEGRAL_DTYPES, bfloat16
from oneflow_lite.kernels.registration import cpu_kernel

_F16 = np.dtype(np.float16)
_BF16 = bfloat16.np_dtype
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_prod = math.prod
_zeros = np.zeros
_matmul = np.matmul
_add_at = np.add.at


def _quiet(kernel):
    """``kernel`` without NumPy's floating-point warnings: inf and nan propagate silently, as in PyTorch."""
    @functools.wraps(kernel)
    def run(ctx, *arrays):
        with np.errstate(all="ignore"):
            return kernel(ctx, *arrays)
    return run


def _compute_dtype(a):
    d = a.dtype
    return _F32 if d == _F16 or d == _BF16 else d


def _pad(x, before, after, value=0):
    """``x`` padded on its trailing ``len(before)`` dims."""
    if not any(before) and not any(after):
        return x
    return np.pad(x, ((0, 0),) * (x.ndim - len(before)) + tuple(zip(before, after)), constant_values=value)


def _steps(start, count, step):
    """The slice of ``count`` positions ``start, start + step, ...``."""
    return slice(start, start + (count - 1) * step + 1, step) if count else slice(0, 0)


def _windows(xp, kernel, strides, dilation, out_size):
    """A view ``(..., *out_size, *kernel)``: the window of every output position of the padded ``xp``."""
    nd = len(kernel)
    eff = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    v = sliding_window_view(xp, eff, axis=tuple(range(xp.ndim - nd, xp.ndim)))
    return v[(Ellipsis, *(_steps(0, o, s) for o, s in zip(out_size, strides)),
              *(slice(None, None, d) for d in dilation))]


# ---- convolution ---------------------------------------------------------------------------------
# Note [im2col layout]
# Columns are ``(groups, C / groups * prod(kernel), N * prod(out_size))`` so that every product is one
# un-broadcast batched matmul over the groups (NumPy's broadcasting matmul is several times slower), the window
# copy reads along output positions, and col2im adds slices whose inner dims are contiguous in both arrays.
def _im2col(x, kernel, attrs, out_size):
    nd = len(kernel)
    n, c = x.shape[:2]
    g = attrs["groups"]
    cols = _windows(_pad(x, attrs["padding_before"], attrs["padding_after"]), kernel, attrs["strides"],
                    attrs["dilation_rate"], out_size)
    cols = cols.reshape(n, g, c // g, *out_size, *kernel)
    cols = cols.transpose(1, 2, *range(3 + nd, 3 + 2 * nd), 0, *range(3, 3 + nd))
    return cols.reshape(g, c // g * _prod(kernel), n * _prod(out_size))


def _dy_rows(dy, g):
    """``dy`` ``(N, O, *out)`` as ``(groups, O / groups, N * prod(out))``."""
    n, o = dy.shape[:2]
    p = _prod(dy.shape[2:])
    return dy.reshape(n, g, o // g, p).transpose(1, 2, 0, 3).reshape(g, o // g, n * p)


def conv_cpu(ctx, x, w, b=None):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    ct = _compute_dtype(x)
    if ct != x.dtype:
        x, w = x.astype(ct), w.astype(ct)
    n, o = m.shape[:2]
    out_size = m.shape[2:]
    nd = len(out_size)
    g = attrs["groups"]
    cols = _im2col(x, w.shape[2:], attrs, out_size)
    y = _matmul(w.reshape(g, o // g, cols.shape[1]), cols)  # (g, O / g, N * P)
    y = np.ascontiguousarray(y.reshape(g, o // g, n, *out_size).transpose(2, 0, 1, *range(3, 3 + nd)))
    y = y.reshape(m.shape)
    if b is not None:
        y += b.astype(ct).reshape(o, *(1,) * nd)
    return y.astype(m.np_dtype, copy=False)


_FLOAT = tuple(FLOATING_DTYPES)
_CONV = _FLOAT + (bfloat16,)
for _nd in (1, 2, 3):
    cpu_kernel(f"conv{_nd}d", dtype_in("in", *_CONV))(_quiet(conv_cpu))


@cpu_kernel("conv_data_grad", dtype_in("dy", *_CONV))
@_quiet
def conv_data_grad_cpu(ctx, dy, w):
    """col2im: each input position receives ``filter^T @ dy`` from every output whose window covers it."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    ct = _compute_dtype(dy)
    if ct != dy.dtype:
        dy, w = dy.astype(ct), w.astype(ct)
    g = attrs["groups"]
    n, o = dy.shape[:2]
    cg = w.shape[1]
    kernel, out_size = w.shape[2:], dy.shape[2:]
    nd = len(kernel)
    cols = _matmul(w.reshape(g, o // g, cg * _prod(kernel)).transpose(0, 2, 1), _dy_rows(dy, g))
    cols = cols.reshape(g, cg, *kernel, n, *out_size)
    pb, pa, strides, dilation = attrs["padding_before"], attrs["padding_after"], attrs["strides"], attrs["dilation_rate"]
    in_size = attrs["input_size"]
    size = [max(i + b + e, (q - 1) * s + (k - 1) * d + 1)
            for i, b, e, q, s, k, d in zip(in_size, pb, pa, out_size, strides, kernel, dilation)]
    dxp = _zeros((g, cg, n, *size), ct)
    lead = (slice(None),) * 3
    for offs in np.ndindex(*kernel):
        dxp[(*lead, *(_steps(j * d, q, s) for j, d, q, s in zip(offs, dilation, out_size, strides)))] += \
            cols[(slice(None), slice(None), *offs)]
    dx = dxp[(*lead, *(slice(b, b + i) for b, i in zip(pb, in_size)))].transpose(2, 0, 1, *range(3, 3 + nd))
    return np.ascontiguousarray(dx).reshape(m.shape).astype(m.np_dtype, copy=False)


@cpu_kernel("conv_filter_grad", dtype_in("dy", *_CONV))
@_quiet
def conv_filter_grad_cpu(ctx, dy, x):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    ct = _compute_dtype(dy)
    if ct != dy.dtype:
        dy, x = dy.astype(ct), x.astype(ct)
    g = attrs["groups"]
    cols = _im2col(x, attrs["kernel_size"], attrs, dy.shape[2:])  # (g, C / g * K, N * P)
    return _matmul(_dy_rows(dy, g), cols.transpose(0, 2, 1)).reshape(m.shape).astype(m.np_dtype, copy=False)


# ---- max pooling ---------------------------------------------------------------------------------
def _lowest(np_dtype):
    return -np.inf if np_dtype.kind == "f" else np.iinfo(np_dtype).min


def _after_pad(in_size, out_size, kernel, strides, pad, dilation):
    """Padding after each dim so every window fits (ceil_mode windows may run past the right padding)."""
    return [max(p, (o - 1) * s + d * (k - 1) + 1 - i - p)
            for i, o, k, s, p, d in zip(in_size, out_size, kernel, strides, pad, dilation)]


def max_pool_cpu(ctx, x):
    """As PyTorch: the first maximum of each window in row-major order, the last NaN if any; a window of
    nothing but the lowest value (-inf) points at its first element inside the input."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    kernel, strides, pad, dilation = attrs["kernel_size"], attrs["stride"], attrs["padding"], attrs["dilation"]
    nd = len(kernel)
    in_size, out_size = x.shape[-nd:], m.shape[-nd:]
    lowest = _lowest(x.dtype)
    xp = _pad(x, pad, _after_pad(in_size, out_size, kernel, strides, pad, dilation), lowest)
    k = _prod(kernel)
    flat = _windows(xp, kernel, strides, dilation, out_size).reshape(*m.shape, k)
    idx = flat.argmax(-1)
    if x.dtype.kind == "f" and np.isnan(x).any():
        nan = np.isnan(flat)
        idx = np.where(nan.any(-1), (k - 1) - nan[..., ::-1].argmax(-1), idx)
    y = np.take_along_axis(flat, idx[..., None], -1)[..., 0]
    grids = [np.arange(o).reshape(-1, *(1,) * (nd - 1 - i)) for i, o in enumerate(out_size)]
    low = y == lowest
    if low.any():
        first = 0
        for i in range(nd):  # first kernel offset inside the input: o * s - p + j * d >= 0
            first = first * kernel[i] + np.maximum(0, -((grids[i] * strides[i] - pad[i]) // dilation[i]))
        idx = np.where(low, first, idx)
    offsets = np.unravel_index(idx, kernel)
    plane = 0
    for i in range(nd):
        coord = grids[i] * strides[i] - pad[i] + offsets[i] * dilation[i]
        if pad[i] and dilation[i] > 1:  # a dilated window may skip the input entirely: stay inside it
            coord = np.minimum(coord, in_size[i] - 1)
        plane = plane * in_size[i] + coord
    return y, plane.astype(_I64, copy=False)


_POOLED = tuple(INTEGRAL_DTYPES) + _FLOAT
for _nd in (1, 2, 3):
    cpu_kernel(f"max_pool{_nd}d", dtype_in("x", *_POOLED))(max_pool_cpu)


def _plane_indices(op, idx, planes, plane_size):
    """``idx`` (flat per plane) as flat indices into all ``planes``; an error for indices outside a plane."""
    if idx.size and (idx.min() < 0 or idx.max() >= plane_size):
        raise RuntimeError(f"{op}: indice holds values outside [0, {plane_size}), the size of an input plane")
    if not idx.size:
        return idx.reshape(-1).astype(_I64)
    return (idx.reshape(planes, -1) + np.arange(0, planes * plane_size, plane_size, dtype=_I64)[:, None]).ravel()


def max_pool_grad_cpu(ctx, dy, idx):
    m = ctx.out_metas[0]
    nd = len(ctx.attrs["input_size"])
    planes, plane_size = _prod(m.shape[:-nd]), _prod(m.shape[-nd:])
    dx = _zeros(planes * plane_size, dy.dtype)
    _add_at(dx, _plane_indices("max_pool_grad", idx, planes, plane_size), dy.reshape(-1))
    return dx.reshape(m.shape)


def _max_pool_gather(nd):
    def max_pool_gather_cpu(ctx, x, idx):
        planes, plane_size = _prod(x.shape[:-nd]), _prod(x.shape[-nd:])
        flat = _plane_indices("max_pool_gather", idx, planes, plane_size)
        return x.reshape(-1)[flat].reshape(idx.shape)
    return max_pool_gather_cpu


for _nd in (1, 2, 3):
    cpu_kernel(f"max_pool{_nd}d_grad", dtype_in("dy", *_FLOAT))(_quiet(max_pool_grad_cpu))
    cpu_kernel(f"max_pool{_nd}d_gather", dtype_in("x", *_FLOAT))(_max_pool_gather(_nd))


# ---- average pooling -----------------------------------------------------------------------------
def _avg_divisor(attrs, in_size, out_size, ct):
    """The divisor of every output position (broadcastable to the output), PyTorch's rule: the window clipped to
    the padded input (``count_include_pad``) or to the input, or ``divisor_override``."""
    override = attrs["divisor_override"]
    if override:
        return ct.type(override)
    kernel, strides, pad = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    nd = len(kernel)
    div = 1
    for i in range(nd):
        start = np.arange(out_size[i]) * strides[i] - pad[i]
        end = np.minimum(start + kernel[i], in_size[i] + pad[i])
        if not attrs["count_include_pad"]:
            end = np.minimum(end, in_size[i])
            start = np.maximum(start, 0)
        div = div * np.maximum(end - start, 0).reshape(-1, *(1,) * (nd - 1 - i))
    return np.maximum(div, 1).astype(ct)  # a window of padding only sums to 0: any divisor gives 0


def avg_pool_cpu(ctx, x):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    kernel, strides, pad = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    nd = len(kernel)
    in_size, out_size = x.shape[-nd:], m.shape[-nd:]
    ct = _compute_dtype(x)
    ones = (1,) * nd
    xp = _pad(x, pad, _after_pad(in_size, out_size, kernel, strides, pad, ones))
    total = _windows(xp, kernel, strides, ones, out_size).sum(axis=tuple(range(-nd, 0)), dtype=ct)
    div = _avg_divisor(attrs, in_size, out_size, ct)
    if ct.kind == "i":  # int64: C++ integer division, truncating toward zero
        q = np.abs(total) // div
        return np.where(total < 0, -q, q)
    return (total / div).astype(m.np_dtype, copy=False)


def avg_pool_grad_cpu(ctx, dy):
    """Each input position inside a window receives that window's ``dy / divisor``."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    kernel, strides, pad = attrs["kernel_size"], attrs["stride"], attrs["padding"]
    in_size = attrs["input_size"]
    nd = len(kernel)
    out_size = dy.shape[-nd:]
    ct = _compute_dtype(dy)
    g = dy.astype(ct, copy=False) / _avg_divisor(attrs, in_size, out_size, ct)
    size = [max(i + p, (o - 1) * s + k) for i, p, o, s, k in zip(in_size, pad, out_size, strides, kernel)]
    dxp = _zeros((*dy.shape[:-nd], *size), ct)
    for offs in np.ndindex(*kernel):
        dxp[(Ellipsis, *(_steps(j, o, s) for j, o, s in zip(offs, out_size, strides)))] += g
    dx = dxp[(Ellipsis, *(slice(p, p + i) for p, i in zip(pad, in_size)))]
    return dx.astype(m.np_dtype)


for _nd in (1, 2, 3):
    cpu_kernel(f"avg_pool{_nd}d", dtype_in("x", dt.int64, *_FLOAT))(_quiet(avg_pool_cpu))
    cpu_kernel(f"avg_pool{_nd}d_grad", dtype_in("dy", *_FLOAT))(_quiet(avg_pool_grad_cpu))


# ---- adaptive pooling ----------------------------------------------------------------------------
def _adaptive_windows(in_size, out_size):
    """PyTorch's adaptive windows ``[floor(o * I / O), ceil((o + 1) * I / O))`` along one axis: the indices
    ``(O, L)`` of each window padded to the longest ``L`` by repeating its last index, which of them are inside
    the window, and each window's length."""
    o = np.arange(out_size)
    start = o * in_size // out_size
    end = -(-(o + 1) * in_size // out_size)
    length = int((end - start).max()) if out_size else 0
    idx = start[:, None] + np.arange(length)
    return np.minimum(idx, end[:, None] - 1), idx < end[:, None], end - start


def _trailing(v, x, axis):
    """``v`` (indexed by positions along ``axis`` first) shaped to broadcast against ``x``'s dims from ``axis``."""
    return v.reshape(v.shape + (1,) * (x.ndim - axis - 1))


def adaptive_avg_pool_cpu(ctx, x):
    """One spatial axis at a time: the mean of each window's own elements (a masked sum, never a product with
    zeros, so a NaN or inf reaches only the windows that hold it)."""
    m = ctx.out_metas[0]
    out_size = ctx.attrs["output_size"]
    nd = len(out_size)
    if 0 in m.shape:
        return _zeros(m.shape, m.np_dtype)
    ct = _compute_dtype(x)
    y = x.astype(ct, copy=False)
    for i, o in enumerate(out_size):
        axis = y.ndim - nd + i
        n = y.shape[axis]
        if n % o == 0:  # equal windows side by side: a reshape
            y = y.reshape(*y.shape[:axis], o, n // o, *y.shape[axis + 1:]).sum(axis + 1, dtype=ct) / ct.type(n // o)
            continue
        idx, inside, count = _adaptive_windows(n, o)
        total = np.where(_trailing(inside, y, axis), y.take(idx, axis), 0).sum(axis + 1, dtype=ct)
        y = total / _trailing(count.astype(ct), total, axis)
    return y.astype(m.np_dtype, copy=False)


def adaptive_avg_pool_grad_cpu(ctx, dy):
    """The adjoint: each window's gradient over its length, added to the window's own elements."""
    m = ctx.out_metas[0]
    in_size = ctx.attrs["input_size"]
    nd = len(in_size)
    ct = _compute_dtype(dy)
    g = dy.astype(ct, copy=False)
    for i, n in enumerate(in_size):
        axis = g.ndim - nd + i
        idx, inside, count = _adaptive_windows(n, g.shape[axis])
        g = g / _trailing(np.maximum(count, 1).astype(ct), g, axis)
        out = _zeros((*g.shape[:axis], n, *g.shape[axis + 1:]), ct)
        for j in range(idx.shape[1]):  # the j-th element of every window: indices non-decreasing in o
            sel = inside[:, j]
            _sum_into(np.compress(sel, g, axis), idx[sel, j], n, axis, out)
        g = out
    return g.astype(m.np_dtype, copy=False)


for _nd in (1, 2, 3):
    cpu_kernel(f"adaptive_avg_pool{_nd}d", dtype_in("x", *_FLOAT))(_quiet(adaptive_avg_pool_cpu))
    cpu_kernel(f"adaptive_avg_pool{_nd}d_grad", dtype_in("dy", *_FLOAT))(_quiet(adaptive_avg_pool_grad_cpu))


def _window_max(windows, flat):
    """The maximum of each window (the last axis of ``windows``) and its flat index taken from ``flat``
    (broadcastable to ``windows``), by PyTorch's rule: the first maximum, or the last NaN if there is one."""
    arg = windows.argmax(-1)
    if windows.dtype.kind == "f":
        nan = np.isnan(windows)
        if nan.any():
            arg = np.where(nan.any(-1), (windows.shape[-1] - 1) - nan[..., ::-1].argmax(-1), arg)
    arg = arg[..., None]
    y = np.take_along_axis(windows, arg, -1)[..., 0]
    return y, np.take_along_axis(np.broadcast_to(flat, windows.shape), arg, -1)[..., 0].astype(_I64, copy=False)


def _gather_windows(x, lead, axes_idx, in_size):
    """``x[(*lead, *axes)]`` for per-axis window indices ``axes_idx[i]`` (``(..., O_i, K_i)``, the leading dims
    broadcasting with ``lead``): the windows ``(..., *O, prod(K))`` and their flat indices within a plane."""
    nd = len(axes_idx)
    arrays, flat = [], 0
    for i, idx in enumerate(axes_idx):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = idx.shape[-2:]
        a = idx.reshape(*idx.shape[:-2], *shape)
        arrays.append(a)
        flat = flat * in_size[i] + a
    windows = x[(*lead, *arrays)]
    out = windows.shape[:windows.ndim - nd]
    flat = np.broadcast_to(flat, flat.shape[:flat.ndim - 2 * nd] + windows.shape[windows.ndim - 2 * nd:])
    return windows.reshape(*out, -1), flat.reshape(*flat.shape[:flat.ndim - nd], -1)


def adaptive_max_pool_cpu(ctx, x):
    m = ctx.out_metas[0]
    out_size = ctx.attrs["output_size"]
    nd = len(out_size)
    if 0 in m.shape:
        return _zeros(m.shape, x.dtype), _zeros(m.shape, _I64)
    in_size = x.shape[-nd:]
    idx = [_adaptive_windows(i, o)[0] for i, o in zip(in_size, out_size)]
    windows, flat = _gather_windows(x, (Ellipsis,), idx, in_size)
    return _window_max(windows, flat)


def _fractional_starts(sample, in_size, out_size, kernel):
    """PyTorch's ``generate_intervals`` for every plane: the window starts ``(P, O)`` from one sample per plane,
    in the samples' dtype as PyTorch's kernel computes."""
    starts = np.empty((sample.shape[0], out_size), _I64)
    if out_size > 1:
        ct = sample.dtype.type
        alpha = ct(in_size - kernel) / ct(out_size - 1)
        i = np.arange(out_size - 1, dtype=sample.dtype)
        starts[:, :-1] = ((i + sample[:, None]) * alpha).astype(_I64) - (sample * alpha).astype(_I64)[:, None]
    if out_size:
        starts[:, -1] = in_size - kernel
    return starts


# PyTorch's sample of each spatial dim: (W, H) for 2-D, (T, H, W) for 3-D.
_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def fractional_max_pool_cpu(ctx, x, samples):
    m = ctx.out_metas[0]
    kernel, out_size = ctx.attrs["kernel_size"], ctx.attrs["output_size"]
    nd = len(kernel)
    if 0 in m.shape:
        return _zeros(m.shape, x.dtype), _zeros(m.shape, _I64)
    in_size = x.shape[-nd:]
    n = x.shape[0] if x.ndim == nd + 2 else 1
    planes = n * x.shape[-nd - 1]
    per_plane = samples[:n].reshape(planes, nd)
    idx = [(_fractional_starts(per_plane[:, _SAMPLE_OF_DIM[nd][i]], in_size[i], out_size[i], kernel[i])[..., None]
            + np.arange(kernel[i])) for i in range(nd)]
    rows = np.arange(planes).reshape(planes, *(1,) * (2 * nd))
    windows, flat = _gather_windows(x.reshape(planes, *in_size), (rows,), idx, in_size)
    y, indices = _window_max(windows, flat)
    return y.reshape(m.shape), indices.reshape(m.shape)


def max_unpool_cpu(ctx, x, idx):
    """Each value written at its index of a zero output plane (a later duplicate overwrites an earlier one)."""
    m = ctx.out_metas[0]
    nd = len(ctx.attrs["output_size"])
    out_size = m.shape[-nd:]
    planes, plane_size = _prod(m.shape[:-nd]), _prod(out_size)
    if not planes * plane_size:  # nothing to write: PyTorch checks no index either
        return _zeros(m.shape, x.dtype)
    if idx.size and (idx.min() < 0 or idx.max() >= plane_size):
        bad = idx[(idx < 0) | (idx >= plane_size)].flat[0]
        raise RuntimeError(f"max_unpool{nd}d: Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out_size))})")
    y = _zeros(planes * plane_size, x.dtype)
    rows = np.arange(0, planes * plane_size, plane_size, dtype=_I64)[:, None]
    y[(idx.reshape(planes, _prod(idx.shape[-nd:])) + rows).ravel()] = x.reshape(-1)
    return y.reshape(m.shape)


for _nd in (1, 2, 3):
    cpu_kernel(f"adaptive_max_pool{_nd}d", dtype_in("x", *_FLOAT))(adaptive_max_pool_cpu)
    cpu_kernel(f"max_unpool{_nd}d", dtype_in("x", *_FLOAT))(max_unpool_cpu)
for _nd in (2, 3):
    cpu_kernel(f"fractional_max_pool{_nd}d", dtype_in("x", *_FLOAT))(fractional_max_pool_cpu)


# ---- im2col / col2im -----------------------------------------------------------------------------
def _fold_blocks(in_size, attrs):
    return tuple((i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, d, p, s in
                 zip(in_size, attrs["kernel_size"], attrs["dilation_rate"], attrs["padding"], attrs["strides"]))


def im2col_cpu(ctx, x):
    """The windows of the padded input, ``(..., C, *blocks, *kernel)``, moved to ``(..., C * K, L)``."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    kernel, pad = attrs["kernel_size"], attrs["padding"]
    nd = len(kernel)
    v = _windows(_pad(x, pad, pad), kernel, attrs["strides"], attrs["dilation_rate"],
                 _fold_blocks(x.shape[-nd:], attrs))
    c_axis = x.ndim - nd - 1
    v = np.moveaxis(v, tuple(range(-nd, 0)), tuple(range(c_axis + 1, c_axis + 1 + nd)))
    return np.ascontiguousarray(v).reshape(m.shape)


def col2im_cpu(ctx, x):
    """Each kernel offset's columns added to its strided positions of the padded output, then cropped."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    kernel, pad, strides, dilation = attrs["kernel_size"], attrs["padding"], attrs["strides"], attrs["dilation_rate"]
    out_size = attrs["output_size"]
    nd = len(kernel)
    blocks = _fold_blocks(out_size, attrs)
    ct = _compute_dtype(x)
    cols = x.astype(ct, copy=False).reshape(*m.shape[:-nd], *kernel, *blocks)
    size = [max(o + 2 * p, (b - 1) * s + d * (k - 1) + 1)
            for o, p, b, s, d, k in zip(out_size, pad, blocks, strides, dilation, kernel)]
    out = _zeros((*m.shape[:-nd], *size), ct)
    for offs in np.ndindex(*kernel):
        out[(Ellipsis, *(_steps(j * d, b, s) for j, d, b, s in zip(offs, dilation, blocks, strides)))] += \
            cols[(Ellipsis, *offs, *(slice(None),) * nd)]
    return out[(Ellipsis, *(slice(p, p + o) for p, o in zip(pad, out_size)))].astype(m.np_dtype)


cpu_kernel("im2col", dtype_in("x", *_FLOAT))(im2col_cpu)
cpu_kernel("col2im", dtype_in("x", *_FLOAT))(_quiet(col2im_cpu))


# ---- upsampling ----------------------------------------------------------------------------------
def _nearest_index(in_size, out_size, scale, exact):
    """PyTorch's ``nearest_idx`` / ``nearest_exact_idx`` (float32 arithmetic, as its kernels)."""
    o = np.arange(out_size)
    if not exact and out_size == in_size:
        return o
    if not exact and out_size == 2 * in_size:
        return o >> 1
    s = np.float32(1.0 / scale) if scale > 0 else np.float32(in_size) / np.float32(out_size)
    if exact:
        src = ((o + 0.5) * np.float64(s)).astype(np.float32)
    else:
        src = o.astype(np.float32) * s
    return np.minimum(np.floor(src).astype(_I64), in_size - 1)


def _linear_weights(in_size, out_size, scale, align_corners, ct):
    """PyTorch's ``area_pixel_compute_source_index`` in the op-math dtype: indices i0, i1 and weights l0, l1."""
    if align_corners:
        s = ct.type(in_size - 1) / ct.type(out_size - 1) if out_size > 1 else ct.type(0)
        src = np.arange(out_size, dtype=ct) * s
    else:
        s = ct.type(1.0 / scale) if scale > 0 else ct.type(in_size) / ct.type(out_size)
        src = np.maximum(s * (np.arange(out_size, dtype=ct) + ct.type(0.5)) - ct.type(0.5), ct.type(0))
    i0 = np.minimum(np.floor(src).astype(_I64), in_size - 1)
    l1 = np.clip(src - i0, 0, 1).astype(ct)
    i1 = i0 + (i0 < in_size - 1)
    return i0, i1, (ct.type(1) - l1), l1


def _scales(attrs, nd):
    return attrs["scales"] or (0.0,) * nd


def upsample_nearest_cpu(ctx, x):
    attrs = ctx.attrs
    out_size = attrs["output_size"]
    nd = len(out_size)
    idx = [_nearest_index(i, o, s, attrs["exact"]) for i, o, s in zip(x.shape[2:], out_size, _scales(attrs, nd))]
    return x[(Ellipsis, *np.ix_(*idx))]


def _sum_into(values, index, size, axis, out=None):
    """``values`` summed along ``axis`` into ``size`` bins by ``index`` (non-decreasing, as every upsampling
    source index is), added to ``out`` if given: one ``add.reduceat`` over the runs of equal indices."""
    if out is None:
        out = _zeros((*values.shape[:axis], size, *values.shape[axis + 1:]), values.dtype)
    starts = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
    out[(slice(None),) * axis + (index[starts],)] += np.add.reduceat(values, starts, axis=axis)
    return out


def upsample_nearest_grad_cpu(ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    in_size = attrs["input_size"]
    nd = len(in_size)
    g = dy.astype(_compute_dtype(dy), copy=False)
    for axis, (i, o, s) in enumerate(zip(in_size, attrs["output_size"], _scales(attrs, nd)), start=2):
        g = _sum_into(g, _nearest_index(i, o, s, attrs["exact"]), i, axis)
    return g.astype(m.np_dtype, copy=False)


def _weights_shape(w, axis, ndim):
    return w.reshape(-1, *(1,) * (ndim - axis - 1))


def upsample_linear_cpu(ctx, x):
    """Linear interpolation along one axis at a time, the last first (PyTorch's order of operations)."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    out_size = attrs["output_size"]
    nd = len(out_size)
    ct = _compute_dtype(x)
    y = x.astype(ct, copy=False)
    scales = _scales(attrs, nd)
    for axis in range(nd + 1, 1, -1):
        if x.shape[axis] == out_size[axis - 2]:  # PyTorch leaves a dim of unchanged size as it is
            continue
        i0, i1, l0, l1 = _linear_weights(x.shape[axis], out_size[axis - 2], scales[axis - 2],
                                         attrs["align_corners"], ct)
        y = y.take(i0, axis) * _weights_shape(l0, axis, y.ndim) + y.take(i1, axis) * _weights_shape(l1, axis, y.ndim)
    return y.astype(m.np_dtype, copy=False)


def upsample_linear_grad_cpu(ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    in_size = attrs["input_size"]
    nd = len(in_size)
    ct = _compute_dtype(dy)
    g = dy.astype(ct, copy=False)
    scales = _scales(attrs, nd)
    for axis in range(2, nd + 2):
        i = in_size[axis - 2]
        if i == dy.shape[axis]:
            continue
        i0, i1, l0, l1 = _linear_weights(i, dy.shape[axis], scales[axis - 2], attrs["align_corners"], ct)
        acc = _sum_into(g * _weights_shape(l0, axis, g.ndim), i0, i, axis)
        g = _sum_into(g * _weights_shape(l1, axis, g.ndim), i1, i, axis, acc)
    return g.astype(m.np_dtype, copy=False)


cpu_kernel("upsample_nearest", dtype_in("x", dt.uint8, *_FLOAT))(upsample_nearest_cpu)
cpu_kernel("upsample_nearest_grad", dtype_in("dy", *_FLOAT))(_quiet(upsample_nearest_grad_cpu))
cpu_kernel("upsample_linear", dtype_in("x", *_FLOAT))(_quiet(upsample_linear_cpu))
cpu_kernel("upsample_linear_grad", dtype_in("dy", *_FLOAT))(_quiet(upsample_linear_grad_cpu))


# ---- bicubic and anti-aliased upsampling (Note [Interpolation taps] in ops/conv.py) --------------
def _area_scale(in_size, out_size, scale, align_corners, ct):
    """PyTorch's ``area_pixel_compute_scale`` in the op-math dtype."""
    if align_corners:
        return ct.type(in_size - 1) / ct.type(out_size - 1) if out_size > 1 else ct.type(0)
    return ct.type(1.0 / scale) if scale > 0 else ct.type(in_size) / ct.type(out_size)


def _cubic_near(x, a):
    """The cubic convolution kernel for ``|x| < 1``."""
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic_far(x, a):
    """The cubic convolution kernel for ``1 <= |x| < 2``."""
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _bicubic_taps(in_size, out_size, scale, align_corners, filter_, ct):
    """``upsample_bicubic2d``'s four taps per output (clamped into the input) and weights (A = -0.75)."""
    s = _area_scale(in_size, out_size, scale, align_corners, ct)
    o = np.arange(out_size, dtype=ct)
    real = s * o if align_corners else s * (o + ct.type(0.5)) - ct.type(0.5)
    i0 = np.minimum(np.floor(real).astype(_I64), in_size - 1)
    t = np.clip(real - i0, 0, 1).astype(ct)
    a = ct.type(-0.75)
    one = ct.type(1)
    w = np.stack([_cubic_far(t + one, a), _cubic_near(t, a), _cubic_near(one - t, a), _cubic_far(2 * one - t, a)], 1)
    return np.clip(i0[:, None] + np.arange(-1, 3), 0, in_size - 1), w, None


def _aa_bilinear(x):
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0)


def _aa_bicubic(x):
    """Pillow's bicubic filter (a = -0.5), as PyTorch's anti-aliased bicubic."""
    x = np.abs(x)
    a = x.dtype.type(-0.5)
    return np.where(x < 1, _cubic_near(x, a), np.where(x < 2, _cubic_far(x, a), 0))


def _aa_lanczos(x):
    """Lanczos-3: ``sinc(x) * sinc(x / 3)`` on [-3, 3)."""
    return np.where((x >= -3) & (x < 3), np.sinc(x) * np.sinc(x / 3), 0)


_AA = {"bilinear": (_aa_bilinear, 2), "bicubic": (_aa_bicubic, 4), "lanczos": (_aa_lanczos, 6)}


def _antialias_taps(in_size, out_size, scale, align_corners, filter_, ct):
    """PyTorch's anti-aliased taps: the filter stretched by the downscale factor over the input pixels it
    covers, weights normalised to sum 1; positions past a window's end are masked. None when the size does not
    change: PyTorch leaves that dim as it is, whatever the scale factor."""
    if in_size == out_size:
        return None
    fn, interp = _AA[filter_]
    s = _area_scale(in_size, out_size, scale, align_corners, ct)
    support = ct.type(interp * 0.5) * s if s >= 1 else ct.type(interp * 0.5)
    width = math.ceil(support) * 2 + 1
    center = s * (np.arange(out_size, dtype=ct) + ct.type(0.5))
    invscale = ct.type(1) / s if s >= 1 else ct.type(1)
    xmin = np.maximum(np.trunc(center - support + ct.type(0.5)).astype(_I64), 0)
    xsize = np.clip(np.minimum(np.trunc(center + support + ct.type(0.5)).astype(_I64), in_size) - xmin, 0, width)
    j = np.arange(width)
    inside = j < xsize[:, None]
    pos = (j + xmin[:, None]).astype(ct)
    w = np.where(inside, fn((pos - center[:, None] + ct.type(0.5)) * invscale), 0).astype(ct)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1), w).astype(ct)
    return np.minimum(xmin[:, None] + j, in_size - 1), w, inside


def _apply_taps(x, axis, idx, w, inside):
    """Along ``axis``: each output the weighted sum of its taps ``x[idx]`` (masked where not ``inside``)."""
    v = x.take(idx, axis)  # (..., O, K, ...)
    if inside is not None:
        v = np.where(_trailing(inside, x, axis), v, 0)
    return (v * _trailing(w, x, axis)).sum(axis + 1)


def _scatter_taps(g, axis, idx, w, inside, size):
    """The adjoint of :func:`_apply_taps`: each output's gradient times its weights, added to its taps."""
    out = _zeros((*g.shape[:axis], size, *g.shape[axis + 1:]), g.dtype)
    for k in range(idx.shape[1]):  # every tap column is non-decreasing in the output position
        v = g * _trailing(w[:, k], g, axis)
        if inside is not None:
            v = np.where(_trailing(inside[:, k], g, axis), v, 0)
        _sum_into(v, idx[:, k], size, axis, out)
    return out


def _resample_cpu(taps, ctx, x):
    """A separable resampling, one spatial axis at a time (the last first, as PyTorch)."""
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    out_size = attrs["output_size"]
    nd = len(out_size)
    ct = _compute_dtype(x)
    y = x.astype(ct, copy=False)
    scales = _scales(attrs, nd)
    filter_ = attrs.get("filter")
    for axis in range(nd + 1, 1, -1):
        i = axis - 2
        found = taps(x.shape[axis], out_size[i], scales[i], attrs["align_corners"], filter_, ct)
        if found is not None:
            y = _apply_taps(y, axis, *found)
    return y.astype(m.np_dtype, copy=False)


def _resample_grad_cpu(taps, ctx, dy):
    attrs = ctx.attrs
    m = ctx.out_metas[0]
    in_size = attrs["input_size"]
    nd = len(in_size)
    ct = _compute_dtype(dy)
    g = dy.astype(ct, copy=False)
    scales = _scales(attrs, nd)
    filter_ = attrs.get("filter")
    for axis in range(2, nd + 2):
        i = axis - 2
        found = taps(in_size[i], dy.shape[axis], scales[i], attrs["align_corners"], filter_, ct)
        if found is not None:
            g = _scatter_taps(g, axis, *found, in_size[i])
    return g.astype(m.np_dtype, copy=False)


for _op, _taps in (("upsample_bicubic", _bicubic_taps), ("upsample_antialias", _antialias_taps)):
    cpu_kernel(_op, dtype_in("x", *_FLOAT))(_quiet(functools.partial(_resample_cpu, _taps)))
    cpu_kernel(_op + "_grad", dtype_in("dy", *_FLOAT))(_quiet(functools.partial(_resample_grad_cpu, _taps)))
