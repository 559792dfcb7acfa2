"""Elementwise arithmetic, comparisons, matmul and sum: values against NumPy formulas written
here, dtypes against PyTorch's promotion rules written out by hand, meta against cpu, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import oneflow_lite as flow
from oneflow_lite.framework.dtype import from_numpy_dtype
from oneflow_lite.framework.errors import OpKernelNotFoundError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta
from oneflow_lite.functors.registry import get_functor
from oneflow_lite.interpreters import dispatch

CPU, META = flow.device("cpu"), flow.device("meta")
b_, u8, i8, i16, i32, i64 = flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64
f16, f32, f64 = flow.float16, flow.float32, flow.float64
DTYPES = (b_, u8, i8, i32, i64, f16, f32, f64)
TOL = {f16: 2e-3, f32: 1e-6, f64: 1e-12}


def T(a, dtype=None):
    """A cpu tensor holding (a copy of) ``a``."""
    a = np.array(a, dtype=None if dtype is None else dtype.np_dtype)
    return Tensor._make(a, make_meta(a.shape, from_numpy_dtype(a.dtype), CPU))


def M(shape, dtype):
    """A meta tensor."""
    return Tensor._make(None, make_meta(shape, dtype, META))


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype is b_:
        return rng.random(shape) < 0.5
    if dtype is u8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    if not dtype.is_floating_point:
        return rng.integers(-100, 100, shape).astype(dtype.np_dtype)
    return (rng.standard_normal(shape) * 4).astype(dtype.np_dtype)


def wrap(values, dtype):
    """Python / int64 integers reduced modulo 2**bits into ``dtype`` (two's complement)."""
    bits = dtype.itemsize * 8
    v = np.asarray(values, dtype=object)
    if dtype is u8:
        return np.asarray(v % 2**bits).astype(dtype.np_dtype)
    return np.asarray((v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)).astype(dtype.np_dtype)


def check(t, expected, dtype, atol=None):
    assert t.dtype is dtype
    assert t.device is CPU
    assert tuple(t.shape) == np.shape(expected)
    got = t.numpy()
    assert got.dtype == dtype.np_dtype
    if dtype.is_floating_point:
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(expected, dtype=np.float64),
                                   rtol=TOL[dtype], atol=TOL[dtype] if atol is None else atol)
    else:
        np.testing.assert_array_equal(got, np.asarray(expected))


# ---- promotion tables (PyTorch's rules, by hand) ------------------------------------------------------
# (dtype a, dtype b, result) for two dimensioned tensors; symmetric.
TENSOR_TENSOR = [
    (b_, b_, b_), (b_, u8, u8), (b_, i8, i8), (b_, i32, i32), (b_, i64, i64), (b_, f16, f16), (b_, f64, f64),
    (u8, u8, u8), (u8, i8, i16), (u8, i16, i16), (u8, i32, i32), (u8, i64, i64), (u8, f16, f16),
    (i8, i8, i8), (i8, i16, i16), (i8, i32, i32), (i8, i64, i64), (i8, f32, f32),
    (i32, i32, i32), (i32, i64, i64), (i32, f16, f16), (i64, f16, f16), (i64, f32, f32), (i64, f64, f64),
    (f16, f16, f16), (f16, f32, f32), (f16, f64, f64), (f32, f32, f32), (f32, f64, f64), (f64, f64, f64),
]
# (dimensioned dtype, 0-d dtype, result): a 0-d tensor only counts when of a higher category.
DIM_ZERO_DIM = [
    (i32, i64, i32), (i8, i64, i8), (u8, i8, u8), (i8, b_, i8), (i32, f64, f64), (i64, f16, f16),
    (f16, f64, f16), (f32, f64, f32), (f16, i64, f16), (b_, i64, i64), (b_, f64, f64), (b_, b_, b_),
]
# (0-d dtype, 0-d dtype, result): as two dimensioned tensors.
ZERO_DIM_ZERO_DIM = [(i32, i64, i64), (u8, i8, i16), (f32, f64, f64), (b_, f16, f16), (i8, f16, f16)]
# (tensor dtype, Python scalar, result): a scalar only raises the category, to int64 / the default float.
TENSOR_SCALAR = [
    (b_, True, b_), (b_, 2, i64), (b_, 2.5, f32), (u8, 2, u8), (u8, True, u8), (i8, 1000, i8), (i16, -3, i16),
    (i32, 2, i32), (i32, 2.5, f32), (i64, 2.5, f32), (i64, True, i64), (f16, 2.5, f16), (f16, 2, f16),
    (f32, 2, f32), (f32, True, f32), (f64, 2.5, f64),
]


def floating(d):
    return d if d.is_floating_point else f32


def both_orders(table):
    return table + [(b, a, r) for a, b, r in table if a is not b]


# ---- tensor op tensor -------------------------------------------------------------------------------
def ref_add(a, b, d):
    return a | b if d is b_ else a.astype(d.np_dtype) + b.astype(d.np_dtype)


def ref_sub(a, b, d):
    return a.astype(d.np_dtype) - b.astype(d.np_dtype)


