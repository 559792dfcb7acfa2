"""Special functions on NumPy arrays, vectorised: erf, erfc, erfinv, lgamma, digamma, trigamma, the Hurwitz
zeta function (polygamma), the modified Bessel function i1, and the regularised incomplete gamma functions.

Note [Special functions on NumPy]
NumPy has no ufunc for these (``np.i0`` is the only one it ships; the i0 kernel uses it) and scipy is not a
dependency. digamma, trigamma, zeta, i1 and igamma are vectorised forms of PyTorch's cpu algorithms
(aten/src/ATen/native/Math.h, mostly after the Cephes Math Library by S. L. Moshier, 3-clause BSD, whose
coefficients they use); lgamma, erf and erfc, for which PyTorch calls the C library, are Cephes' lgam and
ndtr.c; erfinv starts from Giles' approximation. Poles, infinities and NaNs come out as PyTorch's do:
``digamma(+-0) = -+inf``, ``lgamma`` of a pole is inf, ``trigamma(-1)`` is the huge finite value
``pi^2 / sin(pi x)^2`` gives, ``polygamma(n >= 2, inf)`` and ``i1(inf)`` are NaN. Where PyTorch's float64
results are far from float64 rounding, these go further: ``lgamma`` sums a series near its zeros at 1 and 2
(Cephes' recurrence leaves an ulp of log 2 there), ``trigamma`` sums its asymptotic series further (PyTorch's:
~1e-9), ``erfinv`` refines by Newton steps on ``log(erfc)`` in the tails (PyTorch: on ``erf``), ``erfc`` keeps
its subnormal results. ``igamma`` / ``igammac`` use the series and the continued fraction everywhere (PyTorch
switches to Temme's uniform expansion, ~1e-9 accurate, where ``a`` is large and ``x`` near it): more
iterations there. The functions take float64 arrays and return float64 arrays (``in_float64`` wraps them for
the kernels); loops whose trip count depends on the value (recurrences, series, continued fractions) run on
the elements still active.
"""

from __future__ import annotations

import math

import numpy as np

_errstate = np.errstate
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_MACHEP = 1.11022302462515654042e-16
_MAXLOG = 7.09782712893383996843e2


def polyval(x, coefs):
    """Horner's rule: ``coefs[0] * x^n + ... + coefs[n]`` (Cephes' ``polevl``)."""
    r = x * coefs[0]
    r += coefs[1]
    for c in coefs[2:]:
        r *= x
        r += c
    return r


def chbevl(x, coefs):
    """Cephes' Chebyshev series ``sum coefs[i] T_i(x / 2)`` (zeroth-order term last)."""
    b0, b1, b2 = np.full_like(x, coefs[0]), np.zeros_like(x), np.zeros_like(x)
    for c in coefs[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


# ---- erf, erfc ------------------------------------------------------------------------------------
# Cephes' rational approximations (ndtr.c): erf(x) = x T(x^2) / U(x^2) for |x| <= 1; erfc(a) = exp(-a^2)
# P(a) / Q(a) for 1 <= a < 8 and exp(-a^2) R(a) / S(a) beyond, exp(-a^2) formed as Cephes' expx2 does.
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3, 7.00332514112805075473E3,
          5.55923013010394962768E4)
