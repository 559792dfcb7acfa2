"""Neural-network ops beyond the op database (tests/op_specs/nn.py): hand-computed values, PyTorch's
special behaviour (NaN / inf rows, ignore_index, running statistics, padding_idx, dropout statistics,
masked attention rows), double backward, and every error message."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError

F = flow.nn.functional
f16, f32, f64 = flow.float16, flow.float32, flow.float64
INF = float("inf")


def T(values, dtype=f64, requires_grad=False):
    return flow.tensor(values, dtype=dtype, requires_grad=requires_grad)


def close(t, expected, atol=1e-6):
    np.testing.assert_allclose(t.numpy().astype(np.float64), np.asarray(expected, np.float64), atol=atol, rtol=1e-6,
                               equal_nan=True)


# ---- exposure ------------------------------------------------------------------------------------
NAMES = ("softmax", "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
         "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "dropout",
         "layer_norm", "group_norm", "batch_norm", "embedding", "one_hot", "scaled_dot_product_attention")


@pytest.mark.parametrize("name", NAMES)
def test_names_are_exposed_in_nn_functional_and_C(name):
    assert getattr(F, name) is getattr(flow._C, name)
    assert getattr(flow, name) is getattr(flow._C, name)


def test_tensor_methods():
    x = T([[1.0, 2.0, 3.0]])
    close(x.softmax(-1), F.softmax(x, dim=-1).numpy())
    close(x.log_softmax(dim=1), F.log_softmax(x, 1).numpy())


# ---- softmax / log_softmax --------------------------------------------------------------------------
def test_softmax_values_by_hand():
    e = math.e
    close(F.softmax(T([0.0, 1.0]), 0), [1 / (1 + e), e / (1 + e)])
    close(F.log_softmax(T([0.0, 0.0, 0.0, 0.0]), 0), [-math.log(4)] * 4)
    close(F.softmax(T(3.5), 0), 1.0)  # a 0-d tensor is one element


def test_softmax_is_stable_and_follows_pytorch_on_inf_rows():
    x = T([[1000.0, 0.0], [1.0, -INF], [-INF, -INF], [INF, 1.0]], f32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy RuntimeWarnings
        s, ls = F.softmax(x, 1), F.log_softmax(x, 1)
    close(s, [[1, 0], [1, 0], [np.nan, np.nan], [np.nan, np.nan]])
    close(ls, [[0, -1000], [0, -INF], [np.nan, np.nan], [np.nan, np.nan]])


def test_softmax_implicit_dim_warns_and_picks_pytorch_dim():
    x = T(np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        y = F.softmax(x)
    close(y, F.softmax(x, 1).numpy())  # 2-d: dim 1
    with pytest.warns(UserWarning, match="log_softmax"):
        y = F.log_softmax(T(np.zeros((2, 3, 4))))
    close(y, np.full((2, 3, 4), -math.log(2)))  # 3-d: dim 0


def test_softmax_dtype_argument_and_errors():
    x = flow.tensor([1, 2, 3])
    with pytest.raises(OpKernelNotFoundError):
        F.softmax(x, 0)
    y = F.softmax(x, 0, dtype=f64)
    assert y.dtype is f64
    close(y, np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    with pytest.raises(IndexError, match="softmax: Dimension out of range"):
        F.softmax(T([1.0, 2.0]), 1)


def test_softmax_grad_by_hand_and_double_backward():
    x = T([0.5, -1.0, 2.0], requires_grad=True)
    w = T([1.0, 2.0, 3.0])
    (g,) = flow.autograd.grad((F.softmax(x, 0) * w).sum(), x, create_graph=True)
    s = np.exp([0.5, -1.0, 2.0]) / np.exp([0.5, -1.0, 2.0]).sum()
    close(g, s * ([1, 2, 3] - (s * [1, 2, 3]).sum()))
    # d/dx of sum(g^2) exists: backward through softmax_grad
    (gg,) = flow.autograd.grad((g * g).sum(), x)
    assert gg.shape == (3,) and np.isfinite(gg.numpy()).all()
    x2 = T(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    assert flow.autograd.gradgradcheck(lambda a: F.log_softmax(a, 1), (x2,))
    assert flow.autograd.gradgradcheck(lambda a: F.softmax(a, 0), (x2,))


# ---- cross_entropy / nll_loss ------------------------------------------------------------------------
def test_cross_entropy_by_hand():
    x = T([[0.0, 0.0], [0.0, math.log(3)]])
    close(F.cross_entropy(x, flow.tensor([0, 1]), reduction="none"), [math.log(2), -math.log(3 / 4)])
    # weighted mean divides by the summed weights of the targets: (2 log2 + 1 * log(4/3)) / (2 + 1)
    w = T([2.0, 1.0])
    close(F.cross_entropy(x, flow.tensor([0, 1]), weight=w), (2 * math.log(2) + math.log(4 / 3)) / 3)
    # label smoothing 0.5 on [0, 0]: 0.5 * log 2 + 0.5 / 2 * (2 log 2)
    close(F.cross_entropy(T([[0.0, 0.0]]), flow.tensor([1]), label_smoothing=0.5), math.log(2))


def test_cross_entropy_ignore_index_and_all_ignored():
    x = T([[0.0, 0.0], [5.0, 0.0]])
    close(F.cross_entropy(x, flow.tensor([0, -100])), math.log(2))
    close(F.cross_entropy(x, flow.tensor([1, 1]), ignore_index=1), np.nan)  # 0 / 0
    close(F.cross_entropy(x, flow.tensor([1, 1]), ignore_index=1, reduction="sum"), 0.0)


def test_cross_entropy_ignored_rows_with_inf_logits_stay_zero():
    """A row with -inf logits that is ignored contributes 0 (PyTorch's masked_fill), also with smoothing."""
    x = T([[0.0, -INF, 1.0], [-INF, 0.0, 0.0]], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F.cross_entropy(x, flow.tensor([2, -100]), label_smoothing=0.1, reduction="none")
    assert loss.numpy()[1] == 0.0
    x2 = T([[0.0, 1.0], [-INF, 0.0]], requires_grad=True)
    loss2 = F.cross_entropy(x2, flow.tensor([1, -100]), label_smoothing=0.2)
    expected = 0.8 * -math.log(math.e / (1 + math.e)) + 0.1 * (-(math.log(1 / (1 + math.e)) +
                                                                 math.log(math.e / (1 + math.e))))
    close(loss2, expected)
    loss2.backward()
    close(x2.grad[1], [0.0, 0.0])


def test_cross_entropy_probabilities_by_hand():
    x = T([[0.0, 0.0]])
    p = T([[0.25, 0.75]])
    close(F.cross_entropy(x, p), math.log(2))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities, got Long"):
        F.cross_entropy(x, flow.tensor([[0, 1]]))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, p, ignore_index=0)


def test_cross_entropy_and_nll_errors():
    x = T(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, flow.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="Target -2 is out of bounds"):
        F.nll_loss(x, flow.tensor([0, -2, 1]))
    with pytest.raises(RuntimeError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        F.cross_entropy(x, flow.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all 4 classes or no classes"):
        F.nll_loss(x, flow.tensor([0, 1, 2]), weight=T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found int32"):
        F.nll_loss(x, flow.tensor([0, 1, 2], dtype=flow.int32))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 5\], got \[2, 4\]"):
        F.cross_entropy(T(np.zeros((2, 3, 5))), flow.tensor(np.zeros((2, 4), np.int64)))
    with pytest.raises(ValueError, match=r"Expected 1 or more dimensions \(got 0\)"):
        F.nll_loss(T(1.0), flow.tensor(0))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, flow.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="cross_entropy: elementwise_mean is not a valid value for reduction"):
        F.cross_entropy(x, flow.tensor([0, 1, 2]), reduction="elementwise_mean")
    before = x.numpy().copy()
    with pytest.raises(IndexError):
        F.cross_entropy(x, flow.tensor([9, 0, 0]))
    np.testing.assert_array_equal(x.numpy(), before)


def test_nll_weight_grad_is_not_implemented():
    x = T(np.zeros((2, 3)), requires_grad=True)
    w = T([1.0, 2.0, 3.0], requires_grad=True)
    loss = F.nll_loss(x, flow.tensor([0, 1]), weight=w)  # as in PyTorch, backward raises
    with pytest.raises(RuntimeError, match="nll_loss: the derivative for 'weight' is not implemented"):
        loss.backward()


def test_legacy_size_average_and_reduce():
    x, t = T([[0.0, 0.0], [0.0, 0.0]]), flow.tensor([0, 1])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        close(F.nll_loss(x, t, size_average=False), 0.0)
    with pytest.warns(UserWarning, match="reduction='none'"):
        y = F.mse_loss(T([1.0, 2.0]), T([0.0, 0.0]), reduce=False)
    close(y, [1.0, 4.0])


def test_cross_entropy_double_backward():
    x = T(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    t = flow.tensor([0, 3, -100])
    assert flow.autograd.gradgradcheck(lambda a: F.cross_entropy(a, t, label_smoothing=0.1), (x,))


# ---- elementwise losses -------------------------------------------------------------------------------
def test_regression_losses_by_hand():
    x, t = T([0.5, 3.0, -1.0]), T([0.0, 0.0, 0.0])
    close(F.mse_loss(x, t, reduction="none"), [0.25, 9.0, 1.0])
    close(F.l1_loss(x, t), 4.5 / 3)
    close(F.smooth_l1_loss(x, t, reduction="none"), [0.125, 2.5, 0.5])
    close(F.smooth_l1_loss(x, t, reduction="none", beta=0.0), [0.5, 3.0, 1.0])
    close(F.huber_loss(x, t, reduction="none", delta=2.0), [0.125, 4.0, 0.5])
    close(F.mse_loss(T(np.zeros((0, 2))), T(np.zeros((0, 2)))), np.nan)  # mean of nothing


def test_regression_loss_grads_by_hand():
    x = T([0.5, 3.0, -1.0, 0.0], requires_grad=True)
    t = T([0.0, 0.0, 0.0, 0.0], requires_grad=True)
    F.smooth_l1_loss(x, t, reduction="sum").backward()
    close(x.grad, [0.5, 1.0, -1.0, 0.0])
    close(t.grad, [-0.5, -1.0, 1.0, 0.0])
    x.grad = None
    F.huber_loss(x, t, reduction="sum", delta=2.0).backward()
    close(x.grad, [0.5, 2.0, -1.0, 0.0])
    x.grad = None
    F.l1_loss(x, t, reduction="sum").backward()
    close(x.grad, [1.0, 1.0, -1.0, 0.0])  # the subgradient at 0 is 0


def test_regression_losses_broadcast_with_pytorch_warning_and_promote():
    x, t = T(np.ones((2, 3))), T([1.0, 2.0, 3.0], f32)
    with pytest.warns(UserWarning, match=r"Using a target size .* that is different to the input size"):
        y = F.mse_loss(x, t, reduction="none")
    assert y.shape == (2, 3) and y.dtype is f64
    close(y, [[0.0, 1.0, 4.0]] * 2)
    with pytest.raises(OpKernelNotFoundError):
        F.mse_loss(flow.tensor([1, 2]), flow.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)


def test_binary_cross_entropy_by_hand_and_clamping():
    close(F.binary_cross_entropy(T([0.25]), T([1.0])), math.log(4))
    close(F.binary_cross_entropy(T([0.0, 1.0]), T([1.0, 0.0]), reduction="none"), [100.0, 100.0])
    close(F.binary_cross_entropy(T([0.5, 0.5]), T([1.0, 0.0]), weight=T([2.0, 0.0]), reduction="sum"),
          2 * math.log(2))
    x = T([0.0, 1.0, 0.5], requires_grad=True)
    F.binary_cross_entropy(x, T([1.0, 0.0, 1.0]), reduction="sum").backward()
    close(x.grad, [-1e12, 1e12, -2.0])  # (x - t) / max(x (1 - x), 1e-12)


def test_binary_cross_entropy_errors():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(T([1.5]), T([1.0]))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(T([np.nan]), T([1.0]))
    with pytest.raises(ValueError, match=r"Using a target size .* that is different to the input size .* is deprecated"):
        F.binary_cross_entropy(T([0.5, 0.5]), T([1.0]))
    with pytest.raises(ValueError, match=r"Target size .* must be the same as input size"):
        F.binary_cross_entropy_with_logits(T([0.5, 0.5]), T([1.0]))


def test_binary_cross_entropy_with_logits_stable_and_grads():
    x = T([-1000.0, 1000.0, 0.0], requires_grad=True)
    t = T([1.0, 0.0, 1.0], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    close(loss, [1000.0, 1000.0, math.log(2)])
    loss.sum().backward()
    close(x.grad, [-1.0, 1.0, -0.5])  # sigmoid(x) - t
    close(t.grad, [1000.0, -1000.0, 0.0])  # -x
    pw = T([3.0])
    close(F.binary_cross_entropy_with_logits(T([0.0]), T([1.0]), pos_weight=pw), 3 * math.log(2))
    loss = F.binary_cross_entropy_with_logits(T([0.0]), T([1.0]), pos_weight=T([3.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="the derivative for 'pos_weight' is not implemented"):
        loss.backward()


def test_kl_div_by_hand_reductions_and_warnings():
    x, t = T([[math.log(0.5), math.log(0.5)]]), T([[0.25, 0.75]])
    expected = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)
    close(F.kl_div(x, t, reduction="batchmean"), expected)
    close(F.kl_div(x, T([[math.log(0.25), math.log(0.75)]]), reduction="sum", log_target=True), expected)
    close(F.kl_div(x, T([[0.0, 1.0]]), reduction="none"), [[0.0, -math.log(0.5)]])
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        close(F.kl_div(x, t), expected / 2)
    with pytest.raises(ValueError, match="kl_div: avg is not a valid value for reduction"):
        F.kl_div(x, t, reduction="avg")


# ---- dropout ----------------------------------------------------------------------------------------
def test_dropout_statistics_and_scale():
    x = flow.ones(200, 100)
    y = F.dropout(x, 0.3).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_special_cases():
    x = T([1.0, np.nan, 3.0])
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    close(F.dropout(x, 1.0), [0.0, np.nan, 0.0])  # x * 0, as PyTorch
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    with pytest.raises(OpKernelNotFoundError):
        F.dropout(flow.tensor([1, 2]), 0.5)
    assert F.dropout(flow.tensor([1, 2]), 0.5, training=False).dtype is flow.int64


def test_dropout_is_seeded_by_generators():
    x = flow.ones(50)
    a = F.dropout(x, 0.5, generator=flow.Generator().manual_seed(3)).numpy()
    b = F.dropout(x, 0.5, generator=flow.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(a, b)
    flow.manual_seed(11)
    c = F.dropout(x, 0.5).numpy()
    flow.manual_seed(11)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), c)


def test_dropout_inplace_and_grad():
    leaf = T(np.ones((4, 5)), requires_grad=True)
    h = leaf * 1
    out = F.dropout(h, 0.5, inplace=True)
    assert out is h
    out.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), (h.numpy() != 0) * 2.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        F.dropout(leaf, 0.5, inplace=True)


# ---- normalisation ---------------------------------------------------------------------------------------
def test_layer_norm_by_hand_and_errors():
    close(F.layer_norm(T([[1.0, 3.0]]), (2,), eps=0.0), [[-1.0, 1.0]])
    close(F.layer_norm(T([[1.0, 3.0]]), [2], T([2.0, 1.0]), T([0.0, 5.0]), 0.0), [[-2.0, 6.0]])
    x = T(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[2\], expected input with shape \[\*, 2\], but got "
                                           r"input of size\[2, 3\]"):
        F.layer_norm(x, (2,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(x, (3,), T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Expected normalized_shape to be at least 1-dimensional"):
        F.layer_norm(x, ())
    with pytest.raises(OpKernelNotFoundError):
        F.layer_norm(flow.tensor([[1, 2]]), (2,))


def test_layer_norm_float16_statistics_in_float32():
    x = flow.tensor(np.array([[1000.0, 1001.0, 1002.0]], np.float16))
    y = F.layer_norm(x, (3,), eps=0.0)
    assert y.dtype is f16
    close(y, [[-math.sqrt(1.5), 0.0, math.sqrt(1.5)]], atol=2e-3)


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[2, 6, 3\] and num_groups=4"):
        F.group_norm(T(np.zeros((2, 6, 3))), 4)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(T(np.zeros((2, 6, 3))), 3, T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(T([1.0, 2.0]), 1)


def test_batch_norm_training_updates_running_stats_in_place():
    data = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 60.0]])
    x = T(data, requires_grad=True)
    rm, rv = T([0.5, 0.5]), T([2.0, 2.0])
    v0 = rm._version
    y = F.batch_norm(x, rm, rv, training=True, momentum=0.25, eps=0.0)
    mean, biased, unbiased = data.mean(0), data.var(0), data.var(0, ddof=1)
    close(y, (data - mean) / np.sqrt(biased))
    close(rm, 0.75 * 0.5 + 0.25 * mean)
    close(rv, 0.75 * 2.0 + 0.25 * unbiased)
    assert rm._version == v0 + 1 and not rm.requires_grad and not rv.requires_grad
    y.sum().backward()  # the batch statistics are differentiated: sum of a batch-normalised column is constant
    close(x.grad, np.zeros((3, 2)), atol=1e-9)


def test_batch_norm_eval_uses_running_stats():
    x = T([[1.0, 2.0], [3.0, 4.0]])
    rm, rv = T([1.0, 2.0]), T([4.0, 1.0])
    y = F.batch_norm(x, rm, rv, T([2.0, 1.0]), T([0.0, 1.0]), eps=0.0)
    close(y, [[0.0, 1.0], [2.0, 3.0]])
    close(rm, [1.0, 2.0])


def test_batch_norm_errors():
    x = T(np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size \[1, 3\]"):
        F.batch_norm(x, None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 2"):
        F.batch_norm(x, T([0.0, 0.0]), T([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="running_var has dtype float32 but the input has float64"):
        F.batch_norm(x, T([0.0] * 3), T([1.0] * 3, f32))
    with pytest.raises(ValueError, match="expected an input of 2 or more dimensions"):
        F.batch_norm(T([1.0, 2.0]), T([0.0, 0.0]), T([1.0, 1.0]))


# ---- embedding / one_hot ------------------------------------------------------------------------------
def test_embedding_padding_idx_and_scale_grad_by_freq():
    w = T(np.arange(8.0).reshape(4, 2), requires_grad=True)
    idx = flow.tensor([[0, 2], [2, 3]])
    out = F.embedding(idx, w, padding_idx=2)
    close(out, [[[0, 1], [4, 5]], [[4, 5], [6, 7]]])  # the padding row is still looked up
    out.sum().backward()
    close(w.grad, [[1, 1], [0, 0], [0, 0], [1, 1]])
    w.grad = None
    F.embedding(flow.tensor([1, 1, 3]), w, scale_grad_by_freq=True).sum().backward()
    close(w.grad, [[0, 0], [1, 1], [0, 0], [1, 1]])  # row 1 appears twice: each grad divided by 2
    w.grad = None
    F.embedding(flow.tensor([3, 0]), w, padding_idx=-1).sum().backward()
    close(w.grad, [[1, 1], [0, 0], [0, 0], [0, 0]])


def test_embedding_errors():
    w = T(np.zeros((4, 2)))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(flow.tensor([4]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(flow.tensor([-1]), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got Float instead"):
        F.embedding(T([1.0], f32), w)
    with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
        F.embedding(flow.tensor([1]), w, padding_idx=4)
    capped = T([[0.0, 0.0], [6.0, 8.0]], f32)  # max_norm renormalises the looked-up rows in place, as PyTorch
    close(F.embedding(flow.tensor([1, 1]), capped, max_norm=5.0, norm_type=2.0), [[3.0, 4.0]] * 2, atol=1e-5)
    close(capped, [[0.0, 0.0], [3.0, 4.0]], atol=1e-5)
    with pytest.raises(NotImplementedError, match="sparse gradients are not supported"):
        F.embedding(flow.tensor([1]), w, sparse=True)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(flow.tensor([1]), T([1.0, 2.0]))


def test_one_hot_infers_num_classes():
    y = F.one_hot(flow.tensor([0, 3, 1]))
    assert y.dtype is flow.int64 and y.shape == (3, 4)
    np.testing.assert_array_equal(y.numpy(), np.eye(4, dtype=np.int64)[[0, 3, 1]])


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(flow.tensor([-1, 0]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        F.one_hot(flow.tensor([-1, 0]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(flow.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor"):
        F.one_hot(flow.tensor(np.zeros(0, np.int64)))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor"):
        F.one_hot(flow.tensor([1], dtype=flow.int32), 3)
    meta = flow.tensor([1, 2], device="meta")
    assert F.one_hot(meta, 5).shape == (2, 5)
    with pytest.raises(RuntimeError, match="num_classes=-1 infers the number of classes"):
        F.one_hot(meta)


# ---- scaled_dot_product_attention -----------------------------------------------------------------------
def test_sdpa_by_hand():
    q = T([[1.0, 0.0]])
    k = T([[1.0, 0.0], [0.0, 1.0]])
    v = T([[10.0], [20.0]])
    a = math.exp(1 / math.sqrt(2))
    close(F.scaled_dot_product_attention(q, k, v), [[(10 * a + 20) / (a + 1)]])
    close(F.scaled_dot_product_attention(q, k, v, scale=0.0), [[15.0]])
    close(F.scaled_dot_product_attention(q, k, v, attn_mask=flow.tensor([[False, True]])), [[20.0]])
    close(F.scaled_dot_product_attention(q, k, v, is_causal=True), [[10.0]])


def test_sdpa_fully_masked_row_is_zero_with_zero_grad():
    q = T(np.ones((2, 3)), requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=flow.tensor([[True, False], [False, False]]))
    close(out[1], [0.0, 0.0, 0.0])
    out.sum().backward()
    assert np.isfinite(q.grad.numpy()).all()


def test_sdpa_dropout_is_seeded():
    q = T(np.random.default_rng(0).standard_normal((2, 4, 3)))
    flow.manual_seed(5)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy()
    flow.manual_seed(5)
    np.testing.assert_array_equal(F.scaled_dot_product_attention(q, q, q, dropout_p=0.5).numpy(), a)
    assert not np.allclose(a, F.scaled_dot_product_attention(q, q, q).numpy())


def test_sdpa_errors():
    q = T(np.zeros((2, 3, 4)))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=flow.tensor(np.ones((3, 3), bool)), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same dtype"):
        F.scaled_dot_product_attention(q, q, T(np.zeros((2, 3, 4)), f32))
    with pytest.raises(OpKernelNotFoundError, match="not implemented for dtype int64"):
        x = flow.tensor(np.zeros((2, 3), np.int64))
        F.scaled_dot_product_attention(x, x, x)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or to match query dtype"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=T(np.zeros((3, 3)), f32))
    with pytest.raises(RuntimeError, match=r"number of query heads \(3\) to be a multiple"):
        F.scaled_dot_product_attention(T(np.zeros((3, 2, 4))), q, q, enable_gqa=True)


def test_sdpa_kernel_context_accepts_backends_and_checks_its_argument():
    from oneflow_lite.nn.attention import SDPBackend, sdpa_kernel
    q = flow.tensor(np.arange(8.0, dtype=np.float32).reshape(1, 1, 2, 4))
    expect = flow.nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        np.testing.assert_array_equal(flow.nn.functional.scaled_dot_product_attention(q, q, q).numpy(), expect)
    with sdpa_kernel(SDPBackend.MATH, set_priority=True):
        pass
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("flash"):
            pass
