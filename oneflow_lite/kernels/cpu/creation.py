"""cpu kernels of creation ops; random ones draw from ``current_generator(ctx.device)``."""

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in, output_dtype_in
from oneflow_lite.framework.dtype import FLOATING_DTYPES, NUMERIC_DTYPES, bfloat16
from oneflow_lite.framework.generator import current_generator
from oneflow_lite.kernels.registration import cpu_kernel

_float16 = np.dtype(np.float16)
_float32 = np.dtype(np.float32)
_bfloat16 = bfloat16.np_dtype
_float64 = np.dtype(np.float64)
_int64 = np.dtype(np.int64)


@cpu_kernel("constant")
def constant_cpu(ctx):
    attrs = ctx.attrs
    value = attrs["floating_value"] if attrs["is_floating_value"] else attrs["integer_value"]
    meta = ctx.out_metas[0]
    if value == 0:
        return np.zeros(meta.shape, meta.np_dtype)
    if value < 0 and meta.np_dtype == np.uint64:  # Note [uint64 constants]: the bits of a value >= 2**63
        value = np.int64(value)  # np.full casts an int64 unsafely: two's complement back to the uint64
    return np.full(meta.shape, value, meta.np_dtype)


@cpu_kernel("arange")
def arange_cpu(ctx):
    a = ctx.attrs
    meta = ctx.out_metas[0]
    start, delta = a["float_start"], a["float_delta"]
    if a["is_floating_range"] and meta.np_dtype.kind in "iu" and max(abs(start), abs(delta)) < 2 ** 62:
        # Note [Integer aranges]: PyTorch's arange into an integer dtype other than int64 counts its elements in
        # double from the given bounds but computes them from the truncated start and step (arange(-0.5, 2, 1,
        # dtype=int32) is [0, 1, 2]; a step of 0.5 repeats the start)
        values = np.arange(meta.shape[0], dtype=_int64) * int(delta) + int(start)
    elif a["is_floating_range"]:
        values = np.arange(meta.shape[0], dtype=_float64) * delta + start
    else:
        values = np.arange(meta.shape[0], dtype=_int64) * a["integer_delta"] + a["integer_start"]
    with np.errstate(invalid="ignore", over="ignore"):
        return values.astype(meta.np_dtype, copy=False)


# Note [Uniform float16]
# NumPy draws no float16; rounding a float32 draw can give exactly 1.0, outside
# [0, 1). As PyTorch does, a float16 draw takes 11 random bits times 2**-11.
@cpu_kernel("uniform")
def uniform_cpu(ctx):
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    if meta.np_dtype == _float16:
        x = (gen.integers(0, 2048, meta.shape, dtype=np.int16) * (1.0 / 2048)).astype(_float16)
    elif meta.np_dtype == _bfloat16:  # as float16: 8 random bits times 2**-8
        x = (gen.integers(0, 256, meta.shape, dtype=np.int16) * (1.0 / 256)).astype(_bfloat16)
    else:
        x = gen.random(meta.shape, dtype=meta.np_dtype)
    low, high = ctx.attrs["from"], ctx.attrs["to"]
    if low != 0.0 or high != 1.0:
        x = (x * (high - low) + low).astype(meta.np_dtype, copy=False)
    return x


@cpu_kernel("normal")
def normal_cpu(ctx):
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    if meta.np_dtype == _float16 or meta.np_dtype == _bfloat16:
        x = gen.standard_normal(meta.shape, dtype=np.float32).astype(meta.np_dtype)
    else:
        x = gen.standard_normal(meta.shape, dtype=meta.np_dtype)
    mean, std = ctx.attrs["mean"], ctx.attrs["std"]
    if mean != 0.0 or std != 1.0:
        x = (x * std + mean).astype(meta.np_dtype, copy=False)
    return x


@cpu_kernel("eye")
def eye_cpu(ctx):
    meta = ctx.out_metas[0]
    return np.eye(*meta.shape, dtype=meta.np_dtype)