_ERF_U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
          2.26290000613890934246E4, 4.92673942608635921086E4)
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)
# Below this many elements the ~40 NumPy calls of the rational forms cost more than math.erf per element.
ERF_SMALL = 512
_erf_scalar = np.frompyfunc(math.erf, 1, 1)
_erfc_scalar = np.frompyfunc(math.erfc, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function of a floating array, in ``x``'s dtype (float16 / float32 compute in float32)."""
    dt = x.dtype
    if x.size < ERF_SMALL:
        return np.asarray(_erf_scalar(x), dtype=dt)
    x = x.astype(_F64 if dt == _F64 else _F32, copy=False)
    r = np.empty_like(x)
    with _errstate(all="ignore"):
        small = np.abs(x) <= 1.0
        xs = x[small]
        z = xs * xs
        num = polyval(z, _ERF_T)
        num *= xs
        num /= polyval(z, _ERF_U)
        r[small] = num
        np.logical_not(small, out=small)
        xb = x[small]
        a = np.minimum(np.abs(xb), 8.0)
        e = a * a
        np.negative(e, out=e)
        np.exp(e, out=e)
        e *= polyval(a, _ERFC_P)
        e /= polyval(a, _ERFC_Q)
        np.subtract(1.0, e, out=e)
        r[small] = np.copysign(e, xb, out=e)
    return r.astype(dt, copy=False)


def _exp_minus_square(a):
    """``exp(-a^2)`` for ``a >= 0`` without the error of rounding ``a^2``: ``a = m + f`` with ``m`` a multiple of
    1/128, so ``m^2`` is exact (Cephes' expx2)."""
    m = np.floor(a * 128.0 + 0.5) / 128.0
    f = a - m
    return np.exp(-m * m) * np.exp(-(2.0 * m * f + f * f))


def _erfc_tail(a):
    """``erfc(a)`` for finite ``a >= 1`` (subnormal, then 0, beyond 26.5)."""
    mid = a < 8.0
    ratio = np.empty_like(a)
    ratio[mid] = polyval(a[mid], _ERFC_P) / polyval(a[mid], _ERFC_Q)
    big = ~mid
    ratio[big] = polyval(a[big], _ERFC_R) / polyval(a[big], _ERFC_S)
    return _exp_minus_square(a) * ratio


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function ``1 - erf(x)`` of a float64 array, accurate where it is tiny."""
    if x.size < ERF_SMALL:
        return np.asarray(_erfc_scalar(x), dtype=_F64)
    out = np.empty_like(x)
    with _errstate(all="ignore"):
        ax = np.abs(x)
        small = ax < 1.0
        out[small] = 1.0 - erf(x[small])
        rest = ~small & np.isfinite(x)
        tail = _erfc_tail(ax[rest])
        out[rest] = np.where(x[rest] < 0, 2.0 - tail, tail)
        out[np.isnan(x)] = np.nan
        out[np.isinf(x)] = np.where(x[np.isinf(x)] > 0, 0.0, 2.0)
    return out


# ---- erfinv ---------------------------------------------------------------------------------------
# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010): single-precision starting values.
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
               0.00943887047, 1.00167406, 2.83297682)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function of a float64 array: NaN outside [-1, 1], +-inf at +-1.

    Giles' approximation refined by two Halley steps on ``erf(x) - |y|``; for ``|y| > 0.5``, Newton steps on
    ``log(erfc(x)) - log(1 - |y|)`` (``1 - |y|`` is exact there), so the tails keep full relative accuracy."""
    out = np.full_like(y, np.nan)
    with _errstate(all="ignore"):
        ay = np.abs(y)
        out[ay == 1.0] = np.copysign(np.inf, y[ay == 1.0])
        ok = ay < 1.0
        a = ay[ok]
        w = -np.log((1.0 - a) * (1.0 + a))
        central = w < 5.0
        x = np.where(central, polyval(w - 2.5, _GILES_CENTRAL), polyval(np.sqrt(w) - 3.0, _GILES_TAIL)) * a
        tail = a > 0.5
        xc, ac = x[~tail], a[~tail]
        xt, lt = x[tail], np.log(1.0 - a[tail])
        for _ in range(2):  # Giles' values are ~1e-7 accurate: Halley's cubic steps finish them
            f = erf(xc) - ac
            xc = xc - f / (_TWO_OVER_SQRT_PI * np.exp(-xc * xc) + xc * f)
        for _ in range(6):  # a few percent off far in the tails: Newton until it settles
            e = erfc(xt)
            dx = (np.log(e) - lt) * e / (_TWO_OVER_SQRT_PI * np.exp(-xt * xt))
            xt = xt + dx
            if not np.any(np.abs(dx) > 4 * _MACHEP * np.abs(xt)):
                break
        x[~tail], x[tail] = xc, xt
        out[ok] = np.copysign(x, y[ok])
    return out


# ---- lgamma ---------------------------------------------------------------------------------------
# Cephes' lgam: Stirling's series for x >= 13, a rational form on [2, 3] reached by recurrence below 13, the
# reflection formula below -34. Only log|Gamma(x)|: the sign is not returned.
_LGAM_A = (8.11614167470508450300E-4, -5.95061904284301438324E-4, 7.93650340457716943945E-4,
           -2.77777777730099687205E-3, 8.33333333333331927722E-2)
_LGAM_B = (-1.37825152569120859100E3, -3.88016315134637840924E4, -3.31612992738871184744E5,
           -1.16237097492762307383E6, -1.72173700820839662146E6, -8.53555664245765465627E5)
_LGAM_C = (1.0, -3.51815701436523470549E2, -1.70642106651881159223E4, -2.20528590553854454839E5,
           -1.13933444367982507207E6, -2.53252307177582951285E6, -2.01889141433532773231E6)
_LS2PI = 0.91893853320467274178  # log(sqrt(2 pi))
_LOGPI = 1.14472988584940017414


def _lgamma_stirling(x):
    """``lgamma(x)`` for ``x >= 13`` (finite)."""
    q = (x - 0.5) * np.log(x) - x + _LS2PI
    p = 1.0 / (x * x)
    corr = np.where(x >= 1000.0,
                    ((7.9365079365079365079365e-4 * p - 2.7777777777777777777778e-3) * p + 0.0833333333333333333333),
                    polyval(p, _LGAM_A)) / x
    return np.where(x > 1.0e8, q, q + corr)


def _lgamma_middle(x):
    """``lgamma(x)`` for ``-34 < x < 13``: recurrence into [2, 3); inf at the poles."""
    u, z = x.copy(), np.ones_like(x)
    for _ in range(11):
        m = u >= 3.0
        if not m.any():
            break
        u = np.where(m, u - 1.0, u)
        z = np.where(m, z * u, z)
    pole = np.zeros(x.shape, bool)
    for _ in range(37):
        m = u < 2.0
        if not m.any():
            break
        pole |= m & (u == 0.0)
        z = np.where(m, z / u, z)
        u = np.where(m, u + 1.0, u)
    t = u - 2.0
    r = np.log(np.abs(z)) + t * polyval(t, _LGAM_B) / polyval(t, _LGAM_C)
    r[pole] = np.inf
    return r


def _lgamma_near_zeros(x):
    """``lgamma(x)`` for ``|x - 1| <= 1/4`` or ``|x - 2| <= 1/4``, where it crosses zero: ``lgamma(2 + e) =
    (1 - gamma) e + sum_k (-1)^k (zeta(k) - 1) e^k / k`` and ``lgamma(1 + e) = lgamma(2 + e) - log1p(e)``,
    ``e`` exact; the recurrence would leave an absolute error of an ulp of log(2) there."""
    near_one = x < 1.5
    e = np.where(near_one, x - 1.0, x - 2.0)
    return e * polyval(e, _LGAM_SERIES) - np.where(near_one, np.log1p(e), 0.0)


def lgamma(x: np.ndarray) -> np.ndarray:
    """``log|Gamma(x)|`` of a float64 array: inf at 0, the negative integers and +-inf; NaN for NaN."""
    out = np.full_like(x, np.nan)
    with _errstate(all="ignore"):
        out[np.isinf(x)] = np.inf
        big = (x >= 13.0) & np.isfinite(x)
        out[big] = _lgamma_stirling(x[big])
        mid = (x > -34.0) & (x < 13.0)
        out[mid] = _lgamma_middle(x[mid])
        zeros = (np.abs(x - 1.0) <= 0.25) | (np.abs(x - 2.0) <= 0.25)
        out[zeros] = _lgamma_near_zeros(x[zeros])
        neg = (x <= -34.0) & np.isfinite(x)
        q = -x[neg]
        p = np.floor(q)
        z = q - p
        flip = z > 0.5
        z[flip] = p[flip] + 1.0 - q[flip]
        s = q * np.sin(np.pi * z)
        r = _LOGPI - np.log(s) - _lgamma_stirling(q)
        r[(p == q) | (s == 0.0)] = np.inf
        out[neg] = r
    return out


# ---- digamma, trigamma, zeta ----------------------------------------------------------------------
_PSI_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
          8.33333333333333333333E-2)
