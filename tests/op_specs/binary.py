"""Elementwise binary and ternary ops: add, sub, mul, div (and its rounding modes), floor_divide, pow, maximum,
minimum, fmod, remainder, atan2, eq, ne, lt, le, gt, ge, logical_and / or / xor, bitwise_and / or / xor,
bitwise_not, where, lerp, addcmul, addcdiv; hypot, logaddexp, logaddexp2, xlogy, fmax, fmin, nextafter, igamma,
igammac, gcd, lcm, heaviside, bitwise_left_shift / right_shift, copysign, ldexp, float_power, rsub and the aliases
true_divide, divide, multiply, subtract, greater, greater_equal, less, less_equal, not_equal.

References work element by element on Python numbers (``//``, ``%``, ``math.fmod``, ``**``, ``&`` ...) in
float64 or unbounded integers, then round to the expected dtype (integers wrap, as PyTorch's do), so they
share nothing with the kernels. Result dtypes follow PyTorch's promotion, written out in ``_result``.
"""

import math
import zlib

import numpy as np
from opinfo import ALL, FLOATS, INTS, NUMERIC, OpSpec, Sample, broadcast_pairs, make, register, with_own_rng

import oneflow_lite as flow

BITS = (flow.bool,) + INTS
_F32 = np.dtype(np.float32)
_PAIRS = broadcast_pairs() + [((), ())]