def _as_output(values, np_dtype):
    """float64 ``values`` in ``np_dtype``: integers truncate toward zero (through int64, so they wrap)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if np_dtype.kind in "iu":
            return values.astype(_int64).astype(np_dtype, copy=False)
        return values.astype(np_dtype)


def _linspace(ctx):
    """PyTorch's symmetric linspace in float64: the first half counts up from start, the rest down from end.
    For an integer dtype, start and end are values of it first (truncated toward zero), as in PyTorch."""
    a = ctx.attrs
    start, end, steps = a["start"], a["end"], a["steps"]
    if ctx.out_metas[0].np_dtype.kind in "iu":
        start, end = float(np.trunc(start)), float(np.trunc(end))
    if steps == 1:
        return np.array([start], _float64)
    i = np.arange(steps, dtype=_float64)
    with np.errstate(invalid="ignore", over="ignore"):
        step = (end - start) / (steps - 1)
        return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


_NUMERIC_OUT = output_dtype_in("out", *NUMERIC_DTYPES, bfloat16)


@cpu_kernel("linspace", _NUMERIC_OUT)
def linspace_cpu(ctx):
    return _as_output(_linspace(ctx), ctx.out_metas[0].np_dtype)


@cpu_kernel("logspace", _NUMERIC_OUT)
def logspace_cpu(ctx):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        values = np.power(ctx.attrs["base"], _linspace(ctx))
    return _as_output(values, ctx.out_metas[0].np_dtype)


@cpu_kernel("randint")
def randint_cpu(ctx):
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    return gen.integers(ctx.attrs["low"], ctx.attrs["high"], meta.shape, dtype=_int64).astype(meta.np_dtype)


@cpu_kernel("randperm", _NUMERIC_OUT)
def randperm_cpu(ctx):
    meta = ctx.out_metas[0]
    return current_generator(ctx.device).numpy.permutation(ctx.attrs["n"]).astype(meta.np_dtype)


@cpu_kernel("normal_tensor", dtype_in("mean", *FLOATING_DTYPES, bfloat16))
def normal_tensor_cpu(ctx, mean, std):
    if std.size and not (std >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    meta = ctx.out_metas[0]
    gen = current_generator(ctx.device).numpy
    z = gen.standard_normal(meta.shape, dtype=meta.np_dtype if meta.np_dtype in (_float32, _float64) else _float32)
    return (z * std + mean).astype(meta.np_dtype, copy=False)


# ---- more random kernels -----------------------------------------------------------------------------
def _check_probabilities(p):
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(axis=-1) <= 0).any():
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")


@cpu_kernel("multinomial")
def multinomial_cpu(ctx, x):
    """With replacement: inverse-CDF draws per row; without: the top ``num_samples`` of p / E with E ~ Exp(1)
    (PyTorch's method: a draw without replacement, in the order drawn)."""
    p = x.astype(_float64).reshape(-1, x.shape[-1])
    _check_probabilities(p)
    n = ctx.attrs["num_samples"]
    gen = current_generator(ctx.device).numpy
    if ctx.attrs["replacement"]:
        cdf = np.cumsum(p, axis=1)
        u = gen.random((p.shape[0], n)) * cdf[:, -1:]
        out = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)])
        out = np.minimum(out, p.shape[1] - 1)  # u * total can round up to total
    else:
        keys = p / gen.standard_exponential(p.shape)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :n]
    return out.astype(_int64).reshape(ctx.out_metas[0].shape)


@cpu_kernel("bernoulli")
def bernoulli_cpu(ctx, x):
    p = x.astype(_float64)
    if p.size and not ((p >= 0) & (p <= 1)).all():
        raise RuntimeError("bernoulli: expected all probabilities p to satisfy 0 <= p <= 1")
    meta = ctx.out_metas[0]
    return np.asarray(current_generator(ctx.device).numpy.random(p.shape) < p).astype(meta.np_dtype)


@cpu_kernel("poisson")
def poisson_cpu(ctx, x):
    rates = x.astype(_float64)
    if rates.size and not (rates >= 0).all():
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    return np.asarray(current_generator(ctx.device).numpy.poisson(rates)).astype(ctx.out_metas[0].np_dtype)