_PSI_10 = 2.25175258906672110764


def _digamma_positive(x):
    """``digamma(x)`` for ``x > 0`` (and NaN): recurrence up to 10, then the asymptotic series."""
    result = np.zeros_like(x)
    for _ in range(10):
        m = x < 10.0
        if not m.any():
            break
        result = np.where(m, result - 1.0 / x, result)
        x = np.where(m, x + 1.0, x)
    z = 1.0 / (x * x)
    y = np.where(x < 1.0e17, z * polyval(z, _PSI_A), 0.0)
    return np.where(x == 10.0, result + _PSI_10, result + np.log(x) - 0.5 / x - y)


def digamma(x: np.ndarray) -> np.ndarray:
    """``digamma(x)`` of a float64 array (PyTorch's calc_digamma): ``-+inf`` at ``+-0``, NaN at the negative
    integers and -inf; the reflection formula with the fractional part of ``x`` below 0."""
    out = np.empty_like(x)
    with _errstate(all="ignore"):
        zero = x == 0.0
        out[zero] = np.copysign(np.inf, -x[zero])
        neg = x < 0.0
        whole = neg & (x == np.trunc(x))
        out[whole] = np.nan
        refl = neg & ~whole
        xr = x[refl]
        out[refl] = _digamma_positive(1.0 - xr) - np.pi / np.tan(np.pi * np.fmod(xr, 1.0))
        pos = ~(zero | neg)
        out[pos] = _digamma_positive(x[pos])
    return out


