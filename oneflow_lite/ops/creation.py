"""Creation ops: source ops without tensor inputs (and ``normal_tensor``, whose parameters are tensors).

Each has a ``device`` attr: ``OpInterpUtil.dispatch`` picks the backend from it and
the default device inference puts the output there. Every attr that decides the
values (shape, dtype, fill value, range, distribution parameters) is a real op
attr, so a captured graph records it.
"""

from __future__ import annotations

import math

import numpy as np

from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.ops.common import broadcast_shapes


def _shape(ctx):
    shape = ctx.attrs["shape"]
    negative = next((d for d in shape if d < 0), None)
    if negative is not None:
        raise ctx.error(f"Trying to create tensor with negative dimension {negative}: {list(shape)}")
    return shape


def _float_dtype(ctx):
    dtype = ctx.attrs["dtype"]
    if not dtype.is_floating_point:
        raise ctx.error(f"expected a floating point dtype (float16, float32 or float64), got {dtype.name}")
    return dtype


_SOURCE_ATTRS = {"shape": ("shape", ()), "dtype": ("data_type", dt.float32), "device": ("device", "cpu")}


def _constant_dtype(ctx):
    """The dtype attr; a fill value that does not fit it is an error (PyTorch's overflow check). Note [uint64
    constants]: the int64 attr holds a uint64 value of 2**63 or more as its two's complement (the functor
    refuses negative uint64 values before encoding)."""
    attrs = ctx.attrs
    dtype = attrs["dtype"]
    value = attrs["floating_value"] if attrs["is_floating_value"] else attrs["integer_value"]
    if dtype is dt.uint64 and not attrs["is_floating_value"]:
        value %= 2 ** 64
    if not dt.holds(dtype, value):
        raise ctx.error(f"value {value} cannot be converted to type {dtype.name} without overflow")
    return dtype


register_user_op("constant", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "floating_value": ("double", 0.0), "integer_value": ("int64", 0),
                        "is_floating_value": ("bool", False)},
                 infer_shape=_shape, infer_dtype=_constant_dtype)


def _arange_shape(ctx):
    """``ceil((limit - start) / delta)`` elements, with PyTorch's checks."""
    a = ctx.attrs
    if a["is_floating_range"]:
        start, limit, delta = a["float_start"], a["float_limit"], a["float_delta"]
        if not (math.isfinite(start) and math.isfinite(limit)):
            raise ctx.error(f"unsupported range: {start} -> {limit}")
        if not math.isfinite(delta):
            raise ctx.error(f"unsupported step: {delta}")
    else:
        start, limit, delta = a["integer_start"], a["integer_limit"], a["integer_delta"]
    if delta == 0:
        raise ctx.error("step must be nonzero")
    if (delta > 0 and limit < start) or (delta < 0 and limit > start):
        raise ctx.error("upper bound and lower bound inconsistent with step sign")
    size = math.ceil((limit - start) / delta) if a["is_floating_range"] else -((start - limit) // delta)
    if size >= 2**63:
        raise ctx.error(f"invalid size {size}, possible overflow?")
    return (size,)


def _arange_dtype(ctx):
    dtype = ctx.attrs["dtype"]
    if dtype is dt.bool_:
        raise ctx.error("not implemented for dtype bool")
    return dtype


register_user_op("arange", outputs=["out"], no_grad=True,
                 attrs={"dtype": ("data_type", dt.int64), "device": ("device", "cpu"),
                        "integer_start": ("int64", 0), "integer_limit": ("int64", 0), "integer_delta": ("int64", 1),
                        "float_start": ("double", 0.0), "float_limit": ("double", 0.0), "float_delta": ("double", 1.0),
                        "is_floating_range": ("bool", False)},
                 infer_shape=_arange_shape, infer_dtype=_arange_dtype)

register_user_op("uniform", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "from": ("double", 0.0), "to": ("double", 1.0)},
                 infer_shape=_shape, infer_dtype=_float_dtype)

register_user_op("normal", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "mean": ("double", 0.0), "std": ("double", 1.0)},
                 infer_shape=_shape, infer_dtype=_float_dtype)


def _attr_dtype(ctx):
    return ctx.attrs["dtype"]


