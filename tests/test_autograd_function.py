"""Custom ``flow.autograd.Function`` and the ``gradcheck`` / ``gradgradcheck`` tools themselves."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from oneflow_lite.dispatch import DISPATCHER, DispatchKey


def leaf(values):
    return flow.tensor(np.asarray(values, dtype=np.float64)).requires_grad_()


def const(values):
    return flow.tensor(np.asarray(values, dtype=np.float64))


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = flow.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return dy * y


_needs_input_grad_seen = []


class ScaleBy(Function):
    """``x * k`` with a non-tensor argument; records needs_input_grad."""

    @staticmethod
    def forward(ctx, x, k, w):
        _needs_input_grad_seen.append(ctx.needs_input_grad)
        ctx.k = k
        ctx.save_for_backward(x, w)
        return x * w * k

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        return dy * w * ctx.k, None, (dy * x * ctx.k).sum(0)


class TestFunction:
    def test_forward_backward(self):
        x = leaf([0.5, -1.0])
        y = Exp.apply(x)
        assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
        assert y.grad_fn.next_functions[0][0].variable is x
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, -1.0]))

    def test_forward_is_not_recorded(self):
        x = leaf([1.0])
        y = Exp.apply(x)
        assert type(y.grad_fn).__name__ == "FunctionNode"  # not the inner exp op's node

    def test_dispatched_through_the_autograd_key(self):
        assert DISPATCHER.entry("autograd_function").provenance[DispatchKey.Autograd][0] == "fallback"

    def test_gradcheck_and_gradgradcheck(self):
        x = leaf([0.3, -0.7, 1.1])
        assert gradcheck(Exp.apply, x)
        assert gradgradcheck(Exp.apply, x)  # backward is made of differentiable ops

    def test_non_tensor_args_and_needs_input_grad(self):
        _needs_input_grad_seen.clear()
        x, w = leaf([[1.0, 2.0], [3.0, 4.0]]), const([0.5, -1.0])
        y = ScaleBy.apply(x, 3.0, w)
        assert _needs_input_grad_seen == [(True, False, False)]
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.tile([1.5, -3.0], (2, 1)))
        w.requires_grad_()
        assert gradcheck(lambda a, b: ScaleBy.apply(a, 2.0, b), (x, w))

    def test_no_input_requires_grad(self):
        y = Exp.apply(const([1.0]))
        assert not y.requires_grad and y.grad_fn is None

    def test_wrong_number_of_grads(self):
        class Bad(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        z = Bad.apply(leaf([1.0]), leaf([2.0]))
        with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients "
                                               r"\(expected 2, got 1\)"):
            z.sum().backward()

    def test_extra_none_grads_are_allowed(self):
        class Extra(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None, None

        x = leaf([1.0])
        Extra.apply(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0])

    def test_grad_for_non_tensor_argument_is_an_error(self):
        class Bad(Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2, but the "
                                               "corresponding forward input was not a Tensor"):
            Bad.apply(leaf([1.0]), 2.0).sum().backward()

    def test_mark_non_differentiable_and_materialized_grads(self):
        seen = []

        class Split(Function):
            @staticmethod
            def forward(ctx, x):
                a, idx = x * 2, x > 0
                ctx.mark_non_differentiable(idx)
                return a, x * 3, idx

            @staticmethod
            def backward(ctx, ga, gb, gidx):
                seen.append((gb.numpy().copy(), gidx.numpy().copy()))
                return ga * 2 + gb * 3

        x = leaf([1.0, -1.0])
        a, b, idx = Split.apply(x)
        assert a.requires_grad and b.requires_grad and not idx.requires_grad
        a.sum().backward()
        np.testing.assert_array_equal(seen[0][0], [0.0, 0.0])  # b's missing grad is zeros
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])

    def test_returning_an_input_makes_a_new_tensor(self):
        class Identity(Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 5

        x = leaf([1.0, 2.0])
        y = Identity.apply(x)
        assert y is not x and x.is_leaf and not y.is_leaf
        assert np.shares_memory(y.numpy(), x.numpy())
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0])

    def test_saved_output_modified_in_place(self):
        y = Exp.apply(leaf([1.0]))
        y.mul_(2.0)
        with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*which is output 0 of "
                                               r"ExpBackward, is at version 1; expected version 0"):
            y.sum().backward()

    def test_retain_graph_release(self):
        y = Exp.apply(leaf([1.0])).sum()
        y.backward()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()

    def test_keyword_arguments_rejected(self):
        with pytest.raises(TypeError, match="positional arguments only"):
            Exp.apply(x=leaf([1.0]))


class TestGradcheck:
    def test_detects_a_wrong_backward(self):
        class WrongExp(Exp):
            @staticmethod
            def backward(ctx, dy):
                (y,) = ctx.saved_tensors
                return dy * y * 1.01

        x = leaf([0.1, 0.2])
        with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
            gradcheck(WrongExp.apply, x)
        assert gradcheck(WrongExp.apply, x, raise_exception=False) is False

    def test_numerical_jacobian_value(self):
        # the check compares against central differences: a function whose backward is right passes with
        # tight tolerances in float64
        x = leaf([0.5, 1.5])
        assert gradcheck(lambda a: a * a * a, x, atol=1e-8, rtol=1e-6)

    def test_detects_a_wrong_second_derivative(self):
        class CubeWrongSecond(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, dy):
                (x,) = ctx.saved_tensors
                return dy * 3.0 * x.detach() * x.detach()  # right value, but not differentiable in x

        x = leaf([0.5, 1.5])
        assert gradcheck(CubeWrongSecond.apply, x)
        with pytest.raises(GradcheckError, match="Jacobian mismatch"):
            gradgradcheck(CubeWrongSecond.apply, x)

    def test_needs_an_input_requiring_grad(self):
        with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
            gradcheck(lambda a: a * 2, const([1.0]))

    def test_warns_for_single_precision(self):
        x = flow.tensor(np.array([1.0, 2.0], dtype=np.float32)).requires_grad_()
        with pytest.warns(UserWarning, match="is not a double precision floating point"):
            gradcheck(lambda a: a * 2, x, eps=1e-3, atol=1e-3)


# ---- activation checkpointing (Note [Activation checkpointing]) ------------------------------------------
def test_checkpoint_gives_the_gradients_of_the_plain_computation():
    from oneflow_lite.utils.checkpoint import checkpoint, checkpoint_sequential
    w_np = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    x_np = np.array([[0.3, -0.2], [1.0, 0.4]], np.float32)
    # d/dx sum(tanh(x W^T)) = (1 - tanh^2) W, d/dW = (1 - tanh^2)^T x
    sech2 = 1 - np.tanh(x_np @ w_np.T) ** 2
    for use_reentrant in (True, False):
        w = flow.tensor(w_np, requires_grad=True)
        x = flow.tensor(x_np, requires_grad=True)
        y = checkpoint(lambda t: flow.tanh(flow.matmul(t, w.T)), x, use_reentrant=use_reentrant)
        assert y.requires_grad
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), sech2 @ w_np, rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), sech2.T @ x_np, rtol=1e-6)
    w = flow.tensor(w_np, requires_grad=True)  # no argument requires grad: only the non-reentrant one records
    y = checkpoint(lambda t, scale: flow.tanh(flow.matmul(t, w.T)) * scale, flow.tensor(x_np), use_reentrant=False,
                   scale=2.0)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * sech2.T @ x_np, rtol=1e-6)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients will be None"):
        assert not checkpoint(lambda t: t * w, flow.ones(2, 2), use_reentrant=True).requires_grad
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, flow.ones(2, requires_grad=True))
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t, flow.ones(2), use_reentrant=True, scale=2.0)
    seq = flow.nn.Sequential(flow.nn.Linear(2, 2), flow.nn.Tanh(), flow.nn.Linear(2, 2), flow.nn.Tanh())
    x = flow.tensor(x_np, requires_grad=True)
    checkpoint_sequential(seq, 2, x, use_reentrant=False).sum().backward()
    expect = flow.tensor(x_np, requires_grad=True)
    seq(expect).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), expect.grad.numpy(), rtol=1e-6)


def test_checkpoint_recomputes_dropout_with_the_same_mask():
    from oneflow_lite.utils.checkpoint import checkpoint
    flow.manual_seed(3)
    x = flow.ones(64, requires_grad=True)
    y = checkpoint(lambda t: flow.nn.functional.dropout(t * 3, 0.5, training=True), x, use_reentrant=False)
    y.sum().backward()  # the recomputation draws the forward's mask again: the gradient is where y is nonzero
    np.testing.assert_array_equal(x.grad.numpy(), np.where(y.detach().numpy() != 0, 6.0, 0.0))
    assert 0 < (y.detach().numpy() != 0).sum() < 64
