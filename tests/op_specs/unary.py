"""Elementwise unary math ops: abs, neg, exp, expm1, log, log1p, log2, sqrt, rsqrt, square, sin, cos, tan,
sign, floor, ceil, round, trunc, reciprocal, erf, logical_not, isnan, isinf, isfinite, nan_to_num, clamp, clip;
the inverse trigonometric and hyperbolic functions (and their arc* aliases), sinh, cosh, exp2, log10, erfc,
erfinv, lgamma, digamma, polygamma, mvlgamma, i0, sinc, frac, fix, sgn, absolute, negative, positive,
deg2rad, rad2deg, signbit, isposinf, isneginf, isreal, frexp, logit, clamp_min, clamp_max.

References compute floating results in float64 with NumPy (``math.erf`` for erf) and round to the expected
dtype: the input's, or float32 (the default dtype) for the float ops on integer and bool inputs.
"""

import math
import zlib

import numpy as np
from opinfo import ALL, FLOATS, NUMERIC, OpSpec, Sample, make, register, unary_shapes, with_own_rng

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


# ---- [compat s1] inverse trigonometric and hyperbolic functions, special functions, aliases -------------------
# References: NumPy ufuncs, Python's math (erfc, lgamma, frexp), and series written here (digamma, polygamma, i0,
# erfinv by bisection); PyTorch's values at poles and infinities are spelled out where they are not the limits.
def _register_s1(*specs):
    """The specs of this block draw from generators of their own (``with_own_rng``)."""
    register(*[with_own_rng(s, zlib.crc32(s.name.encode())) for s in specs])


def _elementwise_float(fn):
    """A float op's reference applying ``fn`` to Python floats (float64), rounded to the result dtype."""
    def ref(x, *args):
        with np.errstate(all="ignore"):
            values = np.frompyfunc(lambda v: fn(float(v), *args), 1, 1)(x.astype(np.float64))
            return np.asarray(values, dtype=np.float64).astype(_out_dtype(x))
    return ref


def _lgamma(v):
    if math.isnan(v):
        return math.nan
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return math.lgamma(v)


def _digamma(v):
    """Recurrence up to 30 and six terms of the asymptotic series; the reflection formula below 0."""
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == 0:
        return -math.copysign(math.inf, v)
    if v < 0:
        return math.nan if v == math.floor(v) else _digamma(1 - v) - math.pi / math.tan(math.pi * v)
    if v == math.inf:
        return math.inf
    r = 0.0
    while v < 30:
        r -= 1 / v
        v += 1
    z = 1 / (v * v)
    return r + math.log(v) - 0.5 / v - z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z / 132))))


def _hurwitz_zeta(s, q):
    """sum_k (q + k)^-s: 40 terms past q >= 0, then Euler-Maclaurin with four Bernoulli terms."""
    total, k = 0.0, 0
    while q + k < 40:
        total += (q + k) ** -s
        k += 1
    a = q + k
    total += a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    rising, power = s, a ** (-s - 1)
    for j, b in enumerate((1 / 6, -1 / 30, 1 / 42, -1 / 30), start=1):
        total += b / math.factorial(2 * j) * rising * power
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        power /= a * a
    return total


def _polygamma(n):
    """PyTorch's values: trigamma is 0 at +inf and NaN at -inf; n >= 2 gives NaN at +inf (its zeta's
    0 * inf) and +-inf at -inf and the poles."""
    sign = 1.0 if n % 2 else -1.0

    def fn(v):
        if n == 0:
            return _digamma(v)
        if math.isnan(v):
            return math.nan
        if math.isinf(v):
            return (0.0 if v > 0 else math.nan) if n == 1 else (math.nan if v > 0 else sign * math.inf)
        if v <= 0 and v == math.floor(v):
            return sign * math.inf
        return sign * math.factorial(n) * _hurwitz_zeta(n + 1.0, v)
    return fn


def _i0(v):
    """sum_k (x^2 / 4)^k / (k!)^2; NaN at +-inf, as PyTorch and NumPy."""
    if math.isinf(v) or math.isnan(v):
        return math.nan
    term = total = 1.0
    k = 0
    while term > 1e-17 * total:
        k += 1
        term *= v * v / (4.0 * k * k)
        total += term
    return total


def _erfinv(v):
    """Bisection of math.erf (math.erfc of 1 - |y|, exact, above 1/2)."""
    if math.isnan(v) or abs(v) > 1:
        return math.nan
    if abs(v) == 1:
        return math.copysign(math.inf, v)
    a = abs(v)
    lo, hi = 0.0, 6.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        below = math.erf(mid) < a if a <= 0.5 else math.erfc(mid) > 1 - a
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.copysign(0.5 * (lo + hi), v)