def ref_mul(a, b, d):
    return a & b if d is b_ else a.astype(d.np_dtype) * b.astype(d.np_dtype)


def ref_div(a, b, d):
    """IEEE division in ``d``: exact in float64, rounded once to ``d``."""
    with np.errstate(all="ignore"):
        return (a.astype(d.np_dtype).astype(np.float64) / b.astype(d.np_dtype).astype(np.float64)).astype(d.np_dtype)


BINARY_CASES = [(name, fn, ref, da, db, r) for name, fn, ref in [("add", flow.add, ref_add), ("mul", flow.mul, ref_mul),
                                                                   ("sub", flow.sub, ref_sub), ("div", flow.div, ref_div)]
                for da, db, r in both_orders(TENSOR_TENSOR) if name != "sub" or b_ not in (da, db)]  # bool - raises


@pytest.mark.parametrize("name,fn,ref,da,db,expected", BINARY_CASES)
def test_binary_tensor_tensor_promotion_and_values(name, fn, ref, da, db, expected):
    a, b = sample(da, (2, 3), 1), sample(db, (3,), 2)
    d = floating(expected) if fn is flow.div else expected
    check(fn(T(a), T(b)), ref(a, b, d), d)


@pytest.mark.parametrize("dims,zero,expected", DIM_ZERO_DIM)
def test_zero_dim_tensor_promotes_only_across_categories(dims, zero, expected):
    a, z = sample(dims, (4,), 3), sample(zero, (), 4)
    check(flow.add(T(a), T(z)), ref_add(a, z, expected), expected)
    check(flow.add(T(z), T(a)), ref_add(z, a, expected), expected)
    assert flow.mul(M((4,), dims), M((), zero)).dtype is expected


@pytest.mark.parametrize("da,db,expected", both_orders(ZERO_DIM_ZERO_DIM))
def test_two_zero_dim_tensors_promote_as_tensors(da, db, expected):
    a, b = sample(da, (), 5), sample(db, (), 6)
    out = flow.add(T(a), T(b))
    assert out.shape == ()
    check(out, ref_add(a, b, expected), expected)


def test_zero_dim_int64_value_wraps_into_an_int8_tensor():
    # 0-d int64 does not raise int8: its value is converted (wrapped) to int8, as in PyTorch.
    check(flow.add(T([1, 2], i8), T(200, i64)), wrap([201, 202], i8), i8)


@pytest.mark.parametrize("op,ufunc", [(flow.eq, np.equal), (flow.ne, np.not_equal), (flow.lt, np.less),
                                      (flow.le, np.less_equal), (flow.gt, np.greater),
                                      (flow.ge, np.greater_equal)])
@pytest.mark.parametrize("da,db,common", both_orders(TENSOR_TENSOR)[::3])
def test_comparisons_tensor_tensor(op, ufunc, da, db, common):
    a, b = sample(da, (2, 1, 3), 7), sample(db, (4, 1), 8)
    b[0, 0] = a[0, 0, 0]  # at least one equal pair
    expected = ufunc(a.astype(common.np_dtype), b.astype(common.np_dtype))
    check(op(T(a), T(b)), expected, b_)


def test_int_and_float_compare_in_float():
    # int32 vs float16 compares in float16: 2049 is not representable and rounds to 2048.
    check(flow.eq(T([2049, 3], i32), T([2048.0, 3.0], f16)), [True, True], b_)
    check(flow.lt(T([1, 2], i64), T([1.5, 1.5], f64)), [True, False], b_)


def test_bool_add_is_or_and_mul_is_and():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    check(flow.add(T(a), T(b)), [True, True, True, False], b_)
    check(flow.mul(T(a), T(b)), [True, False, False, False], b_)


def test_integer_arithmetic_wraps():
    check(flow.add(T([100, -100], i8), T([100, -100], i8)), [-56, 56], i8)
    check(flow.mul(T([16, 200], u8), T([16, 2], u8)), [0, 144], u8)
    check(flow.sub(T([0], u8), T([1], u8)), [255], u8)


def test_div_of_integers_is_true_division_in_the_default_float():
    check(flow.div(T([7, -7, 1], i64), T([2, 2, 3], i64)), [3.5, -3.5, 1 / 3], f32)
    check(flow.div(T([True, False]), T([True, True])), [1.0, 0.0], f32)
    flow.set_default_dtype(f64)
    try:
        check(flow.div(T([1], i32), T([3], i32)), [1 / 3], f64)
    finally:
        flow.set_default_dtype(f32)


def test_division_by_zero_gives_inf_and_nan_without_warnings(recwarn):
    out = flow.div(T([1.0, -1.0, 0.0], f32), T([0.0, 0.0, 0.0], f32))
    np.testing.assert_array_equal(out.numpy(), [np.inf, -np.inf, np.nan])
    out = flow.div(T([1, 0], i32), T([0, 0], i32))
    np.testing.assert_array_equal(out.numpy(), [np.inf, np.nan])
    np.testing.assert_array_equal(flow.div(T([1.0, 0.0], f16), 0).numpy(), [np.inf, np.nan])
    np.testing.assert_array_equal(flow.div(0.0, T([0.0, 1.0], f64)).numpy(), [np.nan, 0.0])
    assert not [w for w in recwarn.list if issubclass(w.category, RuntimeWarning)]


