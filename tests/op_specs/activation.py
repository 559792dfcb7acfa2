"""Activation ops: relu, relu6, leaky_relu, elu, selu, gelu, silu, mish, softplus, hardtanh, hardsigmoid,
hardswish, sigmoid, tanh.

References are the textbook formulas in float64 (``math.erf`` for gelu), rounded to the input's dtype.
"""

import math

import numpy as np
from opinfo import ALL, FLOATS, NUMERIC, OpSpec, Sample, make, register, unary_shapes

import oneflow_lite as flow

_SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 2.9, -2.9, 3.5, -3.5, 7.0, 50.0, -50.0, np.inf, -np.inf, np.nan])
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary_samples(low=None, high=None, kwargs=(), special=True):
    """Every shape of ``unary_shapes`` with default arguments, a (3, 4) sample per entry of ``kwargs``, and
    special values (inf, nan, large) for floats."""
    def samples(dtype):
        for shape in unary_shapes():
            yield Sample((make(shape, dtype, low, high),), name=f"shape{shape}")
        x = make((3, 4), dtype, low, high)
        for kw in kwargs:
            yield Sample((x,), dict(kw), name=str(kw))
        if special and dtype.is_floating_point:
            yield Sample((_SPECIAL.astype(dtype.np_dtype),), name="special values")
    return samples


def _f64(fn):
    """A reference computing ``fn`` in float64 (float32 for integer / bool inputs of promoting ops)."""
    def ref(x, *args, **kwargs):
        out = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64), *args, **kwargs)).astype(out)
    return ref


def _relu6(x):
    if x.dtype.kind != "f":
        return np.clip(x, 0, 6).astype(x.dtype)
    return _f64(lambda v: np.minimum(np.maximum(v, 0.0), 6.0))(x)


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    if x.dtype.kind != "f":  # PyTorch truncates the bounds to integers and clamps
        return np.clip(x, int(min_val), int(max_val)).astype(x.dtype)
    return _f64(lambda v: np.minimum(np.maximum(v, min_val), max_val))(x)


def _hardtanh_samples(dtype):
    if dtype is flow.uint8:  # negative limits are an error for unsigned types
        kwargs = ({"min_val": 2.0, "max_val": 5.0}, {"min_val": 1.7, "max_val": 6.9})
        for shape in unary_shapes():
            yield Sample((make(shape, dtype),), {"min_val": 0.0}, name=f"shape{shape}")
        for kw in kwargs:
            yield Sample((make((3, 4), dtype),), kw, name=str(kw))
        return
    yield from _unary_samples(kwargs=({"min_val": -2.0, "max_val": 0.5}, {"min_val": -3.7, "max_val": 4.2},
                                      {"min_val": 0.5, "max_val": 0.5}))(dtype)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log(1.0 + np.exp(beta * x)) / beta)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1.0))


def _relu_ref(x):
    return np.maximum(x, x.dtype.type(0))


register(
    OpSpec("relu", _relu_ref, _unary_samples(), dtypes=NUMERIC, method="relu"),
    OpSpec("relu6", _relu6, _unary_samples(-4.0, 10.0), dtypes=NUMERIC),
    OpSpec("hardtanh", _hardtanh, _hardtanh_samples, dtypes=NUMERIC, gradgrad=True),
    OpSpec("leaky_relu", _f64(lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope)),
           _unary_samples(kwargs=({"negative_slope": 0.2}, {"negative_slope": -1.5})), dtypes=FLOATS,
           gradgrad=True),
    OpSpec("elu", _f64(_elu), _unary_samples(kwargs=({"alpha": 0.5}, {"alpha": 2.0})), dtypes=FLOATS,
           gradgrad=True),
    OpSpec("selu", _f64(lambda x: _SELU_SCALE * _elu(x, _SELU_ALPHA)), _unary_samples(), dtypes=FLOATS,
           gradgrad=True),
    OpSpec("gelu", _f64(_gelu), _unary_samples(kwargs=({"approximate": "tanh"}, {"approximate": "none"})),
           dtypes=FLOATS, gradgrad=True,
           grad_samples=lambda: [Sample((make((3, 4), flow.float64),), {"approximate": a}, name=a)
                                 for a in ("none", "tanh")]),
    OpSpec("silu", _f64(lambda x: x / (1.0 + np.exp(-x))), _unary_samples(), dtypes=FLOATS, gradgrad=True),
    OpSpec("mish", _f64(lambda x: x * np.tanh(np.log1p(np.exp(x)))), _unary_samples(), dtypes=FLOATS,
           gradgrad=True),
    OpSpec("softplus", _f64(_softplus),
           _unary_samples(kwargs=({"beta": 2.0}, {"beta": 0.5, "threshold": 1.0}, {"threshold": 0.0})),
           dtypes=FLOATS, gradgrad=True,
           grad_samples=lambda: [Sample((make((3, 4), flow.float64),), kw, name=str(kw))
                                 for kw in ({}, {"beta": 2.0}, {"beta": 0.5, "threshold": 1.0})]),
    OpSpec("hardsigmoid", _f64(lambda x: np.minimum(np.maximum(x / 6.0 + 0.5, 0.0), 1.0)),
           _unary_samples(-5.0, 5.0), dtypes=FLOATS, gradgrad=True),
    OpSpec("hardswish", _f64(lambda x: x * np.minimum(np.maximum(x + 3.0, 0.0), 6.0) / 6.0),
           _unary_samples(-5.0, 5.0), dtypes=FLOATS, gradgrad=True),
    OpSpec("sigmoid", _f64(lambda x: 1.0 / (1.0 + np.exp(-x))), _unary_samples(), dtypes=ALL, method="sigmoid",
           gradgrad=True),
    OpSpec("tanh", _f64(np.tanh), _unary_samples(), dtypes=ALL, method="tanh", gradgrad=True),
)


