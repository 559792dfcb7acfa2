"""cpu kernels of the unary math ops and clamping.

Note [Quiet unary kernels]
PyTorch computes ``log(0) = -inf``, ``sqrt(-1) = nan``, ``1 / 0 = inf``,
``sin(inf) = nan`` and float overflow to inf without a warning. The kernels that
can meet these cases silence NumPy's floating-point warnings (``np.errstate``,
about 1 us); the others (abs, floor, ...) run bare.
"""

import math

import numpy as np

from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.dtype import ALL_DTYPES, FLOATING_DTYPES, INTEGRAL_DTYPES, NUMERIC_DTYPES, bool_
from oneflow_lite.kernels.cpu import special
from oneflow_lite.kernels.cpu.blocked import run_blocked
from oneflow_lite.kernels.registration import cpu_kernel

_errstate = np.errstate
_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_BOOL = np.dtype(np.bool_)

_FLOAT_X = dtype_in("x", *FLOATING_DTYPES)
_INT_X = dtype_in("x", *INTEGRAL_DTYPES)
_NUMERIC_X = dtype_in("x", *NUMERIC_DTYPES)
_ALL_X = dtype_in("x", *ALL_DTYPES)
_NON_FLOAT_X = dtype_in("x", *(d for d in ALL_DTYPES if not d.is_floating_point))
_FLOAT_DY = dtype_in("dy", *FLOATING_DTYPES)


def _ufunc_kernel(ufunc, name, quiet):
    if quiet:
        def kernel(ctx, x):
            with _errstate(all="ignore"):
                return ufunc(x)
    else:
        def kernel(ctx, x):
            return ufunc(x)
        kernel.plain = ufunc  # Note [Plain kernels] in kernels/cpu/math.py
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _copy_kernel(ctx, x):
    """floor / ceil / round / trunc of an integer tensor, sign of a bool tensor: a copy, as in PyTorch."""
    return x.copy()


# ---- erf ------------------------------------------------------------------------------------------
# Note [erf kernels]
# float64: Cephes' rational approximations (``special.erf``, kernels/cpu/special.py), to a few ulp. That is
# ``erf_reference``, which the tests compare the float32 kernel against.
# float32 (and float16, computed in float32), in cache-sized blocks with the passes written in place (Note
# [Blocked kernels] in kernels/cpu/blocked.py): erf(x) = x + x R(x^2) (R of degree 5, relative error 4e-8 for
# |x| <= 1) on every element, then, on the elements with |x| > 1 only (gathered by index), sign(x) (1 -
# erfc(|x|)) with erfc(z) = t E(t) exp(-z^2), t = 1 / (1 + ERFC_K z) (E of degree 7, relative error 5.2e-8
# for 0 <= z <= 7: Abramowitz and Stegun 7.1.26's form with a longer polynomial). Both fitted (weighted
# least squares to the minimax error) against mpmath; within 2 ulp of the exact value (tests/
# test_fused_kernels.py). Most inputs of a network are small, so most elements take the polynomial alone
# (about 14 passes) and the erfc form runs on few. The GELU kernels use both forms for Phi(x).
ERFC_K = 0.42
# E(t), lowest power first: erfc(z) = t E(t) exp(-z^2)
ERFC_POLY = (0.2367516118116746, 0.24062157403300527, 0.18865239911246853, 0.28774739621752116,
             -0.16485885562830202, 0.4765644013840235, -0.3404129989470548, 0.07493442360068203)
# R(u), lowest power first: erf(x) = x + x R(x^2) for |x| <= 1
ERF_SMALL_POLY = (0.12837912262150147, -0.37612326239366706, 0.11280179337522397, -0.026711270068796228,
                   0.004917487232983173, -0.0005631106804104141)
# Below this many elements the NumPy calls of the vectorised forms cost more than math.erf per element
# (special.erf's own cutoff).
_ERF_SMALL = special.ERF_SMALL
erf_reference = special.erf


def small_erf_poly(out, x, u) -> None:
    """``out`` = x + x R(u), u = x^2: erf(x) for |x| <= 1, in place (Note [erf kernels])."""
    f = x.dtype.type
    np.multiply(u, f(ERF_SMALL_POLY[-1]), out=out)
    for c in ERF_SMALL_POLY[-2:0:-1]:
        out += f(c)
        out *= u
    out += f(ERF_SMALL_POLY[0])
    out *= x
    out += x