def test_add_and_sub_with_alpha():
    a, b = sample(f32, (2, 3), 9), sample(f32, (3,), 10)
    check(flow.add(T(a), T(b), alpha=2.5), a.astype(np.float64) + 2.5 * b, f32)
    check(flow.sub(T(a), T(b), alpha=-3), a.astype(np.float64) + 3 * b, f32)
    x, y = np.array([1, 2, 3], np.int32), np.array([100, 100, 100], np.int8)
    check(flow.add(T(x), T(y), alpha=3), [301, 302, 303], i32)
    check(flow.sub(T(y), T(y), alpha=2), [-100, -100, -100], i8)
    check(flow.add(T([100], i8), T([100], i8), alpha=2), wrap([300], i8), i8)
    # alpha on bools: x + alpha * y, alpha True keeps y, alpha False (or 0) drops it
    bx, by = T([False, False, True]), T([True, False, False])
    check(flow.add(bx, by, alpha=True), [True, False, True], b_)
    check(flow.add(bx, by, alpha=False), [False, False, True], b_)
    check(flow.add(bx, by, alpha=0), [False, False, True], b_)
    check(flow.add(bx, by, alpha=2), [True, False, True], b_)


def test_alpha_errors():
    x, f = T([1, 2], i32), T([1.0], f32)
    with pytest.raises(RuntimeError, match="add: For integral input tensors, argument alpha must not be a floating"):
        flow.add(x, x, alpha=1.0)
    with pytest.raises(RuntimeError, match="sub: For integral input tensors, argument alpha must not be a floating"):
        flow.sub(x, 2, alpha=0.5)
    with pytest.raises(RuntimeError, match="add: Boolean alpha only supported for Boolean results."):
        flow.add(f, f, alpha=True)
    with pytest.raises(RuntimeError, match="add: Boolean alpha only supported for Boolean results."):
        flow.add(3, x, alpha=False)
    # a float alpha is fine when the result is floating, even for an integer input
    check(flow.add(x, f, alpha=0.5), [1.5, 2.5], f32)


@pytest.mark.parametrize("call", [
    lambda: flow.sub(T([True]), T([False])),
    lambda: flow.sub(T([True]), True),
    lambda: flow.sub(True, T([True])),
], ids=["tensor-tensor", "tensor-scalar", "scalar-tensor"])
def test_sub_of_two_bools_raises(call):
    with pytest.raises(RuntimeError, match=r"sub: Subtraction, the `-` operator, with two bool tensors is not "
                                           r"supported. Use the `\^` or `logical_xor\(\)` operator instead."):
        call()


@pytest.mark.parametrize("call", [
    lambda: flow.sub(T([True]), T([1], i32)),
    lambda: flow.sub(T([1.0], f32), T([True])),
    lambda: flow.sub(T([True]), 1),
    lambda: flow.sub(T([1], i32), True),
    lambda: flow.sub(1.5, T([True])),
], ids=["bool-int", "float-bool", "bool-1", "int-True", "1.5-bool"])
def test_sub_with_one_bool_raises(call):
    with pytest.raises(RuntimeError, match=r"Subtraction, the `-` operator, with a bool tensor is not supported. "
                                           r"If you are trying to invert a mask, use the `~` or `logical_not\(\)`"):
        call()


def test_neg_and_exp():
    for d in (u8, i8, i32, i64, f16, f32, f64):
        a = sample(d, (2, 3), 11)
        expected = wrap(-a.astype(np.int64), d) if not d.is_floating_point else -a.astype(np.float64)
        check(flow.neg(T(a)), expected, d)
    a = sample(f32, (5,), 12)
    check(flow.exp(T(a)), np.e ** a.astype(np.float64), f32)
    check(flow.exp(T([0, 1, 2], i64)), [1.0, np.e, np.e**2], f32)
    check(flow.exp(T([True, False])), [np.e, 1.0], f32)
    check(flow.exp(T([0.5], f16)), [np.e**0.5], f16)
    check(flow.exp(T([1000.0, -1000.0], f32)), [np.inf, 0.0], f32)
    with pytest.raises(RuntimeError, match=r"neg: Negation, the `-` operator, on a bool tensor is not supported"):
        flow.neg(T([True]))


# ---- tensor op scalar ---------------------------------------------------------------------------------
def ref_scalar(kind, a, s, d):
    """``a kind s`` in dtype ``d``: bools by logic, integers modulo 2**bits, floats in float64."""
    if d is b_:
        return a | bool(s) if kind == "add" else a & bool(s)
    if not d.is_floating_point:
        ai = a.astype(np.int64).astype(object)
        return wrap(ai + int(s) if kind == "add" else ai - int(s) if kind == "sub" else ai * int(s), d)
    af = a.astype(np.float64)
    return {"add": af + s, "sub": af - s, "mul": af * s}[kind]


