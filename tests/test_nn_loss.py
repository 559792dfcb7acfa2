"""The losses of the nn sweep: their layers (arguments, buffers, reductions), PyTorch's errors, ctc_loss
(Note [CTC loss]), AdaptiveLogSoftmaxWithLoss, linear_cross_entropy and triplet_margin_with_distance_loss.
Values and gradients of the functions are checked against NumPy references in tests/op_specs/nn.py; here the
references are hand-computed or NumPy formulas, and, where torch is installed, torch.nn.functional."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

F = nn.functional
_rng = np.random.default_rng(5)


def _x(*shape):
    return flow.tensor(_rng.standard_normal(shape))


# ---- layers ---------------------------------------------------------------------------------------------
def test_loss_layers_forward_their_arguments():
    x1, x2 = _x(4, 3), _x(4, 3)
    y = flow.tensor([1, -1, 1, -1])
    pairs = [
        (nn.CosineEmbeddingLoss(0.2, reduction="sum"), (x1, x2, y),
         F.cosine_embedding_loss(x1, x2, y, 0.2, reduction="sum")),
        (nn.HingeEmbeddingLoss(0.5), (x1, flow.sign(x2)), F.hinge_embedding_loss(x1, flow.sign(x2), 0.5)),
        (nn.MarginRankingLoss(0.1, reduction="none"), (x1[:, 0], x2[:, 0], y.double()),
         F.margin_ranking_loss(x1[:, 0], x2[:, 0], y.double(), 0.1, reduction="none")),
        (nn.SoftMarginLoss(), (x1, flow.sign(x2)), F.soft_margin_loss(x1, flow.sign(x2))),
        (nn.MultiLabelSoftMarginLoss(weight=flow.tensor([1.0, 2.0, 0.5])), (x1, (x2 > 0).double()),
         F.multilabel_soft_margin_loss(x1, (x2 > 0).double(), flow.tensor([1.0, 2.0, 0.5]))),
        (nn.MultiMarginLoss(p=2, margin=0.5), (x1, flow.tensor([0, 2, 1, 1])),
         F.multi_margin_loss(x1, flow.tensor([0, 2, 1, 1]), p=2, margin=0.5)),
        (nn.MultiLabelMarginLoss(), (x1, flow.tensor([[0, -1, 0]] * 4)),
         F.multilabel_margin_loss(x1, flow.tensor([[0, -1, 0]] * 4))),
        (nn.PoissonNLLLoss(full=True), (x1, x2.abs()), F.poisson_nll_loss(x1, x2.abs(), full=True)),
        (nn.GaussianNLLLoss(full=True), (x1, x2, x2.abs()), F.gaussian_nll_loss(x1, x2, x2.abs(), full=True)),
        (nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True), (x1, x2, x1 * 2),
         F.triplet_margin_loss(x1, x2, x1 * 2, margin=0.5, p=1.0, swap=True)),
        (nn.NLLLoss2d(), (F.log_softmax(_x(2, 3, 2, 2), 1), flow.tensor(np.zeros((2, 2, 2), np.int64))), None),
    ]
    for layer, args, expected in pairs:
        got = layer(*args)
        if expected is not None:
            np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=repr(layer))


def test_weighted_loss_layers_hold_the_weight_as_a_buffer():
    w = flow.tensor([1.0, 2.0, 3.0])
    for layer in (nn.MultiMarginLoss(weight=w), nn.MultiLabelSoftMarginLoss(weight=w)):
        assert list(layer.state_dict()) == ["weight"]
        assert list(layer.parameters()) == []


def test_loss_layer_arguments_are_checked_like_pytorch():
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D instead"):
        nn.MultiMarginLoss(weight=flow.ones(2, 2))
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.SoftMarginLoss(size_average=False).reduction == "sum"


def test_functional_errors_use_pytorchs_messages():
    a, b = _x(3, 4), _x(3, 4)
    cases = [
        (RuntimeError, "1D target tensor expects 2D input tensors", F.cosine_embedding_loss, (a[0], b, flow.ones(3))),
        (RuntimeError, "0D or 1D target tensor expected, multi-target not supported", F.cosine_embedding_loss,
         (a, b, flow.ones(3, 1))),
        (RuntimeError, "All input tensors should have same dimension", F.margin_ranking_loss, (a, b, flow.ones(3))),
        (RuntimeError, "target tensor should be 1-D with size equal to the number of input samples",
         F.multi_margin_loss, (a, flow.tensor([0, 1]))),
        (RuntimeError, "target out of range", F.multi_margin_loss, (a, flow.tensor([0, 1, 4]))),
        (RuntimeError, "expected scalar type Long but found Int", F.multi_margin_loss,
         (a, flow.tensor([0, 1, 2], dtype=flow.int32))),
        (RuntimeError, "inconsistent weight size, expected 4 but got \\[3\\]", F.multi_margin_loss,
         (a, flow.tensor([0, 1, 2]), 1, 1.0, flow.ones(3))),
        (RuntimeError, "inconsistent target size: \\[2, 4\\] for input of size: \\[3, 4\\]", F.multilabel_margin_loss,
         (a, flow.zeros(2, 4, dtype=flow.int64))),
        (RuntimeError, "'target' is out of range", F.multilabel_margin_loss,
         (a, flow.full((3, 4), 4, dtype=flow.int64))),
        (ValueError, "var is of incorrect size", F.gaussian_nll_loss, (a, b, flow.ones(2))),
        (ValueError, "var has negative entry", F.gaussian_nll_loss, (a, b, -flow.ones(3, 4))),
        (ValueError, "margin must be greater than 0, got 0", F.triplet_margin_loss, (a, b, b, 0.0)),
        (RuntimeError, "anchor 2D, positive 2D, and negative 1D inputs", F.triplet_margin_loss, (a, b, b[0])),
        (ValueError, "foo is not a valid value for reduction", F.poisson_nll_loss,
         (a, b, True, False, None, 1e-8, None, "foo")),
    ]
    for error, message, fn, args in cases:
        with pytest.raises(error, match=message):
            fn(*args)


def test_reductions_of_the_margin_losses():
    x = flow.tensor([[0.1, 0.2, 0.4, 0.8]])
    y = flow.tensor([3])
    # PyTorch's documented example: (1 - 0.8 + 0.1) + (1 - 0.8 + 0.2) + (1 - 0.8 + 0.4), over 4 classes
    assert F.multi_margin_loss(x, y).item() == pytest.approx((0.3 + 0.4 + 0.6) / 4)
    t = flow.tensor([[3, 0, -1, 1]])
    # PyTorch's documented example of multilabel_margin_loss
    assert F.multilabel_margin_loss(x, t).item() == pytest.approx(0.85)
    per_sample = F.multi_margin_loss(_x(5, 3), flow.tensor([0, 1, 2, 0, 1]), reduction="none")
    assert per_sample.shape == (5,)


def test_poisson_full_adds_stirling_only_above_one():
    x = flow.tensor([0.5, 0.5])
    t = flow.tensor([1.0, 3.0])
    base = np.exp(0.5) - np.array([1.0, 3.0]) * 0.5
    stirling = np.array([0.0, 3 * np.log(3) - 3 + 0.5 * np.log(2 * np.pi * 3)])
    np.testing.assert_allclose(F.poisson_nll_loss(x, t, full=True, reduction="none").numpy(), base + stirling,
                               rtol=1e-6)


def test_gaussian_nll_var_clamp_passes_the_gradient():
    x, t = flow.tensor([1.0, 2.0]), flow.tensor([0.0, 0.0])
    var = flow.tensor([1e-9, 4.0], requires_grad=True)
    F.gaussian_nll_loss(x, t, var, eps=1e-3, reduction="sum").backward()
    v = np.array([1e-3, 4.0])  # clamped value; d/dvar of 0.5 (log v + d**2 / v) at it
    np.testing.assert_allclose(var.grad.numpy(), 0.5 * (1 / v - np.array([1.0, 4.0]) / v ** 2), rtol=1e-5)


def test_triplet_margin_with_distance_loss():
    a, p, n = _x(4, 3), _x(4, 3), _x(4, 3)
    default = F.triplet_margin_with_distance_loss(a, p, n)
    np.testing.assert_allclose(default.numpy(), F.triplet_margin_loss(a, p, n).numpy(), rtol=1e-12)

    def cos_dist(u, v):
        return 1.0 - F.cosine_similarity(u, v)
    got = F.triplet_margin_with_distance_loss(a, p, n, distance_function=cos_dist, margin=0.5, swap=True,
                                              reduction="none")
    d_neg = np.minimum(cos_dist(a, n).numpy(), cos_dist(p, n).numpy())
    np.testing.assert_allclose(got.numpy(), np.maximum(0.5 + cos_dist(a, p).numpy() - d_neg, 0), rtol=1e-12)
    layer = nn.TripletMarginWithDistanceLoss()
    assert isinstance(layer.distance_function, nn.PairwiseDistance)
    assert "(distance_function): PairwiseDistance()" in repr(layer)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.triplet_margin_with_distance_loss(a, p, n, reduction="foo")


# ---- ctc_loss ---------------------------------------------------------------------------------------------
def _ctc_inputs():
    logits = _rng.standard_normal((6, 2, 4))
    lp = logits - np.log(np.exp(logits).sum(2, keepdims=True))
    return lp, np.array([[1, 2], [3, 3]]), np.array([6, 5]), np.array([2, 2])


def _brute_force_nll(lp, target, blank=0):
    """-log of the summed probability of every path that collapses to ``target`` (enumerated)."""
    import itertools
    steps, classes = lp.shape
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1])]
        if collapsed == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total)


def test_ctc_loss_equals_the_sum_over_alignments():
    lp, targets, il, tl = _ctc_inputs()
    got = F.ctc_loss(flow.tensor(lp), flow.tensor(targets), flow.tensor(il), flow.tensor(tl), reduction="none")
    expected = [_brute_force_nll(lp[:il[n], n], targets[n, :tl[n]]) for n in range(2)]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)


def test_ctc_loss_reductions_and_target_layouts():
    lp, targets, il, tl = (flow.tensor(a) for a in _ctc_inputs())
    per_sample = F.ctc_loss(lp, targets, il, tl, reduction="none").numpy()
    mean = F.ctc_loss(lp, targets, il, tl).item()
    assert mean == pytest.approx((per_sample / np.array([2, 2])).mean())
    assert F.ctc_loss(lp, targets, il, tl, reduction="sum").item() == pytest.approx(per_sample.sum())
    concatenated = flow.tensor([1, 2, 3, 3])
    np.testing.assert_allclose(F.ctc_loss(lp, concatenated, il, tl, reduction="none").numpy(), per_sample)
    np.testing.assert_allclose(F.ctc_loss(lp, targets, [6, 5], [2, 2], reduction="none").numpy(), per_sample)
    unbatched = F.ctc_loss(lp[:, 0], targets[0], flow.tensor(6), flow.tensor(2), reduction="none")
    assert unbatched.shape == () and unbatched.item() == pytest.approx(per_sample[0])
    layer = nn.CTCLoss(blank=0, reduction="none")
    np.testing.assert_allclose(layer(lp, targets, il, tl).numpy(), per_sample)


def test_ctc_loss_impossible_alignments_and_zero_infinity():
    lp, targets, _, tl = (flow.tensor(a) for a in _ctc_inputs())
    il = flow.tensor([6, 2])  # "3 3" needs 3 frames (a blank between the repeats)
    assert math.isinf(F.ctc_loss(lp, targets, il, tl, reduction="none")[1].item())
    lp = lp.detach().requires_grad_(True)
    loss = F.ctc_loss(lp, targets, il, tl, reduction="none", zero_infinity=True)
    assert loss[1].item() == 0.0
    loss.sum().backward()
    assert np.isfinite(lp.grad.numpy()).all() and (lp.grad.numpy()[:, 1] == 0).all()


def test_ctc_loss_gradient_is_pytorchs_form():
    """d loss / d log_probs is ``exp(log_probs) - occupancy`` (Note [CTC loss]): it sums to zero over the classes
    at each frame of a sample, and is zero after the sample's input length."""
    lp, targets, il, tl = _ctc_inputs()
    t = flow.tensor(lp, requires_grad=True)
    F.ctc_loss(t, flow.tensor(targets), flow.tensor(il), flow.tensor(tl), reduction="sum").backward()
    g = t.grad.numpy()
    np.testing.assert_allclose(g[:5].sum(2), 0, atol=1e-12)
    assert (g[5, 1] == 0).all()