def erfc_form(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """erfc(a) = t E(t) exp(-a^2) for a >= 0, given ``e`` = exp(-a^2), t = 1 / (1 + ERFC_K a): new arrays (it
    runs on the few elements beyond the polynomial's range)."""
    f = a.dtype.type
    t = a * f(ERFC_K)
    t += f(1)
    np.reciprocal(t, out=t)
    q = t * f(ERFC_POLY[-1])
    for c in ERFC_POLY[-2::-1]:
        q += f(c)
        q *= t
    q *= e
    return q


def _erf_f32_block(out, x, u, large):
    """erf of a float32 block (Note [erf kernels]): the polynomial everywhere, then the erfc form where
    |x| > 1, on those elements only."""
    f = x.dtype.type
    np.multiply(x, x, out=u)
    small_erf_poly(out, x, u)
    np.greater(u, f(1), out=large)  # NaN stays with the polynomial (NaN)
    idx = np.flatnonzero(large)
    if idx.size:
        xl = x.take(idx)
        el = np.negative(u.take(idx))
        np.exp(el, out=el)
        r = erfc_form(np.abs(xl), el)
        np.subtract(f(1), r, out=r)
        out.put(idx, np.copysign(r, xl, out=r))


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of a floating array, in ``x``'s dtype (Note [erf kernels])."""
    dt = x.dtype
    if x.size < _ERF_SMALL or dt == _F64:
        return erf_reference(x)
    x = x.astype(_F32, copy=False)
    with _errstate(all="ignore"):
        r = run_blocked(_erf_f32_block, np.empty(x.shape, _F32), (x,), 1, 1)
    return r.astype(dt, copy=False)


# ---- elementwise math -------------------------------------------------------------------------------
def _rsqrt(x):
    r = np.sqrt(x, out=np.empty_like(x))
    return np.reciprocal(r, out=r)


cpu_kernel("abs", _NUMERIC_X)(_ufunc_kernel(np.abs, "abs_cpu", quiet=False))
cpu_kernel("square", _INT_X)(_ufunc_kernel(np.square, "square_int_cpu", quiet=False))  # integers wrap
cpu_kernel("square", _FLOAT_X)(_ufunc_kernel(np.square, "square_cpu", quiet=True))
for _op, _fn in (("expm1", np.expm1), ("log", np.log), ("log1p", np.log1p), ("log2", np.log2), ("sqrt", np.sqrt),
                 ("rsqrt", _rsqrt), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan),
                 ("reciprocal", np.reciprocal)):
    cpu_kernel(_op, _FLOAT_X)(_ufunc_kernel(_fn, _op + "_cpu", quiet=True))
cpu_kernel("erf", _FLOAT_X)(_ufunc_kernel(erf, "erf_cpu", quiet=False))
for _op, _fn in (("acos", np.arccos), ("asin", np.arcsin), ("atan", np.arctan), ("acosh", np.arccosh),
                 ("asinh", np.arcsinh), ("atanh", np.arctanh), ("sinh", np.sinh), ("cosh", np.cosh),
                 ("exp2", np.exp2), ("log10", np.log10)):
    cpu_kernel(_op, _FLOAT_X)(_ufunc_kernel(_fn, _op + "_cpu", quiet=True))
cpu_kernel("frac", _FLOAT_X)(_ufunc_kernel(lambda x: x - np.trunc(x), "frac_cpu", quiet=True))  # inf: NaN
# The special functions compute in float64 (Note [Special functions on NumPy] in kernels/cpu/special.py).
for _op, _fn in (("erfc", special.erfc), ("erfinv", special.erfinv), ("lgamma", special.lgamma),
                 ("digamma", special.digamma), ("i0", np.i0), ("i1", special.i1)):
    cpu_kernel(_op, _FLOAT_X)(_ufunc_kernel(special.in_float64(_fn), _op + "_cpu", quiet=True))


@cpu_kernel("polygamma", _FLOAT_X)
def polygamma_cpu(ctx, x):
    return special.in_float64(lambda a: special.polygamma(ctx.attrs["n"], a))(x)


@cpu_kernel("signbit", _FLOAT_X)
def signbit_cpu(ctx, x):
    return np.signbit(x)


@cpu_kernel("signbit", _NON_FLOAT_X)
def signbit_non_float_cpu(ctx, x):
    """Integers: ``x < 0``; unsigned integers and bool: never."""
    return x < 0 if x.dtype.kind == "i" else np.zeros(x.shape, _BOOL)


@cpu_kernel("frexp", _FLOAT_X)
def frexp_cpu(ctx, x):
    """``(mantissa, exponent)``: the exponent is int32, 0 for 0, inf and NaN (whose mantissa is themselves)."""
    m, e = np.frexp(x)
    return m, e.astype(np.int32, copy=False)


@cpu_kernel("logit", _FLOAT_X)
def logit_cpu(ctx, x):
    eps = ctx.attrs["eps"]
    with _errstate(all="ignore"):
        if eps >= 0:  # PyTorch's order: below eps first, then above 1 - eps (it matters when eps > 0.5)
            lo, hi = x.dtype.type(eps), x.dtype.type(1.0 - eps)
            x = np.where(x < lo, lo, np.where(x > hi, hi, x))
        return np.log(x / (1 - x))


@cpu_kernel("logit_grad", _FLOAT_DY)
def logit_grad_cpu(ctx, dy, x):
    eps = ctx.attrs["eps"]
    t = x.dtype.type
    outside = (x < 0) | (x > 1) if eps < 0 else (x < t(eps)) | (x > t(1.0 - eps))
    with _errstate(all="ignore"):
        return np.where(outside, t(np.nan) if eps < 0 else t(0), dy / (x * (1 - x)))