@cpu_kernel("binomial")
def binomial_cpu(ctx, count, prob):
    meta = ctx.out_metas[0]
    n, p = np.broadcast_arrays(count.astype(_float64), prob.astype(_float64))
    if n.size and not ((n >= 0).all() and ((p >= 0) & (p <= 1)).all()):
        raise RuntimeError("binomial: expected count >= 0 and 0 <= prob <= 1")
    draws = current_generator(ctx.device).numpy.binomial(np.floor(n).astype(np.int64), p)
    return np.where(p == 1, n, draws).astype(meta.np_dtype).reshape(meta.shape)


def _draw(ctx, fn):
    """``fn(numpy_generator, shape)`` in float64, cast to the output dtype."""
    meta = ctx.out_metas[0]
    with np.errstate(over="ignore"):
        return np.asarray(fn(current_generator(ctx.device).numpy, meta.shape)).astype(meta.np_dtype)


@cpu_kernel("exponential")
def exponential_cpu(ctx):
    scale = 1.0 / ctx.attrs["lambd"]
    return _draw(ctx, lambda g, shape: g.exponential(scale, shape))


@cpu_kernel("geometric")
def geometric_cpu(ctx):
    p = ctx.attrs["p"]
    return _draw(ctx, lambda g, shape: g.geometric(p, shape).astype(_float64))


@cpu_kernel("log_normal")
def log_normal_cpu(ctx):
    mean, std = ctx.attrs["mean"], ctx.attrs["std"]
    return _draw(ctx, lambda g, shape: g.lognormal(mean, std, shape))


@cpu_kernel("cauchy")
def cauchy_cpu(ctx):
    median, sigma = ctx.attrs["median"], ctx.attrs["sigma"]
    return _draw(ctx, lambda g, shape: median + sigma * g.standard_cauchy(shape))


# ---- windows and triangle indices ------------------------------------------------------------------------
def _cosine_window(n, coefficients):
    """sum_k (-1)^k a_k cos(2 pi k i / (n - 1)) for i in 0 .. n-1 (hann, hamming, blackman)."""
    phase = 2 * np.pi * np.arange(n, dtype=_float64) / (n - 1)
    return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))


def _window_values(kind, n, alpha, beta):
    """The symmetric window of ``n`` > 1 points, in float64."""
    if kind == "hann":
        return _cosine_window(n, (0.5, 0.5))
    if kind == "hamming":
        return _cosine_window(n, (alpha, beta))
    if kind == "blackman":
        return _cosine_window(n, (0.42, 0.5, 0.08))
    if kind == "bartlett":
        return 1 - np.abs(2 * np.arange(n, dtype=_float64) / (n - 1) - 1)
    return np.kaiser(n, beta)


@cpu_kernel("window")
def window_cpu(ctx):
    """A periodic window of N points is the symmetric one of N + 1 without its last point (PyTorch)."""
    a = ctx.attrs
    meta = ctx.out_metas[0]
    n = a["window_length"]
    if n <= 1:
        return np.ones(n, meta.np_dtype)
    periodic = a["periodic"]
    with np.errstate(all="ignore"):  # np.kaiser of an infinite or huge beta: nan / inf, as PyTorch gives
        values = _window_values(a["kind"], n + 1 if periodic else n, a["alpha"], a["beta"])
        return (values[:-1] if periodic else values).astype(meta.np_dtype)


def _triangle(row, col, offset, upper):
    """The (rows, cols) of the triangle, in memory proportional to its size: only the rows holding an index are
    enumerated (NumPy's ``tril_indices`` builds a row x col mask)."""
    if row <= 0 or col <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if upper:  # row i holds j in [max(0, i + offset), col): the rows i < col - offset
        i = np.arange(0, max(0, min(row, col - offset)))
        start = np.clip(i + offset, 0, col)
        stop = np.full_like(i, col)
    else:  # row i holds j in [0, min(col, i + offset + 1)): the rows i >= -offset
        i = np.arange(min(row, max(0, -offset)), row)
        start = np.zeros_like(i)
        stop = np.clip(i + offset + 1, 0, col)
    counts = stop - start
    return np.repeat(i, counts), np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts - start, counts)


@cpu_kernel("triangle_indices")
def triangle_indices_cpu(ctx):
    a = ctx.attrs
    rows, cols = _triangle(a["row"], a["col"], a["offset"], a["upper"])
    return np.stack([rows, cols]).astype(ctx.out_metas[0].np_dtype).reshape(ctx.out_metas[0].shape)
