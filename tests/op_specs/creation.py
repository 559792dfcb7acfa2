"""Creation ops: the *_like family, empty, eye, linspace, logspace, randint, randperm, normal, rand_like,
randn_like.

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
