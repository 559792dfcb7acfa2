"""Elementwise binary and ternary ops beyond the op database (tests/op_specs/binary.py): PyTorch's promotion
across dtypes, integer division by zero, integer powers, operators and in-place forms, scalars wrapped on
either side, errors, and grads at ties and masks. Expected values are hand-computed or NumPy formulas."""

import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError

b_, u8, i8, i16, i32, i64 = flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64
f16, f32, f64 = flow.float16, flow.float32, flow.float64


def T(values, dtype=None):
    """A cpu tensor; without ``dtype``, PyTorch's defaults (bool, int64, float32)."""
    return flow.tensor(values, dtype=dtype)


def M(shape, dtype):
    return flow.zeros(shape, dtype=dtype, device="meta")


def check(t, expected, dtype):
    assert t.dtype is dtype
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape
    if dtype.is_floating_point:
        np.testing.assert_allclose(t.numpy().astype(np.float64), expected.astype(np.float64), rtol=1e-6,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(t.numpy(), expected)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---- promotion across dtypes (PyTorch's rules, by hand) ---------------------------------------------
# (op, dtype a, dtype b, result): dimensioned tensors of two dtypes.
PROMOTION = [
    (flow.pow, i32, f64, f64), (flow.pow, u8, i8, i16), (flow.maximum, i8, u8, i16), (flow.minimum, b_, i32, i32),
    (flow.fmod, i64, f16, f16), (flow.remainder, f32, f64, f64), (flow.floor_divide, i16, i32, i32),
    (flow.atan2, i32, i64, f32), (flow.atan2, f16, i8, f16), (flow.bitwise_and, b_, u8, u8),
    (flow.bitwise_or, i8, i16, i16), (flow.bitwise_xor, b_, b_, b_), (flow.logical_and, f32, i8, b_),
    (lambda a, b: flow.div(a, b, rounding_mode="floor"), i8, i32, i32),
    (lambda a, b: flow.div(a, b, rounding_mode="trunc"), u8, f16, f16),
    (lambda a, b: flow.where(flow.ones(3, dtype=b_, device=a.device), a, b), i32, f16, f16),
    (lambda a, b: flow.where(flow.ones(3, dtype=b_, device=a.device), a, b), u8, i8, i16),
]


@pytest.mark.parametrize("op,da,db,expected", PROMOTION)
def test_promotion_of_two_tensors(op, da, db, expected):
    a, b = T([1, 2, 3], da), T([1, 1, 2], db)
    assert op(a, b).dtype is expected
    assert op(b, a).dtype is expected
    assert op(M((2, 3), da), M((3,), db)).dtype is expected


# (op, tensor dtype, scalar, result): a scalar only raises the category.
SCALAR_PROMOTION = [
    (flow.pow, i32, 2, i32), (flow.pow, i32, 0.5, f32), (flow.pow, b_, 2, i64), (flow.pow, f16, 2.5, f16),
    (flow.remainder, u8, 3, u8), (flow.remainder, i64, 1.5, f32), (flow.fmod, i16, 2, i16),
    (flow.floor_divide, i8, 2, i8), (flow.floor_divide, i8, 2.0, f32), (flow.bitwise_and, b_, 1, i64),
    (flow.bitwise_or, b_, True, b_), (flow.bitwise_xor, i8, 3, i8),
]


@pytest.mark.parametrize("op,dtype,scalar,expected", SCALAR_PROMOTION)
def test_promotion_with_a_scalar(op, dtype, scalar, expected):
    assert op(T([1, 2], dtype), scalar).dtype is expected
    assert op(M((2,), dtype), scalar).dtype is expected


@pytest.mark.parametrize("op", [flow.pow, flow.remainder, flow.floor_divide, flow.bitwise_and])
def test_scalar_on_the_left_promotes_like_on_the_right(op):
    assert op(2, T([1, 2], i8)).dtype is i8
    assert op(2, T([True], b_)).dtype is i64
    if op is not flow.bitwise_and:
        assert op(2.5, T([1, 2], i8)).dtype is f32


def test_zero_dim_tensor_counts_only_across_categories():
    check(flow.pow(T([1, 2, 3], i8), T(2, i64)), [1, 4, 9], i8)
    assert flow.maximum(T([1, 2], i32), T(1.5, f64)).dtype is f64
    assert flow.remainder(T([1.0], f16), T(3, i64)).dtype is f16


# ---- division with rounding modes, floor_divide -----------------------------------------------------
def test_div_rounding_modes_hand_computed():
    a, b = T([7, -7, 7, -7, 0], i32), T([2, 2, -2, -2, 3], i32)
    check(flow.div(a, b, rounding_mode="floor"), [3, -4, -4, 3, 0], i32)
    check(flow.div(a, b, rounding_mode="trunc"), [3, -3, -3, 3, 0], i32)
    check(flow.div(a, b), [3.5, -3.5, -3.5, 3.5, 0.0], f32)
    check(flow.floor_divide(a, b), [3, -4, -4, 3, 0], i32)
    check(a // b, [3, -4, -4, 3, 0], i32)
    x = T([7.5, -7.5, 1.0, -1.0], f64)
    check(flow.div(x, 2, rounding_mode="floor"), [3.0, -4.0, 0.0, -1.0], f64)
    check(flow.div(x, 2, rounding_mode="trunc"), [3.0, -3.0, 0.0, -0.0], f64)
    check(7 // T([2, -2, 3], i64), [3, -4, 2], i64)
    check(flow.div(-7, T([2, 3], i64), rounding_mode="trunc"), [-3, -2], i64)


def test_floor_division_of_floats_is_python_floor_division():
    # 1 // 0.1 is 9 in Python (0.1 is a bit more than 1/10): not floor(1 / 0.1) == 10.
    check(T([1.0, -1.0], f64) // 0.1, [9.0, -10.0], f64)
    check(T([1.0], f64) // T([0.1], f64), [9.0], f64)


def test_float16_trunc_division_rounds_once():
    # 2047 / 682.5 is 2.99927 in float32, which rounds to 3.0 in float16: trunc must see the former.
    a, b = flow.cast(T([2047.0]), f16), flow.cast(T([682.5]), f16)
    check(flow.div(a, b, rounding_mode="trunc"), [2.0], f16)


def test_unsigned_scalar_is_wrapped_before_dividing():
    # -3 becomes 253 in uint8, as PyTorch casts the scalar to the common dtype.
    check(T([200, 10], u8) // -3, [0, 0], u8)
    check(T([255, 254], u8) // 253, [1, 1], u8)


def test_integer_int_min_by_minus_one_wraps(no_warnings):
    check(flow.floor_divide(T([-128], i8), T([-1], i8)), [-128], i8)
    check(flow.div(T([-128], i8), T([-1], i8), rounding_mode="trunc"), [-128], i8)


DIVIDING = [
    ("div floor", lambda a, b: flow.div(a, b, rounding_mode="floor"), "div"),
    ("div trunc", lambda a, b: flow.div(a, b, rounding_mode="trunc"), "div"),
    ("floor_divide", flow.floor_divide, "floor_divide"),
    ("fmod", flow.fmod, "fmod"),
    ("remainder", flow.remainder, "remainder"),
]


@pytest.mark.parametrize("label,op,name", DIVIDING)
def test_integer_division_by_zero_raises(label, op, name):
    a = T([4, 5, 6], i32)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(a, T([1, 0, 2], i32))
    with pytest.raises(RuntimeError, match=f"{name}: ZeroDivisionError"):
        op(a, 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(T([True, False]), T([1, 0], i64))
    # an empty result divides nothing
    assert op(T(np.zeros((0, 3), np.int32)), T([1, 0, 2], i32)).shape == (0, 3)
    check(a, [4, 5, 6], i32)


@pytest.mark.parametrize("label,op,name", DIVIDING)
def test_float_division_by_zero_is_ieee_without_warnings(label, op, name, no_warnings):
    out = op(T([1.0, -1.0, 0.0], f32), 0.0).numpy()
    if name in ("fmod", "remainder"):
        assert np.isnan(out).all()
    else:
        np.testing.assert_array_equal(out, [np.inf, -np.inf, np.nan])
    out = op(T([3, -3], i32), T([0.0, 0.0], f32)).numpy()  # promoted to float: no error
    assert out.dtype == np.float32


def test_integer_division_by_zero_on_meta_is_not_checked():
    assert flow.floor_divide(M((3,), i32), M((3,), i32)).shape == (3,)


def test_bad_rounding_mode():
    for call in (lambda: flow.div(T([1.0]), T([2.0]), rounding_mode="round"),
                 lambda: flow.div(T([1.0]), 2, rounding_mode="Floor"),
                 lambda: flow.div(1, T([2.0]), rounding_mode="")):
        with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                                               "but found"):
            call()
    with pytest.raises(TypeError):
        flow.div(T([1.0]), T([2.0]), rounding_mode=1)


def test_rounding_division_of_bools_is_not_supported():
    with pytest.raises(OpKernelNotFoundError):
        flow.floor_divide(T([True]), T([True]))
    with pytest.raises(OpKernelNotFoundError):
        flow.div(T([True]), True, rounding_mode="trunc")


# ---- fmod and remainder ------------------------------------------------------------------------------
def test_fmod_takes_the_sign_of_the_dividend_and_remainder_of_the_divisor():
    a, b = T([5, -5, 5, -5], i64), T([3, 3, -3, -3], i64)
    check(flow.fmod(a, b), [2, -2, 2, -2], i64)
    check(flow.remainder(a, b), [2, 1, -1, -2], i64)
    check(a % b, [2, 1, -1, -2], i64)
    x = T([5.5, -5.5], f64)
    check(flow.fmod(x, 2), [1.5, -1.5], f64)
    check(x % 2, [1.5, 0.5], f64)
    check(x % -2.0, [-0.5, -1.5], f64)
    check(-5.5 % T([2.0, -2.0], f64), [0.5, -1.5], f64)
    check(7 % T([3, -3], i32), [1, -2], i32)


def test_remainder_with_infinite_divisor():
    check(T([7.0, -7.0], f64) % float("inf"), [7.0, float("inf")], f64)
    check(flow.fmod(T([7.0, -7.0], f64), float("inf")), [7.0, -7.0], f64)


# ---- pow -----------------------------------------------------------------------------------------------
def test_integer_tensor_to_a_negative_integer_scalar_raises():
    for t in (T([2, 3], i32), T([True]), T([1], u8)):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
            flow.pow(t, -1)
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
            t ** -2
    check(T([2, 4], i32) ** -1.0, [0.5, 0.25], f32)
    check(T([2.0, 4.0], f32) ** -1, [0.5, 0.25], f32)


def test_integer_tensor_powers_follow_powi():
    # a negative exponent tensor gives 1 for base 1, +-1 for base -1 and 0 otherwise (no error, as PyTorch)
    base = T([1, -1, -1, 2, -3, 0], i32)
    check(flow.pow(base, T([-3, -3, -2, -1, -1, -1], i32)), [1, -1, 1, 0, 0, 0], i32)
    check(2 ** T([-1, 0, 3], i64), [0, 1, 8], i64)
    check(T([2, 3], i8) ** 7, [-128, (3**7 + 128) % 256 - 128], i8)  # wraps


def test_integer_exponent_is_not_wrapped_to_the_tensor_dtype():
    # 3 ** 1000 in int8: an exponent wrapped to int8 (-24) would give 0.
    expected = (pow(3, 1000, 256) + 128) % 256 - 128
    check(T([3, -1, 1], i8) ** 1000, [expected, 1, 1], i8)
    check(T([-1], i8) ** 1001, [-1], i8)


def test_pow_special_values_without_warnings(no_warnings):
    x = T([0.0, -0.0, -8.0, np.inf, np.nan, 1.0], f32)
    check(x ** 0, [1, 1, 1, 1, 1, 1], f32)
    check(x ** -1, [np.inf, -np.inf, -0.125, 0.0, np.nan, 1.0], f32)
    check(x ** 0.5, [0.0, 0.0, np.nan, np.inf, np.nan, 1.0], f32)
    check(1 ** T([np.nan, np.inf], f32), [1.0, 1.0], f32)
    check(0 ** T([-1.0, 0.0, 2.0], f32), [np.inf, 1.0, 0.0], f32)


def test_float16_pow_computes_in_float32():
    check(flow.cast(T([2.0]), f16) ** 15, [32768.0], f16)
    assert np.isinf((flow.cast(T([300.0]), f16) ** 2).numpy()).all()  # 90000 > float16 max


# ---- maximum, minimum ---------------------------------------------------------------------------------
def test_maximum_minimum_propagate_nan():
    a, b = T([1.0, np.nan, 3.0, np.nan], f32), T([2.0, 1.0, np.nan, np.nan], f32)
    check(flow.maximum(a, b), [2.0, np.nan, np.nan, np.nan], f32)
    check(flow.minimum(a, b), [1.0, np.nan, np.nan, np.nan], f32)
    check(flow.maximum(T([True, False]), T([False, False])), [True, False], b_)
    check(flow.minimum(T([-0.0], f64), T([0.0], f64)), [0.0], f64)


def test_maximum_takes_no_scalar():
    with pytest.raises(TypeError, match="maximum"):
        flow.maximum(T([1.0]), 2.0)


# ---- logical and bitwise ops -------------------------------------------------------------------------
def test_logical_ops_on_any_dtypes():
    a, b = T([0.0, 2.0, np.nan, -1.0], f32), T([3, 0, 1, 0], i8)
    check(flow.logical_and(a, b), [False, False, True, False], b_)
    check(flow.logical_or(a, b), [True, True, True, True], b_)
    check(flow.logical_xor(a, b), [True, True, False, True], b_)
    check(a.logical_and(T([True, True, False, True])), [False, True, False, True], b_)


def test_logical_in_place_keeps_the_dtype():
    a = T([0.0, 2.0, 5.0], f32)
    assert a.logical_or_(T([1, 0, 0], i64)) is a
    check(a, [1.0, 1.0, 1.0], f32)


def test_bitwise_ops_and_operators():
    a, b = T([12, -1, 5], i32), T([10, 7, 0], i32)
    check(a & b, [8, 7, 0], i32)
    check(a | b, [14, -1, 5], i32)
    check(a ^ b, [6, -8, 5], i32)
    check(~a, [-13, 0, -6], i32)
    check(~T([True, False]), [False, True], b_)
    check(~T([0, 255], u8), [255, 0], u8)
    check(6 & a, [4, 6, 4], i32)
    check(3 | T([True, False]), [3, 3], i64)
    check(T([True, False]) ^ True, [False, True], b_)


def test_bitwise_scalar_wraps_into_the_tensor_dtype():
    check(T([-1, 127], i8) & 1000, [-24, 104], i8)  # 1000 is -24 in int8


def test_bitwise_ops_reject_floats():
    for call in (lambda: T([1.0]) & T([1.0]), lambda: T([1]) | 1.5, lambda: ~T([1.0]),
                 lambda: flow.bitwise_xor(T([1], f16), T([1], i8))):
        with pytest.raises(OpKernelNotFoundError):
            call()


def test_bitwise_in_place():
    a = T([12, 5], i16)
    a &= T([10, 4], i16)
    check(a, [8, 4], i16)
    a |= 1
    check(a, [9, 5], i16)
    a.bitwise_xor_(T([1, 1], i8))
    check(a, [8, 4], i16)
    a.bitwise_not_()
    check(a, [-9, -5], i16)
    with pytest.raises(RuntimeError, match="can't be cast"):
        T([True]).bitwise_and_(T([1], i32))


# ---- where -------------------------------------------------------------------------------------------
def test_where_broadcasts_all_three_and_promotes():
    c = T([[True], [False]])
    check(flow.where(c, T([1, 2, 3], i8), T(1.5, f64)), [[1, 2, 3], [1.5, 1.5, 1.5]], f64)
    check(flow.where(c, T([1, 2, 3], i8), 1.5), [[1, 2, 3], [1.5, 1.5, 1.5]], f32)
    check(flow.where(c, 7, T([1, 2, 3], i8)), [[7, 7, 7], [1, 2, 3]], i8)
    check(flow.where(c, 1, 0), [[1], [0]], i64)
    check(flow.where(c, 1.0, 0), [[1.0], [0.0]], f32)
    check(flow.where(c, True, False), [[True], [False]], b_)
    check(T([1.0, 2.0]).where(T([True, False]), 0.0), [1.0, 0.0], f32)
    assert flow.where(M((2, 1), b_), M((3,), i32), 2.5).shape == (2, 3)


def test_where_with_only_a_condition_is_nonzero_as_tuple():
    rows, cols = flow.where(T([[True, False, True], [False, False, True]]))
    check(rows, [0, 0, 1], i64)
    check(cols, [0, 2, 2], i64)


def test_where_scalar_that_the_dtype_cannot_hold_raises():
    """PyTorch 2.13's scalar check (it used to wrap / overflow to inf): the value must fit the result dtype."""
    c = T([True, False])
    with pytest.raises(RuntimeError, match="where: value 1000 cannot be converted to type int8 without overflow"):
        flow.where(c, T([1, 2], i8), 1000)
    with pytest.raises(RuntimeError, match="where: value 1e[+]300 cannot be converted to type float32"):
        flow.where(c, T([1.0, 2.0]), 1e300)
    # a float16 tensor's number is checked against float32 (PyTorch computes half in float32): 1e6 rounds to inf
    check(flow.where(c, flow.cast(T([1.0, 2.0]), f16), 1e6), [1.0, np.inf], f16)
    check(flow.where(c, T([1, 2], i8), -128), [1, -128], i8)
    check(flow.where(c, flow.cast(T([1.0, 2.0]), f16), np.inf), [1.0, np.inf], f16)


def test_where_condition_must_be_bool():
    with pytest.raises(RuntimeError, match="where: expected condition to be a boolean tensor, but got a tensor "
                                           "with dtype float32"):
        flow.where(T([1.0]), T([1.0]), T([2.0]))
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        out = flow.where(T([1, 0], u8), T([1.0, 2.0]), 0.0)
    check(out, [1.0, 0.0], f32)


def test_where_shapes_that_do_not_broadcast():
    with pytest.raises(RuntimeError, match="where: shapes"):
        flow.where(T([True, False]), T([1.0, 2.0, 3.0]), 0.0)


# ---- lerp, addcmul, addcdiv ---------------------------------------------------------------------------
def test_lerp_is_exact_at_both_ends():
    start, end = T([1e8, -3.0], f32), T([1.0, 7.0], f32)
    check(flow.lerp(start, end, 1.0), [1.0, 7.0], f32)
    check(flow.lerp(start, end, 0.0), [1e8, -3.0], f32)
    check(flow.lerp(start, end, T([0.0, 1.0], f32)), [1e8, 7.0], f32)
    check(start.lerp(end, 0.25), [1e8 + 0.25 * (1.0 - 1e8), -0.5], f32)


def test_lerp_needs_one_floating_dtype():
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end` but got dtype float64"):
        flow.lerp(T([1.0], f32), T([1.0], f64), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float32 for `weight` but got dtype float64"):
        flow.lerp(T([1.0], f32), T([1.0], f32), T([0.5], f64))
    with pytest.raises(OpKernelNotFoundError):
        flow.lerp(T([1], i64), T([2], i64), 0.5)


def test_lerp_in_place():
    a = T([0.0, 10.0], f64)
    a.lerp_(T([10.0, 20.0], f64), 0.5)
    check(a, [5.0, 15.0], f64)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        T([0.0], f64).lerp_(T([1.0, 2.0], f64), 0.5)


def test_addcmul_addcdiv_hand_computed():
    x, t1, t2 = T([1.0, 2.0]), T([[2.0], [3.0]]), T([4.0, 8.0])
    check(flow.addcmul(x, t1, t2), [[9.0, 18.0], [13.0, 26.0]], f32)
    check(flow.addcmul(x, t1, t2, value=0.5), [[5.0, 10.0], [7.0, 14.0]], f32)
    check(flow.addcdiv(x, t1, t2, value=2), [[2.0, 2.5], [2.5, 2.75]], f32)
    check(x.addcdiv(t1, t2), [[1.5, 2.25], [1.75, 2.375]], f32)
    check(flow.addcmul(T([1, 2], i8), T([100], i8), T([3], i8)), [(301 + 128) % 256 - 128, 302 - 256], i8)
    check(flow.addcmul(T([1], i32), T([2.5], f64), T([2], i32)), [6.0], f64)


def test_addcmul_addcdiv_errors():
    with pytest.raises(RuntimeError, match="addcmul: For integral input tensors, argument value must not be a "
                                           "floating point number."):
        flow.addcmul(T([1], i32), T([1], i32), T([1], i32), value=0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        flow.addcdiv(T([1.0]), T([1], i32), T([True]))
    check(flow.addcdiv(T([1], i32), T([1], i32), T([2.0], f32)), [1.5], f32)
    with pytest.raises(OpKernelNotFoundError):
        flow.addcmul(T([True]), T([True]), T([True]))


def test_addcmul_in_place():
    x = T([1.0, 2.0], f64)
    assert x.addcmul_(T([2.0, 2.0], f64), T([3.0, 0.5], f64), value=-1) is x
    check(x, [-5.0, 1.0], f64)


# ---- operators and in-place forms ---------------------------------------------------------------------
def test_operators():
    x = T([1.5, -2.5], f64)
    check(x ** 2, [2.25, 6.25], f64)
    check(2 ** x, [2**1.5, 2**-2.5], f64)
    check(x % 1, [0.5, 0.5], f64)
    check(4 % x, [1.0, -1.0], f64)
    check(x // 1, [1.0, -3.0], f64)
    check(5 // x, [3.0, -2.0], f64)
    check(np.float64(2.0) ** x, [2**1.5, 2**-2.5], f64)
    y = T([3, 4], i64)
    y **= 2
    y %= 5
    y //= 2
    check(y, [2, 0], i64)


def test_in_place_dtype_errors():
    with pytest.raises(RuntimeError, match="pow: result type Float can't be cast to the desired output type Long"):
        T([4], i64).pow_(0.5)
    with pytest.raises(RuntimeError, match="atan2: result type Float can't be cast"):
        T([4], i64).atan2_(T([1], i64))
    x = T([7, -7], i32)
    x.div_(2, rounding_mode="floor")
    check(x, [3, -4], i32)


def test_in_place_comparisons_write_the_input_dtype():
    x = T([1.0, 2.0, 3.0], f32)
    assert x.gt_(1.5) is x
    check(x, [0.0, 1.0, 1.0], f32)
    y = T([1, 5], i64)
    y.eq_(T([1, 2], i64))
    check(y, [1, 0], i64)


def test_failed_in_place_call_leaves_the_tensor_unchanged():
    x = T([1, 2], i32)
    with pytest.raises(RuntimeError):
        x.remainder_(T([1, 0], i32))
    with pytest.raises(RuntimeError):
        x.floor_divide_(T([1, 2, 3], i32))
    check(x, [1, 2], i32)


def test_scalar_beyond_int64_raises():
    for call in (lambda: T([1]) ** 2**70, lambda: T([1]) % 2**64, lambda: flow.where(T([True]), 2**63, 0),
                 lambda: T([1]) & -(2**65), lambda: flow.addcmul(T([1]), T([1]), T([1]), value=2**64)):
        with pytest.raises(RuntimeError, match="does not fit in int64"):
            call()


# ---- grads ---------------------------------------------------------------------------------------------
def leaf(values):
    return T(values, f64).requires_grad_()


def test_maximum_minimum_split_the_grad_on_ties():
    a, b = leaf([1.0, 2.0, 3.0]), leaf([1.0, 5.0, 0.0])
    flow.maximum(a, b).sum().backward()
    check(a.grad, [0.5, 0.0, 1.0], f64)
    check(b.grad, [0.5, 1.0, 0.0], f64)
    a, b = leaf([1.0, 2.0, 3.0]), leaf([1.0, 5.0, 0.0])
    flow.minimum(a, b).sum().backward()
    check(a.grad, [0.5, 1.0, 0.0], f64)
    check(b.grad, [0.5, 0.0, 1.0], f64)


def test_maximum_grad_broadcasts_back():
    a, b = leaf([[1.0, 4.0], [3.0, 0.0]]), leaf([2.0])
    flow.maximum(a, b).sum().backward()
    check(a.grad, [[0.0, 1.0], [1.0, 0.0]], f64)
    check(b.grad, [2.0], f64)


def test_where_grad_goes_to_the_chosen_side():
    c = T([[True, False, True]])
    x, y = leaf([1.0, 2.0, 3.0]), leaf([[4.0], [5.0]])
    flow.where(c, x, y).sum().backward()
    check(x.grad, [2.0, 0.0, 2.0], f64)
    check(y.grad, [[1.0], [1.0]], f64)
    assert flow.where(c, x, 0.0).grad_fn.name() == "WhereBackward"


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")  # 0 * inf, masked as in PyTorch
def test_pow_grads_at_zero_base():
    # d/dx x ** 0 is 0 (not 0 * x ** -1 = nan); d/dy 0 ** y is 0 for y >= 0 (not 0 * log 0 = nan)
    x, y = leaf([0.0, 0.0, 2.0]), leaf([0.0, 2.0, 3.0])
    flow.pow(x, y).sum().backward()
    check(x.grad, [0.0, 0.0, 12.0], f64)
    check(y.grad, [0.0, 0.0, 8.0 * np.log(2.0)], f64)
    z = leaf([0.0, 2.0])
    (z ** 0).sum().backward()
    check(z.grad, [0.0, 0.0], f64)
    e = leaf([1.0, 0.0, -1.0])
    (0 ** e).sum().backward()
    check(e.grad, [0.0, 0.0, -np.inf], f64)


def test_rounding_division_grads_are_zero():
    x, y = leaf([7.5, -1.5]), leaf([2.0, 0.5])
    (flow.div(x, y, rounding_mode="floor") + x // 2 + flow.div(x, y, rounding_mode="trunc")).sum().backward()
    check(x.grad, [0.0, 0.0], f64)
    check(y.grad, [0.0, 0.0], f64)


def test_mod_grads_hand_computed():
    x, y = leaf([7.5, -7.5]), leaf([2.0, 2.0])
    (flow.fmod(x, y) + flow.remainder(x, y)).sum().backward()
    check(x.grad, [2.0, 2.0], f64)
    check(y.grad, [-3.0 - 3.0, 3.0 + 4.0], f64)  # -trunc(x / y) - floor(x / y)


def test_addcdiv_and_lerp_grads_hand_computed():
    x, t1, t2 = leaf([1.0]), leaf([3.0]), leaf([2.0])
    flow.addcdiv(x, t1, t2, value=2).sum().backward()
    check(x.grad, [1.0], f64)
    check(t1.grad, [1.0], f64)
    check(t2.grad, [-1.5], f64)
    s, e, w = leaf([1.0]), leaf([5.0]), leaf([0.25])
    flow.lerp(s, e, w).sum().backward()
    check(s.grad, [0.75], f64)
    check(e.grad, [0.25], f64)
    check(w.grad, [4.0], f64)


def test_in_place_ops_are_differentiable():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1
    y.pow_(2)
    y.lerp_(x, 0.5)
    y.addcmul_(x, x, value=2)
    y.sum().backward()  # d/dx (x^2 / 2 + x / 2 + 2 x^2) = 5 x + 0.5
    check(x.grad, [5.5, 10.5, 15.5], f64)


def test_arctan2_is_atan2():
    y, x = T([1.0, -1.0], f64), T([-1.0, -1.0], f64)
    check(flow.arctan2(y, x), [3 * np.pi / 4, -3 * np.pi / 4], f64)
    check(y.atan2(x), [3 * np.pi / 4, -3 * np.pi / 4], f64)


def test_integer_and_bool_results_are_not_recorded():
    x = leaf([1.0, 2.0])
    for out in (flow.logical_and(x, x), x > 1, flow.eq(x, 1.0)):
        assert not out.requires_grad and out.grad_fn is None
