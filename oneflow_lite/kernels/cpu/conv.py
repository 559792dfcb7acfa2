"""cpu kernels of the convolution, pooling and upsampling ops (Notes [Convolution ops] and [Pooling ops] in
ops/conv.py).

Convolutions are im2col: ``sliding_window_view`` of the padded input, one copy into
``(groups, N * positions, C / groups * kernel)`` columns and a batched matmul per group; the input gradient
(col2im) adds one strided slice per kernel offset. Pooling takes the same windows; upsampling gathers along one
spatial axis at a time and its gradient scatters back with ``np.add.at``. float16 computes in float32 and rounds
once, as PyTorch's cpu kernels accumulate half in float.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.dtype import FLOATING_DTYPES, INTEGRAL_DTYPES
from oneflow_lite.kernels.registration import cpu_kernel

_F16 = np.dtype(np.float16)
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
    return _F32 if a.dtype == _F16 else a.dtype


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
for _nd in (1, 2, 3):
    cpu_kernel(f"conv{_nd}d", dtype_in("in", *_FLOAT))(_quiet(conv_cpu))


@cpu_kernel("conv_data_grad", dtype_in("dy", *_FLOAT))
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


@cpu_kernel("conv_filter_grad", dtype_in("dy", *_FLOAT))
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


# ---- adaptive average pooling --------------------------------------------------------------------
def _adaptive_matrix(in_size, out_size, ct):
    """``(out_size, in_size)``: row ``o`` averages inputs ``floor(o * I / O) <= i < ceil((o + 1) * I / O)``."""
    o = np.arange(out_size)
    start = o * in_size // out_size
    end = -(-(o + 1) * in_size // out_size)
    i = np.arange(in_size)
    inside = (i >= start[:, None]) & (i < end[:, None])
    return (inside / (end - start)[:, None]).astype(ct)


def _along_axes(x, mats):
    """``x`` with ``mats[i]`` (``(new, old)``) applied to its i-th trailing spatial axis."""
    nd = len(mats)
    for i, mat in enumerate(mats):
        axis = x.ndim - nd + i
        x = np.moveaxis(np.tensordot(x, mat, axes=([axis], [1])), -1, axis)
    return x


def adaptive_avg_pool_cpu(ctx, x):
    m = ctx.out_metas[0]
    out_size = ctx.attrs["output_size"]
    nd = len(out_size)
    ct = _compute_dtype(x)
    mats = [_adaptive_matrix(i, o, ct) for i, o in zip(x.shape[-nd:], out_size)]
    return np.ascontiguousarray(_along_axes(x.astype(ct, copy=False), mats)).astype(m.np_dtype, copy=False)


def adaptive_avg_pool_grad_cpu(ctx, dy):
    m = ctx.out_metas[0]
    in_size = ctx.attrs["input_size"]
    nd = len(in_size)
    ct = _compute_dtype(dy)
    mats = [_adaptive_matrix(i, o, ct).T for i, o in zip(in_size, dy.shape[-nd:])]
    return np.ascontiguousarray(_along_axes(dy.astype(ct, copy=False), mats)).astype(m.np_dtype, copy=False)


for _nd in (1, 2, 3):
    cpu_kernel(f"adaptive_avg_pool{_nd}d", dtype_in("x", *_FLOAT))(_quiet(adaptive_avg_pool_cpu))
    cpu_kernel(f"adaptive_avg_pool{_nd}d_grad", dtype_in("dy", *_FLOAT))(_quiet(adaptive_avg_pool_grad_cpu))


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
        i0, i1, l0, l1 = _linear_weights(i, dy.shape[axis], scales[axis - 2], attrs["align_corners"], ct)
        acc = _sum_into(g * _weights_shape(l0, axis, g.ndim), i0, i, axis)
        g = _sum_into(g * _weights_shape(l1, axis, g.ndim), i1, i, axis, acc)
    return g.astype(m.np_dtype, copy=False)


cpu_kernel("upsample_nearest", dtype_in("x", dt.uint8, *_FLOAT))(upsample_nearest_cpu)
cpu_kernel("upsample_nearest_grad", dtype_in("dy", *_FLOAT))(_quiet(upsample_nearest_grad_cpu))
cpu_kernel("upsample_linear", dtype_in("x", *_FLOAT))(_quiet(upsample_linear_cpu))
cpu_kernel("upsample_linear_grad", dtype_in("dy", *_FLOAT))(_quiet(upsample_linear_grad_cpu))