@pytest.mark.parametrize("kind,dtype,scalar,expected", [
    (kind, d, s, r) for kind in ("add", "sub", "mul") for d, s, r in TENSOR_SCALAR
    if kind != "sub" or (d is not b_ and type(s) is not bool)])  # subtraction with a bool raises
def test_tensor_scalar_promotion_and_values(kind, dtype, scalar, expected):
    a = sample(dtype, (2, 3), 13)
    fn = {"add": flow.add, "sub": flow.sub, "mul": flow.mul}[kind]
    check(fn(T(a), scalar), ref_scalar(kind, a, scalar, expected), expected)
    assert fn(M((2, 3), dtype), scalar).dtype is expected


@pytest.mark.parametrize("dtype,scalar,expected", TENSOR_SCALAR)
def test_scalar_on_the_left(dtype, scalar, expected):
    a = sample(dtype, (4,), 14)
    check(flow.add(scalar, T(a)), ref_scalar("add", a, scalar, expected), expected)
    check(flow.mul(scalar, T(a)), ref_scalar("mul", a, scalar, expected), expected)
    d = floating(expected)
    with np.errstate(all="ignore"):
        check(flow.div(scalar, T(a)), float(scalar) / a.astype(np.float64), d)
        check(flow.div(T(a), scalar), a.astype(np.float64) / float(scalar), d)
    if dtype is not b_ and type(scalar) is not bool:
        if expected.is_floating_point:
            expected_sub = scalar - a.astype(np.float64)
        else:
            expected_sub = wrap(int(scalar) - a.astype(np.int64).astype(object), expected)
        check(flow.sub(scalar, T(a)), expected_sub, expected)


def test_scalar_alpha():
    a = np.array([1.0, 2.0], np.float32)
    check(flow.add(T(a), 3, alpha=2), [7.0, 8.0], f32)
    check(flow.sub(T(a), 3, alpha=0.5), [-0.5, 0.5], f32)
    check(flow.add(10, T(a), alpha=3), [13.0, 16.0], f32)
    check(flow.sub(10, T(a), alpha=3), [7.0, 4.0], f32)
    check(flow.sub(10, T([1, 2], u8), alpha=2), [8, 6], u8)
    check(flow.add(T([1], i8), 100, alpha=2), wrap([201], i8), i8)
    check(flow.add(T([False, True]), True, alpha=True), [True, True], b_)
    check(flow.add(T([False, True]), True, alpha=False), [False, True], b_)


def test_int8_plus_1000_wraps_like_pytorch():
    check(flow.add(T([1, 2, 100], i8), 1000), wrap([1001, 1002, 1100], i8), i8)
    check(flow.mul(T([3], i8), 1000), wrap([3000], i8), i8)
    check(flow.sub(T([0, 5], u8), 1), [255, 4], u8)
    check(flow.add(T([0, 5], u8), -1), [255, 4], u8)
    check(flow.add(T([5], i64), 2**63 - 1), wrap([2**63 + 4], i64), i64)


def test_int_tensor_with_float_scalar_gives_default_float():
    check(flow.add(T([1, 2], i32), 0.5), [1.5, 2.5], f32)
    flow.set_default_dtype(f64)
    try:
        check(flow.mul(T([1, 2], i8), 0.1), [0.1, 0.2], f64)
        check(flow.add(T([True]), 0.5), [1.5], f64)
        check(flow.mul(T([1.0], f16), 0.1), [0.1], f16)  # within its category the tensor wins
    finally:
        flow.set_default_dtype(f32)


def test_zero_dim_tensor_with_scalar():
    check(flow.add(T(3, i32), 2.5), 5.5, f32)
    check(flow.add(T(3, i8), 1000), wrap(1003, i8), i8)
    check(flow.mul(T(True), 2), 2, i64)


def test_float16_scalar_ops_keep_the_scalar_in_float32():
    # PyTorch computes half op scalar in float with the scalar unrounded: 1e6 is not inf here.
    x = np.array([1e-3, 2e-2], np.float16)
    check(flow.mul(T(x), 1e6), x.astype(np.float64) * 1e6, f16)
    check(flow.div(T(x), 1e-6), x.astype(np.float64) / 1e-6, f16)
    check(flow.add(T([1.0], f16), 1e6), [np.inf], f16)  # the result itself overflows
    check(flow.add(T([1.0], f32), 1e39), [np.inf], f32)


@pytest.mark.parametrize("op,ufunc", [(flow.eq, np.equal), (flow.ne, np.not_equal), (flow.lt, np.less),
                                      (flow.le, np.less_equal), (flow.gt, np.greater),
                                      (flow.ge, np.greater_equal)])