def _eye_shape(ctx):
    n, m = ctx.attrs["rows"], ctx.attrs["cols"]
    if n < 0:
        raise ctx.error(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise ctx.error(f"m must be greater or equal to 0, got {m}")
    return (n, m)


register_user_op("eye", outputs=["out"], no_grad=True,
                 attrs={"rows": ("int64", 0), "cols": ("int64", 0), "dtype": ("data_type", dt.float32),
                        "device": ("device", "cpu")},
                 infer_shape=_eye_shape, infer_dtype=_attr_dtype)


def _steps_shape(ctx):
    steps = ctx.attrs["steps"]
    if steps < 0:
        raise ctx.error(f"number of steps must be non-negative, got {steps}")
    return (steps,)


_SPACE_ATTRS = {"start": ("double", 0.0), "end": ("double", 0.0), "steps": ("int64", 0),
                "dtype": ("data_type", dt.float32), "device": ("device", "cpu")}
register_user_op("linspace", outputs=["out"], no_grad=True, attrs=_SPACE_ATTRS,
                 infer_shape=_steps_shape, infer_dtype=_attr_dtype)
register_user_op("logspace", outputs=["out"], no_grad=True, attrs={**_SPACE_ATTRS, "base": ("double", 10.0)},
                 infer_shape=_steps_shape, infer_dtype=_attr_dtype)


def _randint_dtype(ctx):
    """PyTorch's ``random_`` checks: ``low < high`` and both within the dtype's range."""
    low, high = ctx.attrs["low"], ctx.attrs["high"]
    dtype = ctx.attrs["dtype"]
    if low >= high:
        raise ctx.error(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype is dt.bool_:
        lo, hi = 0, 1
    elif dtype.is_floating_point:
        hi = float(dt.finfo(dtype).max)
        lo = -hi
    else:
        lo, hi = int(np.iinfo(dtype.np_dtype).min), int(np.iinfo(dtype.np_dtype).max)
    if not lo <= low <= hi:
        raise ctx.error(f"from is out of bounds for {dtype.name}")
    if not lo <= high - 1 <= hi:
        raise ctx.error(f"to - 1 is out of bounds for {dtype.name}")
    return dtype


register_user_op("randint", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "dtype": ("data_type", dt.int64), "low": ("int64", 0), "high": ("int64", 1)},
                 infer_shape=_shape, infer_dtype=_randint_dtype)

# The largest n whose values 0 .. n-1 a dtype holds exactly (float16: 2048, bfloat16: 256, float32: 2**24).
_RANDPERM_MAX = {dt.float16: 2**11, dt.bfloat16: 2**8, dt.float32: 2**24, dt.float64: 2**53}


def _randperm_shape(ctx):
    n = ctx.attrs["n"]
    dtype = ctx.attrs["dtype"]
    if n < 0:
        raise ctx.error(f"n must be non-negative, got {n}")
    limit = _RANDPERM_MAX.get(dtype)
    if limit is None and dtype is not dt.bool_:
        limit = int(np.iinfo(dtype.np_dtype).max) + 1
    if limit is not None and n > limit:
        raise ctx.error(f"n is too large for result tensor type: '{dtype.name}' (n={n}, at most {limit})")
    return (n,)


register_user_op("randperm", outputs=["out"], no_grad=True,
                 attrs={"n": ("int64", 0), "dtype": ("data_type", dt.int64), "device": ("device", "cpu")},
                 infer_shape=_randperm_shape, infer_dtype=_attr_dtype)


def _normal_tensor_shape(ctx):
    mean, std = ctx.shape("mean"), ctx.shape("std")
    try:
        return broadcast_shapes(ctx.op_type, mean, std)
    except RuntimeError:
        raise ctx.error(f"the shapes of mean {list(mean)} and std {list(std)} do not broadcast") from None


def _normal_tensor_dtype(ctx):
    if ctx.dtype("mean") is not ctx.dtype("std"):
        raise ctx.error(f"mean and std must have the same dtype, got {ctx.dtype('mean').name} and "
                        f"{ctx.dtype('std').name}")
    return ctx.dtype("mean")


# normal(mean, std) with tensors: samples of N(mean, std) elementwise (broadcast); no_grad as the draw
# does not depend differentiably on its parameters here (see the Normal functors).
register_user_op("normal_tensor", inputs=["mean", "std"], outputs=["out"], no_grad=True,
                 infer_shape=_normal_tensor_shape, infer_dtype=_normal_tensor_dtype)


# ---- more random ops (no_grad: PyTorch does not differentiate through draws) ---------------------------
def _multinomial_shape(ctx):
    shape = ctx.shape("x")
    n, replacement = ctx.attrs["num_samples"], ctx.attrs["replacement"]
    if len(shape) not in (1, 2):
        raise ctx.error(f"prob_dist must be 1 or 2 dim, got a tensor of {len(shape)} dims")
    categories = shape[-1]
    if categories == 0:
        raise ctx.error("number of categories cannot be zero")
    if categories > 2**24:
        raise ctx.error(f"number of categories cannot exceed 2^24, got {categories}")
    if n <= 0:
        raise ctx.error(f"cannot sample n_sample <= 0 samples, got num_samples={n}")
    if not replacement and n > categories:
        raise ctx.error(f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                        f"(num_samples={n}, categories={categories})")
    return (*shape[:-1], n)


def _multinomial_dtype(ctx):
    if not ctx.dtype("x").is_floating_point:
        raise ctx.error(f"expected a floating point probability tensor, got {ctx.dtype('x').name}")
    return dt.int64


register_user_op("multinomial", inputs=["x"], outputs=["out"], no_grad=True,
                 attrs={"num_samples": ("int64", 1), "replacement": ("bool", False)},
                 infer_shape=_multinomial_shape, infer_dtype=_multinomial_dtype)


def _probability_dtype(ctx):
    if not ctx.dtype("x").is_floating_point:
        raise ctx.error(f"expected a floating point tensor of probabilities / rates, got {ctx.dtype('x').name}")
    return ctx.attrs["dtype"]


def _same_x_shape(ctx):
    return ctx.shape("x")


def _binomial_shape(ctx):
    return broadcast_shapes("binomial", ctx.shape("count"), ctx.shape("prob"))


def _binomial_dtype(ctx):
    count, prob = ctx.dtype("count"), ctx.dtype("prob")
    if not count.is_floating_point:
        raise ctx.error(f"binomial only supports floating-point dtypes for count, got: {count.name}")
    if prob is not count:
        raise ctx.error(f"expected prob of count's dtype {count.name}, got {prob.name}")
    return count


# binomial(count, prob): the number of successes in count trials of probability prob, elementwise (broadcast).
register_user_op("binomial", inputs=["count", "prob"], outputs=["out"], no_grad=True,
                 infer_shape=_binomial_shape, infer_dtype=_binomial_dtype)


# bernoulli(x): 1 with probability x, elementwise, in the dtype attr (the in-place variant writes any dtype).
register_user_op("bernoulli", inputs=["x"], outputs=["out"], no_grad=True,
                 attrs={"dtype": ("data_type", dt.float32)},
                 infer_shape=_same_x_shape, infer_dtype=_probability_dtype)


def _poisson_dtype(ctx):
    dtype = ctx.dtype("x")
    if not dtype.is_floating_point:
        raise ctx.error(f"expected a floating point tensor of rates, got {dtype.name}")
    return dtype


register_user_op("poisson", inputs=["x"], outputs=["out"], no_grad=True,
                 infer_shape=_same_x_shape, infer_dtype=_poisson_dtype)


def _geometric_dtype(ctx):
    p = ctx.attrs["p"]
    if not 0 < p < 1:
        raise ctx.error(f"geometric_ expects p to be in (0, 1), but got p={p}")
    dtype = ctx.attrs["dtype"]
    if dtype is dt.bool_:
        raise ctx.error("geometric_ is not implemented for bool")
    return dtype


def _positive_param_dtype(param, name):
    def infer(ctx):
        value = ctx.attrs[param]
        if not value > 0:
            raise ctx.error(f"{name} expects {param} > 0.0, but found {param}={value}")
        return _float_dtype(ctx)
    return infer


# The in-place distributions of PyTorch's Tensor (exponential_, geometric_, log_normal_, cauchy_): source ops
# of the tensor's shape / dtype / device, written into it.
register_user_op("exponential", outputs=["out"], no_grad=True, attrs={**_SOURCE_ATTRS, "lambd": ("double", 1.0)},
                 infer_shape=_shape, infer_dtype=_positive_param_dtype("lambd", "exponential_"))
register_user_op("geometric", outputs=["out"], no_grad=True, attrs={**_SOURCE_ATTRS, "p": ("double", 0.5)},
                 infer_shape=_shape, infer_dtype=_geometric_dtype)
register_user_op("log_normal", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "mean": ("double", 1.0), "std": ("double", 2.0)},
                 infer_shape=_shape, infer_dtype=_positive_param_dtype("std", "log_normal_"))