# ---- references ------------------------------------------------------------------------------------
def _result(*args, floating=False):
    """PyTorch's result dtype of same-dtype arrays and Python scalars: a scalar raises only the category
    (float -> float32, int with bool -> int64); ``floating`` turns integer results into float32."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    d = arrays[0].dtype
    for s in args:
        if isinstance(s, float) and d.kind != "f":
            d = _F32
        elif isinstance(s, int) and not isinstance(s, bool) and d.kind == "b":
            d = np.dtype(np.int64)
    return _F32 if floating and d.kind != "f" else d


def _to(values, dtype):
    """Python numbers (an object array) as ``dtype``: integers wrap, floats round (overflow to inf)."""
    values = np.asarray(values, dtype=object)
    if dtype.kind in "iu":
        bits = dtype.itemsize * 8
        low = -(2 ** (bits - 1)) if dtype.kind == "i" else 0
        return np.asarray((values - low) % 2**bits + low).astype(dtype) if values.size else values.astype(dtype)
    with np.errstate(all="ignore"):
        if dtype.kind == "b":
            return values.astype(bool)
        return values.astype(np.float64).astype(dtype)


def _python(x, dtype):
    """``x`` (an array or a Python scalar) cast to ``dtype`` as PyTorch casts its operands, as Python numbers
    (an object array, or a scalar): float, int or bool."""
    a = x if isinstance(x, np.ndarray) else _to(np.array(x, dtype=object), dtype)
    return a.astype({"f": np.float64, "b": bool}.get(dtype.kind, np.int64)).astype(object)


def _elementwise(fn, floating=False, out=None):
    """The reference applying ``fn`` to Python numbers element by element in the common dtype; the result in
    ``out`` (default: the common dtype)."""
    def ref(*args, **kwargs):
        d = _result(*args, floating=floating)
        with np.errstate(all="ignore"):  # Python's float arithmetic leaves the FPU flags NumPy reports
            values = np.frompyfunc(lambda *v: fn(*v, **kwargs), len(args), 1)(*[_python(a, d) for a in args])
        return _to(values, out or d)
    return ref


def _ieee_div(a, b):
    if b == 0:
        return math.copysign(math.inf, a) * math.copysign(1.0, b) if a != 0 and not math.isnan(a) else math.nan
    return a / b


def _ldexp(a, b):
    """a * 2 ** b as PyTorch (a multiply, not C's ldexp): a power past the float range is Inf."""
    try:
        return float(a) * 2.0 ** float(b)
    except OverflowError:
        return float(a) * math.inf


def _floordiv(a, b):
    if isinstance(a, float):
        return a // b if b != 0 else _ieee_div(a, b)
    return a // b


def _truncdiv(a, b):
    if isinstance(a, float):
        if b == 0:
            return _ieee_div(a, b)
        q = a / b
        return float(math.trunc(q)) if math.isfinite(q) else q
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _div(a, b, rounding_mode=None):
    if rounding_mode == "floor":
        return _floordiv(a, b)
    if rounding_mode == "trunc":
        return _truncdiv(a, b)
    return _ieee_div(float(a), float(b))


def _fmod(a, b):
    if isinstance(a, float):
        return math.fmod(a, b) if b != 0 and not math.isinf(a) else math.nan
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _remainder(a, b):
    if isinstance(a, float):
        if b == 0 or math.isinf(a):
            return math.nan
        return a % b
    return a % b


def _odd(b):
    return b == int(b) and int(b) % 2 == 1


def _pow(a, b):
    if isinstance(a, float):  # C99's pow: math.pow raises where C returns inf or nan
        try:
            return math.pow(a, b)
        except OverflowError:
            return -math.inf if a < 0 and _odd(b) else math.inf
        except ValueError:  # 0 to a negative power, or a negative base to a non-integral one
            return (math.copysign(math.inf, a) if _odd(b) else math.inf) if a == 0 else math.nan
    if b < 0:  # PyTorch's integer powers: 1 ** b = 1, (-1) ** b = +-1, else 0
        return 1 if a == 1 else ((-1) ** -b if a == -1 else 0)
    return a**b


def _maximum(a, b):
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return max(b, a)


def _minimum(a, b):
    if isinstance(a, float) and (math.isnan(a) or math.isnan(b)):
        return math.nan
    return min(b, a)


def _add(a, b, alpha=1):
    return (a or b) if isinstance(a, bool) else a + alpha * b


def _mul(a, b):
    return (a and b) if isinstance(a, bool) else a * b


def _compare(op):
    return _elementwise(op, out=np.dtype(bool))


def _logical(op):
    def ref(a, b):
        return np.asarray(op(np.asarray(a) != 0, np.asarray(b) != 0))
    return ref


def _bitwise(op):
    return _elementwise(lambda a, b: op(a, b))


def _bitwise_not(x):
    return _to(np.frompyfunc(lambda v: not v if isinstance(v, bool) else ~v, 1, 1)(_python(x, x.dtype)), x.dtype)


def _where(c, x, y):
    arrays = [v for v in (x, y) if isinstance(v, np.ndarray)]
    scalars = [v for v in (x, y) if not isinstance(v, np.ndarray)]
    if arrays:
        d = _result(*arrays, *scalars)
    else:  # two scalars: float32 if either is a float, else int64 unless both are bools
        d = np.dtype(np.float32 if float in map(type, scalars) else bool if {bool} == set(map(type, scalars))
                     else np.int64)
    values = np.frompyfunc(lambda cv, a, b: a if cv else b, 3, 1)(c.astype(object), _python(x, d), _python(y, d))
    return _to(values, d)


def _lerp(start, end, weight):
    w = weight.astype(np.float64) if isinstance(weight, np.ndarray) else weight
    s, e = start.astype(np.float64), end.astype(np.float64)
    d = e - s  # PyTorch's two-sided formula: exact at both ends, so Inf - Inf never appears at w = 0 or 1
    return np.where(np.abs(w) < 0.5, s + w * d, e - d * (1 - w)).astype(start.dtype)


def _addcmul(x, t1, t2, value=1):
    d = x.dtype
    if d.kind == "f":
        return (x.astype(np.float64) + value * t1.astype(np.float64) * t2.astype(np.float64)).astype(d)
    return _to(x.astype(object) + value * t1.astype(object) * t2.astype(object), d)


def _addcdiv(x, t1, t2, value=1):
    with np.errstate(all="ignore"):
        return (x.astype(np.float64) + value * t1.astype(np.float64) / t2.astype(np.float64)).astype(x.dtype)


# ---- samples ---------------------------------------------------------------------------------------
_FLOAT_SPECIAL = (np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan, 7.0, -7.0, 2.0]),
                  np.array([0.0, 2.0, 0.0, -0.5, 2.0, 3.0, 1.0, np.inf, -np.inf, np.nan]))


def _nonzero(a):
    return np.where(a == 0, np.ones((), a.dtype), a)


