"""Specs of the spatial functions beyond convolution and plain pooling: adaptive / fractional max pooling, lp
pooling, max unpooling, unfold / fold, pixel and channel shuffles, conv_tbc, grid_sample and affine_grid.

The references are direct loops over output positions written from PyTorch's definitions (its windows, its
tie-break of maxima, its coordinate formulas), a different computation from the kernels' gathered windows and
the composites' tensor formulas.
"""

import itertools
import math

import numpy as np
from opinfo import ALL, FLOATS, INTS, OpSpec, Sample, register
from opinfo import make as _make

import oneflow_lite as flow
from op_specs.conv import _max_pool_ref, _pool_grad_samples, _pool_out, _tup

F = flow.nn.functional
f64 = flow.float64
_RNG = np.random.default_rng(4321)  # this file's own stream: its samples do not shift other specs' values


def make(shape, dtype, low=None, high=None):
    return _make(shape, dtype, low, high, rng=_RNG)


def _planes(x, nd):
    """``x`` as ``(planes, *spatial)`` plus a function restoring the leading dims."""
    lead = x.shape[:-nd]
    return x.reshape(-1, *x.shape[-nd:]), lambda y: y.reshape(*lead, *y.shape[1:])


def _window_max(plane, coords, in_size):
    """PyTorch's loop over a window: start at its first element, replace on ``val > max or isnan(val)``."""
    best, arg = -np.inf, np.ravel_multi_index(coords[0], in_size)
    for c in coords:
        v = plane[c]
        if v > best or np.isnan(v):
            best, arg = v, np.ravel_multi_index(c, in_size)
    return best, arg


def _distinct(shape, seed):
    """float64 values all distinct (finite differences never swap a window's maximum)."""
    return (np.random.default_rng(seed).permutation(math.prod(shape)).reshape(shape) / 7.0).astype(np.float64)


# ---- max_pool{n}d_with_indices -------------------------------------------------------------------
def _with_indices(nd):
    def ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        return _max_pool_ref(nd)(x, kernel_size, stride, padding, dilation, ceil_mode, True)
    return ref


def _with_indices_samples(nd):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 6)}[nd]

    def samples(dtype):
        yield Sample((make((2, 3, *sp), dtype), 3, 2, 1), name="k3-s2-p1")
        yield Sample((make((2, *sp), dtype), 2), {"ceil_mode": True, "return_indices": False}, name="unbatched")
    return samples


for _nd in (1, 2, 3):
    register(OpSpec(f"max_pool{_nd}d_with_indices", _with_indices(_nd), _with_indices_samples(_nd),
                    dtypes=INTS + FLOATS, grad_samples=_pool_grad_samples(_nd, "max"),
                    op=getattr(F, f"max_pool{_nd}d_with_indices")))


# ---- adaptive max pooling ------------------------------------------------------------------------
def _adaptive_max_ref(nd):
    def ref(x, output_size, return_indices=False):
        in_size = x.shape[-nd:]
        out = [i if o is None else o for i, o in zip(in_size, _tup(output_size, nd))]
        xs, back = _planes(x, nd)
        y = np.empty((xs.shape[0], *out), x.dtype)
        idx = np.empty((xs.shape[0], *out), np.int64)
        for pos in np.ndindex(*out):
            ranges = [range(p * i // o, -(-(p + 1) * i // o)) for p, i, o in zip(pos, in_size, out)]
            coords = list(itertools.product(*ranges))
            for p, plane in enumerate(xs):
                y[(p, *pos)], idx[(p, *pos)] = _window_max(plane, coords, in_size)
        return (back(y), back(idx)) if return_indices else back(y)
    return ref


def _adaptive_max_samples(nd):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 6)}[nd]

    def samples(dtype):
        yield Sample((make((2, 3, *sp), dtype), (4,) * nd, True), name="shrink-indices")
        yield Sample((make((2, *sp), dtype), (3,) * nd), name="unbatched")
        yield Sample((make((1, 2, *sp), dtype), tuple(s + 2 for s in sp), True), name="grow")
        yield Sample((make((0, 2, *sp), dtype), 2), name="empty-batch")
        yield Sample((make((1, 2, *sp), dtype), 0, True), name="empty-output")
        if nd > 1:
            yield Sample((make((1, 2, *sp), dtype), (None, *(2,) * (nd - 1))), name="none-entry")
        if dtype.is_floating_point:
            x = make((1, 2, *sp), dtype)
            x.reshape(-1)[[0, 3, 4, 9]] = [np.nan, np.nan, -np.inf, np.inf]
            x.reshape(2, -1)[1] = -np.inf
            yield Sample((x, (3,) * nd, True), name="nan-inf")
    return samples


