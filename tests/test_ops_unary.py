"""Elementwise unary ops, activations and clamp: PyTorch's dtype rules written out by hand, hand-computed
values at special points, errors, in-place calls, gradients at the boundaries, and the absence of NumPy
warnings. Values over random inputs are in the op database (tests/op_specs/unary.py, activation.py)."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
import oneflow_lite.nn.functional as F
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.interpreters import dispatch

b_, u8, i8, i16, i32, i64 = flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64
f16, f32, f64 = flow.float16, flow.float32, flow.float64
INTS = (u8, i8, i16, i32, i64)
FLOATS = (f16, f32, f64)
NAN, INF = math.nan, math.inf

FLOAT_OPS = ("exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "reciprocal", "erf",
             "sigmoid", "tanh")
FLOAT_ONLY_ACTIVATIONS = ("leaky_relu", "elu", "selu", "gelu", "silu", "mish", "softplus", "hardsigmoid",
                          "hardswish")


def T(values, dtype=f32):
    return flow.tensor(np.array(values, dtype=dtype.np_dtype))


def M(shape, dtype=f32):
    return flow.zeros(shape, dtype=dtype, device="meta")


# ---- dtype rules (PyTorch's, by hand) -------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT_OPS)
@pytest.mark.parametrize("dtype", (b_, *INTS))
def test_float_ops_promote_integer_and_bool_to_the_default_dtype(name, dtype):
    x = T([1, 0, 1], dtype)
    assert getattr(flow, name)(x).dtype is f32
    flow.set_default_dtype(f64)
    try:
        assert getattr(flow, name)(x).dtype is f64
    finally:
        flow.set_default_dtype(f32)


@pytest.mark.parametrize("name", FLOAT_OPS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_float_ops_keep_floating_dtypes(name, dtype):
    assert getattr(flow, name)(T([0.5, 1.0], dtype)).dtype is dtype


@pytest.mark.parametrize("dtype", INTS)
def test_integer_results(dtype):
    x = T([3, 0, 7, 2], dtype)
    for name in ("abs", "sign", "square", "floor", "ceil", "round", "trunc", "relu", "relu6", "nan_to_num"):
        assert getattr(flow, name)(x).dtype is dtype, name
    for name in ("logical_not", "isnan", "isinf", "isfinite"):
        assert getattr(flow, name)(x).dtype is b_, name
    np.testing.assert_array_equal(flow.isfinite(x).numpy(), [True] * 4)
    np.testing.assert_array_equal(flow.isnan(x).numpy(), [False] * 4)


def test_bool_results():
    x = T([True, False], b_)
    assert flow.square(x).dtype is i64  # PyTorch: pow(bool, 2) is int64
    np.testing.assert_array_equal(flow.square(x).numpy(), [1, 0])
    assert flow.sign(x).dtype is b_
    np.testing.assert_array_equal(flow.sign(x).numpy(), [True, False])
    np.testing.assert_array_equal(flow.logical_not(x).numpy(), [False, True])
    assert flow.nan_to_num(x).dtype is b_


@pytest.mark.parametrize("name", ("abs", "floor", "ceil", "round", "trunc", "relu", "relu6", "hardtanh",
                                  *FLOAT_ONLY_ACTIVATIONS))
def test_bool_input_has_no_kernel(name):
    with pytest.raises(OpKernelNotFoundError, match="bool"):
        getattr(flow, name)(T([True, False], b_))


@pytest.mark.parametrize("name", FLOAT_ONLY_ACTIVATIONS)
@pytest.mark.parametrize("dtype", (i32, i64, u8))
def test_float_only_activations_reject_integers(name, dtype):
    with pytest.raises(OpKernelNotFoundError, match=f"Cannot find a kernel of op '{name}'.*{dtype.name}"):
        getattr(flow, name)(T([1, 2], dtype))


def test_rounding_an_integer_tensor_is_a_copy():
    x = T([1, -2, 3], i32)
    for name in ("floor", "ceil", "round", "trunc"):
        y = getattr(flow, name)(x)
        y.numpy()[0] = 100
        np.testing.assert_array_equal(x.numpy(), [1, -2, 3])


# ---- values at special points -----------------------------------------------------------------------
def test_round_half_to_even_and_decimals():
    x = T([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997], f32)
    np.testing.assert_array_equal(flow.round(x).numpy(), [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0])
    np.testing.assert_allclose(flow.round(T([1.2345, -1.2355, 0.125], f64), decimals=2).numpy(),
                               [1.23, -1.24, 0.12])
    np.testing.assert_array_equal(flow.round(T([1250.0, 1350.0, -149.0], f64), decimals=-2).numpy(),
                                  [1200.0, 1400.0, -100.0])
    np.testing.assert_array_equal(T([2.5, 3.5]).round_().numpy(), [2.0, 4.0])
    with pytest.raises(OpKernelNotFoundError, match="round.*Long.*decimals=1"):
        flow.round(T([1, 2], i64), decimals=1)
    np.testing.assert_array_equal(flow.round(T([1, 2], i64), decimals=0).numpy(), [1, 2])


def test_sign_of_nan_is_zero_as_in_pytorch():
    np.testing.assert_array_equal(flow.sign(T([-2.0, -0.0, 0.0, 3.0, NAN, INF, -INF])).numpy(),
                                  [-1.0, 0.0, 0.0, 1.0, 0.0, 1.0, -1.0])
    np.testing.assert_array_equal(flow.sign(T([-3, 0, 5], i8)).numpy(), [-1, 0, 1])


def test_ieee_special_values():
    x = T([0.0, -1.0, INF, NAN])
    np.testing.assert_array_equal(flow.log(x).numpy(), [-INF, NAN, INF, NAN])
    np.testing.assert_array_equal(flow.sqrt(x).numpy(), [0.0, NAN, INF, NAN])
    np.testing.assert_array_equal(flow.rsqrt(x).numpy(), [INF, NAN, 0.0, NAN])
    np.testing.assert_array_equal(flow.reciprocal(x).numpy(), [INF, -1.0, 0.0, NAN])
    np.testing.assert_array_equal(flow.log1p(T([-1.0, -2.0])).numpy(), [-INF, NAN])
    np.testing.assert_array_equal(flow.sin(T([INF])).numpy(), [NAN])
    np.testing.assert_array_equal(flow.erf(T([INF, -INF, 0.0, NAN])).numpy(), [1.0, -1.0, 0.0, NAN])
    np.testing.assert_array_equal(flow.sigmoid(T([-INF, INF, -1000.0, 1000.0])).numpy(), [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(flow.expm1(T([1000.0, -INF])).numpy(), [INF, -1.0])
    np.testing.assert_array_equal(flow.square(T([300.0], f16)).numpy(), [INF])
    np.testing.assert_array_equal(flow.abs(T([-128], i8)).numpy(), [-128])  # wraps, as in PyTorch


def test_no_numpy_warnings():
    x = T([0.0, -0.0, -1.0, 1e-40, 1e30, -1e30, INF, -INF, NAN])
    calls = [getattr(flow, n) for n in FLOAT_OPS + ("abs", "sign", "square", "floor", "ceil", "round", "trunc",
                                                     "relu", "relu6", "hardtanh", "isnan", "isinf", "isfinite",
                                                     "nan_to_num", "logical_not", *FLOAT_ONLY_ACTIVATIONS)]
    calls += [lambda t: flow.round(t, decimals=400), lambda t: flow.round(t, decimals=-400),
              lambda t: flow.softplus(t, 0.5, 1000.0), lambda t: flow.gelu(t, approximate="tanh"),
              lambda t: flow.nan_to_num(t, posinf=1e300), lambda t: flow.clamp(t, -1.0, 1.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in FLOATS:
            for fn in calls:
                fn(x.to(dtype))
        # backward of the activations and clamp: one grad kernel each
        for name in ("sigmoid", "tanh", "relu6", "hardtanh", *FLOAT_ONLY_ACTIVATIONS, "clamp"):
            for dtype in FLOATS:
                t = x.to(dtype).requires_grad_()
                y = flow.clamp(t, -1.0, 1.0) if name == "clamp" else getattr(flow, name)(t)
                y.backward(flow.ones(tuple(y.shape), dtype=dtype))


def test_erf_matches_math_erf_to_a_few_ulp():
    x = np.concatenate([np.linspace(-7, 7, 20001), [1.0, -1.0, 1 - 1e-16, 1 + 2e-16, 1e-300, -1e-10, 5.9, 6.1,
                                                     26.0, 1e10]])
    expected = np.array([math.erf(v) for v in x])
    got = flow.erf(flow.tensor(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=4e-16, atol=1e-300)
    x32 = x.astype(np.float32)  # float32 computes in float32: within 2 ulp of the rounded exact value
    expected32 = np.array([math.erf(v) for v in x32.astype(np.float64)])
    np.testing.assert_allclose(flow.erf(flow.tensor(x32)).numpy(), expected32, rtol=2.4e-7, atol=1e-38)
    x16 = x[np.abs(x) < 100].astype(np.float16)
    np.testing.assert_allclose(flow.erf(flow.tensor(x16)).numpy(), [math.erf(v) for v in x16.astype(np.float64)],
                               rtol=1e-3, atol=1e-7)
    few = np.array([-2.0, -0.3, 0.0, 0.7, 1.0, 3.0])  # small tensors take math.erf per element
    np.testing.assert_array_equal(flow.erf(flow.tensor(few)).numpy(), [math.erf(v) for v in few])


def test_gelu_values():
    x = T([-1.0, 0.0, 1.0, 3.0], f64)
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in (-1.0, 0.0, 1.0, 3.0)]
    np.testing.assert_allclose(flow.gelu(x).numpy(), exact, rtol=1e-15, atol=1e-16)
    k = math.sqrt(2 / math.pi)
    approx = [0.5 * v * (1 + math.tanh(k * (v + 0.044715 * v ** 3))) for v in (-1.0, 0.0, 1.0, 3.0)]
    np.testing.assert_allclose(flow.gelu(x, approximate="tanh").numpy(), approx, rtol=1e-14)
    many = np.linspace(-6, 6, 2001).astype(np.float32)  # enough elements for the vectorised erf
    exact = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in many.astype(np.float64)]
    np.testing.assert_allclose(flow.gelu(flow.tensor(many)).numpy(), exact, rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="gelu: approximate argument must be either none or tanh, got 'fast'"):
        flow.gelu(x, approximate="fast")


def test_softplus_threshold_and_beta():
    x = T([-2.0, 1.0, 10.0, 21.0], f64)
    np.testing.assert_allclose(F.softplus(x).numpy(), [math.log1p(math.exp(-2)), math.log1p(math.e),
                                                      math.log1p(math.exp(10)), 21.0], rtol=1e-15)
    # beta x > threshold gives x itself
    np.testing.assert_allclose(F.softplus(x, beta=2.0, threshold=3.0).numpy(),
                               [math.log1p(math.exp(-4)) / 2, math.log1p(math.exp(2)) / 2, 10.0, 21.0], rtol=1e-15)


def test_elu_selu_leaky_relu_values():
    x = T([-2.0, 0.0, 3.0], f64)
    np.testing.assert_allclose(F.elu(x, 0.5).numpy(), [0.5 * (math.exp(-2) - 1), 0.0, 3.0], rtol=1e-15)
    a, s = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    np.testing.assert_allclose(F.selu(x).numpy(), [s * a * (math.exp(-2) - 1), 0.0, 3 * s], rtol=1e-15)
    np.testing.assert_allclose(F.leaky_relu(x).numpy(), [-0.02, 0.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(F.leaky_relu(x, -1.0).numpy(), [2.0, 0.0, 3.0], rtol=1e-15)


def test_hard_activations_values():
    x = T([-4.0, -3.0, -1.5, 0.0, 1.5, 3.0, 7.0], f64)
    np.testing.assert_allclose(F.hardsigmoid(x).numpy(), [0, 0, 0.25, 0.5, 0.75, 1, 1])
    np.testing.assert_allclose(F.hardswish(x).numpy(), [0, 0, -0.375, 0, 1.125, 3, 7])
    np.testing.assert_allclose(F.relu6(x).numpy(), [0, 0, 0, 0, 1.5, 3, 6])
    np.testing.assert_allclose(F.hardtanh(x, -2.0, 2.5).numpy(), [-2, -2, -1.5, 0, 1.5, 2.5, 2.5])


def test_nan_to_num_defaults_are_the_dtype_limits():
    for dtype in FLOATS:
        info = np.finfo(dtype.np_dtype)
        got = flow.nan_to_num(T([NAN, INF, -INF, 1.5], dtype)).numpy()
        np.testing.assert_array_equal(got, np.array([0.0, info.max, info.min, 1.5], dtype.np_dtype))
    got = flow.nan_to_num(T([NAN, INF, -INF], f16), nan=2.0, posinf=1e6, neginf=-3.0).numpy()
    np.testing.assert_array_equal(got, np.array([2.0, INF, -3.0], np.float16))  # 1e6 overflows float16
    x = T([NAN, 1.0])
    assert x.nan_to_num_(nan=5.0) is x
    np.testing.assert_array_equal(x.numpy(), [5.0, 1.0])


# ---- clamp -------------------------------------------------------------------------------------------
def test_clamp_scalar_dtypes():
    assert flow.clamp(T([1, 5], i32), 2, 4).dtype is i32
    got = flow.clamp(T([1, 5], i32), 1.5, 4)  # a float bound promotes an integer input
    assert got.dtype is f32
    np.testing.assert_array_equal(got.numpy(), [1.5, 4.0])
    assert flow.clamp(T([True, False], b_), min=0).dtype is i64
    assert flow.clamp(T([1.0], f16), 0, 1).dtype is f16
    with pytest.raises(OpKernelNotFoundError, match="clip_by_scalar"):
        flow.clamp(T([True], b_), False, True)


def test_clamp_scalar_values():
    x = T([-3.0, -1.0, 0.5, 2.0, NAN])
    np.testing.assert_array_equal(flow.clamp(x, -1.5, 1.0).numpy(), [-1.5, -1.0, 0.5, 1.0, NAN])
    np.testing.assert_array_equal(flow.clamp(x, max=0.0).numpy(), [-3.0, -1.0, 0.0, 0.0, NAN])
    np.testing.assert_array_equal(flow.clamp(x, min=0.0).numpy(), [0.0, 0.0, 0.5, 2.0, NAN])
    np.testing.assert_array_equal(flow.clamp(x, 1.0, -1.0).numpy(), [-1.0, -1.0, -1.0, -1.0, NAN])  # min > max
    np.testing.assert_array_equal(x.clip(-1, 1).numpy(), [-1.0, -1.0, 0.5, 1.0, NAN])


def test_clamp_errors():
    x = T([1, 2, 3], i8)
    with pytest.raises(RuntimeError, match="clamp: At least one of 'min' or 'max' must not be None"):
        flow.clamp(x)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        flow.clip(x, None, None)
    with pytest.raises(RuntimeError, match="min value -1000 cannot be converted to type int8 without overflow"):
        flow.clamp(x, -1000, 5)
    with pytest.raises(RuntimeError, match="max value 100000.0 cannot be converted to type float16"):
        flow.clamp(T([1.0], f16), max=1e5)
    with pytest.raises(RuntimeError, match="does not fit in int64"):
        flow.clamp(x, min=2**70)
    with pytest.raises(RuntimeError, match="clamp: result type Float can't be cast to the desired output type Char"):
        x.clamp_(0.5)
    with pytest.raises(TypeError, match="clamp"):
        flow.clamp(T([1.0]), T([0.0]), 1.0)  # tensor and scalar bounds mixed: no overload
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])


def test_clamp_tensor_bounds_broadcast_and_promote():
    x = T([[-2.0, 0.0, 2.0]])
    lo = T([[-1.0], [0.5]])
    got = flow.clamp(x, lo, T(1.0))
    assert tuple(got.shape) == (2, 3)
    np.testing.assert_array_equal(got.numpy(), [[-1.0, 0.0, 1.0], [0.5, 0.5, 1.0]])
    assert flow.clamp(T([1, 2], i32), T([1.5, 0.0], f32)).dtype is f32  # dimensioned bound: promotes
    assert flow.clamp(T([1, 2], i8), T(1, i64)).dtype is i8  # 0-d bound of the same category: does not
    assert flow.clamp(T([1.0], f16), max=T(0.5, f64)).dtype is f16
    assert flow.clamp(T([1, 2], i32), T(0.5, f64)).dtype is f64  # a 0-d bound of a higher category: its dtype
    got = flow.clamp(T([0.0, 1.0]), T([NAN, 0.0]), T([1.0, NAN]))
    np.testing.assert_array_equal(got.numpy(), [NAN, NAN])
    got = flow.clamp(T([0.0, 5.0]), T([2.0, 2.0]), T([1.0, 1.0]))  # min > max gives max
    np.testing.assert_array_equal(got.numpy(), [1.0, 1.0])


def test_clamp_tensor_in_place():
    x = T([-2.0, 0.0, 2.0])
    assert x.clamp_(T([-1.0, 1.0, -1.0]), T(1.5)) is x
    np.testing.assert_array_equal(x.numpy(), [-1.0, 1.0, 1.5])
    with pytest.raises(RuntimeError, match=r"clamp: output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.clamp_(T([[0.0], [1.0]]))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        T([1, 2], i64).clamp_(T([1.5, 0.0]))
    y = T([1, 5], i64)
    y.clamp_(T([2, 2], i32), T(4, i64))
    np.testing.assert_array_equal(y.numpy(), [2, 4])


def test_clamp_and_hardtanh_gradients_at_the_bounds():
    # clamp passes the gradient at the bounds (PyTorch's clamp_backward), hardtanh does not
    x = T([-2.0, -1.0, 0.0, 1.0, 2.0], f64).requires_grad_()
    flow.clamp(x, -1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 1, 0])
    x = T([-2.0, -1.0, 0.0, 1.0, 2.0], f64).requires_grad_()
    F.hardtanh(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 0, 0])
    x = T([NAN], f64).requires_grad_()
    flow.clamp(x, -1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0])


def test_clamp_tensor_gradients_by_hand():
    x = T([-2.0, 0.0, 3.0, 0.5], f64).requires_grad_()
    lo = T([-1.0, -1.0, -1.0, 2.0], f64).requires_grad_()  # last: min 2 > max 1
    hi = T([1.0], f64).requires_grad_()
    flow.clamp(x, lo, hi).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 0, 0])
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [2])  # x > max at 3.0, and max < min at the last


# ---- activations on integers, errors ------------------------------------------------------------------
def test_hardtanh_and_relu6_on_integers():
    x = T([-5, -1, 0, 3, 9], i32)
    got = F.hardtanh(x, -2.7, 4.9)  # bounds truncated to -2 and 4
    assert got.dtype is i32
    np.testing.assert_array_equal(got.numpy(), [-2, -1, 0, 3, 4])
    np.testing.assert_array_equal(F.relu6(T([0, 3, 200], u8)).numpy(), [0, 3, 6])
    with pytest.raises(RuntimeError, match="hardtanh: cannot do hardtanh on an unsigned type with negative limits"):
        F.hardtanh(T([1], u8))
    with pytest.raises(ValueError, match="hardtanh: min_val cannot be greater than max_val"):
        F.hardtanh(T([1.0]), 2.0, 1.0)


def test_signature_errors():
    with pytest.raises(TypeError, match="leaky_relu"):
        F.leaky_relu(T([1.0]), "0.1")
    with pytest.raises(TypeError, match="round"):
        flow.round(T([1.0]), 1)  # decimals is keyword-only


# ---- in place ----------------------------------------------------------------------------------------
def test_in_place_methods_write_into_the_input():
    x = T([4.0, 9.0])
    assert x.sqrt_() is x
    np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])
    x = T([-1.5, 2.0])
    x.abs_()
    np.testing.assert_array_equal(x.numpy(), [1.5, 2.0])
    x = T([0.0, 2.0])
    x.logical_not_()  # a bool result written into a float tensor
    assert x.dtype is f32
    np.testing.assert_array_equal(x.numpy(), [1.0, 0.0])
    x = T([-1.0, 3.0])
    assert F.relu6(x, inplace=True) is x and F.leaky_relu(x, 0.5, True) is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 3.0])
    x = T([-3, 2], i32)
    x.square_()
    np.testing.assert_array_equal(x.numpy(), [9, 4])


def test_in_place_dtype_errors():
    with pytest.raises(RuntimeError, match="sqrt: result type Float can't be cast to the desired output type Long"):
        T([4], i64).sqrt_()
    with pytest.raises(RuntimeError, match="square: result type Long can't be cast to the desired output type Bool"):
        T([True], b_).square_()
    with pytest.raises(OpKernelNotFoundError, match="elu"):
        F.elu(T([1, 2], i32), inplace=True)


def test_in_place_on_a_non_leaf_is_differentiated():
    v = np.array([-1.0, 0.25, 2.0])
    s = 1 / (1 + np.exp(-v))
    for fn, grad in ((lambda t: F.silu(t, inplace=True), s * (1 + v * (1 - s))),
                     (lambda t: t.sigmoid_(), s * (1 - s)),
                     (lambda t: t.clamp_(-0.5, 0.5), [0.0, 1.0, 0.0]),
                     (lambda t: t.sqrt_(), None)):
        a = flow.tensor(v).requires_grad_()
        b = a * 1.0
        if grad is None:  # sqrt of a negative value: nan, and the gradient 1 / (2 sqrt(x))
            a = flow.tensor(v + 2.0).requires_grad_()
            b = a * 1.0
            grad = 0.5 / np.sqrt(v + 2.0)
        assert fn(b) is b
        b.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), grad, rtol=1e-12)


def test_leaf_requiring_grad_cannot_be_written():
    x = T([1.0, 2.0]).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.sqrt_()
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


# ---- gradients (hand formulas at a few points) ----------------------------------------------------------
@pytest.mark.parametrize("name, derivative", [
    ("sigmoid", lambda v: math.exp(-v) / (1 + math.exp(-v)) ** 2),
    ("tanh", lambda v: 1 - math.tanh(v) ** 2),
    ("erf", lambda v: 2 / math.sqrt(math.pi) * math.exp(-v * v)),
    ("gelu", lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))) + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi)),
    ("silu", lambda v: 1 / (1 + math.exp(-v)) + v * math.exp(-v) / (1 + math.exp(-v)) ** 2),
    ("softplus", lambda v: 1 / (1 + math.exp(-v))),
    ("hardswish", lambda v: 0.0 if v < -3 else (v / 3 + 0.5 if v <= 3 else 1.0)),
    ("abs", lambda v: math.copysign(1.0, v) if v else 0.0),
    ("log2", lambda v: 1 / (v * math.log(2))),
    ("rsqrt", lambda v: -0.5 * v ** -1.5),
])
def test_first_derivatives(name, derivative):
    points = [0.3, 1.7, 2.9] if name in ("log2", "rsqrt") else [-3.5, -0.7, 0.0, 0.4, 2.2, 3.5]
    x = T(points, f64).requires_grad_()
    getattr(flow, name)(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [derivative(v) for v in points], rtol=1e-12, atol=1e-15)


def test_zero_gradients_of_step_functions():
    for name in ("sign", "floor", "ceil", "round", "trunc"):
        x = T([-1.3, 0.2, 2.7], f64).requires_grad_()
        getattr(flow, name)(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_nan_to_num_gradient_is_zero_where_not_finite():
    x = T([1.0, NAN, INF, -2.0], f64).requires_grad_()
    flow.nan_to_num(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0, 1.0])


def test_second_derivatives_by_hand():
    v = np.array([-1.2, 0.3, 2.0])
    x = flow.tensor(v).requires_grad_()
    (g,) = flow.autograd.grad(flow.gelu(x).sum(), x, create_graph=True)
    (gg,) = flow.autograd.grad(g.sum(), x)
    phi = np.exp(-v * v / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(gg.numpy(), phi * (2 - v * v), rtol=1e-12)
    x = flow.tensor(v).requires_grad_()
    (g,) = flow.autograd.grad(flow.sigmoid(x).sum(), x, create_graph=True)
    (gg,) = flow.autograd.grad(g.sum(), x)
    s = 1 / (1 + np.exp(-v))
    np.testing.assert_allclose(gg.numpy(), s * (1 - s) * (1 - 2 * s), rtol=1e-12)


@pytest.mark.parametrize("fn", (F.hardtanh, F.leaky_relu, F.hardsigmoid))
def test_piecewise_linear_activations_have_a_zero_second_derivative(fn):
    # act'' is zero almost everywhere: the gradient of act_grad(dy, x) in x alone is zero (or unused), no error
    x = flow.tensor(np.array([-4.0, -0.5, 0.5, 4.0])).requires_grad_()
    (g,) = flow.autograd.grad(fn(x).sum(), x, create_graph=True)
    (gg,) = flow.autograd.grad((g * g).sum(), x, allow_unused=True)
    assert gg is None or not gg.numpy().any()


# ---- meta, attrs, names ----------------------------------------------------------------------------------
def test_meta_shapes_and_dtypes():
    assert flow.isnan(M((2, 3), f16)).dtype is b_
    assert flow.sqrt(M((4,), i32)).dtype is f32
    out = flow.clamp(M((3, 1)), M((4,)), M(()))
    assert tuple(out.shape) == (3, 4) and out.device == flow.device("meta")
    with pytest.raises(OpKernelNotFoundError):
        flow.gelu(M((2,), i64))


def test_attrs_are_op_attrs():
    op = OpBuilder("leaky_relu").input("x").output("y").attr("alpha", 0.25).build()
    np.testing.assert_allclose(dispatch(op, (T([-4.0, 1.0]),))[0].numpy(), [-1.0, 1.0])
    conf = op.build_op_conf()
    assert conf.user_conf.attr["alpha"].at_double == 0.25
    op = OpBuilder("gelu").input("x").output("y").attr("approximate", "erf").build()
    with pytest.raises(RuntimeError, match="gelu: approximate argument must be either none or tanh"):
        dispatch(op, (T([1.0]),))


def test_functional_names():
    for name in ("relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "softplus", "hardtanh",
                 "hardsigmoid", "hardswish", "sigmoid", "tanh"):
        assert getattr(F, name) is getattr(flow, name) is getattr(flow._C, name)
    x = T([-2.0, 3.0])
    np.testing.assert_array_equal(abs(x).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(x.clip(max=0).numpy(), [-2.0, 0.0])