def _binary_samples(scalars=(), nonzero=False, specials=True, low=None, high=None, kwargs=None):
    """Tensor-tensor samples over ``_PAIRS``, then ``tensor op scalar`` for each of ``scalars``, then special
    floats (when ``specials``). ``nonzero`` keeps integer divisors away from 0; ``kwargs`` go to every call."""
    kwargs = kwargs or {}

    def samples(dtype):
        for sa, sb in _PAIRS:
            a, b = make(sa, dtype, low, high), make(sb, dtype, low, high)
            if nonzero and not dtype.is_floating_point:
                b = _nonzero(b)
            yield Sample((a, b), dict(kwargs), name=f"{sa} op {sb}")
        for s in scalars:
            if isinstance(s, float) or not nonzero or s != 0:
                yield Sample((make((3, 4), dtype, low, high), s), dict(kwargs), name=f"tensor op {s!r}")
        if specials and dtype.is_floating_point:
            a, b = _FLOAT_SPECIAL
            yield Sample((a.astype(dtype.np_dtype), b.astype(dtype.np_dtype)), dict(kwargs), name="special values")
    return samples


def _scalar_self_samples(scalars, nonzero=False, low=None, high=None):
    """``scalar op tensor`` samples."""
    def samples(dtype):
        for s in scalars:
            b = make((3, 4), dtype, low, high)
            yield Sample((s, _nonzero(b) if nonzero and not dtype.is_floating_point else b), name=f"{s!r} op tensor")
        yield Sample((scalars[0], make((0, 2), dtype)), name="empty")
    return samples


def _pow_samples(dtype):
    if dtype.is_floating_point:
        for sa, sb in _PAIRS:
            yield Sample((make(sa, dtype, 0.1, 3), make(sb, dtype, -2, 3)), name=f"{sa} ** {sb}")
        yield Sample((make((3, 4), dtype), np.array([[0.0, 1.0, 2.0, -1.0]]).astype(dtype.np_dtype)),
                     name="negative base, integral exponents")
        for s in (2, 3, 0.5, -1, -2, 0, 1.5):
            yield Sample((make((3, 4), dtype, 0.1, 3), s), name=f"tensor ** {s}")
        a, b = _FLOAT_SPECIAL
        yield Sample((a.astype(dtype.np_dtype), b.astype(dtype.np_dtype)), name="special values")
    else:
        for sa, sb in _PAIRS:
            yield Sample((make(sa, dtype, -4, 5), make(sb, dtype, 0, 4)), name=f"{sa} ** {sb}")
        if dtype.is_signed:
            base = np.array([[1], [-1], [2], [-3], [0]]).astype(dtype.np_dtype)
            yield Sample((base, np.array([-1, -2, -3]).astype(dtype.np_dtype)), name="negative exponents")
        for s in (0, 1, 2, 3, 7, 2.5):
            yield Sample((make((3, 4), dtype, -4, 5), s), name=f"tensor ** {s}")


def _pow_grad_samples():
    d = flow.float64
    return [Sample((make((3, 4), d, 0.2, 2), make((4,), d, -1.5, 2))), Sample((make((2, 3), d, 0.2, 2), 2.5)),
            Sample((make((5,), d, 0.2, 2), 3))]


def _logical_samples(dtype):
    yield from _binary_samples()(dtype)
    yield Sample((make((3, 4), dtype), make((4,), flow.bool)), name="with a bool tensor")
    yield Sample((make((2, 1), dtype), make((3,), flow.float64)), name="with a float64 tensor")


def _where_samples(dtype):
    shapes = [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (3, 4)), ((), (2, 3), ()), ((2, 1, 3), (1, 4, 1), (3,)),
              ((), (), ()), ((0, 3), (3,), (1, 3)), ((2, 0), (2, 1), (0,))]
    for sc, sx, sy in shapes:
        yield Sample((make(sc, flow.bool), make(sx, dtype), make(sy, dtype)), name=f"{sc} {sx} {sy}")
    cond = make((3, 4), flow.bool)
    yield Sample((cond, make((3, 4), dtype), 0), name="scalar other")
    yield Sample((cond, 2.5, make((4,), dtype)), name="scalar input")
    yield Sample((cond, True, False), name="two bool scalars")
    yield Sample((cond, 1, 0.5), name="int and float scalars")


