"""Convolution, pooling and interpolate specs.

The references are direct loops over output (or input) positions and kernel offsets, written from PyTorch's
definitions: a different computation from the kernels' im2col / sliding windows / per-axis gathers.
"""

import itertools
import math

import numpy as np
from opinfo import FLOATS, INTS, OpSpec, Sample, make, register
from opinfo import make as _make

import oneflow_lite as flow


def _tup(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def _batched(fn, nd):
    """Run ``fn`` on an unbatched input (``nd + 1`` dims) as a batch of one."""
    def ref(x, *args, **kwargs):
        if x.ndim == nd + 1:
            out = fn(x[None], *args, **kwargs)
            return tuple(o[0] for o in out) if isinstance(out, tuple) else out[0]
        return fn(x, *args, **kwargs)
    return ref


# ---- convolution ---------------------------------------------------------------------------------
def _conv_ref(nd):
    def ref(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
        s, d = _tup(stride, nd), _tup(dilation, nd)
        k = w.shape[2:]
        if padding == "valid":
            pb = pa = (0,) * nd
        elif padding == "same":
            total = [di * (ki - 1) for di, ki in zip(d, k)]
            pb, pa = [t // 2 for t in total], [t - t // 2 for t in total]
        else:
            pb = pa = _tup(padding, nd)
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), *zip(pb, pa)))
        n, c, o = x.shape[0], x.shape[1], w.shape[0]
        cg, og = c // groups, o // groups
        out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
        y = np.zeros((n, o, *out))
        for pos in np.ndindex(*out):
            for kk in np.ndindex(*k):
                patch = xp[(slice(None), slice(None), *(pos[i] * s[i] + kk[i] * d[i] for i in range(nd)))]
                for g in range(groups):
                    wg = w[(slice(g * og, (g + 1) * og), slice(None), *kk)].astype(np.float64)  # (og, cg)
                    y[(slice(None), slice(g * og, (g + 1) * og), *pos)] += patch[:, g * cg:(g + 1) * cg] @ wg.T
        if bias is not None:
            y += bias.reshape(o, *(1,) * nd)
        return y.astype(x.dtype)
    return _batched(ref, nd)


def _conv_transpose_ref(nd):
    """Each input position scatters ``x @ w`` to ``i * stride - padding + k * dilation``."""
    def ref(x, w, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
        s, p, op, d = _tup(stride, nd), _tup(padding, nd), _tup(output_padding, nd), _tup(dilation, nd)
        n, c = x.shape[:2]
        k = w.shape[2:]
        cg, og = c // groups, w.shape[1]
        out = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(nd)]
        y = np.zeros((n, og * groups, *out))
        for pos in np.ndindex(*x.shape[2:]):
            for kk in np.ndindex(*k):
                q = [pos[i] * s[i] - p[i] + kk[i] * d[i] for i in range(nd)]
                if not all(0 <= q[i] < out[i] for i in range(nd)):
                    continue
                for g in range(groups):
                    xg = x[(slice(None), slice(g * cg, (g + 1) * cg), *pos)].astype(np.float64)  # (n, cg)
                    wg = w[(slice(g * cg, (g + 1) * cg), slice(None), *kk)].astype(np.float64)  # (cg, og)
                    y[(slice(None), slice(g * og, (g + 1) * og), *q)] += xg @ wg
        if bias is not None:
            y += bias.reshape(-1, *(1,) * nd)
        return y.astype(x.dtype)
    return _batched(ref, nd)


