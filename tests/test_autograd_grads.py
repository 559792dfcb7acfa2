"""Grad functions of the built-in ops: gradcheck (and gradgradcheck for a representative set) in float64
against finite differences, hand-derived NumPy gradients, and a two-layer MLP.
"""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd import gradcheck, gradgradcheck
from oneflow_lite.autograd.grad_function import registered_grad_ops
from oneflow_lite.framework.op_registry import lookup, registered_op_types

rng = np.random.default_rng(1234)


def leaf(shape_or_values, low=-2.0, high=2.0, away_from_zero=False):
    if isinstance(shape_or_values, tuple):
        values = rng.uniform(low, high, size=shape_or_values)
        if away_from_zero:
            values = np.where(np.abs(values) < 0.3, 0.3 + np.abs(values), values)
    else:
        values = np.asarray(shape_or_values, dtype=np.float64)
    return flow.tensor(values).requires_grad_()


# ---- every differentiable op has a grad function ------------------------------------------------------
NOT_DIFFERENTIABLE = {"broadcast_equal", "broadcast_not_equal", "broadcast_less", "broadcast_less_equal",
                      "broadcast_greater", "broadcast_greater_equal", "scalar_logical_equal",
                      "scalar_logical_not_equal", "scalar_logical_less", "scalar_logical_less_equal",
                      "scalar_logical_greater", "scalar_logical_greater_equal"}


def test_every_differentiable_op_has_a_grad_function():
    missing = []
    for op_type in registered_op_types():
        if op_type.startswith("ag_test_") or op_type in NOT_DIFFERENTIABLE or lookup(op_type).no_grad:
            continue
        if op_type not in registered_grad_ops():
            missing.append(op_type)
    # test ops of other test modules (registered outside the package) are not built-in ops
    missing = [m for m in missing if not ("/tests/" in lookup(m).location or lookup(m).location.startswith("tests/"))]
    assert missing == []


def test_comparisons_are_not_recorded():
    x = leaf((3,))
    for out in (x > 0, x < x * 2, x == 1.0, x != x + 1, x >= 0, x <= 1):
        assert out.dtype is flow.bool and not out.requires_grad and out.grad_fn is None


# ---- gradcheck per op ---------------------------------------------------------------------------------
UNARY = {
    "relu": lambda x: flow.relu(x),
    "neg": lambda x: -x,
    "exp": lambda x: flow.exp(x),
    "scalar_add": lambda x: x + 2.5,
    "scalar_sub": lambda x: x - 2.5,
    "scalar_rsub": lambda x: 2.5 - x,
    "scalar_mul": lambda x: x * -1.5,
    "scalar_mul_int": lambda x: x * 3,
    "scalar_rmul": lambda x: 3 * x,
    "scalar_div": lambda x: x / 4.0,
    "scalar_rdiv": lambda x: 2.0 / x,
    "sum_all": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1),
    "sum_dims_keepdim": lambda x: flow.sum(x, (0, -1), keepdim=True),
    "reshape": lambda x: x.reshape((4, 3)),
    "reshape_infer": lambda x: x.reshape((-1,)),
    "transpose": lambda x: x.transpose(0, 1),
    "getitem_int": lambda x: x[1],
    "getitem_slices": lambda x: x[1:, ::2],
    "getitem_none_ellipsis": lambda x: x[None, ..., 2],
    "cast_roundtrip": lambda x: x.float().double(),
    "copy": lambda x: x.to("cpu", copy=True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_gradcheck_unary(name):
    x = leaf((3, 4), away_from_zero=name in ("relu", "scalar_rdiv"))
    if name == "cast_roundtrip":  # through float32 and back: compare with float32-level tolerances
        assert gradcheck(UNARY[name], x, eps=1e-3, atol=1e-4, rtol=1e-3)
    else:
        assert gradcheck(UNARY[name], x)


BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((), (2, 3))]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_gradcheck_broadcasting_binary(op, shapes):
    x = leaf(shapes[0])
    y = leaf(shapes[1], away_from_zero=op == "div")
    assert gradcheck(getattr(flow, op), (x, y))


def test_add_with_alpha_and_one_side_requiring_grad():
    x = leaf((2, 3))
    c = flow.tensor(rng.uniform(size=(3,)))
    assert gradcheck(lambda a: flow.add(a, c, alpha=-2.0), x)
    assert gradcheck(lambda a: flow.sub(c, a, alpha=3), x)