def _lerp_samples(dtype):
    triples = [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (3, 4)), ((), (2, 3), ()), ((0, 3), (3,), (1, 3)),
               ((), (), ())]
    for ss, se, sw in triples:
        yield Sample((make(ss, dtype), make(se, dtype), make(sw, dtype, 0, 1)), name=f"{ss} {se} {sw}")
    for w in (0.0, 0.3, 0.7, 1.0, 2):
        yield Sample((make((3, 4), dtype), make((4,), dtype), w), name=f"weight {w}")


def _addc_samples(values, nonzero=False, broadcasting=True):
    def samples(dtype):
        triples = [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (1, 4)), ((), (2, 3), ()), ((0, 3), (3,), (1, 3)),
                   ((), (), ())]
        for s0, s1, s2 in triples if broadcasting else ():
            t2 = make(s2, dtype, 0.5, 3) if nonzero else make(s2, dtype)
            yield Sample((make(s0, dtype), make(s1, dtype), t2), name=f"{s0} {s1} {s2}")
        for v in values:
            t2 = make((4,), dtype, 0.5, 3) if nonzero else make((4,), dtype)
            yield Sample((make((3, 4), dtype), make((3, 1), dtype), t2), {"value": v}, name=f"value={v}")
    return samples


register(
    OpSpec("add", _elementwise(_add), _binary_samples(scalars=(2, -3, 1.5, True)), dtypes=ALL, method="add",
           gradgrad=True),
    OpSpec("add_alpha", _elementwise(_add), lambda d: _binary_samples(
        scalars=(2,), specials=False, kwargs={"alpha": 0.5 if d.is_floating_point else 3})(d),
           dtypes=ALL, op=flow.add),
    OpSpec("sub", _elementwise(lambda a, b, alpha=1: a - alpha * b), _binary_samples(scalars=(2, -3, 1.5)),
           dtypes=NUMERIC, method="sub", unsupported_error=RuntimeError),
    OpSpec("mul", _elementwise(_mul), _binary_samples(scalars=(2, -3, 1.5, True)), dtypes=ALL, method="mul",
           gradgrad=True),
    OpSpec("div", _elementwise(_div, floating=True), _binary_samples(scalars=(2, -3, 1.5, 0, 0.0)), dtypes=ALL,
           method="div", gradgrad=True),
    OpSpec("div_floor", _elementwise(lambda a, b: _div(a, b, "floor")),
           _binary_samples(scalars=(2, -3, 1.5, 0.0), nonzero=True),
           dtypes=NUMERIC, op=lambda a, b: flow.div(a, b, rounding_mode="floor")),
    OpSpec("div_trunc", _elementwise(lambda a, b: _div(a, b, "trunc")),
           _binary_samples(scalars=(2, -3, 1.5, 0.0), nonzero=True),
           dtypes=NUMERIC, op=lambda a, b: flow.div(a, b, rounding_mode="trunc")),
    OpSpec("div_scalar_self", _elementwise(lambda a, b: _div(a, b, "trunc")),
           _scalar_self_samples((7, -7, 2.5), nonzero=True), dtypes=ALL, differentiable=False,
           op=lambda a, b: flow.div(a, b, rounding_mode="trunc")),
    OpSpec("floor_divide", _elementwise(_floordiv), _binary_samples(scalars=(2, -3, 1.5, 0.0), nonzero=True),
           dtypes=NUMERIC, method="floor_divide"),
    OpSpec("floor_divide_scalar_self", _elementwise(_floordiv), _scalar_self_samples((7, -7, 2.5), nonzero=True),
           dtypes=ALL, differentiable=False, op=flow.floor_divide),
    OpSpec("pow", _elementwise(_pow), _pow_samples, dtypes=NUMERIC, method="pow", grad_samples=_pow_grad_samples,
           gradgrad=True, rtol=1e-5, atol=1e-5),
    OpSpec("pow_scalar_self", _elementwise(_pow), _scalar_self_samples((2, -1, 1, 2.5)), dtypes=ALL,
           op=flow.pow, grad_samples=lambda: [Sample((2.5, make((3, 4), flow.float64)), grad_args=(1,)),
                                              Sample((0, make((4,), flow.float64, 0.5, 2)), grad_args=(1,))]),
    OpSpec("maximum", _elementwise(_maximum), _binary_samples(), dtypes=ALL, method="maximum", gradgrad=True),
    OpSpec("minimum", _elementwise(_minimum), _binary_samples(), dtypes=ALL, method="minimum", gradgrad=True),
    OpSpec("fmod", _elementwise(_fmod), _binary_samples(scalars=(3, -2, 1.5, 0.0), nonzero=True), dtypes=NUMERIC,
           method="fmod"),
    OpSpec("remainder", _elementwise(_remainder), _binary_samples(scalars=(3, -2, 1.5, 0.0), nonzero=True),
           dtypes=NUMERIC, method="remainder"),
    OpSpec("remainder_scalar_self", _elementwise(_remainder), _scalar_self_samples((7, -7, 2.5), nonzero=True),
           dtypes=ALL, op=flow.remainder,
           grad_samples=lambda: [Sample((2.5, make((3, 4), flow.float64, 0.3, 2)), grad_args=(1,))]),
    OpSpec("atan2", _elementwise(math.atan2, floating=True), _binary_samples(), dtypes=ALL, method="atan2",
           gradgrad=True),
    OpSpec("eq", _compare(lambda a, b: a == b), _binary_samples(scalars=(2, 1.5, True)), dtypes=ALL, method="eq",
           differentiable=False),
    OpSpec("ne", _compare(lambda a, b: a != b), _binary_samples(scalars=(2, 1.5)), dtypes=ALL, method="ne",
           differentiable=False),
    OpSpec("lt", _compare(lambda a, b: a < b), _binary_samples(scalars=(2, 1.5)), dtypes=ALL, method="lt",
           differentiable=False),
    OpSpec("le", _compare(lambda a, b: a <= b), _binary_samples(scalars=(2, 1.5)), dtypes=ALL, method="le",
           differentiable=False),
    OpSpec("gt", _compare(lambda a, b: a > b), _binary_samples(scalars=(2, -1.5)), dtypes=ALL, method="gt",
           differentiable=False),
    OpSpec("ge", _compare(lambda a, b: a >= b), _binary_samples(scalars=(2, -1.5)), dtypes=ALL, method="ge",
           differentiable=False),
    OpSpec("logical_and", _logical(np.logical_and), _logical_samples, dtypes=ALL, method="logical_and",
           differentiable=False),
    OpSpec("logical_or", _logical(np.logical_or), _logical_samples, dtypes=ALL, method="logical_or",
           differentiable=False),
    OpSpec("logical_xor", _logical(np.logical_xor), _logical_samples, dtypes=ALL, method="logical_xor",
           differentiable=False),
    OpSpec("bitwise_and", _bitwise(lambda a, b: a & b), _binary_samples(scalars=(3, -2, True)), dtypes=BITS,
           method="bitwise_and", differentiable=False),
    OpSpec("bitwise_or", _bitwise(lambda a, b: a | b), _binary_samples(scalars=(3, -2, True)), dtypes=BITS,
           method="bitwise_or", differentiable=False),
    OpSpec("bitwise_xor", _bitwise(lambda a, b: a ^ b), _binary_samples(scalars=(3, -2, True)), dtypes=BITS,
           method="bitwise_xor", differentiable=False),
    OpSpec("bitwise_and_scalar_self", _bitwise(lambda a, b: a & b), _scalar_self_samples((6, -3)), dtypes=BITS,
           op=flow.bitwise_and, differentiable=False),
    OpSpec("bitwise_not", _bitwise_not, lambda d: [Sample((make(s, d, -100, 100),)) for s in
                                                   ((), (5,), (3, 4), (0,), (2, 0, 3))],
           dtypes=BITS, method="bitwise_not", differentiable=False),
    OpSpec("where", _where, _where_samples, dtypes=ALL, gradgrad=True),
    OpSpec("lerp", _lerp, _lerp_samples, dtypes=FLOATS, method="lerp", gradgrad=True),
    OpSpec("addcmul", _addcmul, _addc_samples((2, -1)), dtypes=NUMERIC, method="addcmul", gradgrad=True),
    OpSpec("addcmul_float_value", _addcmul, _addc_samples((0.5, -1.5), broadcasting=False), dtypes=FLOATS,
           op=flow.addcmul, unsupported_error=RuntimeError),
    OpSpec("addcdiv", _addcdiv, _addc_samples((2, -0.5), nonzero=True), dtypes=FLOATS, method="addcdiv",
           gradgrad=True, unsupported_error=RuntimeError),
)