# The asymptotic series of trigamma: 1/x + 1/(2x^2) + sum B_2k / x^(2k+1), k = 1..8.
_TRIGAMMA_B = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510)


def trigamma(x: np.ndarray) -> np.ndarray:
    """``polygamma(1, x)`` of a float64 array: PyTorch's reflection ``-pi^2 / sin(pi x)^2`` below 1/2 (NaN at
    -inf), recurrence up to 10 and eight terms of the asymptotic series (to float64 rounding). The poles (0 and
    the negative integers) are inf, as for higher orders; PyTorch's reflection gives a finite 1e15 to 1e32 there
    (``sin(pi x)`` does not round to 0)."""
    with _errstate(all="ignore"):
        pole = (x <= 0) & (x == np.floor(x)) & np.isfinite(x)
        x = x.copy()
        sign = np.ones_like(x)
        result = np.zeros_like(x)
        low = x < 0.5
        s = np.sin(np.pi * x[low])
        sign[low] = -1.0
        result[low] = -(np.pi * np.pi) / (s * s)
        x[low] = 1.0 - x[low]
        for _ in range(11):
            m = x < 10.0
            if not m.any():
                break
            result = np.where(m, result + 1.0 / (x * x), result)
            x = np.where(m, x + 1.0, x)
        ixx = 1.0 / (x * x)
        series = np.zeros_like(x)
        for b in _TRIGAMMA_B[::-1]:
            series = series * ixx + b
        result += (1.0 + 0.5 / x + series * ixx) / x
        return np.where(pole, np.inf, sign * result)


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
           -7.1661652561756670113e18)


def _zeta_sum(s, q, out, live, scaled=False):
    """Cephes' zeta on the ``live`` elements: direct sum until the argument passes 9, then the Euler-Maclaurin
    tail; an element stops as soon as a term no longer changes its sum. ``scaled``: ``q^s zeta(s, q)``, the
    sum of ``(q / (q + k))^s`` (Note [polygamma of a large order])."""
    idx = np.flatnonzero(live)
    q0 = q.reshape(-1)[idx]
    a = q0.copy()
    total = np.ones_like(a) if scaled else a ** -s
    b = np.zeros_like(a)
    i = 0
    done = np.zeros(idx.shape, bool)
    while True:
        step = ~done & ((i < 9) | (a <= 9.0))
        if not step.any():
            break
        i += 1
        a[step] += 1.0
        b[step] = np.exp(-s * np.log1p((a[step] - q0[step]) / q0[step])) if scaled else a[step] ** -s
        total[step] += b[step]
        done |= step & (-_MACHEP * total < b) & (b < _MACHEP * total)
    w = a
    tail = ~done
    total[tail] += b[tail] * w[tail] / (s - 1.0) - 0.5 * b[tail]
    # term j: b s (s + 1) ... (s + 2j) / (w^(2j + 1) A_j), its factors taken one by one (s may be huge)
    c, k = b, 0.0
    for coef in _ZETA_A:
        c = c * ((s + k) / w)
        t = c / coef
        total[tail] += t[tail]
        tail &= ~(np.abs(t / total) < _MACHEP)
        c = c * ((s + k + 1.0) / w)
        k += 2.0
    out.flat[idx] = total