def _adaptive_max_grad_samples(nd):
    sp = {1: (7,), 2: (5, 4), 3: (3, 4, 3)}[nd]

    def samples():
        yield Sample((_distinct((1, 2, *sp), nd), (3,) * nd), name="grad")
    return samples


for _nd in (1, 2, 3):
    _ref = _adaptive_max_ref(_nd)
    register(
        OpSpec(f"adaptive_max_pool{_nd}d", _ref, _adaptive_max_samples(_nd),
               grad_samples=_adaptive_max_grad_samples(_nd), gradgrad=_nd == 2),
        OpSpec(f"adaptive_max_pool{_nd}d_with_indices", lambda x, o, r=False, _ref=_ref: _ref(x, o, True),
               _adaptive_max_samples(_nd), grad_samples=_adaptive_max_grad_samples(_nd)),
    )


# ---- fractional max pooling ----------------------------------------------------------------------
def _intervals(sample, in_size, out_size, kernel):
    """PyTorch's ``generate_intervals``, in the samples' dtype."""
    t = sample.dtype.type
    seq = []
    if out_size > 1:
        alpha = t(in_size - kernel) / t(out_size - 1)
        seq = [int((t(i) + sample) * alpha) - int(sample * alpha) for i in range(out_size - 1)]
    return seq + [in_size - kernel] if out_size else []