# ---- [compat s1] hypot, logaddexp, xlogy, fmax / fmin, nextafter, igamma, gcd / lcm, heaviside, shifts, copysign,
# ldexp, float_power, rsub, and the aliases true_divide, divide, multiply, subtract, greater, ... not_equal.
def _register_s1(*specs):
    """The specs of this block draw from generators of their own (``with_own_rng``)."""
    register(*[with_own_rng(s, zlib.crc32(s.name.encode())) for s in specs])


def _nan_or(fn):
    """``fn(a, b)`` on Python floats, NaN when either is NaN."""
    return lambda a, b: math.nan if math.isnan(a) or math.isnan(b) else fn(a, b)


def _logaddexp(log1p_exp):
    def fn(a, b):
        m = max(a, b)
        if math.isinf(m):
            return m  # +inf with anything; -inf only with -inf
        return m + log1p_exp(-abs(a - b))
    return _nan_or(fn)


def _xlogy(a, b):
    if math.isnan(b):
        return math.nan
    if a == 0:
        return 0.0
    return a * (math.log(b) if b > 0 else -math.inf if b == 0 else math.nan)


def _fmax(pick):
    def fn(a, b):
        if isinstance(a, float) and math.isnan(a):
            return b
        if isinstance(b, float) and math.isnan(b):
            return a
        return pick(a, b)
    return fn