def _frexp(x):
    pairs = [math.frexp(v) if math.isfinite(v) else (v, 0) for v in x.astype(np.float64).ravel().tolist()]
    return (np.array([m for m, _ in pairs], np.float64).astype(x.dtype).reshape(x.shape),
            np.array([e for _, e in pairs], np.int32).reshape(x.shape))


def _logit(x, eps=None):
    with np.errstate(all="ignore"):
        z = x.astype(np.float64)
        if eps is not None:
            z = np.clip(z, eps, 1 - eps)
        return np.log(z / (1 - z)).astype(_out_dtype(x))


def _logit_samples(dtype):
    for shape in unary_shapes():
        yield Sample((make(shape, dtype, 0.05, 0.95) if dtype.is_floating_point else make(shape, dtype, 0, 2),),
                     name=f"shape{shape}")
    if dtype.is_floating_point:
        yield Sample((_SPECIAL.astype(dtype.np_dtype),), name="special values")
        yield Sample((_SPECIAL.astype(dtype.np_dtype), 0.25), name="special values, eps")
        yield Sample((make((3, 4), dtype, -0.5, 1.5),), {"eps": 0.1}, name="eps clamps")


def _polygamma_samples(dtype):
    for n in (0, 1, 2, 3, 5):
        yield Sample((n, make((3, 4), dtype, 0.1, 8)), name=f"n={n}")
    if dtype.is_floating_point:
        x = np.array([0.5, 1.0, 2.5, 13.0, 40.0, -0.5, -1.5, -2.25, 0.0, np.inf, -np.inf, np.nan])
        for n in (1, 2, 3):
            yield Sample((n, x.astype(dtype.np_dtype)), name=f"special values, n={n}")
        yield Sample((2, np.array([-1.0, -2.0]).astype(dtype.np_dtype)), name="poles, n=2")


def _polygamma_ref(n, x):
    return _elementwise_float(_polygamma(n))(x)


def _mvlgamma(x, p):
    c = p * (p - 1) / 4 * math.log(math.pi)
    return _elementwise_float(lambda v: sum(_lgamma(v - i / 2) for i in range(p)) + c)(x)


def _mvlgamma_samples(dtype):
    for p in (1, 2, 3):
        low = (p - 1) / 2 + 0.1
        yield Sample((make((3, 4), dtype, low, low + 5) if dtype.is_floating_point else
                      make((3, 4), dtype, p + 1, p + 6), p), name=f"p={p}")
    yield Sample((make((0, 2), dtype, 3, 5), 2), name="empty")


def _signbit(x):
    return np.signbit(x) if x.dtype.kind == "f" else (x < 0) if x.dtype.kind == "i" else np.zeros(x.shape, bool)


def _is_inf(sign):
    return lambda x: (x == sign * np.inf) if x.dtype.kind == "f" else np.zeros(x.shape, bool)


def _domain_grad_samples(low, high):
    return lambda: [Sample((make(s, flow.float64, low, high),), name=f"{s}") for s in ((), (5,), (3, 4))]


def _clamp_one_samples(dtype):
    """One bound: a scalar of each kind the dtype takes, a tensor (not for bool: no kernel), special values."""
    bounds = (0, 1) if dtype is flow.bool else (2, 6.5) if not dtype.is_floating_point else (-1.5, 0.25)
    for shape in unary_shapes():
        for b in bounds:
            yield Sample((make(shape, dtype), b), name=f"scalar {b!r} shape{shape}")
    if dtype is not flow.bool:
        yield Sample((make((3, 4), dtype), make((4,), dtype)), name="tensor bound broadcast")
        yield Sample((make((4,), dtype), make((3, 1), dtype)), name="the bound broadcasts the input")
    if dtype.is_floating_point:
        yield Sample((_SPECIAL.astype(dtype.np_dtype), 0.5), name="special values")
        yield Sample((make((3, 4), dtype), float("nan")), name="nan bound")


def _clamp_one_grad_samples():
    x = make((3, 4), flow.float64)
    return [Sample((x, 0.3), name="scalar"), Sample((x, make((4,), flow.float64)), name="tensor")]


def _positive(x):
    return x.copy()