for _op, _fn in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
    cpu_kernel(_op, _FLOAT_X)(_ufunc_kernel(_fn, _op + "_cpu", quiet=False))
    cpu_kernel(_op, _INT_X)(_copy_kernel)


@cpu_kernel("sign", _NUMERIC_X)
def sign_cpu(ctx, x):
    """-1, 0 or 1; NaN gives 0, as PyTorch's ``(0 < x) - (x < 0)``."""
    if x.dtype.kind == "f":
        return np.greater(x, 0).astype(x.dtype) - np.less(x, 0)
    return np.sign(x)


cpu_kernel("sign", dtype_in("x", bool_))(_copy_kernel)  # PyTorch: sign of a bool tensor is itself


@cpu_kernel("round", _FLOAT_X)
def round_cpu(ctx, x):
    """Half to even; with ``decimals`` PyTorch's ``rint(x * 10^d) / 10^d`` (``rint(x / 10^-d) * 10^-d`` for
    d < 0), in float32 for float16 input."""
    d = ctx.attrs["decimals"]
    if d == 0:
        return np.rint(x)
    dt = x.dtype
    op_dt = _F32 if dt == _F16 else dt
    scale = 10.0 ** abs(d) if abs(d) <= 308 else math.inf
    with _errstate(all="ignore"):
        s = op_dt.type(scale)
        x = x.astype(op_dt, copy=False)
        r = np.rint(x * s) / s if d > 0 else np.rint(x / s) * s
        return r.astype(dt, copy=False)


# Integer tensors: the functor rejects decimals != 0 (PyTorch has no integer kernel for it).
cpu_kernel("round", _INT_X)(_copy_kernel)


# ---- logical tests -----------------------------------------------------------------------------------
cpu_kernel("logical_not", _ALL_X)(_ufunc_kernel(np.logical_not, "logical_not_cpu", quiet=False))
for _op, _fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
    cpu_kernel(_op, _FLOAT_X)(_ufunc_kernel(_fn, _op + "_cpu", quiet=False))


@cpu_kernel("isnan", _NON_FLOAT_X)
def isnan_non_float_cpu(ctx, x):
    return np.zeros(x.shape, _BOOL)


@cpu_kernel("isinf", _NON_FLOAT_X)
def isinf_non_float_cpu(ctx, x):
    return np.zeros(x.shape, _BOOL)


@cpu_kernel("isfinite", _NON_FLOAT_X)
def isfinite_non_float_cpu(ctx, x):
    return np.ones(x.shape, _BOOL)


# ---- nan_to_num ------------------------------------------------------------------------------------
@cpu_kernel("nan_to_num", _FLOAT_X)
def nan_to_num_cpu(ctx, x):
    a = ctx.attrs
    t = x.dtype.type
    info = np.finfo(x.dtype)
    with _errstate(all="ignore"):  # a replacement beyond float16 / float32 becomes inf, as a C++ cast does
        nan = t(a["nan"])
        posinf = t(a["posinf"]) if a["has_posinf"] else info.max
        neginf = t(a["neginf"]) if a["has_neginf"] else info.min
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


# Integer and bool tensors hold no NaN or inf: a copy, as in PyTorch.
cpu_kernel("nan_to_num", _NON_FLOAT_X)(_copy_kernel)


# ---- clamp -----------------------------------------------------------------------------------------
_maximum = np.maximum
_minimum = np.minimum


@cpu_kernel("clip_by_scalar", _NUMERIC_X)
def clip_by_scalar_cpu(ctx, x):
    """``min(max(x, lo), hi)``: a NaN input (or bound) gives NaN; lo > hi gives hi."""
    a = ctx.attrs
    t = x.dtype.type
    floating = x.dtype.kind == "f"
    if a["has_min"]:
        x = _maximum(x, t(a["floating_min"] if floating else a["integral_min"]))
    if a["has_max"]:
        x = _minimum(x, t(a["floating_max"] if floating else a["integral_max"]))
    return x


@cpu_kernel("clip_by_scalar_grad", _FLOAT_DY)
def clip_by_scalar_grad_cpu(ctx, dy, x):
    a = ctx.attrs
    t = x.dtype.type
    lo = a["floating_min"] if a["has_min"] else -math.inf
    hi = a["floating_max"] if a["has_max"] else math.inf
    if math.isnan(lo) or math.isnan(hi):  # a NaN bound makes every output NaN: no gradient, as PyTorch
        return np.zeros_like(dy)
    return np.where((x < t(lo)) | (x > t(hi)), t(0), dy)  # a NaN input passes the gradient


@cpu_kernel("clip_by_tensor", _NUMERIC_X)
def clip_by_tensor_cpu(ctx, x, lo, hi):
    return _minimum(_maximum(x, lo), hi)


@cpu_kernel("clip_by_tensor_min", _NUMERIC_X)
def clip_by_tensor_min_cpu(ctx, x, lo):
    return _maximum(x, lo)


@cpu_kernel("clip_by_tensor_max", _NUMERIC_X)
def clip_by_tensor_max_cpu(ctx, x, hi):
    return _minimum(x, hi)