def test_ctc_loss_errors():
    lp, targets, il, tl = (flow.tensor(a) for a in _ctc_inputs())
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, targets, il, tl, blank=4)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6, but got value 7"):
        F.ctc_loss(lp, targets, flow.tensor([7, 6]), tl)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension 1"):
        F.ctc_loss(lp, targets, il, flow.tensor([3, 2]))
    with pytest.raises(RuntimeError, match="Expected tensor to have size 4 at dimension 0, but got size 3"):
        F.ctc_loss(lp, flow.tensor([1, 2, 3]), il, tl)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, targets, flow.tensor([6]), tl)
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        F.ctc_loss(lp, targets, il.double(), tl)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.ctc_loss(lp, targets, il, tl, reduction="foo")


# ---- AdaptiveLogSoftmaxWithLoss, linear_cross_entropy ------------------------------------------------------------
def test_adaptive_log_softmax_is_a_distribution():
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True)
    assert [tuple(p.shape) for p in m.parameters()] == [(5, 8), (5,), (4, 8), (3, 4), (2, 8), (4, 2)]
    x = _x(7, 8).float()
    full = m.log_prob(x)
    np.testing.assert_allclose(np.exp(full.detach().numpy()).sum(1), 1.0, rtol=1e-5)
    target = flow.tensor([0, 2, 3, 5, 6, 9, 1])
    out = m(x, target)
    np.testing.assert_allclose(out.output.detach().numpy(), full.detach().numpy()[np.arange(7), target.numpy()],
                               rtol=1e-5, atol=1e-6)
    assert out.loss.item() == pytest.approx(-out.output.detach().numpy().mean(), rel=1e-6)
    np.testing.assert_array_equal(m.predict(x).numpy(), full.detach().numpy().argmax(1))
    out.loss.backward()
    assert all(p.grad is not None for p in m.parameters())
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\]"):
        m(x, flow.tensor([0, 1, 2, 3, 4, 5, 10]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])