_SPECIAL_FLOAT_OPS = [  # name, reference, sample range, gradcheck range
    ("acos", np.arccos, (-1.0, 1.0), (-0.9, 0.9)), ("arccos", np.arccos, (-1.0, 1.0), (-0.9, 0.9)),
    ("asin", np.arcsin, (-1.0, 1.0), (-0.9, 0.9)), ("arcsin", np.arcsin, (-1.0, 1.0), (-0.9, 0.9)),
    ("atan", np.arctan, (None, None), (-3, 3)), ("arctan", np.arctan, (None, None), (-3, 3)),
    ("acosh", np.arccosh, (1.0, 5.0), (1.2, 4)), ("arccosh", np.arccosh, (1.0, 5.0), (1.2, 4)),
    ("asinh", np.arcsinh, (None, None), (-3, 3)), ("arcsinh", np.arcsinh, (None, None), (-3, 3)),
    ("atanh", np.arctanh, (-1.0, 1.0), (-0.9, 0.9)), ("arctanh", np.arctanh, (-1.0, 1.0), (-0.9, 0.9)),
    ("sinh", np.sinh, (None, None), (-3, 3)), ("cosh", np.cosh, (None, None), (-3, 3)),
    ("exp2", np.exp2, (None, None), (-3, 3)), ("log10", np.log10, (0.1, 5.0), (0.2, 4)),
    ("erfc", np.frompyfunc(math.erfc, 1, 1), (None, None), (-3, 3)),
    ("erfinv", np.frompyfunc(_erfinv, 1, 1), (-1.0, 1.0), (-0.9, 0.9)),
    ("lgamma", np.frompyfunc(_lgamma, 1, 1), (None, None), (0.2, 6)),
    ("digamma", np.frompyfunc(_digamma, 1, 1), (None, None), (0.2, 6)),
    ("i0", np.frompyfunc(_i0, 1, 1), (None, None), (-4, 4)),
    ("sinc", np.sinc, (None, None), (-3, 3)), ("deg2rad", np.deg2rad, (None, None), (-3, 3)),
    ("rad2deg", np.rad2deg, (None, None), (-3, 3)),
]
for _name, _fn, (_lo, _hi), (_glo, _ghi) in _SPECIAL_FLOAT_OPS:
    _register_s1(OpSpec(_name, _float_ref(lambda x, f=_fn: np.asarray(f(x), dtype=np.float64)),
                        _samples(_lo, _hi), dtypes=ALL, method=_name, grad_samples=_domain_grad_samples(_glo, _ghi),
                        gradgrad=_name not in ("digamma", "lgamma", "erfinv"), rtol=1e-5, atol=1e-5))

_register_s1(
    OpSpec("frac", _same_dtype(lambda x: x - np.trunc(x)), _samples(), dtypes=FLOATS, method="frac"),
    OpSpec("fix", _rounding(np.trunc), _samples(), dtypes=NUMERIC, method="fix"),
    OpSpec("sgn", _same_dtype(_sign), _samples(), dtypes=ALL, method="sgn"),
    OpSpec("absolute", _same_dtype(np.abs), _samples(), dtypes=NUMERIC, method="absolute"),
    OpSpec("negative", _same_dtype(np.negative), _samples(), dtypes=NUMERIC, method="negative",
           unsupported_error=RuntimeError),
    OpSpec("positive", _positive, _samples(), dtypes=NUMERIC, method="positive", unsupported_error=RuntimeError),
    OpSpec("signbit", _signbit, _samples(), dtypes=ALL, differentiable=False, method="signbit"),
    OpSpec("isposinf", _is_inf(1), _samples(), dtypes=ALL, differentiable=False, method="isposinf"),
    OpSpec("isneginf", _is_inf(-1), _samples(), dtypes=ALL, differentiable=False, method="isneginf"),
    OpSpec("isreal", lambda x: np.ones(x.shape, bool), _samples(), dtypes=ALL, differentiable=False,
           method="isreal"),
    OpSpec("frexp", _frexp, _samples(), dtypes=FLOATS, method="frexp", unsupported_error=RuntimeError),
    OpSpec("logit", _logit, _logit_samples, dtypes=ALL, method="logit", gradgrad=True,
           grad_samples=lambda: [Sample((make((3, 4), flow.float64, 0.1, 0.9),)),
                                 Sample((make((5,), flow.float64, 0.1, 0.9), 0.2), name="eps")]),
    OpSpec("polygamma", _polygamma_ref, _polygamma_samples, dtypes=ALL, rtol=1e-5, atol=1e-5,
           grad_samples=lambda: [Sample((n, make((3, 4), flow.float64, 0.3, 5)), name=f"n={n}") for n in (0, 1, 3)]),
    OpSpec("mvlgamma", _mvlgamma, _mvlgamma_samples, dtypes=NUMERIC, method="mvlgamma",
           unsupported_error=RuntimeError, rtol=1e-5, atol=1e-5),
    OpSpec("clamp_min", lambda x, v: _clamp(x, min=v), _clamp_one_samples, dtypes=ALL, method="clamp_min",
           grad_samples=_clamp_one_grad_samples),
    OpSpec("clamp_max", lambda x, v: _clamp(x, max=v), _clamp_one_samples, dtypes=ALL, method="clamp_max",
           grad_samples=_clamp_one_grad_samples),
)


# [compat t1] angle of real tensors: pi for negative values, 0 otherwise, NaN kept; a zero gradient.
_register_s1(OpSpec("angle", _float_ref(lambda x: np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0.0))),
                    _samples(), dtypes=ALL, method="angle", grad_samples=_domain_grad_samples(0.5, 3)))