def zeta(s: float, q: np.ndarray) -> np.ndarray:
    """The Hurwitz zeta function ``sum_k (k + q)^-s`` for a scalar ``s`` and a float64 array ``q`` (Cephes'
    zeta): inf for ``s == 1`` or a non-positive integer ``q``, NaN for ``s < 1`` or a negative ``q`` with
    non-integer ``s``."""
    if s == 1.0:
        return np.full_like(q, np.inf)
    if s < 1.0:
        return np.full_like(q, np.nan)
    out = np.empty_like(q)
    with _errstate(all="ignore"):
        nonpos = q <= 0.0
        pole = nonpos & (q == np.floor(q))
        out[pole] = np.inf
        live = ~pole
        if s != math.floor(s):
            out[nonpos & ~pole] = np.nan
            live &= ~nonpos
        _zeta_sum(s, q, out, live)
    return out


# (1 - Euler's gamma, then (-1)^k (zeta(k) - 1) / k for k = 2..20), highest power first for polyval.
_LGAM_SERIES = tuple(float(c) for c in [(-1) ** k * zeta(float(k), np.array([2.0]))[0] / k for k in range(20, 1, -1)]
                     + [1.0 - 0.57721566490153286061])


# Note [polygamma of a large order]
# polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x). Past n = 170, n! overflows float64 (and math.factorial of a
# huge n would run for hours), and zeta(n + 1, x) ~ x^-(n+1) underflows for x > 1 while the product is finite
# (polygamma(200, 100) ~ -8e-28; PyTorch's exp(lgamma(n + 1)) * zeta gives NaN there, inf * 0). Such elements
# are computed in log space: log zeta(s, q) = log S(q) - s log q for q > 0, with s = n + 1 and
# S(q) = q^s zeta(s, q) = sum_k (q / (q + k))^s >= 1 summed as zeta is (``_zeta_sum(scaled=True)``: its terms
# exp(-s log1p(k / q)) never overflow). A negative non-integer x (n > 170 only: there two terms of opposite
# signs overflow, inf - inf) splits at m = ceil(-x), f = x + m, g = 1 - f into positive arguments:
# zeta(s, x) = zeta(s, f) + (-1)^s (zeta(s, g) - zeta(s, g + m)), summed relative to the largest part (the two
# nearest terms cancel exactly at a half-integer x for odd s). Poles, inf and NaN keep the direct product.
_TINY = np.finfo(np.float64).tiny


def _log_zeta(s, q):
    """``log zeta(s, q)`` of a float64 array of positive ``q``."""
    scaled = np.empty_like(q)
    _zeta_sum(s, q, scaled, np.ones(q.shape, bool), scaled=True)
    return np.log(scaled) - s * np.log(q)


def _log_zeta_negative(s, x):
    """(sign, ``log|zeta(s, x)|``) for a float64 array of negative non-integer ``x``."""
    m = np.ceil(-x)
    f = x + m
    g = 1.0 - f
    odd = -1.0 if s % 2 else 1.0
    l1, l2, l3 = _log_zeta(s, f), _log_zeta(s, g), _log_zeta(s, g + m)
    top = np.maximum(l1, l2)
    head = np.exp(l1 - top) + odd * np.exp(l2 - top)
    cancel = head == 0.0  # f == g, s odd: zeta(s, x) = -zeta(s, g + m)
    total = np.where(cancel, -odd, head - odd * np.exp(l3 - top))
    return np.sign(total), np.where(cancel, l3, top) + np.log(np.abs(total))


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    """``polygamma(n, x)``, the n-th derivative of digamma, of a float64 array (n >= 0)."""
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    s, sign = n + 1.0, (1.0 if n % 2 else -1.0)
    x = np.asarray(x)
    with _errstate(all="ignore"):
        z = zeta(s, x)
        out = np.array(sign * (float(math.factorial(n)) if n <= 170 else math.inf) * z, dtype=np.float64)
        log_factorial = math.lgamma(n + 1.0)
        pos = (x > 0.0) & (x < np.inf) & ((n > 170) | ~(np.abs(z) >= _TINY))  # Note [polygamma of a large order]
        if pos.any():
            out[pos] = sign * np.exp(log_factorial + _log_zeta(s, x[pos]))
        neg = (x < 0.0) & (x > -np.inf) & (x != np.floor(x)) & (n > 170)
        if neg.any():
            zeta_sign, log_abs = _log_zeta_negative(s, x[neg])
            out[neg] = sign * zeta_sign * np.exp(log_factorial + log_abs)
        return out