def _fractional_ref(nd):
    dims_sample = (1, 0) if nd == 2 else (0, 1, 2)  # the sample of each spatial dim: (W, H) or (T, H, W)

    def ref(x, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        k, in_size = _tup(kernel_size, nd), x.shape[-nd:]
        out = _tup(output_size, nd) if output_size is not None else \
            tuple(int(i * r) for i, r in zip(in_size, _tup(output_ratio, nd)))
        xs, back = _planes(x, nd)
        per_plane = _random_samples.reshape(-1, nd)
        y = np.empty((xs.shape[0], *out), x.dtype)
        idx = np.empty((xs.shape[0], *out), np.int64)
        for p, plane in enumerate(xs):
            starts = [_intervals(per_plane[p, dims_sample[d]], in_size[d], out[d], k[d]) for d in range(nd)]
            for pos in np.ndindex(*out):
                ranges = [range(starts[d][pos[d]], starts[d][pos[d]] + k[d]) for d in range(nd)]
                y[(p, *pos)], idx[(p, *pos)] = _window_max(plane, list(itertools.product(*ranges)), in_size)
        return (back(y), back(idx)) if return_indices else back(y)
    return ref


def _fractional_samples(nd):
    """Positional arguments: (input, kernel_size, output_size, output_ratio, return_indices, _random_samples)."""
    sp = {2: (9, 8), 3: (7, 6, 8)}[nd]

    def samples(dtype):
        rng = np.random.default_rng(nd)

        def rand(n, c):
            return rng.random((n, c, nd)).astype(dtype.np_dtype)
        yield Sample((make((2, 3, *sp), dtype), 2, 4, None, False, rand(2, 3)), name="k2-o4")
        yield Sample((make((2, 3, *sp), dtype), (3, 2, 2)[:nd], (3, 4, 5)[:nd], None, True, rand(2, 3)),
                     name="per-dim")
        yield Sample((make((3, *sp), dtype), 2, None, 0.5, False, rand(1, 3)), name="unbatched-ratio")
        yield Sample((make((1, 2, *sp), dtype), 2, 1, None, False, rand(1, 2)), name="o1")
        yield Sample((make((0, 2, *sp), dtype), 2, 3, None, False, rand(0, 2)), name="empty-batch")
    return samples


def _fractional_grad_samples(nd):
    sp = {2: (6, 5), 3: (5, 5, 5)}[nd]

    def samples():
        s = np.random.default_rng(5).random((1, 2, nd))
        yield Sample((_distinct((1, 2, *sp), nd), 2), {"output_size": 3, "_random_samples": s}, grad_args=(0,),
                     name="grad")
    return samples


for _nd in (2, 3):
    _ref = _fractional_ref(_nd)
    register(
        OpSpec(f"fractional_max_pool{_nd}d", _ref, _fractional_samples(_nd),
               grad_samples=_fractional_grad_samples(_nd), gradgrad=_nd == 2),
        OpSpec(f"fractional_max_pool{_nd}d_with_indices",
               lambda x, k, o, ratio, r, samples, _ref=_ref: _ref(x, k, o, ratio, True, samples),
               _fractional_samples(_nd), grad_samples=_fractional_grad_samples(_nd)),
    )


# ---- lp pooling ----------------------------------------------------------------------------------
def _lp_ref(nd):
    """PyTorch's formula: the window mean of x^p (windows cut at the input end; an integer mean truncated, as
    avg_pool of an integer tensor) times the kernel size, to the power 1 / p (NaN for a negative sum); norm_type
    inf / -inf is the max / min of |x| in x's dtype. Integer inputs give float32, as PyTorch's ``pow``."""
    def ref(x, norm_type, kernel_size, stride=None, ceil_mode=False):
        k = _tup(kernel_size, nd)
        s = k if stride is None else _tup(stride, nd)
        in_size = x.shape[-nd:]
        integral = x.dtype.kind in "biu"
        xs, back = _planes(x, nd)
        out = [_pool_out(in_size[i], k[i], s[i], 0, 1, ceil_mode) for i in range(nd)]
        y = np.empty((xs.shape[0], *out))
        for pos in np.ndindex(*out):
            window = tuple(slice(p * si, min(p * si + ki, n)) for p, si, ki, n in zip(pos, s, k, in_size))
            part = xs[(slice(None), *window)].reshape(len(xs), -1)
            if math.isinf(norm_type):
                y[(slice(None), *pos)] = np.abs(part).max(1) if norm_type > 0 else np.abs(part).min(1)
                continue
            if integral and isinstance(norm_type, int):
                total = (part.astype(np.int64) ** norm_type).sum(1)
                mean = np.sign(total) * (np.abs(total) // part.shape[1])  # C++ division truncates toward zero
            else:
                mean = (part.astype(np.float64) ** norm_type).mean(1)
            with np.errstate(invalid="ignore"):  # a negative window sum (odd p) gives NaN, as in PyTorch
                y[(slice(None), *pos)] = (mean * math.prod(k)) ** (1.0 / norm_type)
        return back(y).astype(x.dtype if math.isinf(norm_type) or not integral else np.float32)
    return ref


def _lp_samples(nd):
    sp = {1: (9,), 2: (7, 6), 3: (5, 4, 6)}[nd]

    def samples(dtype):
        low = 0.1 if dtype.is_floating_point else 0
        yield Sample((make((2, 3, *sp), dtype, low, 2.0 if low else 4), 2, 2), name="p2")
        yield Sample((make((2, *sp), dtype, low, 2.0 if low else 4), 1.5, 3, 2), {"ceil_mode": True},
                     name="p1.5-ceil-unbatched")
        yield Sample((make((1, 2, *sp), dtype), 3, 2, 1), name="p3-negative-windows")
        if dtype is not flow.bool:
            yield Sample((make((1, 2, *sp), dtype), math.inf, 2), name="inf")
            yield Sample((make((1, 2, *sp), dtype), -math.inf, (2, 3, 1)[:nd]), name="-inf")
    return samples


def _lp_grad_samples(nd):
    sp = {1: (7,), 2: (5, 4), 3: (3, 4, 3)}[nd]

    def samples():
        yield Sample((make((1, 2, *sp), f64, 0.5, 2.0), 2.0, 2, 1), name="grad-p2")
        yield Sample((make((1, 2, *sp), f64, 0.5, 2.0), 3.0, 2), {"ceil_mode": True}, name="grad-p3-ceil")
    return samples


for _nd in (1, 2, 3):
    register(OpSpec(f"lp_pool{_nd}d", _lp_ref(_nd), _lp_samples(_nd), dtypes=(flow.bool, flow.int64, *FLOATS),
                    grad_samples=_lp_grad_samples(_nd), gradgrad=_nd == 2, atol=1e-5, rtol=1e-5))


# ---- max unpooling -------------------------------------------------------------------------------
def _unpool_ref(nd):
    def ref(x, indices, kernel_size, stride=None, padding=0, output_size=None):
        k, p = _tup(kernel_size, nd), _tup(padding, nd)
        s = k if stride is None else _tup(stride, nd)
        out = [(x.shape[i - nd] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd)] if output_size is None else \
            list(output_size)[-nd:]
        xs, back = _planes(x, nd)
        idx = indices.reshape(xs.shape[0], math.prod(x.shape[-nd:]))
        y = np.zeros((xs.shape[0], math.prod(out)), x.dtype)
        for plane in range(xs.shape[0]):
            for j, value in zip(idx[plane], xs[plane].reshape(-1)):
                y[plane, j] = value
        return back(y.reshape(-1, *out))
    return ref


def _pooled(x, nd, k, s):
    """Values and indices of a max pooling of ``x`` (loops: PyTorch's first maximum of each window)."""
    xs, back = _planes(x, nd)
    in_size = x.shape[-nd:]
    out = [(i - kk) // ss + 1 for i, kk, ss in zip(in_size, k, s)]
    y = np.empty((xs.shape[0], *out), x.dtype)
    idx = np.empty((xs.shape[0], *out), np.int64)
    for pos in np.ndindex(*out):
        coords = list(itertools.product(*(range(p * ss, p * ss + kk) for p, ss, kk in zip(pos, s, k))))
        for plane in range(xs.shape[0]):
            y[(plane, *pos)], idx[(plane, *pos)] = _window_max(xs[plane], coords, in_size)
    return back(y), back(idx)


def _unpool_samples(nd):
    sp = {1: (8,), 2: (6, 4), 3: (4, 4, 6)}[nd]

    def samples(dtype):
        x = make((2, 3, *sp), dtype)
        y, i = _pooled(x, nd, (2,) * nd, (2,) * nd)
        yield Sample((y, i, 2), name="k2")
        yield Sample((y, i, 2), {"output_size": tuple(s + 1 for s in sp)}, name="output-size")
        yield Sample((y, i, 2, 2), {"output_size": (2, 3, *sp)}, name="output-size-with-batch")
        y2, i2 = _pooled(x[0], nd, (2,) * nd, (1,) * nd)  # overlapping windows: duplicate indices
        yield Sample((y2, i2, 2, 1), name="unbatched-overlapping")
        yield Sample((y[:0], i[:0], 2), name="empty-batch")
    return samples


def _unpool_grad_samples(nd):
    sp = {1: (8,), 2: (4, 6), 3: (4, 2, 4)}[nd]

    def samples():
        y, i = _pooled(_distinct((1, 2, *sp), nd), nd, (2,) * nd, (2,) * nd)
        yield Sample((y, i, 2), grad_args=(0,), name="grad")
    return samples


for _nd in (1, 2, 3):
    register(OpSpec(f"max_unpool{_nd}d", _unpool_ref(_nd), _unpool_samples(_nd), grad_samples=_unpool_grad_samples(_nd),
                    gradgrad=_nd == 2))


# ---- unfold / fold -------------------------------------------------------------------------------
def _fold_geometry(size, kernel_size, dilation, padding, stride):
    k, d, p, s = (_tup(v, 2) for v in (kernel_size, dilation, padding, stride))
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    return k, d, p, s, blocks


def _unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s, blocks = _fold_geometry(x.shape[-2:], kernel_size, dilation, padding, stride)
    c = x.shape[-3]
    y = np.zeros((*x.shape[:-3], c * k[0] * k[1], blocks[0] * blocks[1]), x.dtype)
    for ch, ki, kj, bi, bj in itertools.product(range(c), range(k[0]), range(k[1]), range(blocks[0]), range(blocks[1])):
        h, w = bi * s[0] - p[0] + ki * d[0], bj * s[1] - p[1] + kj * d[1]
        if 0 <= h < x.shape[-2] and 0 <= w < x.shape[-1]:
            y[..., (ch * k[0] + ki) * k[1] + kj, bi * blocks[1] + bj] = x[..., ch, h, w]
    return y


def _fold_ref(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    out = _tup(output_size, 2)
    k, d, p, s, blocks = _fold_geometry(out, kernel_size, dilation, padding, stride)
    c = x.shape[-2] // (k[0] * k[1])
    y = np.zeros((*x.shape[:-2], c, *out), np.float64)
    for ch, ki, kj, bi, bj in itertools.product(range(c), range(k[0]), range(k[1]), range(blocks[0]), range(blocks[1])):
        h, w = bi * s[0] - p[0] + ki * d[0], bj * s[1] - p[1] + kj * d[1]
        if 0 <= h < out[0] and 0 <= w < out[1]:
            y[..., ch, h, w] += x[..., (ch * k[0] + ki) * k[1] + kj, bi * blocks[1] + bj]
    return y.astype(x.dtype)


def _unfold_samples(dtype):
    yield Sample((make((2, 3, 5, 6), dtype), 2), name="k2")
    yield Sample((make((2, 2, 6, 7), dtype), (2, 3)), {"dilation": (2, 1), "padding": (1, 2), "stride": (2, 1)},
                 name="all-args")
    yield Sample((make((3, 4, 4), dtype), 3, 1, 1, 2), name="unbatched")
    yield Sample((make((0, 2, 4, 4), dtype), 2), name="empty-batch")


def _fold_samples(dtype):
    yield Sample((make((2, 12, 20), dtype), (5, 6), 2), name="k2")
    yield Sample((make((2, 12, 27), dtype), (6, 7), (2, 3)), {"dilation": (2, 1), "padding": (1, 2), "stride": (2, 1)},
                 name="all-args")
    yield Sample((make((18, 4), dtype), 4, 3, 1, 1, 2), name="unbatched")
    yield Sample((make((0, 8, 9), dtype), 4, 2), name="empty-batch")


register(
    OpSpec("unfold", _unfold_ref, _unfold_samples, gradgrad=True, op=F.unfold),
    OpSpec("fold", _fold_ref, _fold_samples, gradgrad=True, op=F.fold),
)


# ---- pixel and channel shuffles ------------------------------------------------------------------
def _pixel_shuffle_ref(x, r):
    c, h, w = x.shape[-3:]
    y = np.empty((*x.shape[:-3], c // (r * r), h * r, w * r), x.dtype)
    for ch, i, j in itertools.product(range(c // (r * r)), range(h * r), range(w * r)):
        y[..., ch, i, j] = x[..., ch * r * r + (i % r) * r + j % r, i // r, j // r]
    return y


def _pixel_unshuffle_ref(x, r):
    c, h, w = x.shape[-3:]
    y = np.empty((*x.shape[:-3], c * r * r, h // r, w // r), x.dtype)
    for ch, i, j in itertools.product(range(c), range(h), range(w)):
        y[..., ch * r * r + (i % r) * r + j % r, i // r, j // r] = x[..., ch, i, j]
    return y


def _channel_shuffle_ref(x, groups):
    c = x.shape[1]
    y = np.empty_like(x)
    for i in range(c):  # output channel i = (i % groups) * (c / groups) + i // groups
        y[:, i] = x[:, (i % groups) * (c // groups) + i // groups]
    return y


def _pixel_shuffle_samples(dtype):
    yield Sample((make((2, 8, 3, 4), dtype), 2), name="r2")
    yield Sample((make((2, 1, 9, 2, 3), dtype), 3), name="extra-batch-dims")
    yield Sample((make((4, 2, 2), dtype), 1), name="r1-unbatched")
    yield Sample((make((0, 4, 2, 2), dtype), 2), name="empty-batch")


def _pixel_unshuffle_samples(dtype):
    yield Sample((make((2, 2, 4, 6), dtype), 2), name="r2")
    yield Sample((make((2, 1, 1, 6, 3), dtype), 3), name="extra-batch-dims")
    yield Sample((make((0, 1, 4, 4), dtype), 2), name="empty-batch")


def _channel_shuffle_samples(dtype):
    yield Sample((make((2, 6, 3, 2), dtype), 2), name="g2")
    yield Sample((make((2, 6, 4), dtype), 3), name="3d")
    yield Sample((make((1, 4, 2, 2, 2), dtype), 4), name="5d")
    yield Sample((make((0, 6, 3), dtype), 2), name="empty-batch")


register(
    OpSpec("pixel_shuffle", _pixel_shuffle_ref, _pixel_shuffle_samples, dtypes=ALL, op=F.pixel_shuffle),
    OpSpec("pixel_unshuffle", _pixel_unshuffle_ref, _pixel_unshuffle_samples, dtypes=ALL, op=F.pixel_unshuffle),
    OpSpec("channel_shuffle", _channel_shuffle_ref, _channel_shuffle_samples, dtypes=ALL, op=F.channel_shuffle),
    OpSpec("native_channel_shuffle", _channel_shuffle_ref, _channel_shuffle_samples, dtypes=ALL,
           op=F.native_channel_shuffle),
)


# ---- conv_tbc ------------------------------------------------------------------------------------
def _conv_tbc_ref(x, w, b, pad=0):
    t, n, _ = x.shape
    k, _, o = w.shape
    length = max(t + 2 * pad - k + 1, 0)
    y = np.zeros((length, n, o)) + b.astype(np.float64)
    for step, j in itertools.product(range(length), range(k)):
        src = step - pad + j
        if 0 <= src < t:
            y[step] += x[src].astype(np.float64) @ w[j].astype(np.float64)
    return y.astype(x.dtype)


def _conv_tbc_samples(dtype):
    def args(t, k):
        return make((t, 2, 3), dtype), make((k, 3, 4), dtype), make((4,), dtype)
    yield Sample(args(6, 3), name="plain")
    yield Sample(args(6, 3), {"pad": 2}, name="pad")
    yield Sample(args(6, 2), {"pad": -1}, name="negative-pad")
    yield Sample(args(2, 3), name="shorter-than-kernel")


register(OpSpec("conv_tbc", _conv_tbc_ref, _conv_tbc_samples, op=F.conv_tbc, atol=1e-5, rtol=1e-4))


# ---- grid_sample ---------------------------------------------------------------------------------
def _gs_unnormalize(c, size, align_corners):
    return (c + 1) / 2 * (size - 1) if align_corners else ((c + 1) * size - 1) / 2


def _gs_reflect(c, low2, high2):
    if low2 == high2:
        return 0.0
    low, span = low2 / 2, (high2 - low2) / 2
    c = abs(c - low)
    extra = math.fmod(c, span)
    return extra + low if math.floor(c / span) % 2 == 0 else span - extra + low


def _gs_pad(c, size, padding_mode, align_corners):
    if padding_mode == "reflection":
        c = _gs_reflect(c, 0, 2 * (size - 1)) if align_corners else _gs_reflect(c, -1, 2 * size - 1)
    if padding_mode != "zeros":
        c = min(max(c, 0.0), size - 1.0)
    return c


def _gs_cubic(t):
    a = -0.75

    def near(v):
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v):
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _gs_point(plane, coords, mode, padding_mode, align_corners):
    """One output value of every channel of ``plane`` ``(C, *in_size)`` at the normalised ``coords`` (x first)."""
    in_size = plane.shape[1:]
    nd = len(in_size)
    raw = [_gs_unnormalize(-1.0 if math.isnan(c) else c, in_size[d], align_corners)
           for d, c in enumerate(reversed(coords))]  # per spatial dim (D, H, W)

    def value(pos):
        inside = all(0 <= p < n for p, n in zip(pos, in_size))
        return plane[(slice(None), *pos)].astype(np.float64) if inside else np.zeros(plane.shape[0])
    if mode == "bicubic":
        lows = [math.floor(c) for c in raw]
        weights = [_gs_cubic(c - low) for c, low in zip(raw, lows)]
        total = 0.0
        for i, j in itertools.product(range(4), repeat=2):
            pos = [int(_gs_pad(lows[d] - 1 + (i, j)[d], in_size[d], padding_mode, align_corners)) for d in range(2)]
            total = total + weights[0][i] * weights[1][j] * value(pos)
        return total
    padded = [_gs_pad(c, n, padding_mode, align_corners) for c, n in zip(raw, in_size)]
    if mode == "nearest":
        return value([int(np.rint(c)) for c in padded])
    lows = [math.floor(c) for c in padded]
    total = 0.0
    for corner in itertools.product((0, 1), repeat=nd):
        w = math.prod((c - low) if bit else (1 - (c - low)) for bit, c, low in zip(corner, padded, lows))
        total = total + w * value([low + bit for low, bit in zip(lows, corner)])
    return total


def _grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    out_size = grid.shape[1:-1]
    y = np.zeros((x.shape[0], x.shape[1], *out_size))
    for n in range(x.shape[0]):
        for pos in np.ndindex(*out_size):
            y[(n, slice(None), *pos)] = _gs_point(x[n], grid[(n, *pos)].astype(np.float64), mode, padding_mode,
                                                  bool(align_corners))
    return y.astype(x.dtype)


def _grid(shape, dtype, seed):
    g = np.random.default_rng(seed).random(shape) * 2.6 - 1.3
    return g.astype(dtype.np_dtype)


def _grid_sample_samples(dtype):
    x2, x3 = make((2, 3, 4, 5), dtype), make((1, 2, 3, 4, 3), dtype)
    g2, g3 = _grid((2, 3, 4, 2), dtype, 1), _grid((1, 2, 3, 2, 3), dtype, 2)
    for mode, pad, ac in itertools.product(("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"),
                                           (False, True)):
        yield Sample((x2, g2, mode, pad, ac), name=f"2d-{mode}-{pad}-{ac}")
        if mode != "bicubic":
            yield Sample((x3, g3, mode, pad, ac), name=f"3d-{mode}-{pad}-{ac}")
    if dtype.is_floating_point:
        g = g2.copy()
        g[0, 0, 0] = [np.nan, 0.3]
        yield Sample((x2, g), {"align_corners": False}, name="nan-grid")
    yield Sample((make((0, 3, 4, 5), dtype), _grid((0, 3, 4, 2), dtype, 3)), {"align_corners": True},
                 name="empty-batch")


def _grid_sample_grad_samples():
    x = make((1, 2, 3, 4), f64)
    g = _grid((1, 2, 3, 2), f64, 4)
    for mode, pad in itertools.product(("bilinear", "bicubic"), ("zeros", "border", "reflection")):
        yield Sample((x, g, mode, pad, pad == "border"), name=f"grad-{mode}-{pad}")
    yield Sample((make((1, 2, 2, 3, 2), f64), _grid((1, 2, 2, 2, 3), f64, 5), "bilinear", "zeros", False),
                 name="grad-3d")
    yield Sample((x, g, "nearest", "zeros", False), grad_args=(0,), name="grad-nearest")


register(OpSpec("grid_sample", _grid_sample_ref, _grid_sample_samples, op=F.grid_sample,
                grad_samples=_grid_sample_grad_samples, gradgrad=True, atol=1e-5, rtol=1e-4))


# ---- affine_grid ---------------------------------------------------------------------------------
def _affine_grid_ref(theta, size, align_corners=None):
    spatial = size[2:]
    nd = len(spatial)

    def line(steps):
        if steps <= 1:
            return np.zeros(steps)
        r = np.linspace(-1.0, 1.0, steps)
        return r if align_corners else r * (steps - 1) / steps
    lines = [line(s) for s in spatial]
    out = np.zeros((size[0], *spatial, nd))
    for n in range(size[0]):
        for pos in np.ndindex(*spatial):
            point = np.array([lines[d][pos[d]] for d in reversed(range(nd))] + [1.0])  # (x, y[, z], 1)
            out[(n, *pos)] = theta[n].astype(np.float64) @ point
    return out.astype(theta.dtype)


def _affine_grid_samples(dtype):
    yield Sample((make((2, 2, 3), dtype), (2, 3, 4, 5)), {"align_corners": False}, name="2d")
    yield Sample((make((2, 2, 3), dtype), (2, 1, 3, 1)), {"align_corners": False}, name="2d-unit")
    yield Sample((make((1, 3, 4), dtype), (1, 2, 3, 2, 4), True), name="3d")
    yield Sample((make((1, 3, 4), dtype), (1, 1, 2, 3, 2)), {"align_corners": False}, name="3d-unaligned")


register(OpSpec("affine_grid", _affine_grid_ref, _affine_grid_samples, op=F.affine_grid, gradgrad=True,
                unsupported_error=ValueError, atol=1e-6, rtol=1e-5))