def test_linear_cross_entropy_is_cross_entropy_of_linear():
    x, w, b = _x(4, 3), _x(5, 3), _x(5)
    t = flow.tensor([0, 4, 2, 1])
    expected = F.cross_entropy(F.linear(x, w, b), t, label_smoothing=0.1)
    got = F.linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1)
    assert got.item() == pytest.approx(expected.item(), rel=1e-12)
    w2 = _x(5, 2, 3)  # K-dimensional: logits (N, C, 2)
    t2 = flow.tensor([[0, 1], [2, 3], [4, 4], [1, 0]])
    expected = F.cross_entropy(F.linear(x, w2.reshape(10, 3)).reshape(4, 5, 2), t2)
    assert F.linear_cross_entropy(x, w2, t2).item() == pytest.approx(expected.item(), rel=1e-12)
    with pytest.raises(RuntimeError, match="expected equal input and linear_weight last dimensions"):
        F.linear_cross_entropy(x, _x(5, 4), t)


def test_linear_cross_entropy_loss_layer():
    layer = nn.LinearCrossEntropyLoss(3, 5, out_features=(2,), bias=True)
    assert tuple(layer.linear.weight.shape) == (10, 3)
    x = _x(4, 3).float()
    t = flow.tensor([[0, 1], [2, 3], [4, 4], [1, 0]])
    expected = F.cross_entropy(layer.linear(x).reshape(4, 5, 2), t)
    assert layer(x, t).item() == pytest.approx(expected.item(), rel=1e-6)
    assert "in_features=3, num_classes=5, out_features=(2,), bias=True" in repr(layer)