# ---- i1 -------------------------------------------------------------------------------------------
# Cephes' Chebyshev coefficients of exp(-x) I1(x) / x on [0, 8] and exp(-x) sqrt(x) I1(x) on (8, inf).
_I1_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
         -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
         3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
         -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
         9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
         -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
         4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
         -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
         2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
         -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
         -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
         -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
         4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
         -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
         3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
         -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
         -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
         7.78576235018280120474E-1)


def i1(x: np.ndarray) -> np.ndarray:
    """The modified Bessel function of the first kind of order one (Cephes' i1; NaN at +-inf, as PyTorch's)."""
    with _errstate(all="ignore"):
        ax = np.abs(x)
        small = ax <= 8.0
        r = np.where(small, ax * chbevl(ax / 2.0 - 2.0, _I1_A), chbevl(32.0 / ax - 2.0, _I1_B) / np.sqrt(ax))
        r *= np.exp(ax)
        return np.where(x < 0.0, -r, r)


# ---- igamma, igammac ------------------------------------------------------------------------------
# The regularised lower / upper incomplete gamma functions P(a, x) and Q(a, x), as PyTorch's calc_igamma /
# calc_igammac (after SciPy and Boost) without the uniform asymptotic expansion (see the Note above).
_LANCZOS_NUM = (0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
                19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
                6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
                601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
                14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
                86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
                56906521.91347156388090791033559122686859)
_LANCZOS_DEN = (1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0, 105258076.0,
                150917976.0, 120543840.0, 39916800.0, 0.0)
_LANCZOS_G = 6.024680040776729583740234375
_BIG, _BIGINV = 4.503599627370496e15, 2.22044604925031308085e-16


def _lanczos_sum_expg_scaled(a):
    """Boost's Lanczos sum (g = 6.02...) scaled by exp(-g), a rational function of ``a``, evaluated in ``1/a``
    above 1."""
    big = a > 1.0
    y = np.where(big, 1.0 / a, a)
    num = np.where(big, polyval(y, _LANCZOS_NUM[::-1]), polyval(y, _LANCZOS_NUM))
    den = np.where(big, polyval(y, _LANCZOS_DEN[::-1]), polyval(y, _LANCZOS_DEN))
    return num / den


def _igam_fac(a, x):
    """``x^a exp(-x) / Gamma(a)``, through the Lanczos sum where ``x`` is near ``a``."""
    far = np.abs(a - x) > 0.4 * np.abs(a)
    ax = a * np.log(x) - x - lgamma(a)
    fac = a + _LANCZOS_G - 0.5
    res = np.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(a)
    small = (a < 200.0) & (x < 200.0)
    numfac = (x - a - _LANCZOS_G + 0.5) / fac
    res *= np.where(small, np.exp(a - x) * (x / fac) ** a,
                    np.exp(a * (np.log1p(numfac) - numfac) + x * (0.5 - _LANCZOS_G) / fac))
    return np.where(far, np.where(ax < -_MAXLOG, 0.0, np.exp(ax)), res)


def _max_iterations(a):
    """Iterations for the series and the fraction: PyTorch's 2000, more where ``a`` is so large that they need
    ~9 sqrt(a) (PyTorch's asymptotic expansion covers that region)."""
    return int(min(100000, max(2000, 10.0 * math.sqrt(float(np.max(a, initial=0.0))) + 100)))


def _iterate(size, step, limit):
    """Run ``step(active) -> converged`` (a mask over the indices ``active``) until every element has converged
    or ``limit`` steps have run."""
    active = np.arange(size)
    for _ in range(limit):
        if not active.size:
            break
        active = active[~step(active)]


def _igam_series(a, x):
    """P(a, x) by its power series (DLMF 8.11.4)."""
    r, c, ans = a.copy(), np.ones_like(a), np.ones_like(a)

    def step(i):
        r[i] += 1.0
        c[i] *= x[i] / r[i]
        ans[i] += c[i]
        return c[i] <= _MACHEP * ans[i]
    _iterate(a.size, step, _max_iterations(a))
    return ans * _igam_fac(a, x) / a


