"""The nn sweep's normalisation, dropout, distance and embedding-bag layers (InstanceNorm1d/2d/3d,
LocalResponseNorm, RMSNorm, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout, CosineSimilarity,
PairwiseDistance, EmbeddingBag), ParameterList / ParameterDict, and nn.functional's module-level helpers
(boolean_dispatch, the __torch_function__ helpers); NumPy references, PyTorch's errors, and torch itself where
it is installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

F = nn.functional
_rng = np.random.default_rng(3)


def _x(*shape):
    return flow.tensor(_rng.standard_normal(shape))


# ---- instance norm --------------------------------------------------------------------------------------------
def test_instance_norm_layers_defaults_and_state():
    m = nn.InstanceNorm2d(3)
    assert repr(m) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
    assert list(m.state_dict()) == []
    m = nn.InstanceNorm1d(4, affine=True, track_running_stats=True)
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert isinstance(m, nn.modules.batchnorm._NormBase) and not isinstance(m, nn.modules.batchnorm._BatchNorm)


def test_instance_norm_normalises_each_sample_and_channel():
    x = _x(2, 3, 4, 5)
    y = nn.InstanceNorm2d(3)(x).numpy()
    xn = x.numpy()
    mean, var = xn.mean((2, 3), keepdims=True), xn.var((2, 3), keepdims=True)
    np.testing.assert_allclose(y, (xn - mean) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-12)
    unbatched = nn.InstanceNorm2d(3)(x[0])
    np.testing.assert_allclose(unbatched.numpy(), y[0], rtol=1e-12)


def test_instance_norm_running_statistics():
    x = _x(4, 3, 6)
    m = nn.InstanceNorm1d(3, momentum=0.5, track_running_stats=True, dtype=flow.float64)
    m(x)
    xn = x.numpy()
    batch_mean = xn.mean(2).mean(0)
    batch_var = xn.var(2, ddof=1).mean(0)  # the unbiased per-sample variances, averaged over the batch
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * batch_mean, rtol=1e-10)
    np.testing.assert_allclose(m.running_var.numpy(), 0.5 + 0.5 * batch_var, rtol=1e-10)
    m.eval()
    rm, rv = m.running_mean.numpy()[:, None], m.running_var.numpy()[:, None]
    np.testing.assert_allclose(m(x).numpy(), (xn - rm) / np.sqrt(rv + 1e-5), rtol=1e-10)


def test_instance_norm_errors_and_warnings():
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(_x(2, 3, 1))
    with pytest.raises(ValueError, match="expected 3D or 4D input \\(got 2D input\\)"):
        nn.InstanceNorm2d(3)(_x(2, 3))
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features \\(4\\)"):
        nn.InstanceNorm1d(4, affine=True)(_x(2, 3, 5))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(4)(_x(2, 3, 5))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var to be defined"):
        F.instance_norm(_x(2, 3, 4), use_input_stats=False)


def test_batchnorm_lives_in_batchnorm_module_as_in_pytorch():
    with flow.mock_torch.enable():
        from torch.nn.modules.batchnorm import _BatchNorm
        from torch.nn.modules.instancenorm import _InstanceNorm
    assert isinstance(nn.BatchNorm2d(3), _BatchNorm) and isinstance(nn.InstanceNorm3d(3), _InstanceNorm)
    m = nn.BatchNorm1d(3, bias=False)
    assert list(m.state_dict()) == ["weight", "running_mean", "running_var", "num_batches_tracked"]
    assert "bias=False" in repr(m)
    m(_x(4, 3).float())


# ---- local response norm, rms norm -------------------------------------------------------------------------------
def test_local_response_norm_layer():
    m = nn.LocalResponseNorm(3, alpha=0.3, beta=0.5, k=2.0)
    assert repr(m) == "LocalResponseNorm(3, alpha=0.3, beta=0.5, k=2.0)"
    x = _x(2, 4, 3)
    xn = x.numpy()
    sq = np.pad(xn ** 2, ((0, 0), (1, 1), (0, 0)))
    div = (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]) / 3
    np.testing.assert_allclose(m(x).numpy(), xn / (2.0 + 0.3 * div) ** 0.5, rtol=1e-12)
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality input \\(got 2 dimensions\\)"):
        m(_x(2, 4))


def test_rms_norm_layer():
    m = nn.RMSNorm([3, 4], eps=1e-6)
    assert repr(m) == "RMSNorm((3, 4), eps=1e-06, elementwise_affine=True)"
    assert list(m.state_dict()) == ["weight"] and (m.weight.numpy() == 1).all()
    x = _x(2, 3, 4).float()
    xn = x.numpy().astype(np.float64)
    np.testing.assert_allclose(m(x).numpy(), xn / np.sqrt((xn ** 2).mean((1, 2), keepdims=True) + 1e-6), rtol=1e-5)
    assert nn.RMSNorm(4, elementwise_affine=False).weight is None
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[3\\], expected input with shape \\[\\*, 3\\]"):
        F.rms_norm(x, (3,))
    eps = np.finfo(np.float32).eps  # eps=None: the dtype's machine epsilon
    tiny = flow.tensor(np.full((1, 2), 1e-5, np.float32))
    np.testing.assert_allclose(F.rms_norm(tiny, (2,)).numpy(), 1e-5 / np.sqrt(1e-10 + eps), rtol=1e-4)


# ---- dropout variants -----------------------------------------------------------------------------------------
def test_channel_dropout_drops_whole_channels():
    x = flow.ones(8, 16, 5, 5)
    y = F.dropout2d(x, 0.5, True).numpy()
    per_channel = y.reshape(8, 16, -1)
    assert ((per_channel == 0).all(2) | (per_channel == 2.0).all(2)).all()  # kept channels scaled by 1 / (1 - p)
    assert 0.3 < (per_channel[:, :, 0] == 0).mean() < 0.7
    y1 = F.dropout1d(flow.ones(16, 7), 0.5, True).numpy()  # unbatched (C, L)
    assert ((y1 == 0).all(1) | (y1 == 2.0).all(1)).all()
    y3 = nn.Dropout3d(0.25)(flow.ones(4, 6, 2, 2, 2)).numpy().reshape(4, 6, -1)
    assert ((y3 == 0).all(2) | np.isclose(y3, 4 / 3).all(2)).all()


# PyTorch's rules by rank, for p = 0.5 in training: the dims along which the keep mask varies (it is shared along
# the others), or None where PyTorch refuses ("Feature dropout requires at least 2 dimensions"; dropout1d takes
# only 2-D and 3-D). dropout3d reads every input that is not 5-D as unbatched (unsqueeze(0), feature dropout,
# squeeze(0)): dim 0 holds the channels, so each element of a 1-D input is one channel. dropout2d and
# feature_alpha_dropout read every input as batched (N, C, ...).
_CHANNEL_DIMS = {
    "dropout1d": [None, None, (0,), (0, 1), None, None, None],
    "dropout2d": [None, None, (0, 1), (0, 1), (0, 1), (0, 1), (0, 1)],
    "dropout3d": [None, (0,), (0,), (0,), (0,), (0, 1), (0,)],
    "feature_alpha_dropout": [None, None, (0, 1), (0, 1), (0, 1), (0, 1), (0, 1)],
}
_RANK_SHAPES = [(), (12,), (12, 6), (6, 6, 2), (6, 6, 2, 2), (6, 6, 2, 2, 2), (6, 6, 2, 1, 2, 1)]


def _run_dropout(name, x, inplace, training=True):
    if name == "feature_alpha_dropout" and inplace:
        return flow.feature_alpha_dropout_(x, 0.5, training)
    return getattr(F, name)(x, 0.5, training, inplace)


@pytest.mark.filterwarnings("ignore:.*Received a")
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("name", sorted(_CHANNEL_DIMS))
def test_channel_dropout_by_rank_as_pytorch(name, inplace):
    for ndim, shape in enumerate(_RANK_SHAPES):
        varying = _CHANNEL_DIMS[name][ndim]
        x = flow.ones(shape)
        if varying is None:
            with pytest.raises(RuntimeError, match=f"{name}: (Feature dropout requires at least 2 dimensions|"
                                                   "Expected 2D or 3D input)"):
                _run_dropout(name, x, inplace)
            assert tuple(x.shape) == shape and (x.numpy() == 1).all()  # a refused call changes nothing
            continue
        masks = []
        for _ in range(12):
            x = flow.ones(shape)
            y = _run_dropout(name, x, inplace)
            assert tuple(y.shape) == shape and (y is x) == inplace
            masks.append(y.numpy() != y.numpy().min())  # kept elements (1 / (1 - p), or alpha dropout's value)
        for m in masks:
            for d in range(ndim):
                if d not in varying:  # one draw per channel: the same along every other dim
                    assert (m == m.take([0], axis=d)).all(), (name, shape, d)
        both = np.stack(masks)
        assert both.any() and not both.all()
        for d in varying:  # independent draws along the channel dims
            assert any((m != m.take([0], axis=d)).any() for m in masks), (name, shape, d)
        x = flow.ones(shape)
        assert _run_dropout(name, x, inplace, training=False) is x and (x.numpy() == 1).all()


@pytest.mark.filterwarnings("ignore:.*Received a 1-D input to dropout3d")
def test_dropout3d_of_a_vector_scales_or_zeroes_each_element():
    x = flow.ones(4000)
    with pytest.warns(UserWarning, match="Received a 1-D input to dropout3d"):
        y = F.dropout3d(x, 0.5, True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.45 < (y == 0).mean() < 0.55
    v = flow.tensor([1.0, 0.0, 2.0])
    assert F.dropout3d(v, 0.5, training=False) is v
    assert F.dropout3d(v, 1.0, True).tolist() == [0, 0, 0]
    g = flow.ones(50, requires_grad=True)
    out = F.dropout3d(g, 0.5, True)
    out.sum().backward()  # the gradient is the mask: 0 where dropped, 1 / (1 - p) where kept (= the output here)
    np.testing.assert_array_equal(g.grad.numpy(), out.detach().numpy())


def test_channel_dropout_by_rank_matches_pytorch():
    torch = pytest.importorskip("torch")
    for name, ranks in _CHANNEL_DIMS.items():
        for shape, varying in zip(_RANK_SHAPES, ranks):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    out = getattr(torch.nn.functional, name)(torch.ones(shape), 0.5, True)
                except RuntimeError:
                    assert varying is None, (name, shape)
                    continue
            assert varying is not None and tuple(out.shape) == shape, (name, shape)


def test_channel_dropout_eval_warnings_and_errors():
    x = _x(2, 3, 4)
    m = nn.Dropout2d().eval()
    x4 = _x(2, 3, 2, 2)
    assert m(x4) is x4  # the identity in evaluation mode
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(x, 0.5, True)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(_x(2, 3), 0.5, True)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(_x(1, 2, 3, 4))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.AlphaDropout(1.5)
    assert repr(nn.FeatureAlphaDropout(0.2)) == "FeatureAlphaDropout(p=0.2, inplace=False)"


def test_alpha_dropout_keeps_mean_and_variance():
    x = flow.tensor(_rng.standard_normal(200000))
    y = F.alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.var() - 1) < 0.02
    alpha_p = -1.7580993408473766
    a = 1 / np.sqrt((alpha_p ** 2 * 0.3 + 1) * 0.7)
    dropped = a * alpha_p * 0.7  # a * alpha' + b with b = -a alpha' p: the value of a dropped element
    assert np.isclose(y, dropped).mean() == pytest.approx(0.3, abs=0.01)
    assert F.alpha_dropout(x, 0.3) is x  # training defaults to False, as in PyTorch
    f = F.feature_alpha_dropout(flow.ones(50, 40, 3), 0.5, True).numpy()
    assert (f == f[:, :, :1]).all()  # one decision per channel


def test_inplace_dropout_variants_write_into_the_input():
    x = flow.ones(4, 6, 3)
    out = F.dropout1d(x, 0.5, True, inplace=True)
    assert out is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    y = flow.ones(1000)
    assert F.alpha_dropout(y, 0.2, True, inplace=True) is y and (y.numpy() != 1).any()
    for fn, train in ((flow.dropout_, True), (flow.alpha_dropout_, True), (flow.feature_dropout_, True),
                      (flow.feature_alpha_dropout_, True)):  # the torch namespace's forms: (input, p, train)
        z = flow.ones(4, 6, 3)
        assert fn(z, 0.5, train) is z and (z.numpy() != 1).any()


def test_dropout_variants_backward_through_the_mask():
    x = flow.tensor(np.ones((6, 5, 2, 2)), requires_grad=True)
    y = F.dropout2d(x, 0.5, True)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())  # d/dx of x * mask / (1 - p)


# ---- distances ---------------------------------------------------------------------------------------------
def test_distance_layers():
    a, b = _x(4, 5), _x(4, 5)
    an, bn = a.numpy(), b.numpy()
    np.testing.assert_allclose(nn.PairwiseDistance(p=1.0)(a, b).numpy(), np.abs(an - bn + 1e-6).sum(1), rtol=1e-12)
    assert nn.PairwiseDistance(keepdim=True)(a, b).shape == (4, 1)
    assert nn.PairwiseDistance(3.0).norm == 3.0
    cos = (an * bn).sum(1) / np.linalg.norm(an, axis=1) / np.linalg.norm(bn, axis=1)
    np.testing.assert_allclose(nn.CosineSimilarity()(a, b).numpy(), cos, rtol=1e-12)
    assert repr(nn.CosineSimilarity()) == "CosineSimilarity()"
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet common dtype is Long"):
        F.cosine_similarity(flow.tensor([[1, 2]]), flow.tensor([[1, 2]]))


def test_pdist_and_normalize():
    x = _x(5, 3)
    xn = x.numpy()
    expected = [np.linalg.norm(xn[i] - xn[j]) for i in range(5) for j in range(i + 1, 5)]
    np.testing.assert_allclose(F.pdist(x).numpy(), expected, rtol=1e-12)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 1D"):
        F.pdist(x[0])
    np.testing.assert_allclose(F.normalize(x).numpy(), xn / np.linalg.norm(xn, axis=1, keepdims=True), rtol=1e-12)
    out = flow.empty(5, 3, dtype=flow.float64)
    assert F.normalize(x, dim=0, out=out) is out
    np.testing.assert_allclose(out.numpy(), xn / np.linalg.norm(xn, axis=0, keepdims=True), rtol=1e-12)


# ---- EmbeddingBag -------------------------------------------------------------------------------------------
def test_embedding_bag_layer():
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert repr(m) == "EmbeddingBag(10, 3, mode='sum', padding_idx=0)"
    assert (m.weight.numpy()[0] == 0).all() and list(m.state_dict()) == ["weight"]
    w = m.weight.detach().numpy()
    out = m(flow.tensor([1, 0, 2, 5, 5]), flow.tensor([0, 3]))
    np.testing.assert_allclose(out.detach().numpy(), [w[1] + w[2], 2 * w[5]], rtol=1e-6)
    out.sum().backward()
    g = m.weight.grad.numpy()
    assert (g[0] == 0).all() and (g[5] == 2).all() and (g[1] == 1).all()


def test_embedding_bag_modes():
    w = _x(6, 2)
    wn = w.numpy()
    idx = flow.tensor([[1, 2, 3], [4, 4, 0]])
    np.testing.assert_allclose(F.embedding_bag(idx, w).numpy(), wn[[[1, 2, 3], [4, 4, 0]]].mean(1), rtol=1e-12)
    np.testing.assert_allclose(F.embedding_bag(idx, w, mode="max").numpy(), wn[[[1, 2, 3], [4, 4, 0]]].max(1))
    psw = flow.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 1.0]], dtype=flow.float64)
    expected = (wn[[[1, 2, 3], [4, 4, 0]]] * psw.numpy()[..., None]).sum(1)
    np.testing.assert_allclose(F.embedding_bag(idx, w, mode="sum", per_sample_weights=psw).numpy(), expected)
    empty = F.embedding_bag(flow.tensor([1, 2]), w, flow.tensor([0, 0, 2]), mode="max")  # bag 0 is empty
    np.testing.assert_allclose(empty.numpy(), [[0, 0], wn[[1, 2]].max(0), [0, 0]])


def test_embedding_bag_max_norm_renormalises_the_rows_used():
    w = flow.tensor(np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    F.embedding_bag(flow.tensor([0, 1]), w, flow.tensor([0]), max_norm=1.0)
    np.testing.assert_allclose(np.linalg.norm(w.numpy(), axis=1), [1.0, 0.5, 10.0], rtol=1e-6)


def test_embedding_bag_errors():
    w = _x(5, 2)
    cases = [
        (ValueError, "offsets has to be a 1D Tensor but got None", (flow.tensor([1, 2]), w)),
        (ValueError, "if input is 2D, then offsets has to be None", (flow.tensor([[1, 2]]), w, flow.tensor([0]))),
        (ValueError, "input has to be 1D or 2D Tensor, but got Tensor of dimension 3",
         (flow.zeros(1, 1, 1, dtype=flow.int64), w)),
        (RuntimeError, "offsets\\[0\\] has to be 0", (flow.tensor([1, 2]), w, flow.tensor([1]))),
        (RuntimeError, "offsets\\[-1\\] can not be greater than input's length 2", (flow.tensor([1, 2]), w,
                                                                                  flow.tensor([0, 3]))),
        (IndexError, "index 5 is out of range for 5 embeddings", (flow.tensor([1, 5]), w, flow.tensor([0]))),
    ]
    for error, message, args in cases:
        with pytest.raises(error, match=message):
            F.embedding_bag(*args)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(flow.tensor([[1, 2]]), w, per_sample_weights=flow.ones(1, 2))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(flow.tensor([[1, 2]]), w, mode="min")
    with pytest.raises(RuntimeError, match="read from the data"):
        F.embedding_bag(flow.tensor([[1, 2]], device="meta"), flow.ones(5, 2, device="meta"))


@pytest.mark.parametrize("mode, weighted, by_freq", [("sum", False, False), ("sum", True, True), ("mean", False, True)])
def test_embedding_bag_of_fixed_size_bags_in_a_graph_is_bit_equal_to_eager(mode, weighted, by_freq):
    """Captured, a 2-D input's bags are its rows (no index values read): the same outputs and gradients."""
    w0 = _x(10, 3)
    idx = flow.tensor(_rng.integers(0, 10, (3, 11)))
    psw = _x(3, 11) if weighted else None
    results = []
    for graphed in (False, True):
        w = nn.Parameter(w0.clone())

        def step(i, p=None, w=w):
            out = F.embedding_bag(i, w, mode=mode, per_sample_weights=p, scale_grad_by_freq=by_freq)
            (out * flow.arange(3.0, dtype=out.dtype).unsqueeze(1)).sum().backward()
            return out, w.grad

        if graphed:
            out, grad = nn.Graph.trace(step)(idx, psw)
        else:
            out, grad = step(idx, psw)
        results.append((out.numpy(), grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_embedding_bag_matches_torch():
    torch = pytest.importorskip("torch")
    w = _rng.standard_normal((10, 3))
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 3, 6])
    for kwargs in ({}, {"mode": "max"}, {"mode": "sum", "include_last_offset": True}, {"padding_idx": 4}):
        results = []
        for lib, mod in ((torch, torch.nn.functional), (flow, F)):
            t = lib.tensor(w, requires_grad=True)
            out = mod.embedding_bag(lib.tensor(idx), t, lib.tensor(off), **kwargs)
            out.backward(lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape))))
            results.append((out.detach().numpy(), t.grad.numpy()))
        (o1, g1), (o2, g2) = results
        np.testing.assert_allclose(o2, o1, rtol=1e-12, err_msg=str(kwargs))
        np.testing.assert_allclose(g2, g1, rtol=1e-12, err_msg=str(kwargs))