register_user_op("cauchy", outputs=["out"], no_grad=True,
                 attrs={**_SOURCE_ATTRS, "median": ("double", 0.0), "sigma": ("double", 1.0)},
                 infer_shape=_shape, infer_dtype=_positive_param_dtype("sigma", "cauchy_"))


# ---- window functions and triangle indices ------------------------------------------------------------
WINDOWS = ("hann", "hamming", "blackman", "bartlett", "kaiser")


def _window_shape(ctx):
    kind, n = ctx.attrs["kind"], ctx.attrs["window_length"]
    if kind not in WINDOWS:
        raise ctx.error(f"unknown window {kind!r}; expected one of {', '.join(WINDOWS)}")
    if n < 0:
        raise ctx.error(f"{kind}_window requires non-negative window_length, got window_length={n}")
    return (n,)


def _window_dtype(ctx):
    dtype = ctx.attrs["dtype"]
    if not dtype.is_floating_point:
        raise ctx.error(f"{ctx.attrs['kind']}_window expects floating point dtypes, got {dtype.name}")
    return dtype


# window(kind, N, periodic, alpha, beta): PyTorch's *_window functions (alpha / beta: hamming's coefficients,
# beta also kaiser's shape parameter).
register_user_op("window", outputs=["out"], no_grad=True,
                 attrs={"kind": ("string", "hann"), "window_length": ("int64", 0), "periodic": ("bool", True),
                        "alpha": ("double", 0.54), "beta": ("double", 0.46), "dtype": ("data_type", dt.float32),
                        "device": ("device", "cpu")},
                 infer_shape=_window_shape, infer_dtype=_window_dtype)