@pytest.mark.parametrize("dtype,scalar,common", TENSOR_SCALAR)
def test_comparisons_tensor_scalar(op, ufunc, dtype, scalar, common):
    a = sample(dtype, (3, 4), 15)
    a.flat[0] = scalar if dtype.is_floating_point else bool(scalar) if dtype is b_ else wrap(int(scalar), dtype)
    if common.is_floating_point:
        expected = ufunc(a.astype(common.np_dtype), np.array(scalar, dtype=np.float64).astype(common.np_dtype))
    elif common is b_:
        expected = ufunc(a, bool(scalar))
    else:
        expected = ufunc(a.astype(common.np_dtype), wrap(int(scalar), common))
    check(op(T(a), scalar), expected, b_)
    assert op(M((3, 4), dtype), scalar).dtype is b_


def test_integer_comparison_with_an_out_of_range_scalar_wraps_like_pytorch():
    # PyTorch converts the scalar to the tensor's dtype (pytorch/pytorch#101653): 256 -> 0, -1 -> 255.
    check(flow.lt(T([1, 200], u8), 256), [False, False], b_)
    check(flow.gt(T([1, 200], u8), -1), [False, False], b_)
    check(flow.eq(T([-24], i8), 1000), [True], b_)


def test_float16_compares_with_the_scalar_rounded_to_float16():
    check(flow.eq(T([0.1], f16), 0.1), [True], b_)
    check(flow.lt(T([60000.0], f16), 1e6), [True], b_)


def test_signed_zero_and_nan_scalars():
    # Each call's operand reaches the kernel, even when an equal-comparing one (0.0 == -0.0) was cached.
    x = T([1.0, -1.0], f32)
    np.testing.assert_array_equal(flow.div(x, 0.0).numpy(), [np.inf, -np.inf])
    np.testing.assert_array_equal(flow.div(x, -0.0).numpy(), [-np.inf, np.inf])
    assert list(np.signbit(flow.mul(x, 0.0).numpy())) == [False, True]
    assert list(np.signbit(flow.mul(x, -0.0).numpy())) == [True, False]
    for _ in range(2):
        assert np.isnan(flow.add(x, float("nan")).numpy()).all()
        check(flow.eq(x, float("nan")), [False, False], b_)


def test_numpy_scalars_are_python_scalars():
    # np.float64 subclasses float; it is still a float operand, and a weak scalar.
    check(flow.add(T([1.0], f16), np.float64(0.5)), [1.5], f16)
    check(flow.mul(T([3], i8), np.int64(1000)), wrap([3000], i8), i8)
    check(flow.add(T([1], i32), np.float32(0.5)), [1.5], f32)
    check(flow.add(T([True]), np.bool_(True)), [True], b_)


def test_scalar_beyond_int64_raises():
    with pytest.raises(RuntimeError, match=r"add: scalar 9223372036854775808 does not fit in int64"):
        flow.add(T([1.0], f32), 2**63)
    with pytest.raises(RuntimeError, match=r"mul: scalar -9223372036854775809 does not fit in int64"):
        flow.mul(T([1], i32), -(2**63) - 1)
    with pytest.raises(RuntimeError, match=r"eq: scalar 9223372036854775808 does not fit in int64"):
        flow.eq(T([1], i32), 2**63)
    check(flow.sub(T([1], i64), -(2**63)), wrap([1 + 2**63], i64), i64)


def test_scalar_operands_are_real_op_attrs():
    add = get_functor("ScalarAdd").add
    op, attrs = add.bind(2.5)
    conf = op.build_op_conf(attrs)
    assert conf.user_conf.op_type_name == "scalar_add"
    assert conf.user_conf.attr["has_float_operand"].at_bool is True
    assert conf.user_conf.attr["float_operand"].at_double == 2.5
    op, attrs = add.bind(-7)
    conf = op.build_op_conf(attrs)
    assert conf.user_conf.attr["has_float_operand"].at_bool is False
    assert conf.user_conf.attr["int_operand"].at_int64 == -7


# ---- in-place -----------------------------------------------------------------------------------------
def test_inplace_writes_into_the_input():
    x = T([1.0, 2.0, 3.0], f32)
    buf = x.numpy()
    out = flow.add(x, T([10.0, 20.0, 30.0], f32), inplace=True)
    assert out is x and x.numpy() is buf
    np.testing.assert_array_equal(buf, [11.0, 22.0, 33.0])
    flow.mul(x, 2, inplace=True)
    flow.sub(x, T([1.0], f32), alpha=2, inplace=True)
    flow.div(x, T(2.0, f32), inplace=True)
    np.testing.assert_allclose(buf, [10.0, 21.0, 32.0])


def test_inplace_casts_the_result_back_when_allowed():
    x = T([1, 2], i32)
    flow.add(x, T([10, 20], i64), inplace=True)  # int64 result cast back to int32
    check(x, [11, 22], i32)
    h = T([1.0, 2.0], f16)
    flow.mul(h, T([0.5, 0.25], f64), inplace=True)
    check(h, [0.5, 0.5], f16)
    i8x = T([100], i8)
    flow.add(i8x, 100, inplace=True)
    check(i8x, wrap([200], i8), i8)
    bx = T([True, False])
    flow.mul(bx, T([True, True]), inplace=True)
    check(bx, [True, False], b_)