# ---- ParameterList / ParameterDict ---------------------------------------------------------------------------
def test_parameter_list():
    pl = nn.ParameterList([flow.randn(2, 3), nn.Parameter(flow.randn(3)), "not a tensor"])
    assert len(pl) == 3 and isinstance(pl[0], nn.Parameter) and pl[2] == "not a tensor"
    assert [name for name, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(flow.zeros(1))
    pl += [flow.ones(2)]
    assert len(pl) == 5 and len(list(pl.parameters())) == 4 and pl[-1].shape == (2,)
    assert len(pl[1:3]) == 2
    assert "(0): Parameter containing: [oneflow_lite.float32 of size 2x3]" in repr(pl)
    assert "(2): Object of type: str" in repr(pl)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable"):
        pl.extend(flow.ones(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl()
    with pytest.raises(IndexError, match="index 9 is out of range"):
        pl[9]


def test_parameter_dict():
    pd = nn.ParameterDict({"b": flow.randn(2), "a": flow.randn(3)})
    assert list(pd.keys()) == ["a", "b"]  # a plain dict is added in sorted key order, as in PyTorch
    assert all(isinstance(v, nn.Parameter) for v in pd.values())
    pd["c"] = flow.ones(1)
    assert "c" in pd and len(pd) == 3 and pd.get("z") is None
    assert pd.pop("c").shape == (1,) and "c" not in pd
    assert list((pd | nn.ParameterDict([("z", flow.ones(2))])).keys()) == ["a", "b", "z"]
    m = nn.Module()
    m.params = pd
    assert list(m.state_dict()) == ["params.a", "params.b"]
    assert pd.popitem()[0] == "b" and list(pd) == ["a"]
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []
    with pytest.raises(TypeError, match="not a string"):
        pd[1] = flow.ones(1)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called"):
        pd(1)


# ---- nn.functional's module helpers -------------------------------------------------------------------------------
def test_functional_namespace_helpers():
    assert F.Tensor is flow.Tensor and F.DType is int
    import collections.abc
    import typing
    assert F.Callable is collections.abc.Callable and F.Optional is typing.Optional  # as in PyTorch
    assert not F.has_torch_function((flow.ones(1), 1)) and not F.has_torch_function_unary(flow.ones(1))
    assert not F.has_torch_function_variadic(flow.ones(1), None)


def test_boolean_dispatch():
    def with_indices(x, return_indices=False):
        """Max and its index."""
        return "indices"

    def without(x, return_indices=False):
        return "values"
    fn = F.boolean_dispatch("return_indices", 1, False, with_indices, without, "mymodule", "mymax")
    assert fn(1) == "values" and fn(1, True) == "indices" and fn(1, return_indices=True) == "indices"
    assert fn.__name__ == "mymax" and fn.__module__ == "mymodule" and fn.__doc__ == "Max and its index."


def test_handle_torch_function_calls_the_overrides():
    calls = []

    class Logged:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append((func.__name__, types))
            return "overridden"

    class Child(Logged):
        pass

    def api(a, b):
        if F.has_torch_function_variadic(a, b):
            return F.handle_torch_function(api, (a, b), a, b)
        return "plain"
    assert api(1, 2) == "plain"
    assert api(Logged(), Child()) == "overridden"
    assert calls == [("api", (Child, Logged))]  # subclasses first

    class Declines:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    with pytest.raises(TypeError, match="no implementation found for"):
        api(Declines(), 1)