def _conv_samples(nd, transpose=False):
    sp = {1: (7,), 2: (6, 5), 3: (4, 5, 3)}[nd]
    k = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}[nd]

    def weight(cin, cout, groups, dtype, kernel=k):
        shape = (cin, cout // groups, *kernel) if transpose else (cout, cin // groups, *kernel)
        return make(shape, dtype)

    def samples(dtype):
        yield Sample((make((2, 4, *sp), dtype), weight(4, 6, 1, dtype)), name="plain")
        yield Sample((make((2, 4, *sp), dtype), weight(4, 6, 2, dtype), make((6,), dtype)),
                     {"stride": 2, "padding": 1, "groups": 2}, name="groups-stride-pad-bias")
        yield Sample((make((1, 2, *sp), dtype), weight(2, 3, 1, dtype)), {"dilation": 2, "padding": (1,) * nd},
                     name="dilation")
        yield Sample((make((0, 4, *sp), dtype), weight(4, 2, 1, dtype)), name="empty-batch")
        yield Sample((make((3, *sp), dtype), weight(3, 2, 1, dtype)), name="unbatched")
        if transpose:
            yield Sample((make((1, 2, *sp), dtype), weight(2, 4, 2, dtype), make((4,), dtype)),
                         {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, name="output-padding")
            yield Sample((make((1, 2, *sp), dtype), weight(2, 2, 1, dtype)),
                         {"stride": 1, "output_padding": 1, "dilation": 2}, name="output-padding-dilation")
        else:
            yield Sample((make((1, 2, *sp), dtype), weight(2, 3, 1, dtype, (2,) * nd)), {"padding": "same"},
                         name="same-even-kernel")
            yield Sample((make((1, 2, *sp), dtype), weight(2, 3, 1, dtype)),
                         {"padding": "same", "dilation": 2}, name="same-dilated")
            yield Sample((make((1, 2, *sp), dtype), weight(2, 3, 1, dtype)), {"padding": "valid"}, name="valid")
    return samples


def _conv_grad_samples(nd, transpose=False):
    sp = {1: (5,), 2: (4, 3), 3: (3, 3, 2)}[nd]
    k = {1: (3,), 2: (2, 2), 3: (2, 2, 1)}[nd]
    f64 = flow.float64

    def samples():
        w = (4, 1, *k) if transpose else (2, 2, *k)
        kwargs = {"stride": 2, "padding": 1, "groups": 2, "output_padding": 1} if transpose else \
            {"stride": (2,) + (1,) * (nd - 1), "padding": 1, "groups": 2}
        yield Sample((make((1, 4, *sp), f64), make(w, f64), make((2,), f64)), kwargs, name="grad")
        if transpose:  # output_padding >= stride (allowed below the dilation): the conv in backward is cut
            yield Sample((make((1, 2, *sp), f64), make((2, 1, *k), f64)), {"output_padding": 1, "dilation": 2},
                         name="grad-output-padding-dilation")
        else:
            yield Sample((make((1, 2, *sp), f64), make((2, 2, *k), f64)), {"padding": "same", "dilation": 2},
                         name="grad-same")
    return samples


for _nd in (1, 2, 3):
    register(
        OpSpec(f"conv{_nd}d", _conv_ref(_nd), _conv_samples(_nd), grad_samples=_conv_grad_samples(_nd),
               gradgrad=_nd == 2, atol=1e-5, rtol=1e-4),
        OpSpec(f"conv_transpose{_nd}d", _conv_transpose_ref(_nd), _conv_samples(_nd, True),
               grad_samples=_conv_grad_samples(_nd, True), gradgrad=_nd == 2, atol=1e-5, rtol=1e-4),
    )


# ---- pooling -------------------------------------------------------------------------------------
def _pool_out(i, k, s, p, d, ceil_mode):
    o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= i + p:
        o -= 1
    return o


def _planes(x, nd):
    """``x`` as ``(planes, *spatial)`` plus a function restoring the leading dims."""
    lead = x.shape[:-nd]
    return x.reshape(-1, *x.shape[-nd:]), lambda y: y.reshape(*lead, *y.shape[1:])


def _max_pool_ref(nd):
    """PyTorch's cpu loop: start at the first element inside the input, replace on ``val > max or isnan(val)``."""
    def ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        k, p, d = _tup(kernel_size, nd), _tup(padding, nd), _tup(dilation, nd)
        s = k if stride is None else _tup(stride, nd)
        xs, back = _planes(x, nd)
        in_size = x.shape[-nd:]
        out = [_pool_out(in_size[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd)]
        lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        y = np.empty((xs.shape[0], *out), x.dtype)
        idx = np.empty((xs.shape[0], *out), np.int64)
        for pos in np.ndindex(*out):
            ranges = []
            for i in range(nd):
                start, stop = pos[i] * s[i] - p[i], min(pos[i] * s[i] - p[i] + (k[i] - 1) * d[i] + 1, in_size[i])
                while start < 0:
                    start += d[i]
                ranges.append(range(start, stop, d[i]))
            first = [r.start for r in ranges]
            best = np.full(xs.shape[0], lowest, x.dtype)
            arg = np.full(xs.shape[0], np.ravel_multi_index(first, in_size) if all(
                f < n for f, n in zip(first, in_size)) else 0)
            for q in np.ndindex(*(len(r) for r in ranges)):
                coord = tuple(r[j] for r, j in zip(ranges, q))
                val = xs[(slice(None), *coord)]
                take = (val > best) | np.isnan(val) if x.dtype.kind == "f" else val > best
                best = np.where(take, val, best)
                arg = np.where(take, np.ravel_multi_index(coord, in_size), arg)
            y[(slice(None), *pos)] = best
            idx[(slice(None), *pos)] = arg
        return (back(y), back(idx)) if return_indices else back(y)
    return ref


def _avg_pool_ref(nd):
    def ref(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        k, p = _tup(kernel_size, nd), _tup(padding, nd)
        s = k if stride is None else _tup(stride, nd)
        xs, back = _planes(x, nd)
        in_size = x.shape[-nd:]
        out = [_pool_out(in_size[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(nd)]
        acc = np.float64 if x.dtype.kind == "f" else np.int64
        y = np.zeros((xs.shape[0], *out), acc)
        for pos in np.ndindex(*out):
            start = [pos[i] * s[i] - p[i] for i in range(nd)]
            end = [min(start[i] + k[i], in_size[i] + p[i]) for i in range(nd)]
            pool = math.prod(e - b for b, e in zip(start, end))
            start = [max(b, 0) for b in start]
            end = [min(e, n) for e, n in zip(end, in_size)]
            if any(b >= e for b, e in zip(start, end)):
                continue
            window = xs[(slice(None), *(slice(b, e) for b, e in zip(start, end)))].astype(acc)
            total = window.sum(axis=tuple(range(1, nd + 1)))
            div = divisor_override or (pool if count_include_pad else math.prod(e - b for b, e in zip(start, end)))
            if acc is np.int64:  # C++ integer division truncates toward zero
                y[(slice(None), *pos)] = np.sign(total) * (np.abs(total) // div)
            else:
                y[(slice(None), *pos)] = total / div
        return back(y.astype(x.dtype))
    return ref


def _adaptive_ref(nd):
    def ref(x, output_size):
        out = _tup(output_size, nd)
        out = [x.shape[-nd + i] if o is None else o for i, o in enumerate(out)]
        xs, back = _planes(x, nd)
        in_size = x.shape[-nd:]
        y = np.zeros((xs.shape[0], *out))
        for pos in np.ndindex(*out):
            sl = tuple(slice(math.floor(pos[i] * in_size[i] / out[i]), math.ceil((pos[i] + 1) * in_size[i] / out[i]))
                       for i in range(nd))
            y[(slice(None), *pos)] = xs[(slice(None), *sl)].astype(np.float64).mean(axis=tuple(range(1, nd + 1)))
        return back(y.astype(x.dtype))
    return ref


def _pool_samples(nd, kind):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 6)}[nd]

    def samples(dtype):
        yield Sample((make((2, 3, *sp), dtype), 2), name="kernel2")
        yield Sample((make((2, 3, *sp), dtype), 3, 2, 1), name="k3-s2-p1")
        yield Sample((make((2, *sp), dtype), (3,) * nd, (2,) * nd), {"ceil_mode": True}, name="unbatched-ceil")
        yield Sample((make((0, 2, *sp), dtype), 2), name="empty-batch")
        yield Sample((make((1, 2, *sp), dtype), 3, 2, 1), {"ceil_mode": True}, name="ceil-pad")
        if kind == "max":
            yield Sample((make((1, 2, *sp), dtype), 2, 1, 1), {"dilation": 2, "return_indices": True},
                         name="dilation-indices")
            yield Sample((make((2, 3, *sp), dtype), 3, 2, 1), {"return_indices": True}, name="indices")
            if dtype.is_floating_point:
                x = make((1, 2, *sp), dtype)
                flat = x.reshape(-1)
                flat[[1, 4, 5, 11]] = [np.nan, -np.inf, np.nan, np.inf]
                x.reshape(2, -1)[1, :] = -np.inf
                yield Sample((x, 2, 2, 1), {"return_indices": True}, name="nan-inf")
        else:
            yield Sample((make((1, 2, *sp), dtype), 3, 2, 1), {"count_include_pad": False}, name="exclude-pad")
            yield Sample((make((1, 2, *sp), dtype), 3, 2, 1), {"ceil_mode": True, "count_include_pad": False},
                         name="ceil-exclude-pad")
            if nd > 1:
                yield Sample((make((1, 2, *sp), dtype), 2, 1, 1), {"divisor_override": 3}, name="divisor")
    return samples


def _pool_grad_samples(nd, kind):
    sp = {1: (7,), 2: (5, 4), 3: (3, 4, 3)}[nd]
    f64 = flow.float64

    def samples():
        # distinct values: finite differences must not swap a window's maximum
        x = (np.random.default_rng(nd).permutation(2 * math.prod(sp)).reshape(1, 2, *sp) / 7.0).astype(np.float64)
        yield Sample((x, 3, 2, 1), {"ceil_mode": True}, name="grad")
        if kind == "max":
            yield Sample((x, 2, 1), {"dilation": 2}, name="grad-dilation")
        else:
            yield Sample((make((2, *sp), f64), 2, 1, 1), {"count_include_pad": False}, name="grad-exclude-pad")
    return samples


def _adaptive_samples(nd):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 6)}[nd]

    def samples(dtype):
        yield Sample((make((2, 3, *sp), dtype), (4,) * nd), name="shrink")
        yield Sample((make((2, *sp), dtype), (3,) * nd), name="unbatched")
        yield Sample((make((1, 2, *sp), dtype), tuple(s + 2 for s in sp)), name="grow")
        yield Sample((make((0, 2, *sp), dtype), 2), name="empty-batch")
        yield Sample((make((1, 2, *sp), dtype), 0), name="empty-output")
        if nd > 1:
            yield Sample((make((1, 2, *sp), dtype), (None, *(2,) * (nd - 1))), name="none-entry")
    return samples


def _adaptive_grad_samples(nd):
    sp = {1: (7,), 2: (5, 4), 3: (3, 4, 3)}[nd]

    def samples():
        yield Sample((make((1, 2, *sp), flow.float64), (3,) * nd), name="grad")
    return samples


for _nd in (1, 2, 3):
    register(
        OpSpec(f"max_pool{_nd}d", _max_pool_ref(_nd), _pool_samples(_nd, "max"), dtypes=INTS + FLOATS,
               grad_samples=_pool_grad_samples(_nd, "max"), gradgrad=_nd == 2),
        OpSpec(f"avg_pool{_nd}d", _avg_pool_ref(_nd), _pool_samples(_nd, "avg"), dtypes=(flow.int64, *FLOATS),
               grad_samples=_pool_grad_samples(_nd, "avg"), gradgrad=_nd == 2),
        OpSpec(f"adaptive_avg_pool{_nd}d", _adaptive_ref(_nd), _adaptive_samples(_nd),
               grad_samples=_adaptive_grad_samples(_nd), gradgrad=_nd == 2),
    )


# ---- interpolate ---------------------------------------------------------------------------------
def _nearest_src(o, in_size, out_size, scale, exact):
    """PyTorch's ``nearest_idx`` / ``nearest_exact_idx`` (float32 scale)."""
    if not exact and out_size == in_size:
        return o
    if not exact and out_size == 2 * in_size:
        return o // 2
    sc = np.float32(1.0 / scale) if scale else np.float32(np.float32(in_size) / np.float32(out_size))
    src = np.float32(np.float64(o + 0.5) * np.float64(sc)) if exact else np.float32(o) * sc
    return min(math.floor(src), in_size - 1)


def _linear_src(o, in_size, out_size, scale, align_corners):
    """(i0, i1, l0, l1) of PyTorch's linear interpolation, in float64."""
    if align_corners:
        src = o * ((in_size - 1) / (out_size - 1)) if out_size > 1 else 0.0
    else:
        sc = 1.0 / scale if scale else in_size / out_size
        src = max(sc * (o + 0.5) - 0.5, 0.0)
    i0 = min(math.floor(src), in_size - 1)
    l1 = min(max(src - i0, 0.0), 1.0)
    return i0, i0 + (1 if i0 < in_size - 1 else 0), 1.0 - l1, l1


def _source_scale(in_size, out_size, scale, align_corners):
    """PyTorch's ``area_pixel_compute_scale``."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale else in_size / out_size


def _cubic(t, a):
    """The cubic convolution kernel at distance ``t``."""
    t = abs(t)
    if t < 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0


def _bicubic_taps(o, in_size, out_size, scale, align_corners):
    """(index, weight) pairs of output ``o``: PyTorch's upsample_bicubic2d (A = -0.75, taps clamped)."""
    s = _source_scale(in_size, out_size, scale, align_corners)
    real = s * o if align_corners else s * (o + 0.5) - 0.5
    i0 = min(math.floor(real), in_size - 1)
    t = min(max(real - i0, 0.0), 1.0)
    return [(min(max(i0 - 1 + k, 0), in_size - 1), _cubic(t + 1 - k, -0.75)) for k in range(4)]


def _lanczos(v):
    def sinc(u):
        return 1.0 if u == 0 else math.sin(math.pi * u) / (math.pi * u)
    return sinc(v) * sinc(v / 3) if -3 <= v < 3 else 0.0


_AA_FILTERS = {"bilinear": (lambda v: max(0.0, 1 - abs(v)), 1.0), "bicubic": (lambda v: _cubic(v, -0.5), 2.0),
               "lanczos": (_lanczos, 3.0)}


def _antialias_taps(o, in_size, out_size, scale, align_corners, mode):
    """(index, weight) pairs of output ``o``: the filter stretched over the input pixels the output pixel covers
    when downscaling, weights normalised to sum 1 (PyTorch's and Pillow's anti-aliased resampling)."""
    fn, half_width = _AA_FILTERS[mode]
    s = _source_scale(in_size, out_size, scale, align_corners)
    support = half_width * s if s >= 1 else half_width
    stretch = 1 / s if s >= 1 else 1.0
    center = s * (o + 0.5)
    lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), in_size)
    weights = [fn((j - center + 0.5) * stretch) for j in range(lo, hi)]
    total = sum(weights)
    return [(j, w / total if total else w) for j, w in zip(range(lo, hi), weights)]


def _separable(x, out, taps):
    """Each output the sum over its taps along every axis (``taps(axis, o)``: (index, weight) pairs)."""
    y = np.zeros((*x.shape[:2], *out))
    for pos in np.ndindex(*out):
        for pick in itertools.product(*(taps(d, p) for d, p in enumerate(pos))):
            weight = math.prod(w for _, w in pick)
            y[(slice(None), slice(None), *pos)] += weight * x[(slice(None), slice(None), *(i for i, _ in pick))]
    return y


def _interpolate_ref(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                     recompute_scale_factor=None, antialias=False):
    nd = x.ndim - 2
    in_size = x.shape[2:]
    if size is not None:
        out, scales = _tup(size, nd), (None,) * nd
    else:
        sf = _tup(scale_factor, nd)
        out = tuple(math.floor(i * f) for i, f in zip(in_size, sf))
        scales = (None,) * nd if recompute_scale_factor else sf
    if mode == "area":
        return _adaptive_ref(nd)(x, out)
    if antialias or mode == "bicubic":
        def taps(d, o):
            if antialias:
                if in_size[d] == out[d]:  # an unchanged dim is left as it is, as in PyTorch
                    return [(o, 1.0)]
                return _antialias_taps(o, in_size[d], out[d], scales[d], bool(align_corners), mode)
            return _bicubic_taps(o, in_size[d], out[d], scales[d], bool(align_corners))
        return _separable(x.astype(np.float64), out, taps).astype(x.dtype)
    y = np.zeros((*x.shape[:2], *out))
    for pos in np.ndindex(*out):
        if mode in ("nearest", "nearest-exact"):
            src = tuple(_nearest_src(pos[i], in_size[i], out[i], scales[i], mode == "nearest-exact")
                        for i in range(nd))
            y[(slice(None), slice(None), *pos)] = x[(slice(None), slice(None), *src)]
            continue
        # PyTorch leaves a dim of unchanged size as it is, whatever the scale factor
        corners = [(pos[i], pos[i], 1.0, 0.0) if in_size[i] == out[i] else
                   _linear_src(pos[i], in_size[i], out[i], scales[i], bool(align_corners)) for i in range(nd)]
        for pick in np.ndindex(*(2,) * nd):  # every corner of the cell, weighted by the product of lambdas
            idx = tuple(c[j] for c, j in zip(corners, pick))
            weight = math.prod(c[2 + j] for c, j in zip(corners, pick))
            y[(slice(None), slice(None), *pos)] += weight * x[(slice(None), slice(None), *idx)].astype(np.float64)
    return y.astype(x.dtype)


def _interpolate_samples(dtype):
    for nd, sp in ((1, (5,)), (2, (4, 3)), (3, (3, 2, 3))):
        x = make((2, 3, *sp), dtype)
        yield Sample((x,), {"scale_factor": 2.0}, name=f"{nd}d-nearest-x2")
        yield Sample((x, tuple(s + 3 for s in sp)), name=f"{nd}d-nearest-size")
        yield Sample((x,), {"scale_factor": 1.7}, name=f"{nd}d-nearest-1.7")
        yield Sample((x,), {"scale_factor": 1.7, "recompute_scale_factor": True}, name=f"{nd}d-nearest-recompute")
        yield Sample((x, tuple(s + 2 for s in sp)), {"mode": "nearest-exact"}, name=f"{nd}d-nearest-exact")
        yield Sample((x, tuple(max(1, s - 1) for s in sp)), name=f"{nd}d-nearest-down")
        if dtype is flow.uint8:
            continue
        mode = ("linear", "bilinear", "trilinear")[nd - 1]
        yield Sample((x,), {"scale_factor": 2.0, "mode": mode}, name=f"{nd}d-{mode}-x2")
        yield Sample((x, tuple(s + 2 for s in sp)), {"mode": mode, "align_corners": True}, name=f"{nd}d-{mode}-ac")
        yield Sample((x,), {"scale_factor": 0.6, "mode": mode}, name=f"{nd}d-{mode}-down")
        yield Sample((x, (1,) * nd), {"mode": mode, "align_corners": True}, name=f"{nd}d-{mode}-to-1")
        yield Sample((x,), {"scale_factor": 1.7, "mode": mode, "align_corners": False}, name=f"{nd}d-{mode}-1.7")
        yield Sample((x,), {"scale_factor": (1.2,) * nd, "mode": mode}, name=f"{nd}d-{mode}-same-size")
    yield Sample((make((0, 2, 3, 4), dtype), (5, 5)), name="empty-batch")


_FILTER_RNG = np.random.default_rng(99)  # its own stream: these samples do not shift other specs' values


def _interpolate_filter_samples(dtype):
    """bicubic, the anti-aliased modes (lanczos among them) and area."""
    def make(shape, dtype):
        return _make(shape, dtype, rng=_FILTER_RNG)
    x = make((2, 3, 8, 6), dtype)
    for size in ((4, 3), (3, 2), (11, 9), (1, 1)):
        for ac in (False, True):
            yield Sample((x, size), {"mode": "bicubic", "align_corners": ac}, name=f"bicubic-{size}-{ac}")
            for mode in ("bilinear", "bicubic"):
                yield Sample((x, size), {"mode": mode, "align_corners": ac, "antialias": True},
                             name=f"antialias-{mode}-{size}-{ac}")
        yield Sample((x, size), {"mode": "lanczos", "antialias": True}, name=f"lanczos-{size}")
    yield Sample((x,), {"scale_factor": 0.4, "mode": "bicubic"}, name="bicubic-scale")
    yield Sample((x,), {"scale_factor": (0.5, 0.3), "mode": "bilinear", "antialias": True}, name="antialias-scale")
    yield Sample((x,), {"scale_factor": (1.1, 0.5), "mode": "bicubic", "antialias": True},
                 name="antialias-same-height")
    yield Sample((x,), {"scale_factor": (1.1, 1.1), "mode": "bicubic"}, name="bicubic-same-size")
    for nd, sp in ((1, (9,)), (2, (7, 6)), (3, (5, 4, 6))):
        x = make((2, 3, *sp), dtype)
        yield Sample((x, tuple(s // 2 + 1 for s in sp)), {"mode": "area"}, name=f"{nd}d-area")
        yield Sample((x,), {"scale_factor": 1.6, "mode": "area"}, name=f"{nd}d-area-scale")


def _interpolate_grad_samples():
    f64 = flow.float64
    yield Sample((make((1, 2, 3, 4), f64),), {"scale_factor": 1.5}, name="grad-nearest")
    yield Sample((make((1, 2, 3, 4), f64), (5, 3)), {"mode": "bilinear"}, name="grad-bilinear")
    yield Sample((make((1, 2, 3, 4), f64), (4, 6)), {"mode": "bilinear", "align_corners": True},
                 name="grad-bilinear-ac")
    yield Sample((make((1, 2, 4), f64), 7), {"mode": "linear"}, name="grad-linear")
    yield Sample((make((1, 1, 2, 3, 2), f64), (3, 2, 3)), {"mode": "trilinear"}, name="grad-trilinear")


def _interpolate_filter_grad_samples():
    f64 = flow.float64

    def make(shape, dtype):
        return _make(shape, dtype, rng=_FILTER_RNG)
    yield Sample((make((1, 2, 4, 3), f64), (5, 2)), {"mode": "bicubic"}, name="grad-bicubic")
    yield Sample((make((1, 2, 4, 3), f64), (3, 5)), {"mode": "bicubic", "align_corners": True},
                 name="grad-bicubic-ac")
    for mode in ("bilinear", "bicubic", "lanczos"):
        yield Sample((make((1, 2, 7, 3), f64), (3, 4)), {"mode": mode, "antialias": True},
                     name=f"grad-antialias-{mode}")
    yield Sample((make((1, 2, 5, 4), f64), (3, 3)), {"mode": "area"}, name="grad-area")


register(
    OpSpec("interpolate", _interpolate_ref, _interpolate_samples, dtypes=(*FLOATS, flow.uint8),
           grad_samples=_interpolate_grad_samples, gradgrad=True, op=flow.nn.functional.interpolate),
    # sums of 4 to 16 weighted taps in float32: a looser tolerance than the nearest / linear modes
    OpSpec("interpolate_filters", _interpolate_ref, _interpolate_filter_samples,
           grad_samples=_interpolate_filter_grad_samples, gradgrad=True, op=flow.nn.functional.interpolate,
           atol=1e-5, rtol=1e-4),
)
