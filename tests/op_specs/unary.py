"""Elementwise unary math ops: abs, neg, exp, expm1, log, log1p, log2, sqrt, rsqrt, square, sin, cos, tan,
sign, floor, ceil, round, trunc, reciprocal, erf, logical_not, isnan, isinf, isfinite, nan_to_num, clamp, clip.

References compute floating results in float64 with NumPy (``math.erf`` for erf) and round to the expected
dtype: the input's, or float32 (the default dtype) for the float ops on integer and bool inputs.
"""

import math

import numpy as np
from opinfo import ALL, NUMERIC, OpSpec, Sample, make, register, unary_shapes

import oneflow_lite as flow

_SPECIAL = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 1e-3, 100.0, -100.0, np.inf, -np.inf, np.nan])


def _out_dtype(x):
    """The result dtype of a float op: floating inputs keep theirs, others give float32."""
    return x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)


def _float_ref(fn):
    def ref(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64))).astype(_out_dtype(x))
    return ref


def _samples(low=None, high=None, special=True):
    """One sample per shape of ``unary_shapes`` (values in [low, high)), plus special values for floats."""
    def samples(dtype):
        for shape in unary_shapes():
            yield Sample((make(shape, dtype, low, high),), name=f"shape{shape}")
        if special and dtype.is_floating_point:
            yield Sample((_SPECIAL.astype(dtype.np_dtype),), name="special values")
    return samples


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _same_dtype(fn):
    def ref(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype)
    return ref


def _sign(x):
    if x.dtype == np.bool_:
        return x.copy()
    return np.where(np.isnan(x), 0, np.sign(x)) if x.dtype.kind == "f" else np.sign(x)


def _square(x):
    return np.square(x.astype(np.int64)) if x.dtype == np.bool_ else np.square(x)


def _rounding(fn):
    return lambda x: fn(x) if x.dtype.kind == "f" else x.copy()


def _round(x, decimals=0):
    if x.dtype.kind != "f":
        return x.copy()
    with np.errstate(all="ignore"):
        op_dtype = np.float32 if x.dtype == np.float16 else x.dtype
        return np.round(x.astype(op_dtype), decimals).astype(x.dtype)


def _round_samples(dtype):
    yield from _samples()(dtype)
    if dtype.is_floating_point:
        x = make((3, 4), dtype, -50, 50)
        for d in (1, 2, -1):
            yield Sample((x,), {"decimals": d}, name=f"decimals={d}")
        halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, 0.35], dtype.np_dtype)
        yield Sample((halves,), name="halves to even")
        yield Sample((halves,), {"decimals": 1}, name="halves, decimals=1")


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind != "f":
        return x.copy()
    with np.errstate(all="ignore"):
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_to_num_samples(dtype):
    yield from _samples()(dtype)
    if dtype.is_floating_point:
        x = _SPECIAL.astype(dtype.np_dtype)
        yield Sample((x,), {"nan": 1.5, "posinf": 7.0, "neginf": -7.0}, name="all replacements")
        yield Sample((x,), {"posinf": 2.0}, name="posinf only")
        yield Sample((x,), {"nan": -1.0, "neginf": 0.0}, name="nan and neginf")


# ---- clamp / clip --------------------------------------------------------------------------------------
def _clamp_dtype(x, bounds):
    """PyTorch's result dtype of clamp: floating x keeps its dtype; otherwise a float scalar bound gives
    float32, an int scalar bound makes bool int64; tensor bounds in these samples share x's dtype."""
    if x.dtype.kind == "f":
        return x.dtype
    scalars = [b for b in bounds if b is not None and not isinstance(b, np.ndarray)]
    if any(isinstance(b, float) for b in scalars):
        return np.dtype(np.float32)
    if x.dtype == np.bool_ and any(type(b) is int for b in scalars):
        return np.dtype(np.int64)
    return x.dtype


def _clamp(x, min=None, max=None):
    d = _clamp_dtype(x, (min, max))
    r = x.astype(d)
    if min is not None:
        r = np.maximum(r, np.asarray(min).astype(d))
    if max is not None:
        r = np.minimum(r, np.asarray(max).astype(d))
    return r


