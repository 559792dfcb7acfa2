"""The activation layers and functions of the nn sweep: CELU, GLU, Hardshrink, LogSigmoid, PReLU, RReLU,
Softmin, Softmax2d, Softshrink, Softsign, Tanhshrink, Threshold, the in-place functional forms and
gumbel_softmax; values against NumPy formulas (the op database checks every dtype and gradcheck), errors with
PyTorch's messages, and, where torch is installed, the same calls against torch.nn.functional."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.framework.errors import OpKernelNotFoundError

F = nn.functional
_rng = np.random.default_rng(11)


def _x(*shape):
    return _rng.standard_normal(shape)


# ---- layers -----------------------------------------------------------------------------------------------
def test_layer_reprs_match_pytorch():
    assert repr(nn.CELU()) == "CELU(alpha=1.0)"
    assert repr(nn.CELU(0.5, inplace=True)) == "CELU(alpha=0.5, inplace=True)"
    assert repr(nn.GLU()) == "GLU(dim=-1)"
    assert repr(nn.Hardshrink()) == "Hardshrink(0.5)"
    assert repr(nn.Softshrink(0.3)) == "Softshrink(0.3)"
    assert repr(nn.PReLU(3)) == "PReLU(num_parameters=3)"
    assert repr(nn.RReLU(0.1, 0.3, True)) == "RReLU(lower=0.1, upper=0.3, inplace=True)"
    assert repr(nn.Softmin(1)) == "Softmin(dim=1)"
    assert repr(nn.Threshold(0.1, 20.0)) == "Threshold(threshold=0.1, value=20.0)"
    assert repr(nn.Threshold(0.1, 20.0, inplace=True)) == "Threshold(threshold=0.1, value=20.0, inplace=True)"
    for layer in (nn.LogSigmoid(), nn.Softsign(), nn.Tanhshrink(), nn.Softmax2d()):
        assert repr(layer) == type(layer).__name__ + "()"


def test_elementwise_layers_compute_their_formulas():
    x = _x(2, 3, 4)
    t = flow.tensor(x)
    expected = {
        nn.CELU(0.5): np.where(x > 0, x, 0.5 * (np.exp(x / 0.5) - 1)),
        nn.Hardshrink(0.7): np.where(np.abs(x) > 0.7, x, 0.0),
        nn.Softshrink(0.7): np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0.0)),
        nn.LogSigmoid(): -np.log1p(np.exp(-x)),
        nn.Softsign(): x / (1 + np.abs(x)),
        nn.Tanhshrink(): x - np.tanh(x),
        nn.Threshold(0.2, -5.0): np.where(x > 0.2, x, -5.0),
    }
    for layer, ref in expected.items():
        np.testing.assert_allclose(layer(t).numpy(), ref, rtol=1e-12, atol=1e-12, err_msg=repr(layer))


def test_glu_halves_the_dim():
    x = _x(2, 6, 3)
    a, b = x[:, :3], x[:, 3:]
    np.testing.assert_allclose(nn.GLU(1)(flow.tensor(x)).numpy(), a / (1 + np.exp(-b)), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 2 is size 3"):
        F.glu(flow.tensor(x))
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(flow.tensor(1.0))


def test_prelu_layer_parameter_and_gradient():
    layer = nn.PReLU(3, init=0.1)
    assert list(dict(layer.named_parameters())) == ["weight"]
    np.testing.assert_array_equal(layer.weight.numpy(), np.full(3, 0.1, np.float32))
    x = flow.tensor(_x(2, 3, 4).astype(np.float32))
    y = layer(x)
    xn = x.numpy()
    np.testing.assert_allclose(y.numpy(), np.where(xn > 0, xn, 0.1 * xn), rtol=1e-6)
    y.sum().backward()
    # d/dw_c = sum of the negative inputs of channel c
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.where(xn > 0, 0, xn).sum((0, 2)), rtol=1e-5)


def test_prelu_errors_name_the_mismatch():
    with pytest.raises(RuntimeError, match="Found parameter numbers = 4 and channel size = 3"):
        F.prelu(flow.randn(2, 3), flow.ones(4))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"):
        F.prelu(flow.randn(2, 3), flow.ones(1, 3))
    with pytest.raises(OpKernelNotFoundError, match="prelu"):
        F.prelu(flow.tensor([1, -2]), flow.tensor([1]))
    assert flow.randn(2, 3).prelu(flow.tensor([0.5])).shape == (2, 3)


def test_softmin_and_softmax2d():
    x = _x(2, 3, 4, 5)
    e = np.exp(-x)
    np.testing.assert_allclose(nn.Softmin(1)(flow.tensor(x)).numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    s = np.exp(x)
    np.testing.assert_allclose(nn.Softmax2d()(flow.tensor(x)).numpy(), s / s.sum(1, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(flow.tensor(x[0, 0]))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin has been deprecated"):
        F.softmin(flow.tensor(x[0, 0]))


@pytest.mark.parametrize("fn", [F.elu, F.celu])
def test_elu_and_celu_of_signed_zero_are_the_zero_whatever_alpha(fn):
    # PyTorch: elu(±0, alpha=inf) is ±0 (the identity side), not expm1(0) * inf = NaN; the gradient at 0 is alpha's
    x = flow.tensor([0.0, -0.0, -1.0, 2.0], requires_grad=True)
    y = fn(x, float("inf"))
    got = y.detach().numpy()
    assert got[:2].tolist() == [0.0, 0.0] and np.signbit(got[:2]).tolist() == [False, True]
    assert got[3] == 2.0 and (np.isnan(got[2]) if fn is F.celu else got[2] == -np.inf)
    if fn is F.elu:
        y.sum().backward()
        assert x.grad.numpy().tolist() == [np.inf, np.inf, np.inf, 1.0]


def test_rrelu_eval_is_leaky_relu_with_the_mean_slope():
    x = _x(50)
    layer = nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(layer(flow.tensor(x)).numpy(), np.where(x > 0, x, 0.2 * x), rtol=1e-12)


def test_rrelu_training_draws_a_slope_per_negative_element():
    x = flow.tensor(-np.ones(4000))
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    slopes = -y
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.01  # U(0.1, 0.3)
    assert len(np.unique(slopes)) > 100
    x = flow.tensor(_x(10) ** 2, requires_grad=True)  # positive inputs pass through
    np.testing.assert_array_equal(F.rrelu(x, training=True).detach().numpy(), x.detach().numpy())
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
        F.rrelu(x, 0.5, 0.2)


def test_rrelu_training_gradient_is_the_drawn_slope():
    x = flow.tensor(-np.ones(20), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -y.detach().numpy(), rtol=1e-12)


def test_inplace_forms_write_into_their_input():
    base = _x(3, 4)
    cases = {
        "relu_": (F.relu_, (), np.maximum(base, 0)),
        "elu_": (F.elu_, (0.5,), np.where(base > 0, base, 0.5 * (np.exp(base) - 1))),
        "celu_": (F.celu_, (2.0,), np.where(base > 0, base, 2.0 * (np.exp(base / 2.0) - 1))),
        "leaky_relu_": (F.leaky_relu_, (0.2,), np.where(base > 0, base, 0.2 * base)),
        "hardtanh_": (F.hardtanh_, (-0.5, 0.5), np.clip(base, -0.5, 0.5)),
        "threshold_": (F.threshold_, (0.1, 7.0), np.where(base > 0.1, base, 7.0)),
        "rrelu_": (F.rrelu_, (0.25, 0.25), np.where(base > 0, base, 0.25 * base)),
    }
    for name, (fn, args, ref) in cases.items():
        t = flow.tensor(base.copy())
        out = fn(t, *args)
        assert out is t, name
        np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12, err_msg=name)
    t = flow.tensor(base.copy())
    F.selu_(t)
    assert not np.allclose(t.numpy(), base)


def test_inplace_activation_on_a_non_leaf_keeps_the_gradient():
    a = flow.tensor(np.array([-1.0, 2.0]), requires_grad=True)
    y = a * 1
    F.celu_(y, 2.0)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [np.exp(-0.5), 1.0], rtol=1e-12)
    a = flow.tensor(np.array([-1.0, 2.0]), requires_grad=True)
    y = a * 1
    nn.Threshold(0.0, 5.0, inplace=True)(y)
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 1.0])


def test_threshold_of_integers_truncates_the_scalars():
    t = flow.tensor([0, 1, 2], dtype=flow.int64)
    assert F.threshold(t, -0.5, 7.5).tolist() == [7, 1, 2]  # threshold 0, value 7, as PyTorch
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8 without overflow"):
        F.threshold(flow.tensor([1, 2], dtype=flow.uint8), 1, -7)


def test_dtype_errors_name_the_function():
    ints = flow.tensor([1, 2])
    for fn in (F.celu, F.hardshrink, F.softshrink, F.logsigmoid, F.glu, F.rrelu):
        with pytest.raises(OpKernelNotFoundError):
            fn(ints)
    assert F.softsign(ints).dtype is flow.float32  # true division, as PyTorch
    assert F.tanhshrink(ints).dtype is flow.float32
    with pytest.raises(RuntimeError, match="softshrink: lambda must be greater or equal to 0"):
        F.softshrink(flow.randn(3), -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(flow.randn(3), 0.0)


def test_gumbel_softmax_samples_the_categorical_distribution():
    logits = flow.tensor(np.log(np.array([[0.1, 0.2, 0.7]])).repeat(4000, 0))
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).numpy(), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    np.testing.assert_allclose(h.mean(0), [0.1, 0.2, 0.7], atol=0.03)  # argmax of logits + Gumbel noise


def test_gumbel_softmax_hard_passes_the_soft_gradient():
    logits = flow.tensor(_x(2, 5), requires_grad=True)
    with flow.framework.generator.using_generator(flow.Generator().manual_seed(3)):
        y = F.gumbel_softmax(logits, hard=True)
    y.backward(flow.tensor(_x(2, 5)))
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits.detach(), eps=1e-3)


def test_torch_names_resolve_under_mock_torch():
    with flow.mock_torch.enable():
        import torch
        import torch.nn.functional as TF
        for name in ("CELU", "GLU", "Hardshrink", "LogSigmoid", "PReLU", "RReLU", "Softmin", "Softmax2d",
                     "Softshrink", "Softsign", "Tanhshrink", "Threshold"):
            assert getattr(torch.nn, name) is getattr(nn, name)
        for name in ("relu_", "celu_", "selu_", "rrelu", "rrelu_", "threshold", "threshold_", "prelu", "hardshrink"):
            assert callable(getattr(torch, name))
        assert TF.softsign is F.softsign


# ---- against PyTorch (optional) -----------------------------------------------------------------------------
_TORCH_CASES = [
    ("celu", (0.7,)), ("hardshrink", (0.3,)), ("softshrink", (0.3,)), ("threshold", (0.2, -3.0)),
    ("tanhshrink", ()), ("softsign", ()), ("logsigmoid", ()), ("softmin", (1,)), ("glu", (1,)), ("rrelu", ()),
]


@pytest.mark.parametrize("name, args", _TORCH_CASES)
def test_matches_torch(name, args):
    torch = pytest.importorskip("torch")
    x = _x(3, 4, 5)
    g = np.cos(np.arange(60.0))
    results = []
    for lib, fn in ((torch, getattr(torch.nn.functional, name)), (flow, getattr(F, name))):
        t = lib.tensor(x.copy(), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(t, *args)
        out.backward(lib.tensor(g[: out.numel()].reshape(tuple(out.shape))))
        results.append((out.detach().numpy(), t.grad.numpy()))
    (o1, g1), (o2, g2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-10, atol=1e-12)
    # PyTorch's celu backward rounds 1 / alpha to float32 (derivatives.yaml): a relative 1e-7 in float64
    np.testing.assert_allclose(g2, g1, rtol=1e-6, atol=1e-12)


def test_prelu_matches_torch():
    torch = pytest.importorskip("torch")
    x, w = _x(2, 4, 3), np.array([0.1, -0.2, 0.3, 0.4])
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    fx, fw = flow.tensor(x, requires_grad=True), flow.tensor(w, requires_grad=True)
    torch.nn.functional.prelu(tx, tw).sum().backward()
    F.prelu(fx, fw).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