@pytest.mark.parametrize("call,src,dst", [
    (lambda: flow.add(T([1, 2], i32), 2.5, inplace=True), "Float", "Int"),
    (lambda: flow.div(T([1, 2], i32), 2, inplace=True), "Float", "Int"),
    (lambda: flow.div(T([1, 2], i64), T([1, 2], i64), inplace=True), "Float", "Long"),
    (lambda: flow.mul(T([1], u8), T([1.0], f64), inplace=True), "Double", "Byte"),
    (lambda: flow.add(T([True]), 1, inplace=True), "Long", "Bool"),
    (lambda: flow.add(T([True]), T([1], i8), inplace=True), "Char", "Bool"),
    (lambda: flow.sub(T([1], i16), T([1.0], f16), inplace=True), "Half", "Short"),
])
def test_inplace_dtype_that_cannot_hold_the_result_raises(call, src, dst):
    with pytest.raises(RuntimeError, match=f"result type {src} can't be cast to the desired output type {dst}"):
        call()


def test_inplace_failure_leaves_the_tensor_unchanged():
    x = T([1, 2, 3], i32)
    with pytest.raises(RuntimeError, match="can't be cast"):
        flow.add(x, T([0.5, 0.5, 0.5], f32), inplace=True)
    y = T([1.0, 2.0, 3.0], f32)
    with pytest.raises(RuntimeError, match=r"add: output with shape \[3\] doesn't match the broadcast shape "
                                           r"\[2, 3\]"):
        flow.add(y, T(np.ones((2, 3)), f32), inplace=True)
    with pytest.raises(RuntimeError, match=r"mul: output with shape \[3\] doesn't match the broadcast shape "
                                           r"\[2, 3\]"):
        flow.mul(y, T(np.ones((2, 1)), f64), inplace=True)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        flow.add(y, T([1.0, 2.0], f32), inplace=True)
    check(x, [1, 2, 3], i32)
    check(y, [1.0, 2.0, 3.0], f32)


def test_inplace_broadcasting_the_other_operand_is_allowed():
    x = T(np.zeros((2, 3)), f32)
    flow.add(x, T([1.0, 2.0, 3.0], f32), inplace=True)
    flow.add(x, T(1, i64), inplace=True)
    check(x, [[2.0, 3.0, 4.0]] * 2, f32)


def test_inplace_on_meta():
    m = M((2, 3), f32)
    assert flow.add(m, M((3,), f32), inplace=True) is m
    assert flow.mul(m, 2, inplace=True) is m
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        flow.add(M((2,), i64), 0.5, inplace=True)


# ---- broadcasting and meta ----------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=0, max_side=3),
       seed=st.integers(0, 1000))
def test_broadcasting_matches_numpy(shapes, seed):
    sa, sb = shapes.input_shapes
    a, b = sample(f64, sa, seed), sample(f64, sb, seed + 1)
    out = flow.add(T(a), T(b))
    check(out, a + b, f64)
    assert tuple(out.shape) == shapes.result_shape
    check(flow.lt(T(a), T(b)), a < b, b_)
    meta = flow.mul(M(sa, f64), M(sb, f32))
    expected = f32 if len(sa) == 0 and len(sb) > 0 else f64  # a 0-d float64 does not raise float32
    assert meta.device is META and tuple(meta.shape) == shapes.result_shape and meta.dtype is expected