def _next_after(x, y):
    """The neighbour of each ``x`` towards ``y``, stepping the bit pattern (integers of the float's width)."""
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    x, y = np.broadcast_arrays(x, y)
    out = x.copy()
    bits = out.view(ints)
    for i in np.ndindex(x.shape):
        a, b = float(x[i]), float(y[i])
        if math.isnan(a) or math.isnan(b):
            out[i] = np.nan
        elif a == b:
            out[i] = y[i]
        elif a == 0:
            out[i] = np.copysign(np.array(1, ints).view(x.dtype), b)  # the smallest subnormal
        else:
            bits[i] += 1 if (b > a) == (a > 0) else -1
    return out


def _heaviside(a, b):
    if isinstance(a, float) and math.isnan(a):
        return 0.0
    return b if a == 0 else type(b)(a > 0)


def _shift(left):
    """PyTorch's shifts of Python ints in the dtype's width (Note [Shift counts] in kernels/cpu/binary.py)."""
    def ref(x, y):
        d = _result(x, y)
        bits = d.itemsize * 8

        def fn(a, b):
            if 0 <= b < bits:
                return a << b if left else a >> b
            return 0 if left or d.kind == "u" else (-1 if a < 0 else 0)
        with np.errstate(all="ignore"):
            values = np.frompyfunc(fn, 2, 1)(_python(x, d), _python(y, d))
        return _to(values, d)
    return ref


