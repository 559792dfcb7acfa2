"""Tensor operators and methods: ``x + y``, ``2 - x``, ``x @ y``, ``x == y``, ``+=``, ``x.sum(1)``, ...
checked against NumPy formulas written here."""

import operator

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.dtype import from_numpy_dtype
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import make_meta

CPU, META = flow.device("cpu"), flow.device("meta")


def T(a, dtype=None):
    a = np.array(a, dtype=dtype)
    return Tensor._make(a, make_meta(a.shape, from_numpy_dtype(a.dtype), CPU))


def M(shape, dtype):
    return Tensor._make(None, make_meta(shape, dtype, META))


A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32)
B = np.array([2.0, -0.5, 3.0], np.float32)


def assert_tensor(t, expected, dtype):
    assert isinstance(t, Tensor)
    assert t.dtype is dtype
    np.testing.assert_allclose(t.numpy(), np.asarray(expected), rtol=1e-6)
    assert t.numpy().dtype == dtype.np_dtype


@pytest.mark.parametrize("op,ref", [
    (operator.add, lambda a, b: a + b), (operator.sub, lambda a, b: a - b), (operator.mul, lambda a, b: a * b),
    (operator.truediv, lambda a, b: a / b),
])
def test_arithmetic_operators_tensor_tensor(op, ref):
    assert_tensor(op(T(A), T(B)), ref(A.astype(np.float64), B.astype(np.float64)), flow.float32)
    assert_tensor(op(T(B), T(A)), ref(B.astype(np.float64), A.astype(np.float64)), flow.float32)


def test_arithmetic_operators_with_scalars_on_either_side():
    a = A.astype(np.float64)
    assert_tensor(T(A) + 2, a + 2, flow.float32)
    assert_tensor(2 + T(A), 2 + a, flow.float32)
    assert_tensor(2 - T(A), 2 - a, flow.float32)
    assert_tensor(T(A) - 2, a - 2, flow.float32)
    assert_tensor(T(A) * 3, a * 3, flow.float32)
    assert_tensor(3 * T(A), 3 * a, flow.float32)
    assert_tensor(1 / T(A), 1 / a, flow.float32)
    assert_tensor(T(A) / 4, a / 4, flow.float32)
    assert_tensor(-T(A), -a, flow.float32)
    assert_tensor(2.5 - T([1, 2], np.int64), [1.5, 0.5], flow.float32)
    assert_tensor(T([1, 2], np.int32) * True, [1, 2], flow.int32)


def test_numpy_scalars_on_the_left_give_tensors():
    # NumPy scalars defer to the tensor's reflected operators (Tensor.__array_priority__).
    assert_tensor(np.float32(2.0) * T(A), 2 * A.astype(np.float64), flow.float32)
    assert_tensor(np.int64(1) - T([1, 2], np.int8), [0, -1], flow.int8)
    assert_tensor(np.float64(1.0) / T([2, 4], np.int32), [0.5, 0.25], flow.float32)
    assert_tensor(T([1.0], np.float16) + np.float64(0.5), [1.5], flow.float16)


@pytest.mark.parametrize("op,ref", [
    (operator.eq, np.equal), (operator.ne, np.not_equal), (operator.lt, np.less), (operator.le, np.less_equal),
    (operator.gt, np.greater), (operator.ge, np.greater_equal),
])
def test_comparison_operators(op, ref):
    a, b = A.copy(), B.copy()
    a[0, 0] = b[0]
    assert_tensor(op(T(a), T(b)), ref(a, b), flow.bool)
    assert_tensor(op(T(a), 3.0), ref(a, np.float32(3.0)), flow.bool)
    assert_tensor(op(T([1, 2, 3], np.int64), 2), ref(np.array([1, 2, 3]), 2), flow.bool)


def test_reflected_comparisons_with_scalar_on_the_left():
    x = T([1, 2, 3], np.int32)
    assert_tensor(2 < x, [False, False, True], flow.bool)   # Python calls x > 2
    assert_tensor(2 >= x, [True, True, False], flow.bool)   # x <= 2
    assert_tensor(2 == x, [False, True, False], flow.bool)  # x == 2


def test_comparison_with_non_numbers():
    x = T([1.0, 2.0])
    assert (x == None) is False
    assert (x != None) is True
    assert (x == "a") is False
    with pytest.raises(TypeError):
        x < "a"  # noqa: B015


