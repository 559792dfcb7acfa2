"""Gradient rows (framework/derivatives.py): ops defined here, outside the package, get their backward from
rows; gradients are checked against finite differences and hand-written NumPy formulas."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd import gradcheck, gradgradcheck
from oneflow_lite.autograd.grad_function import grad_entry, register_op_grad
from oneflow_lite.framework.calls import F
from oneflow_lite.framework.derivatives import derivative, find_rows, remove_derivative
from oneflow_lite.framework.errors import RegistrationError
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import Arg, find, register_user_op
from oneflow_lite.interpreters.op_interp_util import dispatch


def _define(op_type, inputs, outputs, kernel, attrs=None, infer_shape=None, infer_dtype=None):
    if find(op_type) is None:
        register_user_op(op_type, inputs=inputs, outputs=outputs, attrs=attrs,
                         infer_shape=infer_shape or (lambda ctx: ctx.input_metas[0].shape),
                         infer_dtype=infer_dtype or (lambda ctx: ctx.input_metas[0].dtype))
        flow.dispatch.register_kernel(op_type, "cpu", kernel)


# y = k * x**2 (attr k)
_define("rows_test_sqscale", ["x"], ["y"], lambda ctx, x: ctx.attrs["k"] * x * x, attrs={"k": ("double", 3.0)})
derivative("rows_test_sqscale", x=lambda dy, x, k: F.mul_scalar(F.mul(dy, x), 2.0 * k))

# y = x * w (+ b): an optional input, reduce_to from metas
_define("rows_test_affine", ["x", "w", Arg("b", optional=True)], ["y"],
        lambda ctx, x, w, b=None: x * w + (0 if b is None else b),
        infer_shape=lambda ctx: np.broadcast_shapes(*[m.shape for m in ctx.input_metas]))
derivative("rows_test_affine",
           x=lambda dy, w, x_meta: F.reduce_to(F.mul(dy, w), x_meta.shape),
           w=lambda dy, x, w_meta: F.reduce_to(F.mul(dy, x), w_meta.shape),
           b=lambda dy, b_meta: F.reduce_to(dy, b_meta.shape))

# out = sum of a variadic input ("in", a Python keyword: row in_)
_define("rows_test_sum_n", [Arg("in", variadic=True)], ["out"], lambda ctx, *xs: sum(xs))
derivative("rows_test_sum_n", in_=lambda dout, in_meta: [dout for _ in in_meta])

# z = x * y with one joint formula
_define("rows_test_mul", ["x", "y"], ["z"], lambda ctx, x, y: x * y)
derivative("rows_test_mul", name="RowsMul",
           joint=lambda needs, dz, x, y: (F.mul(dz, y) if needs[0] else None, F.mul(dz, x) if needs[1] else None))

# two outputs (2x, 3x): either grad may be absent
_define("rows_test_two", ["x"], ["a", "b"], lambda ctx, x: (2 * x, 3 * x),
        infer_shape=lambda ctx: (ctx.shape("x"), ctx.shape("x")),
        infer_dtype=lambda ctx: (ctx.dtype("x"), ctx.dtype("x")))


def _two_grad(da, db):
    parts = [F.mul_scalar(g, k) for g, k in ((da, 2.0), (db, 3.0)) if g is not None]
    return parts[0] if len(parts) == 1 else F.add(*parts)


derivative("rows_test_two", x=_two_grad)


def _call(op_type, inputs, outputs, *tensors, **attrs):
    b = OpBuilder(op_type)
    for name in dict.fromkeys(inputs):
        b.input(name, inputs.count(name))
    for name in outputs:
        b.output(name)
    from oneflow_lite.framework.attr import AttrMap
    out = dispatch(b.build(), tensors, AttrMap(attrs) if attrs else None)
    return out if len(out) > 1 else out[0]


def _leaf(*shape, seed=0):
    return flow.tensor(np.random.default_rng(seed).uniform(-2, 2, shape)).requires_grad_()


def test_rows_with_an_attr_give_the_gradient_and_the_second_derivative():
    x = _leaf(3, 4)
    y = _call("rows_test_sqscale", ["x"], ["y"], x, k=1.5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 1.5 * x.numpy(), rtol=1e-12)
    assert gradcheck(lambda t: _call("rows_test_sqscale", ["x"], ["y"], t, k=0.5), (_leaf(2, 3, seed=1),))
    assert gradgradcheck(lambda t: _call("rows_test_sqscale", ["x"], ["y"], t, k=0.5), (_leaf(2, 3, seed=2),))


@pytest.mark.parametrize("with_bias", [False, True])
def test_rows_with_an_optional_input_and_broadcasting(with_bias):
    x, w = _leaf(3, 4), _leaf(4, seed=1)
    names = ["x", "w", "b"] if with_bias else ["x", "w"]
    args = (x, w, _leaf(1, 4, seed=2)) if with_bias else (x, w)
    y = _call("rows_test_affine", names, ["y"], *args)
    g = np.random.default_rng(5).uniform(-1, 1, (3, 4))
    y.backward(flow.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), g * w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), (g * x.numpy()).sum(0), rtol=1e-12)
    if with_bias:
        np.testing.assert_allclose(args[2].grad.numpy(), g.sum(0, keepdims=True), rtol=1e-12)
    assert gradcheck(lambda *t: _call("rows_test_affine", names, ["y"], *t), args)


def test_rows_of_a_variadic_input():
    xs = [_leaf(2, 3, seed=i) for i in range(3)]
    out = _call("rows_test_sum_n", ["in", "in", "in"], ["out"], *xs)
    (out * out).sum().backward()
    expected = 2 * sum(x.numpy() for x in xs)
    for x in xs:
        np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_a_joint_row_computes_only_the_needed_gradients_and_names_the_node():
    x = _leaf(3)
    y = flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64)
    z = _call("rows_test_mul", ["x", "y"], ["z"], x, y)
    assert z.grad_fn.name() == "RowsMulBackward"
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, 3.0])
    assert gradgradcheck(lambda a, b: _call("rows_test_mul", ["x", "y"], ["z"], a, b), (_leaf(3, seed=3), _leaf(3, seed=4)))


def test_only_tensors_a_needed_row_uses_are_saved():
    # y does not require grad: the row of x saves y, the row of y (x) is not needed, so x is not saved and
    # writing x in place after the forward does not break backward.
    x = _leaf(3)
    w = flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64)
    y = _call("rows_test_affine", ["x", "w"], ["y"], x * 1.0, w)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0, 3.0])
    w2 = flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64).requires_grad_()
    x2 = flow.tensor([4.0, 5.0, 6.0], dtype=flow.float64)
    y2 = _call("rows_test_affine", ["x", "w"], ["y"], x2, w2)
    x2.add_(1.0)  # saved for w's row: backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.sum().backward()


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_rows_of_a_multi_output_op_see_none_for_absent_grads(which):
    x = _leaf(4)
    a, b = _call("rows_test_two", ["x"], ["a", "b"], x)
    loss = {"a": a.sum(), "b": b.sum(), "both": a.sum() + b.sum()}[which]
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, {"a": 2.0, "b": 3.0, "both": 5.0}[which]))


def test_the_generated_source_is_shown_one_layout_per_optional_input_pattern():
    gf, name = grad_entry("rows_test_affine")
    assert name == "RowsTestAffineBackward"
    x, w, b = _leaf(2), _leaf(2, seed=1), _leaf(2, seed=2)
    _call("rows_test_affine", ["x", "w"], ["y"], x, w)
    assert "def capture" in gf.source and "def apply" in gf.source and "(None,) * 2" in gf.source
    _call("rows_test_affine", ["x", "w", "b"], ["y"], x, w, b)
    assert "(None,) * 3" in gf.source  # the layout with the bias, compiled when first used


def test_registration_errors_name_the_op_and_leave_nothing_registered():
    _define("rows_test_err", ["x", "y"], ["z"], lambda ctx, x, y: x)
    with pytest.raises(RegistrationError, match=r"rows_test_err.*unknown parameter 'dq'.*dz"):
        derivative("rows_test_err", x=lambda dq: dq)
    with pytest.raises(RegistrationError, match=r"rows_test_err.*no input named 'w'.*x, y"):
        derivative("rows_test_err", w=lambda dz: dz)
    with pytest.raises(RegistrationError, match="either one row per differentiable input or joint="):
        derivative("rows_test_err", x=lambda dz: dz, joint=lambda dz: (dz, dz))
    with pytest.raises(RegistrationError, match="parameter 'dz' must be a plain positional parameter"):
        derivative("rows_test_err", x=lambda dz=None: dz)
    assert find_rows("rows_test_err") is None
    derivative("rows_test_err", x=lambda dz: dz)
    try:
        with pytest.raises(RegistrationError, match=r"already registered at .*test_derivative_rows.py:\d+; "
                                                    r"duplicate at .*test_derivative_rows.py:\d+"):
            derivative("rows_test_err", y=lambda dz: dz)
        with pytest.raises(RegistrationError, match="gradient rows are already registered"):
            register_op_grad("rows_test_err")(type("X", (), {"capture": lambda *a: None, "apply": lambda *a: ()}))
    finally:
        remove_derivative("rows_test_err")


def test_rows_for_a_no_grad_op_are_refused():
    if find("rows_test_nograd") is None:
        register_user_op("rows_test_nograd", inputs=["x"], outputs=["y"], no_grad=True,
                         infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))
    with pytest.raises(RegistrationError, match="rows_test_nograd.*no_grad"):
        derivative("rows_test_nograd", x=lambda dy: dy)


def test_calls_by_name_resolve_helpers_functional_functions_and_op_types():
    from oneflow_lite.autograd.grads.util import reduce_to
    assert F.reduce_to is reduce_to
    assert F.relu is flow.relu
    t = flow.tensor([-1.0, 2.0])
    np.testing.assert_array_equal(F.relu_grad(flow.tensor([5.0, 6.0]), t).numpy(), [0.0, 6.0])
    np.testing.assert_array_equal(F.ops.relu(t).numpy(), [0.0, 2.0])
    with pytest.raises(AttributeError, match="F.no_such_call: no call of that name"):
        F.no_such_call
