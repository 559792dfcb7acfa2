"""Creation ops: the *_like family, empty, eye, linspace, logspace, randint, randperm, normal, rand_like,
randn_like; multinomial, bernoulli, poisson, randint_like, the windows, tril_indices / triu_indices,
scalar_tensor, empty_strided.

Ops that take a ``dtype=`` rather than a tensor get a *dtype carrier*: an empty array of the sample's
dtype (and, on meta runs, device) whose ``dtype`` / ``device`` the spec's op passes on, so the suite's
dtype and meta checks apply to them too. Random ops compare shapes and dtypes here (``random=True``);
their statistics are tested in test_creation_ext.py.
"""

import numpy as np
from opinfo import ALL, FLOATS, NUMERIC, OpSpec, Sample, make, register, unary_shapes

import oneflow_lite as flow


def _carrier(dtype):
    return np.zeros(0, dtype.np_dtype)


def _on(c):
    return {"dtype": c.dtype, "device": c.device}


def _like_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype),), name=f"shape{shape}")


def _fill_value(dtype):
    return True if dtype is flow.bool else -2.5 if dtype.is_floating_point else 7


def full_like_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype), _fill_value(dtype)), name=f"shape{shape}")


def _sized(*sizes):
    def samples(dtype):
        for size in sizes:
            yield Sample((_carrier(dtype), size), name=f"size{size}")
    return samples


def eye_samples(dtype):
    for n, m in ((3, None), (2, 4), (4, 1), (0, None), (0, 3), (1, 1)):
        yield Sample((_carrier(dtype), n, m), name=f"{n}x{m}")


def _linspace_ref(c, start, end, steps):
    if steps == 1:
        values = np.array([float(start)])
    else:
        values = start + (end - start) * (np.arange(steps) / (steps - 1))
    return values.astype(c.dtype) if c.dtype.kind == "f" else np.trunc(values).astype(np.int64).astype(c.dtype)


def linspace_samples(dtype):
    for start, end, steps in ((0, 10, 6), (-5, 5, 11), (2, 2, 3), (3, 8, 1), (0, 1, 0), (10, 0, 6)):
        yield Sample((_carrier(dtype), start, end, steps), name=f"{start}-{end}-{steps}")
    if dtype.is_floating_point:
        yield Sample((_carrier(dtype), -1.0, 0.5, 7), name="fractions")


def _logspace_ref(c, start, end, steps, base=10.0):
    exps = start + (end - start) * (np.arange(steps) / max(steps - 1, 1)) if steps != 1 else np.array([start])
    values = np.power(float(base), exps)
    return values.astype(c.dtype) if c.dtype.kind == "f" else np.trunc(values).astype(np.int64).astype(c.dtype)


def logspace_samples(dtype):
    yield Sample((_carrier(dtype), 0, 2, 3), name="powers-of-10")
    yield Sample((_carrier(dtype), 0, 6, 7, 2.0), name="base2")
    yield Sample((_carrier(dtype), 1, 1, 1), name="one")
    yield Sample((_carrier(dtype), 0, 1, 0), name="empty")
    if dtype.is_floating_point:
        yield Sample((_carrier(dtype), -2, 1, 4, 3.0), name="negative-exponents")


def randint_samples(dtype):
    for size in ((3, 4), (), (0,)):
        yield Sample((_carrier(dtype), 0, 2, size), name=f"size{size}")


def randperm_samples(dtype):
    for n in (5, 1, 0):
        yield Sample((_carrier(dtype), n), name=f"n{n}")


def normal_samples(dtype):
    yield Sample((make((3, 4), dtype), np.abs(make((3, 4), dtype))), name="same-shape")
    yield Sample((make((3, 1), dtype), np.abs(make((4,), dtype))), name="broadcast")
    yield Sample((make((), dtype), np.abs(make((), dtype))), name="0d")
    yield Sample((make((0, 2), dtype), np.abs(make((2,), dtype))), name="empty")