def _clamp_samples(dtype):
    if dtype.is_floating_point:
        lo, hi = -1.5, 1.25
    elif dtype is flow.bool:
        lo, hi = 0, 1
    else:
        lo, hi = 2, 7
    for shape in unary_shapes():
        yield Sample((make(shape, dtype), lo, hi), name=f"scalars shape{shape}")
    x = make((3, 4), dtype)
    yield Sample((x,), {"max": hi}, name="max only")
    yield Sample((x,), {"min": lo}, name="min only")
    yield Sample((x, hi, lo), name="min > max")
    if dtype.is_floating_point:
        yield Sample((_SPECIAL.astype(dtype.np_dtype), -2.0, 2.0), name="special values")
        yield Sample((x, float("nan"), None), name="nan bound")
    elif dtype is not flow.bool:
        yield Sample((x, 2.5, 6.5), name="float bounds promote")
    if dtype is flow.bool:
        return  # no bool kernel for tensor bounds
    yield Sample((x, make((4,), dtype), make((3, 1), dtype)), name="tensor bounds broadcast")
    yield Sample((make((4,), dtype), make((3, 1), dtype), make((), dtype)), name="bounds broadcast the input")
    yield Sample((x, make((), dtype)), name="tensor min only")
    yield Sample((x,), {"max": make((3, 4), dtype)}, name="tensor max only")
    yield Sample((make((0, 4), dtype), make((4,), dtype), make((1,), dtype)), name="empty, tensor bounds")


def _clamp_grad_samples():
    x = make((3, 4), flow.float64)
    return [Sample((x, -1.0, 1.5), name="scalars"),
            Sample((x, make((4,), flow.float64, -2, 0), make((3, 1), flow.float64, -0.5, 2)), name="tensors"),
            Sample((x, make((4,), flow.float64, 0, 2), make((3, 1), flow.float64, -2, 0)), name="min > max"),
            Sample((x, make((), flow.float64)), name="tensor min")]


# float ops: integer and bool inputs promote to float32, so every dtype is supported
_FLOAT_OPS = [
    ("exp", np.exp, None, None),
    ("expm1", np.expm1, None, None),
    ("log", np.log, 0.2, 3.0),
    ("log1p", np.log1p, -0.8, 3.0),
    ("log2", np.log2, 0.2, 3.0),
    ("sqrt", np.sqrt, 0.2, 3.0),
    ("rsqrt", lambda x: 1.0 / np.sqrt(x), 0.2, 3.0),
    ("sin", np.sin, None, None),
    ("cos", np.cos, None, None),
    ("tan", np.tan, -1.4, 1.4),
    ("reciprocal", np.reciprocal, 0.2, 3.0),
    ("erf", _erf, None, None),
]
for _name, _fn, _lo, _hi in _FLOAT_OPS:
    register(OpSpec(_name, _float_ref(_fn), _samples(), dtypes=ALL, method=_name, gradgrad=True,
                    grad_samples=(lambda lo=_lo, hi=_hi: [Sample((make(s, flow.float64, lo, hi),), name=f"{s}")
                                                          for s in ((), (5,), (3, 4))])))

register(
    OpSpec("abs", _same_dtype(np.abs), _samples(), dtypes=NUMERIC, method="abs", gradgrad=True),
    # PyTorch: "Negation, the `-` operator, on a bool tensor is not supported" (a RuntimeError)
    OpSpec("neg", _same_dtype(np.negative), _samples(), dtypes=NUMERIC, method="neg", gradgrad=True,
           unsupported_error=RuntimeError),
    OpSpec("square", _square, _samples(), dtypes=ALL, method="square", gradgrad=True),
    OpSpec("sign", _same_dtype(_sign), _samples(), dtypes=ALL, method="sign"),
    OpSpec("floor", _rounding(np.floor), _samples(), dtypes=NUMERIC, method="floor"),
    OpSpec("ceil", _rounding(np.ceil), _samples(), dtypes=NUMERIC, method="ceil"),
    OpSpec("trunc", _rounding(np.trunc), _samples(), dtypes=NUMERIC, method="trunc"),
    OpSpec("round", _round, _round_samples, dtypes=NUMERIC, method="round"),
    OpSpec("logical_not", np.logical_not, _samples(), dtypes=ALL, differentiable=False, method="logical_not"),
    OpSpec("isnan", np.isnan, _samples(), dtypes=ALL, differentiable=False, method="isnan"),
    OpSpec("isinf", np.isinf, _samples(), dtypes=ALL, differentiable=False, method="isinf"),
    OpSpec("isfinite", np.isfinite, _samples(), dtypes=ALL, differentiable=False, method="isfinite"),
    OpSpec("nan_to_num", _nan_to_num, _nan_to_num_samples, dtypes=ALL, method="nan_to_num", gradgrad=True),
    OpSpec("clamp", _clamp, _clamp_samples, dtypes=ALL, method="clamp", grad_samples=_clamp_grad_samples,
           gradgrad=True),
    OpSpec("clip", _clamp, _clamp_samples, dtypes=ALL, method="clip", grad_samples=_clamp_grad_samples),
)