def _igamma_series(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_k x^k / ((a + 1) ... (a + k)) (Numerical Recipes' gser)."""
    term = total = 1.0 / a
    k = 0
    while abs(term) > 1e-17 * abs(total) and k < 5000:
        k += 1
        term *= x / (a + k)
        total += term
    return total * math.exp(a * math.log(x) - x - math.lgamma(a))


def _igamma_fraction(a, x):
    """Q(a, x) by its continued fraction, Lentz's method (Numerical Recipes' gcf)."""
    b = x + 1.0 - a
    c, d = 1.0 / 1e-300, 1.0 / b
    h = d
    for i in range(1, 5000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
        c = b + an / c
        c = c if abs(c) > 1e-300 else 1e-300
        h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return math.exp(a * math.log(x) - x - math.lgamma(a)) * h


def _igamma(lower):
    """PyTorch's values on the edges: NaN for a negative (or NaN) argument, P(0, x > 0) = 1, P(a, 0) = 0,
    P(inf, x) = 0, P(a, inf) = 1, NaN for both infinite; Q = 1 - P there."""
    def fn(a, x):
        if math.isnan(a) or math.isnan(x) or a < 0 or x < 0 or (a == 0 and x == 0) or (math.isinf(a) and
                                                                                       math.isinf(x)):
            return math.nan
        if a == 0 or math.isinf(x):
            p = 1.0
        elif x == 0 or math.isinf(a):
            p = 0.0
        elif x < a + 1:
            p = _igamma_series(a, x)
            return p if lower else 1.0 - p
        else:
            q = _igamma_fraction(a, x)
            return 1.0 - q if lower else q
        return p if lower else 1.0 - p
    return fn


def _positive_pairs(dtype, low, high):
    return [Sample((make(sa, dtype, low, high), make(sb, dtype, low, high)), name=f"{sa} op {sb}")
            for sa, sb in _PAIRS]


def _igamma_samples(dtype):
    yield from _positive_pairs(dtype, 0.1, 6)
    a = np.array([0.5, 1.0, 3.0, 25.0, 30.0, 150.0, 0.0, 0.0, 2.0, 2.0, np.inf, np.inf, -1.0, np.nan, 5.0])
    x = np.array([0.2, 3.0, 0.7, 24.0, 41.0, 160.0, 1.0, 0.0, 0.0, np.inf, 1.0, np.inf, 1.0, 1.0, -2.0])
    yield Sample((a.astype(dtype.np_dtype), x.astype(dtype.np_dtype)), name="regions and edges")


def _shift_samples(dtype):
    bits = dtype.itemsize * 8
    for sa, sb in _PAIRS:
        yield Sample((make(sa, dtype, -100, 100), make(sb, dtype, 0, bits)), name=f"{sa} op {sb}")
    low = -3 if dtype.is_signed else 0
    counts = np.array([0, 1, bits - 1, bits, bits + 5, low, 127 if dtype.itemsize == 1 else 200]).astype(dtype.np_dtype)
    values = np.array([[1], [-1 if dtype.is_signed else 3], [100]]).astype(dtype.np_dtype)
    yield Sample((values, counts), name="counts outside [0, bits)")
    yield Sample((make((3, 4), dtype, -100, 100), 3), name="tensor op 3")


def _copysign_samples(dtype):
    yield from _binary_samples(scalars=(-1, 2.5, -0.0))(dtype)
    yield Sample((make((3, 4), dtype), make((4,), flow.float64)), name="with a float64 tensor")


_BINARY_FLOAT_OPS = [  # name, reference on Python floats, dtypes, gradcheck's (low, high)
    ("hypot", math.hypot, FLOATS, (-3, 3)),  # C's hypot: inf with a NaN is inf
    ("logaddexp", _logaddexp(lambda v: math.log1p(math.exp(v))), FLOATS, (-3, 3)),
    ("logaddexp2", _logaddexp(lambda v: math.log1p(2.0 ** v) / math.log(2.0)), FLOATS, (-3, 3)),
    ("xlogy", _xlogy, ALL, (0.2, 3)),
]
for _name, _fn, _dtypes, (_lo, _hi) in _BINARY_FLOAT_OPS:
    _register_s1(OpSpec(_name, _elementwise(_fn, floating=True), _binary_samples(), dtypes=_dtypes, method=_name,
                        grad_samples=lambda lo=_lo, hi=_hi: _positive_pairs(flow.float64, lo, hi)[:4]))

_register_s1(
    OpSpec("xlogy_scalar", _elementwise(_xlogy, floating=True), _binary_samples(scalars=(2, 0.5, 0)), dtypes=ALL,
           op=flow.xlogy, differentiable=False),
    OpSpec("xlogy_scalar_self", _elementwise(_xlogy, floating=True), _scalar_self_samples((2, 0.0, 1.5)),
           dtypes=ALL, op=flow.xlogy, grad_samples=lambda: [Sample((2.5, make((3, 4), flow.float64, 0.2, 2)),
                                                                   grad_args=(1,))]),
    OpSpec("fmax", _elementwise(_fmax(max)), _binary_samples(), dtypes=ALL, method="fmax"),
    OpSpec("fmin", _elementwise(_fmax(min)), _binary_samples(), dtypes=ALL, method="fmin"),
    OpSpec("nextafter", _next_after, _binary_samples(), dtypes=FLOATS, method="nextafter", check_dtype=True,
           half_tol=0.0, atol=0.0, rtol=0.0),
    OpSpec("igamma", _elementwise(_igamma(True), floating=True), _igamma_samples, dtypes=FLOATS, method="igamma",
           rtol=1e-5, atol=1e-6,
           grad_samples=lambda: [Sample((make((3, 4), flow.float64, 0.5, 3), make((3, 4), flow.float64, 0.2, 3)),
                                        grad_args=(1,))]),
    OpSpec("igammac", _elementwise(_igamma(False), floating=True), _igamma_samples, dtypes=FLOATS,
           method="igammac", rtol=1e-5, atol=1e-6,
           grad_samples=lambda: [Sample((make((4,), flow.float64, 0.5, 3), make((3, 1), flow.float64, 0.2, 3)),
                                        grad_args=(1,))]),
    OpSpec("gcd", _elementwise(math.gcd), _binary_samples(), dtypes=INTS, method="gcd", differentiable=False),
    OpSpec("lcm", _elementwise(math.lcm), _binary_samples(), dtypes=INTS, method="lcm", differentiable=False),
    OpSpec("heaviside", _elementwise(_heaviside), _binary_samples(), dtypes=ALL, method="heaviside",
           differentiable=False),
    OpSpec("bitwise_left_shift", _shift(True), _shift_samples, dtypes=INTS, method="bitwise_left_shift",
           differentiable=False),
    OpSpec("bitwise_right_shift", _shift(False), _shift_samples, dtypes=INTS, method="bitwise_right_shift",
           differentiable=False),
    OpSpec("bitwise_left_shift_scalar_self", _shift(True), _scalar_self_samples((1, 5)), dtypes=BITS,
           op=flow.bitwise_left_shift, differentiable=False),
    OpSpec("copysign", _elementwise(lambda a, b: math.copysign(float(a), float(b)), floating=True),
           _copysign_samples, dtypes=ALL, method="copysign", check_dtype=False,
           grad_samples=lambda: _positive_pairs(flow.float64, -3, 3)[:3]),
    OpSpec("ldexp", _elementwise(_ldexp, floating=True),
           _binary_samples(specials=False, low=-5, high=5), dtypes=ALL, method="ldexp"),
    OpSpec("float_power", _elementwise(lambda a, b: _pow(float(a), float(b)), out=np.dtype(np.float64)),
           _pow_samples, dtypes=ALL, method="float_power", grad_samples=_pow_grad_samples),
    OpSpec("rsub", _elementwise(lambda a, b, alpha=1: b - alpha * a), _binary_samples(scalars=(2, -3, 1.5)),
           dtypes=NUMERIC, unsupported_error=RuntimeError),
    OpSpec("true_divide", _elementwise(_div, floating=True), _binary_samples(scalars=(2, 1.5, 0.0)), dtypes=ALL,
           method="true_divide"),
    OpSpec("divide", _elementwise(lambda a, b, rounding_mode: _div(a, b, rounding_mode)),
           _binary_samples(scalars=(2, -1.5), nonzero=True, kwargs={"rounding_mode": "floor"}),
           dtypes=NUMERIC, method="divide", differentiable=False),
    OpSpec("multiply", _elementwise(_mul), _binary_samples(scalars=(2, 1.5, True)), dtypes=ALL, method="multiply"),
    OpSpec("subtract", _elementwise(lambda a, b, alpha=1: a - alpha * b),
           _binary_samples(scalars=(2, 1.5), kwargs={"alpha": 2}), dtypes=NUMERIC, method="subtract",
           unsupported_error=RuntimeError),
    OpSpec("greater", _compare(lambda a, b: a > b), _binary_samples(scalars=(2, -1.5)), dtypes=ALL,
           method="greater", differentiable=False),
    OpSpec("greater_equal", _compare(lambda a, b: a >= b), _binary_samples(scalars=(2,)), dtypes=ALL,
           method="greater_equal", differentiable=False),
    OpSpec("less", _compare(lambda a, b: a < b), _binary_samples(scalars=(2,)), dtypes=ALL, method="less",
           differentiable=False),
    OpSpec("less_equal", _compare(lambda a, b: a <= b), _binary_samples(scalars=(1.5,)), dtypes=ALL,
           method="less_equal", differentiable=False),
    OpSpec("not_equal", _compare(lambda a, b: a != b), _binary_samples(scalars=(2,)), dtypes=ALL,
           method="not_equal", differentiable=False),
)