def _random_like_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype),), name=f"shape{shape}")


register(
    OpSpec("zeros_like", np.zeros_like, _like_samples, dtypes=ALL, differentiable=False),
    OpSpec("ones_like", np.ones_like, _like_samples, dtypes=ALL, differentiable=False),
    OpSpec("empty_like", np.zeros_like, _like_samples, dtypes=ALL, differentiable=False),
    OpSpec("full_like", lambda x, v: np.full(x.shape, np.array(v).astype(x.dtype)), full_like_samples, dtypes=ALL,
           differentiable=False),
    OpSpec("empty", lambda c, size: np.zeros(size, c.dtype), _sized((2, 3), (), (0, 4)), dtypes=ALL,
           differentiable=False, op=lambda c, size: flow.empty(size, **_on(c))),
    OpSpec("eye", lambda c, n, m: np.eye(n, m, dtype=c.dtype), eye_samples, dtypes=ALL, differentiable=False,
           op=lambda c, n, m: flow.eye(n, m, **_on(c))),
    OpSpec("linspace", _linspace_ref, linspace_samples, dtypes=NUMERIC, differentiable=False,
           op=lambda c, start, end, steps: flow.linspace(start, end, steps, **_on(c))),
    OpSpec("logspace", _logspace_ref, logspace_samples, dtypes=NUMERIC, differentiable=False, rtol=1e-6,
           op=lambda c, *args: flow.logspace(*args, **_on(c))),
    OpSpec("randint", lambda c, low, high, size: np.zeros(size, c.dtype), randint_samples, dtypes=ALL,
           differentiable=False, random=True, op=lambda c, low, high, size: flow.randint(low, high, size, **_on(c))),
    OpSpec("randperm", lambda c, n: np.zeros(n, c.dtype), randperm_samples, dtypes=NUMERIC, differentiable=False,
           random=True, op=lambda c, n: flow.randperm(n, **_on(c))),
    OpSpec("normal", lambda mean, std: np.zeros(np.broadcast_shapes(mean.shape, std.shape), mean.dtype),
           normal_samples, dtypes=FLOATS, differentiable=False, random=True),
    OpSpec("rand_like", np.zeros_like, _random_like_samples, dtypes=FLOATS, differentiable=False, random=True,
           unsupported_error=RuntimeError),
    OpSpec("randn_like", np.zeros_like, _random_like_samples, dtypes=FLOATS, differentiable=False, random=True,
           unsupported_error=RuntimeError),
)


# ---- [compat c3] random draws, windows, triangle indices, scalar_tensor, empty_strided ----------------------
def multinomial_samples(dtype):
    yield Sample((make((5,), dtype, 0.1, 1.0), 3, True), name="1d-replacement")
    yield Sample((make((4, 6), dtype, 0.1, 1.0), 6, False), name="2d-all-categories")
    yield Sample((make((2, 3), dtype, 0.1, 1.0), 7, True), name="more-samples-than-categories")


def _multinomial_ref(p, n, replacement):
    return np.zeros((*p.shape[:-1], n), np.int64)


def probability_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype, 0.0, 1.0),), name=f"shape{shape}")


def _window_ref(kind):
    def ref(c, n, periodic=True):
        m = n + 1 if periodic else n
        if n <= 1:
            return np.ones(n, c.dtype)
        i = np.arange(m, dtype=np.float64)
        phase = 2 * np.pi * i / (m - 1)
        values = {"hann": lambda: 0.5 - 0.5 * np.cos(phase),
                  "hamming": lambda: 0.54 - 0.46 * np.cos(phase),
                  "blackman": lambda: 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase),
                  "bartlett": lambda: 1 - np.abs(2 * i / (m - 1) - 1),
                  "kaiser": lambda: np.i0(12.0 * np.sqrt(1 - (2 * i / (m - 1) - 1) ** 2)) / np.i0(12.0)}[kind]()
        return (values[:-1] if periodic else values).astype(c.dtype)
    return ref