def _igamc_series(a, x):
    """Q(a, x) for small x by DLMF 8.7.3, avoiding the cancellation of 1 - P."""
    fac, total, n = np.ones_like(a), np.zeros_like(a), np.zeros_like(a)

    def step(i):
        n[i] += 1.0
        fac[i] *= -x[i] / n[i]
        term = fac[i] / (a[i] + n[i])
        total[i] += term
        return np.abs(term) <= _MACHEP * np.abs(total[i])
    _iterate(a.size, step, 2000)
    logx = np.log(x)
    return -np.expm1(a * logx - lgamma(1.0 + a)) - np.exp(a * logx - lgamma(a)) * total


def _igamc_fraction(a, x):
    """Q(a, x) for x > 1.1, x >= a by its continued fraction (DLMF 8.9.2)."""
    y, z, c = 1.0 - a, x + 2.0 - a, np.zeros_like(a)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(a), x.copy(), x + 1.0, z * x
    ans = pkm1 / qkm1

    def step(i):
        c[i] += 1.0
        y[i] += 1.0
        z[i] += 2.0
        yc = y[i] * c[i]
        pk = pkm1[i] * z[i] - pkm2[i] * yc
        qk = qkm1[i] * z[i] - qkm2[i] * yc
        r = pk / np.where(qk != 0, qk, 1.0)
        t = np.where(qk != 0, np.abs((ans[i] - r) / r), 1.0)
        ans[i] = np.where(qk != 0, r, ans[i])
        scale = np.where(np.abs(pk) > _BIG, _BIGINV, 1.0)
        pkm2[i], pkm1[i], qkm2[i], qkm1[i] = pkm1[i] * scale, pk * scale, qkm1[i] * scale, qk * scale
        return t <= _MACHEP
    _iterate(a.size, step, _max_iterations(a))
    return ans * _igam_fac(a, x)


def _igamma_boundary(a, x, lower):
    """The values at the edges of the domain (NaN, 0 or 1) and the mask of elements left to compute. PyTorch's
    order of tests: a NaN passes the sign test, so ``igammac(nan, 0)`` is 1 and ``igammac(nan, inf)`` 0."""
    one, zero = (1.0, 0.0) if lower else (0.0, 1.0)
    out = np.full_like(a, np.nan)
    todo = ~((x < 0) | (a < 0))  # negative: NaN
    out[todo & (a == 0) & (x > 0)] = one
    rest = todo & (a != 0)
    out[rest & (x == 0)] = zero
    rest &= x != 0
    out[rest & np.isinf(a) & ~np.isinf(x)] = zero
    rest &= ~np.isinf(a)
    out[rest & np.isinf(x)] = one
    return out, rest & ~np.isinf(x) & ~np.isnan(a) & ~np.isnan(x)


def _igammac_inner(a, x):
    """Q(a, x) for finite positive ``a`` and ``x``."""
    out = np.empty_like(a)
    with_p = np.where(x > 1.1, x < a, np.where(x <= 0.5, -0.4 / np.log(x) < a, x * 1.1 < a))
    fraction = (x > 1.1) & ~with_p
    series = ~with_p & ~fraction
    out[with_p] = 1.0 - _igam_series(a[with_p], x[with_p])
    out[fraction] = _igamc_fraction(a[fraction], x[fraction])
    out[series] = _igamc_series(a[series], x[series])
    return out


def igammac(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularised upper incomplete gamma function Q(a, x) of broadcast float64 arrays."""
    a, x = np.broadcast_arrays(a, x)
    with _errstate(all="ignore"):
        out, rest = _igamma_boundary(a, x, lower=False)
        out[rest] = _igammac_inner(a[rest], x[rest])
    return out


def igamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularised lower incomplete gamma function P(a, x) of broadcast float64 arrays."""
    a, x = np.broadcast_arrays(a, x)
    with _errstate(all="ignore"):
        out, rest = _igamma_boundary(a, x, lower=True)
        upper = rest & (x > 1.0) & (x > a)
        out[upper] = 1.0 - _igammac_inner(a[upper], x[upper])
        lower = rest & ~upper
        out[lower] = _igam_series(a[lower], x[lower])
    return out


def in_float64(fn):
    """A kernel body computing ``fn`` in float64 and returning ``x``'s dtype (beyond its range: inf)."""
    def compute(x):
        r = fn(x.astype(_F64, copy=False))
        with _errstate(over="ignore"):
            return r.astype(x.dtype, copy=False)
    return compute