# ---- the nn sweep: celu, shrinks, threshold (ops) and the compositions ------------------------------------------
def _celu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * (np.exp(x / alpha) - 1.0))


def _softshrink(x, lambd=0.5):
    return np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0))


def _threshold(x, threshold, value):
    if x.dtype.kind != "f":  # PyTorch converts both scalars to the integer dtype (truncation)
        return np.where(x <= int(threshold), x.dtype.type(int(value)), x)
    return _f64(lambda v: np.where(v <= threshold, value, v))(x)


def _threshold_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype), 0.5, 20.0), name=f"shape{shape}")
    if dtype is not flow.uint8:
        yield Sample((make((3, 4), dtype), -1.5, -7.0), name="negative threshold and value")
    if dtype.is_floating_point:
        yield Sample((_SPECIAL.astype(dtype.np_dtype), 0.0, 1.0), name="special values")


def _logsigmoid(x):
    return np.where(x < 0, x - np.log1p(np.exp(x)), -np.log1p(np.exp(-x)))


def _softmin_ref(x, dim=None, dtype=None):
    out = x.dtype if dtype is None else dtype.np_dtype
    v = np.atleast_1d(-x.astype(np.float64))
    if v.size:
        e = np.exp(v - v.max(dim, keepdims=True))
        v = e / e.sum(dim, keepdims=True)
    return v.reshape(x.shape).astype(out)


def _softmin_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype),), {"dim": -1 if shape else 0}, name=f"shape{shape}")
    yield Sample((make((2, 3, 4), dtype),), {"dim": 1}, name="3-d dim=1")
    if dtype is flow.float32:
        yield Sample((make((3, 4), dtype),), {"dim": 0, "dtype": flow.float64}, name="dtype=float64")


def _glu_ref(x, dim=-1):
    a, b = np.split(x.astype(np.float64), 2, axis=dim)
    return (a / (1.0 + np.exp(-b))).astype(x.dtype)


def _glu_samples(dtype):
    yield Sample((make((3, 4), dtype),), name="(3, 4)")
    yield Sample((make((4, 3), dtype),), {"dim": 0}, name="dim=0")
    yield Sample((make((2, 6, 2), dtype),), {"dim": 1}, name="3-d dim=1")
    yield Sample((make((0, 2), dtype),), name="empty")


def _prelu_ref(x, weight):
    w = weight.astype(np.float64)
    if w.size != 1:
        w = w.reshape((-1,) + (1,) * (x.ndim - 2))
    else:
        w = w.reshape(())
    x64 = x.astype(np.float64)
    return np.where(x64 > 0, x64, w * x64).astype(x.dtype)


def _prelu_samples(dtype):
    yield Sample((make((2, 3, 4), dtype), make((3,), dtype, 0, 0.5)), name="per channel")
    yield Sample((make((2, 3), dtype), make((1,), dtype, 0, 0.5)), name="shared")
    yield Sample((make((4,), dtype), make((1,), dtype, 0, 0.5)), name="1-d shared")
    yield Sample((make((), dtype), make((1,), dtype, 0, 0.5)), name="0-d")
    yield Sample((make((2, 2, 2, 2), dtype), make((2,), dtype, -1, 1)), name="4-d per channel")


def _glu_grad_samples():
    return [s for s in _glu_samples(flow.float64) if s.args[0].size]


register(
    OpSpec("celu", _f64(_celu), _unary_samples(kwargs=({"alpha": 0.5}, {"alpha": 2.0}, {"alpha": -1.5})),
           dtypes=FLOATS, gradgrad=True),
    OpSpec("hardshrink", _f64(lambda x, lambd=0.5: np.where((x >= -lambd) & (x <= lambd), 0.0, x)),
           _unary_samples(kwargs=({"lambd": 1.0}, {"lambd": 0.0})), dtypes=FLOATS, gradgrad=True, method="hardshrink"),
    OpSpec("softshrink", _f64(_softshrink), _unary_samples(kwargs=({"lambd": 1.0}, {"lambd": 0.0})), dtypes=FLOATS,
           gradgrad=True),
    OpSpec("threshold", _threshold, _threshold_samples, dtypes=NUMERIC, gradgrad=True),
    OpSpec("tanhshrink", _f64(lambda x: x - np.tanh(x)), _unary_samples(), dtypes=NUMERIC, gradgrad=True,
           unsupported_error=RuntimeError),
    OpSpec("softsign", _f64(lambda x: x / (1.0 + np.abs(x))), _unary_samples(), dtypes=NUMERIC, gradgrad=True),
    OpSpec("logsigmoid", _f64(_logsigmoid), _unary_samples(), dtypes=FLOATS, gradgrad=True),
    OpSpec("softmin", _softmin_ref, _softmin_samples, dtypes=FLOATS, gradgrad=True, unsupported_error=RuntimeError),
    OpSpec("glu", _glu_ref, _glu_samples, dtypes=FLOATS, gradgrad=True, grad_samples=_glu_grad_samples),
    OpSpec("prelu", _prelu_ref, _prelu_samples, dtypes=FLOATS, method="prelu"),
    OpSpec("rrelu", _f64(lambda x, lower=0.125, upper=1.0 / 3: np.where(x > 0, x, x * (lower + upper) / 2)),
           _unary_samples(kwargs=({"lower": 0.1, "upper": 0.5},)), dtypes=FLOATS),
)