# ---- against PyTorch (optional) -----------------------------------------------------------------------------
def _to(lib, a):
    return lib.tensor(a) if isinstance(a, np.ndarray) else a


def _both(name, args, kwargs, grad_arg=0):
    torch = pytest.importorskip("torch")
    results = []
    for lib, mod in ((torch, torch.nn.functional), (flow, F)):
        targs = [_to(lib, a) for a in args]
        targs[grad_arg].requires_grad_(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(mod, name)(*targs, **kwargs)
        out.sum().backward()
        results.append((out.detach().numpy(), targs[grad_arg].grad.numpy()))
    return results


_A, _B = _rng.standard_normal((5, 4)), _rng.standard_normal((5, 4))
_SIGNS = np.array([1, -1, 1, -1, 1])
_TORCH_CASES = [
    ("cosine_embedding_loss", (_A, _B, _SIGNS), {"margin": 0.2}),
    ("hinge_embedding_loss", (_A, np.sign(_B)), {"margin": 0.5}),
    ("margin_ranking_loss", (_A[:, 0], _B[:, 0], _SIGNS.astype(np.float64)), {"margin": 0.1}),
    ("soft_margin_loss", (_A, np.sign(_B)), {}),
    ("multilabel_soft_margin_loss", (_A, (_B > 0).astype(np.float64)), {}),
    ("multi_margin_loss", (_A, np.array([0, 1, 3, 2, 1])), {"p": 2, "margin": 0.7}),
    ("multilabel_margin_loss", (_A, np.array([[0, 1, -1, 2], [3, -1, 0, 0], [1, 1, 2, -1], [-1, 0, 0, 0],
                                              [0, 1, 2, 3]])), {}),
    ("poisson_nll_loss", (_A, np.abs(_B) * 3), {"full": True}),
    ("gaussian_nll_loss", (_A, _B, np.abs(_B)), {"full": True}),
    ("triplet_margin_loss", (_A, _B, _A[::-1].copy()), {"swap": True, "p": 1.5}),
]


@pytest.mark.parametrize("name, args, kwargs", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses_match_torch(name, args, kwargs, reduction):
    (o1, g1), (o2, g2) = _both(name, args, {**kwargs, "reduction": reduction})
    assert o1.shape == o2.shape
    np.testing.assert_allclose(o2, o1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"reduction": "none", "blank": 2}, {"reduction": "sum"},
                                    {"reduction": "none", "zero_infinity": True}])
def test_ctc_loss_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((12, 4, 5))
    targets = rng.choice([1, 3, 4], (4, 4))
    targets[1, 1] = targets[1, 0]
    il, tl = np.array([12, 10, 7, 2]), np.array([4, 3, 0, 2])
    results = []
    for lib, mod in ((torch, torch.nn.functional), (flow, F)):
        x = lib.tensor(logits, requires_grad=True)
        out = mod.ctc_loss(mod.log_softmax(x, 2), lib.tensor(targets), lib.tensor(il), lib.tensor(tl), **kwargs)
        out = out[:3] if out.ndim else out  # sample 3 is impossible: inf, and nan gradients without zero_infinity
        out.sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    (o1, g1), (o2, g2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-10)
    np.testing.assert_allclose(g2, g1, rtol=1e-8, atol=1e-12, equal_nan=True)