def tril_count(row: int, col: int, offset: int) -> int:
    """How many (i, j) with 0 <= i < row, 0 <= j < col and j - i <= offset: row i holds
    ``clip(i + offset + 1, 0, col)``, summed in closed form (a row count of 2**40 allocates nothing)."""
    if row <= 0 or col <= 0:
        return 0
    k = offset + 1
    lo, hi = max(0, 1 - k), min(row, col - k)  # the rows holding 1 .. col - 1
    partial = (2 * k + lo + hi - 1) * (hi - lo) // 2 if hi > lo else 0
    return partial + max(0, row - max(0, col - k)) * col


def _triangle_shape(ctx):
    a = ctx.attrs
    row, col, offset = a["row"], a["col"], a["offset"]
    if row < 0 or col < 0:
        raise ctx.error(f"row and col must be non-negative, got row={row}, col={col}")
    if a["upper"]:
        return (2, row * col - tril_count(row, col, offset - 1))
    return (2, tril_count(row, col, offset))


def _triangle_dtype(ctx):
    dtype = ctx.attrs["dtype"]
    if dtype not in (dt.int32, dt.int64):
        raise ctx.error(f"expected dtype int32 or int64, got {dtype.name}")
    return dtype


# triangle_indices: the (2, N) coordinates of the lower (upper=False) or upper triangle, row by row.
register_user_op("triangle_indices", outputs=["out"], no_grad=True,
                 attrs={"row": ("int64", 0), "col": ("int64", 0), "offset": ("int64", 0), "upper": ("bool", False),
                        "dtype": ("data_type", dt.int64), "device": ("device", "cpu")},
                 infer_shape=_triangle_shape, infer_dtype=_triangle_dtype)
