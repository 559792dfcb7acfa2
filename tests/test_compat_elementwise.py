"""[compat] elementwise math: float64 accuracy of the special functions against closed forms and series written
here, PyTorch's values at poles / infinities / NaN, gradients at the points where derivatives.yaml special-cases
them, the torch-level in-place functions, Tensor operators, errors; an optional comparison with PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError

F64 = flow.float64
EULER = 0.57721566490153286061
INF, NAN = math.inf, math.nan


def t64(values):
    return flow.tensor(np.asarray(values, dtype=np.float64))


def close(got, expected, rtol=1e-13, atol=0.0):
    np.testing.assert_allclose(got.numpy(), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol,
                               equal_nan=True)


# ---- accuracy of the special functions (float64) --------------------------------------------------------------
def test_lgamma_matches_math_lgamma_over_the_line():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-60, 60, 3000), np.exp(rng.uniform(-20, 20, 1000)), [1e-300, 1e5, 1e15]])
    x = x[(x > 0) | (x != np.floor(x))]
    expected = [math.lgamma(v) for v in x]
    close(flow.lgamma(t64(x)), expected, rtol=1e-13, atol=4e-15)


def test_lgamma_keeps_its_relative_accuracy_where_it_crosses_zero():
    # lgamma(1 + e) = -gamma e + zeta(2) e^2 / 2 - zeta(3) e^3 / 3 + ..., lgamma(2 + e) = (1 - gamma) e + ...
    e = np.array([2.0**-10, -(2.0**-12), 2.0**-20, -(2.0**-30), 3 * 2.0**-40])
    z2, z3 = math.pi**2 / 6, 1.2020569031595942854
    near_one = -EULER * e + z2 / 2 * e**2 - z3 / 3 * e**3 + math.pi**4 / 360 * e**4
    near_two = (1 - EULER) * e + (z2 - 1) / 2 * e**2 - (z3 - 1) / 3 * e**3 + (math.pi**4 / 90 - 1) / 4 * e**4
    close(flow.lgamma(t64(1 + e)), near_one, rtol=1e-12)
    close(flow.lgamma(t64(2 + e)), near_two, rtol=1e-12)


def test_lgamma_poles_and_infinities():
    got = flow.lgamma(t64([0.0, -0.0, -1.0, -7.0, -40.0, INF, -INF, NAN]))
    close(got, [INF, INF, INF, INF, INF, INF, INF, NAN])


def test_digamma_at_integers_and_half_integers():
    n = np.arange(1, 30)
    harmonic = np.cumsum(np.concatenate([[0.0], 1.0 / n[:-1]]))
    close(flow.digamma(t64(n)), -EULER + harmonic, rtol=1e-14, atol=1e-16)
    half = -EULER - 2 * math.log(2) + np.cumsum(np.concatenate([[0.0], 2.0 / (2 * n[:-1] - 1)]))
    close(flow.digamma(t64(n - 0.5)), half, rtol=1e-14)
    close(flow.digamma(t64(0.5 - n[:10])), half[1:11], rtol=1e-13)  # reflection: psi(1/2 - n) = psi(1/2 + n)


def test_digamma_poles_follow_pytorch():
    close(flow.digamma(t64([0.0, -0.0, -1.0, -5.0, -INF, INF, NAN])), [-INF, INF, NAN, NAN, NAN, INF, NAN])


def test_trigamma_and_higher_polygammas_at_known_points():
    n = np.arange(1, 25)
    trigamma = math.pi**2 / 6 - np.cumsum(np.concatenate([[0.0], 1.0 / n[:-1] ** 2]))
    close(flow.polygamma(1, t64(n)), trigamma, rtol=1e-14)
    # psi1(1/2) = pi^2 / 2; reflection: psi1(-1/2) = pi^2 / sin(-pi / 2)^2 - psi1(3/2) = pi^2 / 2 + 4
    close(flow.polygamma(1, t64([0.5, -0.5])), [math.pi**2 / 2, math.pi**2 / 2 + 4], rtol=1e-13)
    zeta3, zeta5 = 1.2020569031595942854, 1.0369277551433699263
    close(flow.polygamma(2, t64([1.0])), [-2 * zeta3], rtol=1e-14)
    close(flow.polygamma(3, t64([1.0])), [6 * math.pi**4 / 90], rtol=1e-14)
    close(flow.polygamma(4, t64([1.0])), [-24 * zeta5], rtol=1e-14)
    close(flow.polygamma(0, t64([1.0])), [-EULER], rtol=1e-15)


def test_polygamma_special_values_follow_pytorch():
    x = t64([0.0, -1.0, INF, -INF, NAN])
    close(flow.polygamma(1, x)[[0, 2, 3, 4]], [INF, 0.0, NAN, NAN])
    close(flow.polygamma(2, x), [-INF, -INF, NAN, -INF, NAN])
    close(flow.polygamma(3, x), [INF, INF, NAN, INF, NAN])


def test_erfc_matches_math_erfc_on_the_vectorised_path_down_to_subnormals():
    x = np.linspace(-6, 26.5, 4001)  # over 512 elements: the rational forms, not math.erfc
    close(flow.erfc(t64(x)), [math.erfc(v) for v in x], rtol=2e-14)
    close(flow.erfc(t64([INF, -INF, NAN] * 200))[:3], [0.0, 2.0, NAN])


def _erfinv_by_bisection(y):
    a = abs(y)
    if a < 1e-9:  # erfinv(y) = sqrt(pi) / 2 (y + pi y^3 / 12 + ...): exact to rounding here
        return math.sqrt(math.pi) / 2 * y
    lo, hi = 0.0, 7.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        below = math.erf(mid) < a if a <= 0.5 else math.erfc(mid) > 1 - a
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.copysign(0.5 * (lo + hi), y)


def test_erfinv_is_accurate_in_the_middle_and_in_the_tails():
    y = np.concatenate([np.linspace(-0.999, 0.999, 301), 1 - np.logspace(-3, -15.9, 40), -1 + np.logspace(-3, -15, 8),
                        [1e-300, -1e-20]])
    close(flow.erfinv(t64(y)), [_erfinv_by_bisection(v) for v in y], rtol=1e-14)
    close(flow.erfinv(t64([1.0, -1.0, 1.5, -2.0, NAN, 0.0])), [INF, -INF, NAN, NAN, NAN, 0.0])


def _i0_series(v):
    term = total = 1.0
    for k in range(1, 200):
        term *= v * v / (4.0 * k * k)
        total += term
    return total


def test_i0_matches_its_series_and_its_derivative_is_i1():
    x = np.linspace(-20, 20, 81)
    close(flow.i0(t64(x)), [_i0_series(v) for v in x], rtol=1e-14)
    xt = t64(x).requires_grad_()
    (g,) = flow.autograd.grad(flow.i0(xt).sum(), xt)
    i1 = [sum((v / 2) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1)) for k in range(80)) for v in x]
    close(g, i1, rtol=1e-13, atol=1e-300)
    close(flow.i0(t64([INF, -INF, NAN])), [NAN, NAN, NAN])  # PyTorch's (and NumPy's) exp(x) / sqrt(x) form


def _poisson_tail(n, x):
    """Q(n, x) = exp(-x) sum_{k < n} x^k / k! for a whole n."""
    return math.exp(-x) * sum(x**k / math.factorial(k) for k in range(n))


def test_igamma_and_igammac_against_closed_forms():
    a = np.repeat(np.arange(1, 21), 12).astype(np.float64)
    x = np.tile(np.array([0.05, 0.3, 0.9, 1.1, 2.0, 4.5, 8.0, 12.0, 17.0, 25.0, 33.0, 40.0]), 20)
    q = np.array([_poisson_tail(int(n), v) for n, v in zip(a, x)])
    close(flow.igammac(t64(a), t64(x)), q, rtol=1e-12, atol=1e-300)
    close(flow.igamma(t64(a), t64(x)), 1 - q, rtol=1e-12, atol=1e-15)
    half = np.linspace(0.01, 30, 200)
    close(flow.igamma(t64(np.full_like(half, 0.5)), t64(half)), [math.erf(math.sqrt(v)) for v in half], rtol=1e-13)
    close(flow.igammac(t64(np.full_like(half, 0.5)), t64(half)), [math.erfc(math.sqrt(v)) for v in half], rtol=1e-12)


def test_igamma_for_a_large_near_x_sums_to_one():
    a = t64([300.0, 2000.0, 20000.0])
    x = t64([310.0, 1990.0, 20050.0])
    p, q = flow.igamma(a, x), flow.igammac(a, x)
    close(p + q, [1.0, 1.0, 1.0], rtol=1e-13)
    # Temme: P(a, a) = 1/2 + 1 / (3 sqrt(2 pi a)) + O(a^-3/2)
    close(flow.igamma(t64([20000.0]), t64([20000.0])), [0.5 + 1 / (3 * math.sqrt(2 * math.pi * 20000))], rtol=1e-6)


def test_igamma_edges_follow_pytorch():
    a = t64([0.0, 0.0, 2.0, INF, 2.0, INF, -1.0, 1.0])
    x = t64([1.0, 0.0, 0.0, 1.0, INF, INF, 1.0, -1.0])
    close(flow.igamma(a, x), [1.0, NAN, 0.0, 0.0, 1.0, NAN, NAN, NAN])
    close(flow.igammac(a, x), [0.0, NAN, 1.0, 1.0, 0.0, NAN, NAN, NAN])
    # PyTorch tests the sign first (a NaN passes), then a == 0, x == 0, inf a, inf x: the edges win over a NaN
    a = t64([NAN, NAN, NAN, NAN, 0.0, INF, NAN])
    x = t64([0.0, INF, 1.0, NAN, NAN, NAN, -1.0])
    close(flow.igamma(a, x), [0.0, 1.0, NAN, NAN, NAN, 0.0, NAN])
    close(flow.igammac(a, x), [1.0, 0.0, NAN, NAN, NAN, 1.0, NAN])


def test_float32_results_are_the_rounded_float64_ones():
    x = np.linspace(0.1, 9, 50)
    for fn in (flow.lgamma, flow.digamma, flow.erfc, flow.i0, flow.erfinv):
        arg = x / 10 if fn is flow.erfinv else x
        got = fn(flow.tensor(arg.astype(np.float32)))
        assert got.dtype is flow.float32
        np.testing.assert_allclose(got.numpy(), fn(t64(arg.astype(np.float32))).numpy().astype(np.float32),
                                   rtol=1e-6)


# ---- PyTorch's values at special points ---------------------------------------------------------------------
def test_special_values_of_the_new_unary_functions():
    x = t64([0.0, -0.0, 1.0, INF, -INF, NAN])
    close(flow.sinc(x), [1.0, 1.0, math.sin(math.pi) / math.pi, NAN, NAN, NAN], atol=1e-30)
    close(flow.frac(x), [0.0, 0.0, 0.0, NAN, NAN, NAN])
    close(flow.logit(x), [-INF, -INF, INF, NAN, NAN, NAN])
    close(flow.logit(x, eps=0.25), [math.log(1 / 3)] * 2 + [math.log(3), math.log(3), math.log(1 / 3), NAN])
    close(flow.exp2(x), [1.0, 1.0, 2.0, INF, 0.0, NAN])
    close(flow.log10(t64([0.0, 100.0, -1.0, INF])), [-INF, 2.0, NAN, INF])
    assert flow.signbit(x).tolist() == [False, True, False, False, True, False]
    assert flow.isposinf(x).tolist() == [False, False, False, True, False, False]
    assert flow.isneginf(x).tolist() == [False, False, False, False, True, False]
    m, e = flow.frexp(t64([0.0, 8.0, -0.375, INF, NAN]))
    close(m, [0.0, 0.5, -0.75, INF, NAN])
    assert e.dtype is flow.int32 and e.tolist() == [0, 4, -1, 0, 0]


def test_special_values_of_the_new_binary_functions():
    a = t64([INF, -INF, INF, -INF, NAN, 1.0, 0.0, 0.0, 2.0])
    b = t64([INF, -INF, -INF, INF, 1.0, NAN, 0.0, NAN, 0.0])
    close(flow.hypot(a, b), [INF, INF, INF, INF, NAN, NAN, 0.0, NAN, 2.0])
    close(flow.logaddexp(a, b), [INF, -INF, INF, INF, NAN, NAN, math.log(2), NAN, math.log1p(math.exp(-2)) + 2])
    close(flow.logaddexp2(a, b), [INF, -INF, INF, INF, NAN, NAN, 1.0, NAN, math.log2(5)])
    close(flow.xlogy(a, b), [INF, NAN, NAN, -INF, NAN, NAN, 0.0, NAN, -INF])
    close(flow.fmax(a, b), [INF, -INF, INF, INF, 1.0, 1.0, 0.0, 0.0, 2.0])
    close(flow.fmin(a, b), [INF, -INF, -INF, -INF, 1.0, 1.0, 0.0, 0.0, 0.0])
    close(flow.heaviside(a, t64([0.5] * 9)), [1, 0, 1, 0, 0, 1, 0.5, 0.5, 1])
    close(flow.copysign(t64([1.0, 2.0, 0.0]), t64([NAN, -NAN, -0.0])), [1.0, -2.0, -0.0])
    assert np.signbit(flow.copysign(t64([0.0]), t64([-0.0])).numpy()[0])


# ---- gradients where derivatives.yaml special-cases them ----------------------------------------------------------
def _grads(fn, *values):
    inputs = [t64(v).requires_grad_() for v in values]
    fn(*inputs).sum().backward()
    return [i.grad for i in inputs]


def test_xlogy_hypot_fmax_nextafter_copysign_gradients_follow_pytorch():
    gx, gy = _grads(flow.xlogy, [0.0, 0.0, 2.0, 3.0], [0.0, NAN, 0.0, 2.0])
    close(gx, [0.0, NAN, -INF, math.log(2)])
    close(gy, [NAN, NAN, INF, 1.5])
    gx, gy = _grads(flow.hypot, [0.0, 3.0], [0.0, -4.0])
    close(gx, [NAN, 0.6])
    close(gy, [NAN, -0.8])
    gx, gy = _grads(flow.fmax, [0.3, NAN, 2.0, NAN], [0.5, 0.5, NAN, NAN])
    close(gx, [0.0, 0.0, 1.0, 1.0])
    close(gy, [1.0, 1.0, 0.0, 0.0])
    gx, gy = _grads(flow.nextafter, [0.3, 1.5], [0.5, 0.5])
    close(gx, [1.0, 1.0])
    assert gy is None or np.all(gy.numpy() == 0)
    (gx,) = _grads(lambda x: flow.copysign(x, t64([-1.0, 1.0])), [0.0, -2.0])
    close(gx, [0.0, -1.0])


def _sinc_series(x):
    """sinc(x) and its derivative from their power series in p = pi x (math.fsum; exact to float64 for |x| <= 3)."""
    p = math.pi * x
    value = math.fsum((-1) ** k * p ** (2 * k) / math.factorial(2 * k + 1) for k in range(40))
    grad = math.pi * math.fsum((-1) ** k * 2 * k * p ** (2 * k - 1) / math.factorial(2 * k + 1) for k in range(1, 40))
    return value, grad


@pytest.mark.parametrize("dtype, rtol", [(flow.float64, 1e-12), (flow.float32, 1e-5), (flow.float16, 1e-3)])
def test_sinc_and_its_gradient_near_zero_do_not_cancel(dtype, rtol):
    # sin(p) / p's gradient is (p cos p - sin p) / p^2 * pi: about -p^3 / 3 from a difference of two values near
    # p, so the quotient's gradient loses every digit near 0 (float16 gave 0 for x = 1e-3, float32 2.4x too much
    # at x = 1e-4); the Taylor series takes over there
    xs = [1e-8, 1e-4, 1e-3, 0.0096, 0.05, 0.127, 0.2, 0.5, 1.452, 2.5]
    x = flow.tensor(xs, dtype=dtype, requires_grad=True)
    y = flow.sinc(x)
    y.sum().backward()
    exact = [_sinc_series(v) for v in x.detach().double().numpy().tolist()]
    np.testing.assert_allclose(y.detach().double().numpy(), [v for v, _ in exact], rtol=rtol)
    np.testing.assert_allclose(x.grad.double().numpy(), [g for _, g in exact], rtol=rtol, atol=1e-300)


def test_sinc_logit_frexp_and_i1_gradients():
    (g,) = _grads(flow.sinc, [0.0, 0.5])
    close(g, [0.0, (math.pi * 0.5 * math.cos(math.pi * 0.5) - math.sin(math.pi * 0.5)) / (math.pi * 0.25)],
          atol=1e-15)
    (g,) = _grads(flow.logit, [0.5, 1.5, -0.1])
    close(g, [4.0, NAN, NAN])
    (g,) = _grads(lambda x: flow.logit(x, eps=0.2), [0.5, 0.1, 0.95])
    close(g, [4.0, 0.0, 0.0])
    (g,) = _grads(lambda x: flow.frexp(x).mantissa, [-8.0, 0.75])
    close(g, [1 / 16, 1.0])
    x = t64([0.0, 1.0]).requires_grad_()
    (g1,) = flow.autograd.grad(flow.i0(x).sum(), x, create_graph=True)
    (g2,) = flow.autograd.grad(g1.sum(), x)
    close(g2, [0.5, _i0_series(1.0) - 0.5651591039924851], rtol=1e-12)


def test_special_function_gradients_are_the_next_function():
    x = t64([0.7, 2.5, 4.0])
    (g,) = _grads(flow.lgamma, x.numpy())
    close(g, flow.digamma(x).numpy())
    (g,) = _grads(flow.digamma, x.numpy())
    close(g, flow.polygamma(1, x).numpy())
    (g,) = _grads(lambda v: flow.polygamma(2, v), x.numpy())
    close(g, flow.polygamma(3, x).numpy())
    (g,) = _grads(flow.erfinv, [0.3])
    close(g, [math.sqrt(math.pi) / 2 * math.exp(_erfinv_by_bisection(0.3) ** 2)], rtol=1e-12)


def test_heaviside_and_igamma_input_have_no_derivative():
    x = t64([0.5, -1.0]).requires_grad_()
    with pytest.raises(NotImplementedError, match="heaviside"):
        flow.heaviside(x, t64([0.5, 0.5])).sum().backward()
    a = t64([0.5, 2.0]).requires_grad_()
    with pytest.raises(NotImplementedError, match="igamma: input"):
        flow.igamma(a, t64([1.0, 1.0])).sum().backward()
    (gx,) = _grads(lambda v: flow.igammac(t64([2.0]), v), [1.5])
    close(gx, [-1.5 * math.exp(-1.5)])


# ---- in-place functions and methods -------------------------------------------------------------------------------
_INPLACE = ["abs", "absolute", "acos", "arccos", "asin", "arcsin", "asinh", "arcsinh", "atan", "arctan", "atanh",
            "arctanh", "ceil", "cos", "cosh", "deg2rad", "erf", "erfc", "exp", "exp2", "expm1", "fix", "floor", "frac",
            "i0", "log", "log10", "log1p", "log2", "neg", "negative", "rad2deg", "reciprocal", "rsqrt", "sigmoid",
            "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc", "erfinv", "lgamma", "digamma", "sgn",
            "logit"]


@pytest.mark.parametrize("name", _INPLACE)
def test_torch_level_and_method_in_place_forms_write_the_input(name):
    values = np.array([0.3, 0.55, 0.9], np.float64)
    expected = getattr(flow, name)(t64(values)).numpy()
    if hasattr(flow, name + "_"):
        x = t64(values)
        assert getattr(flow, name + "_")(x) is x
        np.testing.assert_array_equal(x.numpy(), expected)
    y = t64(values)
    assert getattr(y, name + "_")() is y
    np.testing.assert_array_equal(y.numpy(), expected)


def test_in_place_forms_with_arguments():
    x = t64([0.25, -2.5, 3.5])
    assert flow.clamp_(x, -1, 1) is x and x.tolist() == [0.25, -1.0, 1.0]
    assert flow.clamp_min_(x, 0.0) is x and x.tolist() == [0.25, 0.0, 1.0]
    flow.clamp_max_(x, t64([0.1, 0.1, 0.1]))
    assert x.tolist() == [0.1, 0.0, 0.1]
    y = t64([1.26, NAN, INF])
    flow.round_(y, decimals=1)
    flow.nan_to_num_(y, nan=0.0, posinf=9.0)
    assert y.tolist() == [1.3, 0.0, 9.0]
    z = t64([1.0, 2.0])
    flow.xlogy_(z, 2.0)
    close(z, [math.log(2), 2 * math.log(2)])
    flow.ldexp_(z, flow.tensor([1, 2]))
    close(z, [2 * math.log(2), 8 * math.log(2)])
    i = flow.tensor([12, 18])
    flow.gcd_(i, flow.tensor([8, 12]))
    assert i.tolist() == [4, 6]
    flow.lcm_(i, flow.tensor([6, 4]))
    assert i.tolist() == [12, 12]
    w = t64([2.0, 3.0])
    assert w.polygamma_(1) is w
    close(w, [math.pi**2 / 6 - 1, math.pi**2 / 6 - 1.25])
    v = t64([2.5])
    v.mvlgamma_(2)
    close(v, [math.lgamma(2.5) + math.lgamma(2.0) + 0.5 * math.log(math.pi)])


@pytest.mark.parametrize("method, args", [("sinc_", ()), ("copysign_", (-1.0,)), ("mvlgamma_", (2,)),
                                          ("deg2rad_", ()), ("frac_", ()), ("lgamma_", ()), ("logit_", ()),
                                          ("xlogy_", (2.0,))])
def test_in_place_forms_are_differentiable(method, args):
    """The gradient through ``y.<op>_()`` is the one through the out-of-place function (composites compute from
    a clone, so the write does not modify what their ops saved)."""
    values = [0.7, 0.35]
    x = t64(values).requires_grad_()
    y = x * 1
    getattr(y, method)(*args)
    y.sum().backward()
    (expected,) = _grads(lambda v: getattr(flow, method[:-1])(v, *args), values)
    close(x.grad, expected.numpy(), rtol=1e-14)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(t64(values).requires_grad_(), method)(*args)


def test_fill_and_zero():
    x = t64([1.0, 2.0])
    y = flow.fill(x, 3)
    assert y is not x and y.tolist() == [3.0, 3.0] and x.tolist() == [1.0, 2.0]
    assert flow.fill_(x, flow.tensor(5.0)) is x and x.tolist() == [5.0, 5.0]
    assert flow.zero_(x) is x and x.tolist() == [0.0, 0.0]


def test_in_place_needs_a_dtype_that_holds_the_result():
    with pytest.raises(RuntimeError, match="can't be cast"):
        flow.sqrt_(flow.tensor([4, 9]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        flow.tensor([1, 2]).exp_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        flow.tensor([1, 2]).deg2rad_()
    with pytest.raises(RuntimeError, match="float_power_.*Float.*Double"):
        flow.tensor([1.0]).float_power_(2)
    x = t64([2.0])
    assert x.float_power_(2) is x and x.tolist() == [4.0]


# ---- aliases, operators, errors ------------------------------------------------------------------------------------
def test_aliases_compute_what_their_functions_compute():
    x = flow.tensor([[0.25, -0.5], [0.75, 0.1]])
    y = flow.tensor([0.5, -2.0])
    for alias, name in (("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("arcsinh", "asinh"),
                        ("arctanh", "atanh"), ("fix", "trunc"), ("sgn", "sign"), ("absolute", "abs"),
                        ("negative", "neg")):
        np.testing.assert_array_equal(getattr(flow, alias)(x).numpy(), getattr(flow, name)(x).numpy())
    for alias, name in (("true_divide", "div"), ("multiply", "mul"), ("subtract", "sub"), ("greater", "gt"),
                        ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"), ("not_equal", "ne")):
        np.testing.assert_array_equal(getattr(flow, alias)(x, y).numpy(), getattr(flow, name)(x, y).numpy())
        np.testing.assert_array_equal(getattr(x, alias)(2).numpy(), getattr(flow, name)(x, 2).numpy())
    assert flow.divide(flow.tensor([7, -7]), 2, rounding_mode="floor").tolist() == [3, -4]
    assert flow.subtract(x, y, alpha=2).tolist() == flow.sub(x, y, alpha=2).tolist()
    assert flow.rsub(x, 1).tolist() == (1 - x).tolist()
    assert flow.rsub(x, y, alpha=2).tolist() == (y - 2 * x).tolist()
    assert flow.arccosh(flow.tensor([1.0])).tolist() == [0.0]


def test_tensor_operators():
    i = flow.tensor([1, 2, -3])
    assert (i << 2).tolist() == [4, 8, -12] and (2 << i).tolist() == [4, 8, 0] and (i >> 1).tolist() == [0, 1, -2]
    assert (64 >> i).tolist() == [32, 16, 0]
    j = i.clone()
    j <<= 1
    j >>= flow.tensor([1, 0, 2])
    assert j.tolist() == [1, 4, -2]
    assert flow.tensor([1, 2], dtype=flow.int8).__lshift__(7).tolist() == [-128, 0]
    x = flow.tensor([1.0, 2.0])
    assert (+x) is x and flow.positive(x) is x
    assert 2 in i and 5 not in i and flow.tensor(-3) in i and 2.0 in x
    with pytest.raises(RuntimeError, match="__contains__ only supports Tensor or scalar"):
        "a" in x  # noqa: B015
    assert reversed(i).tolist() == [-3, 2, 1] and reversed(flow.tensor(5)).tolist() == 5
    assert complex(flow.tensor([1.5])) == 1.5 + 0j
    with pytest.raises(RuntimeError, match="cannot be converted"):
        complex(x)
    y = x.clone()
    y.__idiv__(2)
    assert y.tolist() == [0.5, 1.0]
    assert x.polygamma(0).tolist() == flow.digamma(x).tolist()


def test_errors_name_the_function_and_what_was_expected():
    x = flow.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not support negative n"):
        flow.polygamma(-1, x)
    with pytest.raises(TypeError):
        flow.polygamma(1.5, x)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        flow.mvlgamma(x, 0)
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        flow.frexp(flow.tensor([1, 2]))
    with pytest.raises(OpKernelNotFoundError, match="frac"):
        flow.frac(flow.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"):
        flow.heaviside(x, flow.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        flow.positive(flow.tensor([True]))
    with pytest.raises(TypeError):
        flow.hypot(x, 2.0)  # PyTorch: 'other' must be Tensor
    with pytest.raises(OpKernelNotFoundError, match="broadcast_hypot.*int64"):
        flow.hypot(flow.tensor([3]), flow.tensor([4]))
    with pytest.raises(OpKernelNotFoundError, match="broadcast_bitwise_left_shift.*float32"):
        flow.bitwise_left_shift(x, 1)
    with pytest.raises(RuntimeError, match="Subtraction"):
        flow.rsub(flow.tensor([True]), flow.tensor([False]))


def test_dtypes_follow_pytorch():
    i = flow.tensor([1, 2])
    assert flow.acos(flow.tensor([True])).dtype is flow.float32
    assert flow.exp2(i).dtype is flow.float32 and flow.lgamma(i).dtype is flow.float32
    assert flow.xlogy(i, i).dtype is flow.float32 and flow.copysign(i, -1).dtype is flow.float32
    assert flow.float_power(i, 2).dtype is F64 and flow.float_power(2, flow.tensor([1.0])).dtype is F64
    assert flow.ldexp(i, i).dtype is flow.float32
    assert flow.fmax(i, i).dtype is flow.int64 and flow.gcd(i, i).dtype is flow.int64
    assert flow.sgn(i).dtype is flow.int64 and flow.fix(i).dtype is flow.int64
    assert flow.signbit(i).dtype is flow.bool and flow.isreal(i).dtype is flow.bool
    assert flow.logaddexp(flow.tensor([1.0]), flow.tensor([1.0], dtype=F64)).dtype is F64


def test_return_types_and_mock_torch_names():
    r = flow.frexp(flow.tensor([3.0]))
    assert type(r) is flow.return_types.frexp and r.mantissa.tolist() == [0.75] and r.exponent.tolist() == [2]
    assert repr(r).startswith("oneflow_lite.return_types.frexp(")
    with flow.mock_torch.enable():
        import torch
        assert torch.arccos is flow.arccos and torch.Tensor.clamp_min is flow.Tensor.clamp_min


# ---- optional oracle: PyTorch on the same inputs ---------------------------------------------------------------------
_UNARY = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "erfc", "erfinv", "exp2", "log10",
          "lgamma", "digamma", "i0", "sinc", "frac", "deg2rad", "rad2deg", "signbit", "isposinf", "isneginf", "sgn",
          "logit"]
_BINARY = ["hypot", "logaddexp", "logaddexp2", "xlogy", "fmax", "fmin", "nextafter", "igamma", "igammac", "copysign",
           "ldexp", "float_power", "heaviside"]


def _specials():
    rng = np.random.default_rng(5)
    return np.concatenate([rng.uniform(-6, 6, 60), rng.uniform(0, 1, 20), rng.uniform(1, 40, 20),
                           [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, -2.5, 0.5, INF, -INF, NAN, 1e-300, 700.0]])


def _compare_with_torch(got, want, rtol=1e-9):
    want = want.detach().numpy()
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-12,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", _UNARY)
def test_unary_functions_match_torch(name):
    torch = pytest.importorskip("torch")
    x = _specials()
    _compare_with_torch(getattr(flow, name)(t64(x)).numpy(), getattr(torch, name)(torch.tensor(x)))
    x32 = x.astype(np.float32)
    got, want = getattr(flow, name)(flow.tensor(x32)).numpy(), getattr(torch, name)(torch.tensor(x32)).numpy()
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", _BINARY)
def test_binary_functions_match_torch(name):
    torch = pytest.importorskip("torch")
    x = _specials()
    y = np.roll(x, 7)
    rtol = 1e-9
    if name in ("igamma", "igammac"):
        x, y, rtol = np.abs(x), np.abs(y), 1e-8  # PyTorch's uniform expansion (a ~ x > 20) is ~1e-9 accurate
    _compare_with_torch(getattr(flow, name)(t64(x), t64(y)).numpy(),
                        getattr(torch, name)(torch.tensor(x), torch.tensor(y)), rtol)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_polygamma_matches_torch(n):
    torch = pytest.importorskip("torch")
    x = _specials()
    if n == 1:
        x = x[(x > 0) | (x != np.floor(x))]  # trigamma at the negative integers is a huge finite rounding artefact
    _compare_with_torch(flow.polygamma(n, t64(x)).numpy(), torch.polygamma(n, torch.tensor(x)))


def test_shifts_and_integer_functions_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for dtype in (np.int8, np.uint8, np.int16, np.int32, np.int64):
        a = rng.integers(-100 if dtype != np.uint8 else 0, 100, 50).astype(dtype)
        b = rng.integers(-3 if dtype != np.uint8 else 0, 70, 50).astype(dtype)
        for name in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "fmax", "heaviside"):
            _compare_with_torch(getattr(flow, name)(flow.tensor(a), flow.tensor(b)).numpy(),
                                getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