def test_matmul_operator():
    a, b = A.astype(np.float64), np.arange(6, dtype=np.float64).reshape(3, 2)
    assert_tensor(T(A) @ T(b.astype(np.float32)), np.einsum("ij,jk->ik", a, b), flow.float32)
    assert_tensor(T(B) @ T(B), float((B.astype(np.float64) ** 2).sum()), flow.float32)
    assert_tensor(T(A).matmul(T(B)), np.einsum("ij,j->i", a, B.astype(np.float64)), flow.float32)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        T(A) @ T(A)
    with pytest.raises(TypeError):
        T(A) @ 2


def test_unsupported_operands_raise_type_error():
    x = T([1.0])
    for op in (operator.add, operator.sub, operator.mul, operator.truediv):
        with pytest.raises(TypeError):
            op(x, "a")
        with pytest.raises(TypeError):
            op("a", x)
    with pytest.raises(TypeError):
        x + [1.0]


def test_inplace_operators_mutate_and_return_the_same_tensor():
    x = T(A.copy())
    buf, alias = x.numpy(), x
    x += T(B)
    x -= 1
    x *= T(2.0, np.float64)  # a 0-d float64 computes in float32 and stays float32
    x /= 4
    assert x is alias and x.numpy() is buf and x.dtype is flow.float32
    np.testing.assert_allclose(buf, (A.astype(np.float64) + B - 1) * 2 / 4, rtol=1e-6)


def test_inplace_operator_errors_leave_the_tensor_unchanged():
    x = T([1, 2, 3], np.int32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        x /= 2
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        x += 0.5
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x += T(np.ones((2, 3), np.int32))
    b = T([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        b -= b
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(b.numpy(), [True, False])


def test_methods():
    x, y = T(A), T(B)
    a, b = A.astype(np.float64), B.astype(np.float64)
    assert_tensor(x.add(y), a + b, flow.float32)
    assert_tensor(x.add(y, alpha=2), a + 2 * b, flow.float32)
    assert_tensor(x.sub(1.5), a - 1.5, flow.float32)
    assert_tensor(x.sub(y, alpha=0.5), a - 0.5 * b, flow.float32)
    assert_tensor(x.mul(y), a * b, flow.float32)
    assert_tensor(x.div(y), a / b, flow.float32)
    assert_tensor(x.neg(), -a, flow.float32)
    assert_tensor(x.exp(), np.e ** a, flow.float32)
    assert_tensor(x.relu(), np.where(a > 0, a, 0.0), flow.float32)
    for name, ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                      ("gt", np.greater), ("ge", np.greater_equal)]:
        assert_tensor(getattr(x, name)(y), ref(a, b), flow.bool)
        assert_tensor(getattr(x, name)(0.5), ref(a, 0.5), flow.bool)
    assert_tensor(x.sum(), a.sum(), flow.float32)
    assert_tensor(x.sum(1), a.sum(1), flow.float32)
    assert_tensor(x.sum(dim=0, keepdim=True), a.sum(0, keepdims=True), flow.float32)
    assert_tensor(x.sum((0, 1), dtype=flow.float64), a.sum(), flow.float64)
    assert_tensor(T([[1, 2], [3, 4]], np.int8).sum(0), [4, 6], flow.int64)


def test_inplace_methods():
    x = T(A.copy())
    a = A.astype(np.float64)
    assert x.add_(T(B)) is x
    assert x.sub_(T(B), alpha=2) is x
    assert x.mul_(3) is x
    assert x.div_(T([2.0], np.float32)) is x
    np.testing.assert_allclose(x.numpy(), (a - B) * 3 / 2, rtol=1e-6)
    assert x.relu_() is x
    np.testing.assert_allclose(x.numpy(), np.maximum((a - B) * 3 / 2, 0), rtol=1e-6)
    i = T([1, 2], np.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.div_(2)
    with pytest.raises(TypeError):
        x.add_(1, inplace=False)


def test_operators_on_meta_tensors():
    x, y = M((2, 3), flow.int32), M((4, 1, 3), flow.float16)
    for out, shape, dtype in [(x + y, (4, 2, 3), flow.float16), (x * 2, (2, 3), flow.int32),
                              (x / 2, (2, 3), flow.float32), (1 - x, (2, 3), flow.int32),
                              (x < y, (4, 2, 3), flow.bool), (-x, (2, 3), flow.int32),
                              (x @ M((3, 5), flow.int32), (2, 5), flow.int32), (x.sum(1), (2,), flow.int64)]:
        assert out.device is META and tuple(out.shape) == shape and out.dtype is dtype
    alias = x
    x += 1
    assert x is alias


def test_tensors_stay_hashable():
    x = T([1.0])
    assert {x: 1}[x] == 1