def test_shapes_that_do_not_broadcast_raise():
    with pytest.raises(RuntimeError, match=r"broadcast_add: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        flow.add(T(np.ones((2, 3))), T(np.ones(4)))
    with pytest.raises(RuntimeError, match=r"broadcast_less: shapes \(2,\) and \(3,\) cannot be broadcast"):
        flow.lt(M((2,), f32), M((3,), f32))


def test_empty_tensors():
    e = np.zeros((0, 3), np.float32)
    check(flow.add(T(e), T([1.0, 2.0, 3.0], f32)), e, f32)
    check(flow.mul(T(e), 2), e, f32)
    check(flow.eq(T(e), 0.0), np.zeros((0, 3), bool), b_)
    check(flow.sum(T(e)), 0.0, f32)
    check(flow.sum(T(e), 0), [0.0, 0.0, 0.0], f32)
    check(flow.sum(T(np.zeros(0, np.int32))), 0, i64)


META_CALLS = [
    ("add", lambda x, y: flow.add(x, y)), ("sub", lambda x, y: flow.sub(x, y, alpha=2)),
    ("mul", lambda x, y: flow.mul(x, y)), ("div", lambda x, y: flow.div(x, y)),
    ("add_scalar", lambda x, y: flow.add(x, 2.5)), ("rsub", lambda x, y: flow.sub(3, x)),
    ("rdiv", lambda x, y: flow.div(1, x)), ("neg", lambda x, y: flow.neg(x)), ("exp", lambda x, y: flow.exp(x)),
    ("eq", lambda x, y: flow.eq(x, y)), ("ge_scalar", lambda x, y: flow.ge(x, 1)),
    ("sum", lambda x, y: flow.sum(x)), ("sum_dim", lambda x, y: flow.sum(x, (0, -1), keepdim=True)),
    ("sum_dtype", lambda x, y: flow.sum(x, 1, dtype=f64)),
]


@pytest.mark.parametrize("name,call", META_CALLS, ids=[n for n, _ in META_CALLS])
@pytest.mark.parametrize("dx,dy", [(f32, f32), (i32, i64), (i8, f16)])
def test_meta_gives_the_cpu_shape_and_dtype_without_computing(name, call, dx, dy):
    x, y = sample(dx, (2, 3), 16), sample(dy, (3,), 17)
    on_cpu = call(T(x), T(y))
    on_meta = call(M((2, 3), dx), M((3,), dy))
    assert on_meta.device is META and on_meta._array is None
    assert (on_meta.shape, on_meta.dtype) == (on_cpu.shape, on_cpu.dtype)


# ---- the ops themselves -------------------------------------------------------------------------------
def test_binary_ops_require_one_dtype():
    op = OpBuilder("broadcast_add").input("x").input("y").output("z").build()
    with pytest.raises(RuntimeError, match="broadcast_add: inputs x and y must have the same dtype, got int32 "
                                           "and float32"):
        dispatch(op, (T([1], i32), T([1.0], f32)))


def test_div_and_exp_kernels_are_floating_only():
    op = OpBuilder("broadcast_div").input("x").input("y").output("z").build()
    with pytest.raises(OpKernelNotFoundError, match="broadcast_div"):
        dispatch(op, (T([1], i32), T([1], i32)))
    exp = OpBuilder("exp").input("x").output("y").build()
    with pytest.raises(OpKernelNotFoundError, match="exp"):
        dispatch(exp, (M((2,), i64),))


# ---- matmul -------------------------------------------------------------------------------------------
def ref_matmul(a, b):
    """PyTorch's matmul written with einsum: 1-D operands become a row / a column and the added
    dimension is dropped; batch dimensions broadcast."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = np.broadcast_to(a2, batch + a2.shape[-2:])
    b2 = np.broadcast_to(b2, batch + b2.shape[-2:])
    out = np.einsum("...ij,...jk->...ik", a2.astype(np.float64), b2.astype(np.float64))
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


MATMUL_SHAPES = [
    ((3,), (3,), ()), ((2, 3), (3,), (2,)), ((3,), (3, 4), (4,)), ((2, 3), (3, 4), (2, 4)),
    ((5, 2, 3), (3, 4), (5, 2, 4)), ((2, 3), (5, 3, 4), (5, 2, 4)), ((5, 1, 2, 3), (4, 3, 2), (5, 4, 2, 2)),
    ((3,), (5, 3, 4), (5, 4)), ((5, 2, 3), (3,), (5, 2)), ((2, 0), (0, 3), (2, 3)), ((0, 3), (3, 2), (0, 2)),
    ((1, 1), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("sa,sb,expected", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", [f32, f64, i32, i64])
def test_matmul_values_and_shapes(sa, sb, expected, dtype):
    a, b = sample(dtype, sa, 18), sample(dtype, sb, 19)
    out = flow.matmul(T(a), T(b))
    assert tuple(out.shape) == expected
    ref = ref_matmul(a, b)
    check(out, ref, dtype, atol=TOL.get(dtype, 0) * (1 + np.abs(a).max(initial=0) * np.abs(b).max(initial=0)) * 8)
    meta = flow.matmul(M(sa, dtype), M(sb, dtype))
    assert (tuple(meta.shape), meta.dtype) == (expected, dtype)


def test_matmul_float16():
    a, b = sample(f16, (2, 3), 20), sample(f16, (3, 2), 21)
    check(flow.matmul(T(a), T(b)), ref_matmul(a, b), f16)


def test_matmul_hand_computed():
    check(flow.matmul(T([[1, 2], [3, 4]], i64), T([[5, 6], [7, 8]], i64)), [[19, 22], [43, 50]], i64)
    check(flow.matmul(T([1.0, 2.0, 3.0], f32), T([4.0, 5.0, 6.0], f32)), 32.0, f32)


@pytest.mark.parametrize("sa,sb,message", [
    ((2, 3), (4, 5), r"matmul: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    ((3,), (4, 5), r"matmul: mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    ((7, 2, 3), (4, 5), r"matmul: mat1 and mat2 shapes cannot be multiplied \(7x2x3 and 4x5\)"),
    ((3,), (4,), (r"matmul: inconsistent tensor size, expected tensor \[3\] and src \[4\] to have the same "
                  r"number of elements, but got 3 and 4 elements respectively")),
    ((2, 3), (4,), r"matmul: size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    ((2, 2, 3), (3, 3, 4), (r"matmul: The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                            r"non-singleton dimension 0")),
    ((), (3,), r"matmul: both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_matmul_shape_errors(sa, sb, message, device):
    make = (lambda s: T(np.ones(s), f32)) if device == "cpu" else (lambda s: M(s, f32))
    with pytest.raises(RuntimeError, match=message):
        flow.matmul(make(sa), make(sb))


def test_matmul_dtype_errors():
    with pytest.raises(RuntimeError, match="matmul: expected a and b to have the same dtype, but got: float32 != "
                                           "float64"):
        flow.matmul(T(np.ones((2, 2)), f32), T(np.ones((2, 2)), f64))
    with pytest.raises(OpKernelNotFoundError, match=r"Cannot find a kernel of op 'matmul'.*'cpu'.*a_0=bool"):
        flow.matmul(T(np.ones((2, 2), bool)), T(np.ones((2, 2), bool)))
    with pytest.raises(OpKernelNotFoundError, match=r"Cannot find a kernel of op 'matmul'.*'meta'"):
        flow.matmul(M((2, 2), b_), M((2, 2), b_))


# ---- sum ----------------------------------------------------------------------------------------------
def test_sum_hand_computed():
    x = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], f32)
    check(flow.sum(x), 21.0, f32)
    check(flow.sum(x, 0), [5.0, 7.0, 9.0], f32)
    check(flow.sum(x, -1), [6.0, 15.0], f32)
    check(flow.sum(x, 1, keepdim=True), [[6.0], [15.0]], f32)
    check(flow.sum(x, (0, 1)), 21.0, f32)
    check(flow.sum(x, [1, 0], True), [[21.0]], f32)
    check(flow.sum(x, dim=None, keepdim=True), [[21.0]], f32)
    check(flow.sum(x, ()), 21.0, f32)  # an empty dim list sums everything, as in PyTorch
    check(flow.sum(x, dtype=f64), 21.0, f64)


@pytest.mark.parametrize("dtype,expected", [(b_, i64), (u8, i64), (i8, i64), (i32, i64), (i64, i64),
                                            (f16, f16), (f32, f32), (f64, f64)])
def test_sum_dtypes(dtype, expected):
    a = sample(dtype, (3, 4, 5), 22)
    for dim, keep in [(None, False), ((0,), False), ((1, -1), True), ((2, 0), False)]:
        axis = None if dim is None else tuple(dim)
        ref = a.astype(np.float64 if expected.is_floating_point else np.int64).sum(axis=axis, keepdims=keep)
        check(flow.sum(T(a), dim, keep), ref, expected)
        meta = flow.sum(M((3, 4, 5), dtype), dim, keep)
        assert (meta.shape, meta.dtype) == (ref.shape, expected)


def test_sum_int8_does_not_overflow_but_sum_with_dtype_int8_wraps():
    x = T([100, 100, 100], i8)
    check(flow.sum(x), 300, i64)
    check(flow.sum(x, dtype=i8), wrap(300, i8), i8)
    check(flow.sum(T([True, True, False])), 2, i64)
    check(flow.sum(T([1.7, 2.6], f32), dtype=i32), 3, i32)  # cast (truncating) first, then sum


def test_sum_float16_accumulates_precisely():
    x = np.full(4096, 1.0, np.float16)
    x[0] = 2048.0
    check(flow.sum(T(x)), 2048.0 + 4095.0, f16)  # float16 running sums would stall at 2048 (2048 + 1 == 2048)


def test_sum_float16_beyond_its_range_is_inf(recwarn):
    check(flow.sum(T([60000.0, 60000.0], f16)), np.inf, f16)
    assert not [w for w in recwarn.list if issubclass(w.category, RuntimeWarning)]


def test_sum_of_zero_dim_tensor():
    x = T(5, i32)
    check(flow.sum(x), 5, i64)
    check(flow.sum(x, 0), 5, i64)
    check(flow.sum(x, -1, keepdim=True), 5, i64)


def test_sum_errors():
    x = T(np.ones((2, 3)), f32)
    with pytest.raises(RuntimeError, match="sum: dim 0 appears multiple times in the list of dims"):
        flow.sum(x, (0, -2))
    with pytest.raises(RuntimeError, match="sum: dim 1 appears multiple times in the list of dims"):
        flow.sum(M((2, 3), f32), [1, 1])
    with pytest.raises(IndexError, match=r"sum: Dimension out of range \(expected to be in range of \[-2, 1\], "
                                         r"but got 2\)"):
        flow.sum(x, 2)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but "
                                         r"got 1\)"):
        flow.sum(T(1.0, f32), 1)
    with pytest.raises(TypeError, match="sum"):
        flow.sum(x, "0")


def test_reduce_sum_op_checks_its_axis():
    op = OpBuilder("reduce_sum").input("input_tensor").output("output_tensor").build()
    with pytest.raises(RuntimeError, match="reduce_sum: axis 3 is out of range for a tensor of 2 dimension"):
        dispatch(op, (M((2, 3), f32),), {"axis": (3,)})
    with pytest.raises(RuntimeError, match="reduce_sum: dim 1 appears multiple times"):
        dispatch(op, (M((2, 3), f32),), {"axis": (1, -1)})


def test_wrong_argument_types_raise_type_errors():
    x = T([1.0], f32)
    with pytest.raises(TypeError, match="add"):
        flow.add(x, "1")
    with pytest.raises(TypeError, match="matmul"):
        flow.matmul(x, 2)
    with pytest.raises(TypeError, match="neg"):
        flow.neg(2)