def window_samples(dtype):
    for n, periodic in ((5, True), (6, False), (1, True), (0, False), (2, False)):
        yield Sample((_carrier(dtype), n, periodic), name=f"n{n}-{'periodic' if periodic else 'symmetric'}")


def _window_spec(kind):
    fn = getattr(flow, f"{kind}_window")
    return OpSpec(f"{kind}_window", _window_ref(kind), window_samples, dtypes=FLOATS, differentiable=False,
                  unsupported_error=RuntimeError, atol=1e-6,
                  op=lambda c, n, periodic: fn(n, periodic, **_on(c)))


def triangle_samples(dtype):
    for row, col, offset in ((3, 3, 0), (3, 5, 1), (4, 2, -1), (0, 3, 0), (2, 2, 9)):
        yield Sample((_carrier(dtype), row, col, offset), name=f"{row}x{col}{offset:+d}")


def _triangle_ref(upper):
    def ref(c, row, col, offset):
        rows, cols = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
        return np.stack([rows, cols]).astype(c.dtype).reshape(2, -1)
    return ref


def scalar_samples(dtype):
    yield Sample((_carrier(dtype), True if dtype is flow.bool else 3), name="int")
    if dtype.is_floating_point:
        yield Sample((_carrier(dtype), -2.5), name="float")


def randint_like_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype), 2), name=f"shape{shape}")


register(
    OpSpec("multinomial", _multinomial_ref, multinomial_samples, dtypes=FLOATS, differentiable=False, random=True,
           unsupported_error=RuntimeError, method="multinomial"),
    OpSpec("bernoulli", np.zeros_like, probability_samples, dtypes=FLOATS, differentiable=False, random=True,
           unsupported_error=RuntimeError, method="bernoulli"),
    OpSpec("poisson", np.zeros_like, probability_samples, dtypes=FLOATS, differentiable=False, random=True,
           unsupported_error=RuntimeError),
    OpSpec("randint_like", lambda x, high: np.zeros_like(x), randint_like_samples, dtypes=ALL,
           differentiable=False, random=True),
    *(_window_spec(kind) for kind in ("hann", "hamming", "blackman", "bartlett", "kaiser")),
    OpSpec("tril_indices", _triangle_ref(False), triangle_samples, dtypes=(flow.int32, flow.int64),
           differentiable=False, unsupported_error=RuntimeError,
           op=lambda c, row, col, offset: flow.tril_indices(row, col, offset, **_on(c))),
    OpSpec("triu_indices", _triangle_ref(True), triangle_samples, dtypes=(flow.int32, flow.int64),
           differentiable=False, unsupported_error=RuntimeError,
           op=lambda c, row, col, offset: flow.triu_indices(row, col, offset, **_on(c))),
    OpSpec("scalar_tensor", lambda c, s: np.array(s, c.dtype), scalar_samples, dtypes=ALL, differentiable=False,
           op=lambda c, s: flow.scalar_tensor(s, **_on(c))),
    OpSpec("empty_strided", lambda c, size, stride: np.zeros(size, c.dtype),
           lambda dtype: iter([Sample((_carrier(dtype), (2, 3), (3, 1)), name="2x3"),
                               Sample((_carrier(dtype), (), ()), name="0d")]),
           dtypes=ALL, differentiable=False,
           op=lambda c, size, stride: flow.empty_strided(size, stride, **_on(c))),
)


# [compat t1] binomial(count, prob): random draws, checked for shape / dtype here (statistics in
# tests/test_compat_torch_tail.py).
def binomial_samples(dtype):
    for shape in unary_shapes():
        count = np.asarray(make(shape, dtype, 0.0, 9.0).round())
        yield Sample((count, make(shape, dtype, 0.0, 1.0)), name=f"shape{shape}")


register(OpSpec("binomial", lambda count, prob: np.zeros_like(count), binomial_samples, dtypes=FLOATS,
                differentiable=False, random=True, unsupported_error=RuntimeError))