def test_type_promotion_grad_reaches_the_float_input():
    x = leaf((3,))
    i = flow.tensor([1, 2, 3])
    assert gradcheck(lambda a: a * i + i, x)
    assert gradcheck(lambda a: a.float() * 2.0, x, eps=1e-3, atol=1e-4)


MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)), ((2, 3, 4), (4, 5)),
                 ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_gradcheck_matmul(shapes):
    a, b = leaf(shapes[0]), leaf(shapes[1])
    assert gradcheck(flow.matmul, (a, b))


def test_matmul_hand_derived():
    a, b = leaf((3, 4)), leaf((4, 2))
    g = rng.uniform(size=(3, 2))
    (a @ b).backward(flow.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), g @ b.numpy().T, rtol=0, atol=1e-14)
    np.testing.assert_allclose(b.grad.numpy(), a.numpy().T @ g, rtol=0, atol=1e-14)


def test_slice_grad_values():
    x = leaf((4, 5))
    x[1:3, ::2].sum().backward()
    expected = np.zeros((4, 5))
    expected[1:3, ::2] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_broadcast_grad_reduces_to_input_shape():
    x, y = leaf((3, 1)), leaf((1, 4))
    (x * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.repeat(y.numpy().sum(), 3).reshape(3, 1), atol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), np.repeat(x.numpy().sum(), 4).reshape(1, 4), atol=1e-14)


# ---- gradgradcheck (double backward) for a representative set -----------------------------------------
SECOND_ORDER = {
    "mul": (lambda a, b: a * b, [(3, 4), (4,)]),
    "div": (lambda a, b: a / b, [(3, 4), (3, 4)]),
    "exp": (lambda a: flow.exp(a), [(3, 4)]),
    "relu": (flow.relu, [(3, 4)]),
    "relu_mul": (lambda a: flow.relu(a) * a, [(3, 4)]),
    "matmul": (lambda a, b: a @ b, [(2, 3, 4), (4, 2)]),
    "matmul_vec": (lambda a, b: a @ b, [(4,), (4, 3)]),
    "sum_shape": (lambda a: (a.reshape((4, 3)).transpose(0, 1)[1:] * a.sum(0, keepdim=True).reshape((4,))).sum(1),
                  [(3, 4)]),
    "scalar_rdiv": (lambda a: 2.0 / a, [(3,)]),
    "sub_neg": (lambda a, b: -(a - b) * a, [(3, 4), (3, 1)]),
    "cast_copy": (lambda a: (a.to("cpu", copy=True) * a).double(), [(3,)]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_gradgradcheck(name):
    fn, shapes = SECOND_ORDER[name]
    inputs = tuple(leaf(s, away_from_zero=True) for s in shapes)
    assert gradgradcheck(fn, inputs)


# ---- a two-layer MLP against hand-derived NumPy gradients ----------------------------------------------
def test_two_layer_mlp_matches_numpy():
    n, d_in, d_hidden, d_out = 8, 5, 7, 3
    X = rng.standard_normal((n, d_in))
    T = rng.standard_normal((n, d_out))
    W1, b1 = rng.standard_normal((d_in, d_hidden)), rng.standard_normal(d_hidden)
    W2, b2 = rng.standard_normal((d_hidden, d_out)), rng.standard_normal(d_out)

    x, t = flow.tensor(X), flow.tensor(T)
    w1, c1, w2, c2 = (flow.tensor(a).requires_grad_() for a in (W1, b1, W2, b2))
    h = flow.relu(x @ w1 + c1)
    out = h @ w2 + c2
    diff = out - t
    loss = (diff * diff).sum() / n
    loss.backward()

    # forward and backward by hand
    Z1 = X @ W1 + b1
    H = np.maximum(Z1, 0)
    O = H @ W2 + b2
    L = ((O - T) ** 2).sum() / n
    dO = 2 * (O - T) / n
    dW2, db2 = H.T @ dO, dO.sum(0)
    dH = dO @ W2.T
    dZ1 = dH * (Z1 > 0)
    dW1, db1 = X.T @ dZ1, dZ1.sum(0)

    assert abs(loss.item() - L) < 1e-10
    for got, want in ((w1, dW1), (c1, db1), (w2, dW2), (c2, db2)):
        assert got.grad.shape == want.shape
        np.testing.assert_allclose(got.grad.numpy(), want, rtol=0, atol=1e-10)
