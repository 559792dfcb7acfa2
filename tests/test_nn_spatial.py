"""Spatial layers and functions (pooling, unpooling, padding, fold / unfold, shuffles, upsampling, grid sampling):
the layers against NumPy formulas written here, PyTorch's reprs, warnings and errors, and the [numerics] rule that
every output comes only from its own window (a NaN or inf never spreads to windows that do not hold it). Values of
the functions themselves are checked by their OpSpec rows (tests/op_specs/spatial.py, conv.py). An optional test
compares with PyTorch when it is installed."""

import math
import os
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

F = flow.nn.functional
f64 = flow.float64
NAN, INF = np.nan, np.inf


def t(a, dtype=f64, requires_grad=False):
    return flow.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- padding layers ------------------------------------------------------------------------------
_NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _np_pad(x, padding, mode, value=0.0):
    """``padding`` in PyTorch's order (last dim first) applied with np.pad."""
    pairs = [(0, 0)] * x.ndim
    for i in range(len(padding) // 2):
        pairs[x.ndim - 1 - i] = (padding[2 * i], padding[2 * i + 1])
    if mode == "constant":
        return np.pad(x, pairs, constant_values=value)
    return np.pad(x, pairs, mode=_NP_MODE[mode])


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kind, mode", [("Reflection", "reflect"), ("Replication", "replicate"),
                                        ("Circular", "circular"), ("Zero", "constant")])
@pytest.mark.parametrize("batched", [True, False])
def test_padding_layers_match_np_pad(nd, kind, mode, batched):
    padding = (2, 1, 0, 3, 1, 2)[:2 * nd]
    shape = (2, 3, 4, 5, 4)[(3 - nd) + (0 if batched else 1):]
    x = rand(*shape)
    layer = getattr(nn, f"{kind}Pad{nd}d")(padding)
    assert layer.padding == padding
    np.testing.assert_allclose(layer(t(x)).numpy(), _np_pad(x, padding, mode))
    assert getattr(nn, f"{kind}Pad{nd}d")(1).padding == (1,) * (2 * nd)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_constant_pad_value_crop_and_repr(nd):
    x = rand(2, 3, 4, 5)
    layer = getattr(nn, f"ConstantPad{nd}d")(2, -1.5)
    np.testing.assert_allclose(layer(t(x)).numpy(), _np_pad(x, (2,) * (2 * nd), "constant", -1.5))
    assert repr(layer) == f"ConstantPad{nd}d(padding={(2,) * (2 * nd)}, value=-1.5)"
    assert repr(getattr(nn, f"ZeroPad{nd}d")(1)) == f"ZeroPad{nd}d({(1,) * (2 * nd)})"
    assert repr(getattr(nn, f"ReflectionPad{nd}d")(1)) == f"ReflectionPad{nd}d({(1,) * (2 * nd)})"
    cropped = nn.ConstantPad1d((-1, -2), 0.0)(t(x)).numpy()  # negative padding crops
    np.testing.assert_allclose(cropped, x[..., 1:-2])


def test_padding_layer_gradients():
    for layer in (nn.ReflectionPad3d((1, 2, 0, 1, 2, 1)), nn.ReplicationPad2d((2, 0, 1, 3)), nn.CircularPad1d((2, 1))):
        x = t(rand(1, 2, 3, 4, 3)[(0,) * (3 - int(type(layer).__name__[-2]))], requires_grad=True)
        assert flow.autograd.gradcheck(layer, (x,))


def test_padding_errors():
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        nn.ReflectionPad2d(3)(t(rand(1, 3, 3)))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(t(rand(1, 2, 3, 4, 4)), (1, 1, 1, 1, 3, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D input tensor"):
        nn.ReflectionPad2d(1)(t(rand(3, 3)))
    with pytest.raises(NotImplementedError, match="Padding size 6 is not supported for 6D input tensor"):
        nn.ReplicationPad3d(1)(t(rand(1, 1, 2, 2, 2, 2)))
    with pytest.raises(ValueError, match=r"expected 4D or 5D input \(got 3D input\)"):
        nn.CircularPad3d(1)(t(rand(2, 3, 3)))
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        nn.CircularPad1d((4, 0))(t(rand(2, 3)))


# ---- pooling -------------------------------------------------------------------------------------
def test_window_means_only_see_their_window():
    """[numerics]: a NaN or inf stays in the windows that hold it (no averaging-matrix product 0 * inf)."""
    y = F.adaptive_avg_pool1d(t([[[NAN, 1, 2, 3]]]), 2)
    np.testing.assert_allclose(y.numpy(), [[[NAN, 2.5]]])
    x = t([[[[INF, 1, 2, 3], [4, 5, 6, 7], [1, 1, 1, 1], [2, 2, 2, 2]]]])
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, 2).numpy().ravel(), [INF, 4.5, 1.5, 1.5])
    np.testing.assert_allclose(F.interpolate(x, size=(2, 2), mode="area").numpy().ravel(), [INF, 4.5, 1.5, 1.5])
    x3 = np.ones((1, 1, 4, 4, 4))
    x3[0, 0, 0, 0, 0] = NAN
    y3 = F.adaptive_avg_pool3d(t(x3), 2).numpy().ravel()
    assert np.isnan(y3[0]) and np.all(y3[1:] == 1)
    # overlapping windows (5 -> 3): the NaN reaches the two windows holding index 2 and no other
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t([[[0, 1, NAN, 3, 4]]]), 3).numpy(), [[[0.5, NAN, 3.5]]])
    # anti-aliased resampling masks the taps outside each window
    y = F.interpolate(x, size=(2, 2), mode="bilinear", antialias=True).numpy().ravel()
    assert np.isinf(y[0]) and np.all(np.isfinite(y[1:]))


def test_window_mean_gradients_only_reach_their_window():
    x = t(rand(1, 1, 4, 4), requires_grad=True)
    F.adaptive_avg_pool2d(x, 2).backward(t([[[[INF, 1], [1, 1]]]]))
    g = x.grad.numpy()[0, 0]
    assert np.all(np.isinf(g[:2, :2])) and np.all(g[2:, :] == 0.25) and np.all(g[:, 2:] == 0.25)


def test_adaptive_max_pool_nan_and_indices():
    y, i = F.adaptive_max_pool1d(t([[[1, NAN, 3, 2, NAN, 0]]]), 2, return_indices=True)
    np.testing.assert_allclose(y.numpy(), [[[NAN, NAN]]])
    np.testing.assert_array_equal(i.numpy(), [[[1, 4]]])
    y, i = F.adaptive_max_pool2d_with_indices(t(np.arange(16.0).reshape(1, 4, 4)), (2, None))
    assert tuple(y.shape) == (1, 2, 4) and i.dtype is flow.int64
    np.testing.assert_array_equal(i.numpy(), [[[4, 5, 6, 7], [12, 13, 14, 15]]])


@pytest.mark.parametrize("call, match", [
    (lambda: F.max_pool2d(t(rand(1, 1, 2, 2)), 3), "Output size is too small"),
    (lambda: F.max_pool1d(t(rand(1, 1, 3)), 2, padding=2), "pad should be smaller than or equal to half"),
    (lambda: F.avg_pool2d(t(rand(1, 1, 2, 2)), 3, padding=0), "Output size is too small"),
    (lambda: F.avg_pool3d(t(rand(1, 1, 1, 1, 1)), 2, padding=1),
     r"input image \(T: 1 H: 1 W: 1\) smaller than kernel size \(kT: 2 kH: 2 kW: 2\)"),
    (lambda: F.avg_pool3d(t(rand(1, 1, 4, 2, 4)), 3, padding=1), "smaller than kernel size"),
    (lambda: F.adaptive_max_pool2d(t(rand(5, 6)), 2), r"Expected 3D or 4D tensor"),
    (lambda: F.adaptive_max_pool2d(t(rand(2, 0, 5, 6)), 2), "non-zero size for non-batch dimensions"),
])
def test_pooling_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


@pytest.mark.parametrize("fn, shape, out_shape", [
    (F.adaptive_avg_pool1d, (1, 0, 4), (1, 0, 2)),        # batched: avg 1d / 2d check only the spatial dims
    (F.adaptive_avg_pool2d, (1, 0, 4, 4), (1, 0, 2, 2)),
    (F.adaptive_avg_pool1d, (0, 4), (0, 2)),              # unbatched: dim 0 (the channels) may be empty
    (F.adaptive_avg_pool3d, (0, 2, 2, 2), (0, 2, 2, 2)),
    (F.adaptive_max_pool1d, (0, 4), (0, 2)),
    (F.adaptive_max_pool2d, (0, 4, 4), (0, 2, 2)),
    (F.adaptive_max_pool3d, (0, 2, 2, 2), (0, 2, 2, 2)),
])
def test_adaptive_pooling_of_empty_channels_as_pytorch(fn, shape, out_shape):
    x = flow.zeros(shape, requires_grad=True)
    y = fn(x, 2)
    assert tuple(y.shape) == out_shape
    y.sum().backward()
    assert tuple(x.grad.shape) == shape


@pytest.mark.parametrize("fn, shape", [(F.adaptive_avg_pool3d, (1, 0, 2, 2, 2)), (F.adaptive_max_pool1d, (1, 0, 4)),
                                       (F.adaptive_max_pool2d, (1, 0, 4, 4)), (F.adaptive_avg_pool1d, (2, 3, 0))])
def test_adaptive_pooling_refuses_empty_channels_or_spatial_dims_as_pytorch(fn, shape):
    with pytest.raises(RuntimeError, match="non-zero size for non-batch dimensions"):
        fn(flow.zeros(shape), 2)


def test_pooling_kernels_up_to_the_padded_input_work():
    y = F.avg_pool3d(t(np.ones((1, 1, 2, 2, 2))), 2, padding=1, count_include_pad=False)
    np.testing.assert_allclose(y.numpy(), np.ones((1, 1, 2, 2, 2)))
    y = F.max_pool2d(t([[[[1.0, 5.0], [3.0, 2.0]]]]), 3, padding=1)
    np.testing.assert_allclose(y.numpy(), [[[[5.0]]]])


def test_fractional_max_pool_draws_from_the_generator():
    x = t(rand(2, 3, 11, 10))
    flow.manual_seed(7)
    a, ia = F.fractional_max_pool2d(x, 2, output_size=(5, 4), return_indices=True)
    flow.manual_seed(7)
    b, ib = F.fractional_max_pool2d_with_indices(x, 2, output_size=(5, 4))
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the values are the input at the indices, and each is the maximum of a 2 x 2 window
    flat = x.numpy().reshape(6, -1)
    np.testing.assert_array_equal(a.numpy().reshape(6, -1), np.take_along_axis(flat, ia.numpy().reshape(6, -1), 1))
    assert tuple(F.fractional_max_pool3d(t(rand(3, 9, 8, 7)), 2, output_ratio=0.5).shape) == (3, 4, 4, 3)


def test_fractional_max_pool_layer_and_errors():
    layer = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
    assert layer.kernel_size == (3, 3) and layer.output_ratio == (0.5, 0.5) and layer.output_size is None
    assert list(layer.state_dict()) == [] and repr(layer) == "FractionalMaxPool2d()"
    samples = t(np.full((1, 2, 2), 0.5))
    fixed = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=samples)
    assert "_random_samples" in fixed.state_dict()
    np.testing.assert_array_equal(fixed(t(rand(1, 2, 7, 7))).numpy(), fixed(t(rand(1, 2, 7, 7))).numpy())
    with pytest.raises(ValueError, match="requires specifying either an output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio may be specified"):
        nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="kernel_size must be greater than 0"):
        nn.FractionalMaxPool3d(0, output_size=2)
    x = t(rand(2, 3, 5, 6))
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height 5"):
        F.fractional_max_pool2d(x, 3, output_size=4)
    with pytest.raises(RuntimeError, match="same dtype as input"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=t(rand(2, 3, 2), flow.float32))
    with pytest.raises(RuntimeError, match=r"_random_samples.size\(0\) no less then input batch size"):
        F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=t(rand(1, 3, 2)))
    with pytest.raises(RuntimeError, match=r"pool width 3 too large relative to input width 7"):  # 3-D: strict
        F.fractional_max_pool3d(t(rand(1, 1, 9, 9, 7)), 3, output_size=5)


def test_lp_pool_layer():
    x = np.abs(rand(2, 3, 6, 4)) + 0.1
    layer = nn.LPPool2d(3, (2, 2))
    windows = x.reshape(2, 3, 3, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 3, 2, 4)
    np.testing.assert_allclose(layer(t(x)).numpy(), (windows ** 3).sum(-1) ** (1 / 3))
    assert repr(layer) == "LPPool2d(norm_type=3, kernel_size=(2, 2), stride=None, ceil_mode=False)"
    y = nn.LPPool1d(math.inf, 2)(t([[[-3.0, 1.0, 2.0, -0.5]]]))
    np.testing.assert_allclose(y.numpy(), [[[3.0, 2.0]]])


def test_max_unpool_round_trip_and_errors():
    x = t(rand(2, 3, 4, 6))
    y, i = F.max_pool2d(x, 2, return_indices=True)
    layer = nn.MaxUnpool2d(2)
    up = layer(y, i).numpy()
    kept = up != 0
    np.testing.assert_allclose(up[kept], x.numpy()[kept])
    assert kept.sum() == y.numel() and repr(layer) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert tuple(layer(y, i, output_size=(5, 7)).shape) == (2, 3, 5, 7)
    assert tuple(layer(y, i, output_size=flow.Size([2, 3, 5, 7])).shape) == (2, 3, 5, 7)
    with pytest.raises(ValueError, match=r"invalid output_size .* \(dim 0 must be between 2 and 6\)"):
        layer(y, i, output_size=(6, 6))
    with pytest.raises(ValueError, match="output_size should be a sequence containing 2 or 4 elements"):
        layer(y, i, output_size=(5,))
    with pytest.raises(RuntimeError, match="Found an invalid max index: 24"):
        F.max_unpool2d(y, i * 0 + 24, 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64 but got: float64"):
        F.max_unpool2d(y, i.double(), 2)
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the input tensor"):
        F.max_unpool2d(y, i[:, :1], 2)
    with pytest.raises(RuntimeError, match="should be a 4d or 5d Tensor, but got a tensor with 3 dimensions"):
        F.max_unpool3d(y[0], i[0], 2)


def test_max_unpool_writes_duplicates_once():
    """Overlapping windows repeat an index: the value is written, not added (PyTorch's partial inverse)."""
    y, i = F.max_pool1d(t([[[1.0, 5.0, 2.0, 0.0]]]), 2, 1, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), [[[1, 1, 2]]])
    np.testing.assert_allclose(F.max_unpool1d(y, i, 2, 1).numpy(), [[[0.0, 5.0, 2.0, 0.0]]])


# ---- fold / unfold, shuffles ---------------------------------------------------------------------
def test_fold_of_unfold_counts_each_position():
    x = rand(2, 3, 5, 6)
    kw = {"kernel_size": (2, 3), "dilation": 1, "padding": 1, "stride": 1}
    cols = nn.Unfold(**kw)(t(x))
    ones = nn.Fold((5, 6), **kw)(nn.Unfold(**kw)(t(np.ones_like(x))))
    np.testing.assert_allclose(nn.Fold((5, 6), **kw)(cols).numpy(), x * ones.numpy())
    assert repr(nn.Fold(4, 2)) == "Fold(output_size=4, kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(nn.Unfold((2, 3), stride=2)) == "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=2)"


@pytest.mark.parametrize("call, match", [
    (lambda: F.unfold(t(rand(2, 3, 4, 4)), 5), r"calculated shape of the array of sliding blocks as \(0, 0\)"),
    (lambda: F.unfold(t(rand(2, 3, 4, 4)), 0), "kernel size should be greater than zero"),
    (lambda: F.unfold(t(rand(2, 3, 4, 4)), 2, stride=0), "stride should be greater than zero"),
    (lambda: F.unfold(t(rand(2, 3, 4, 4)), 2, padding=-1), "padding should be non-negative"),
    (lambda: F.unfold(t(rand(2, 3, 4, 4)), (2, 2, 2)), "It is expected kernel_size equals to 2, but got size 3"),
    (lambda: F.unfold(t(rand(2, 0, 4, 4)), 2), "Expected 3D or 4D"),
    (lambda: F.fold(t(rand(2, 12, 8)), 4, 2), r"calculated number of sliding blocks 3 \* 3 = 9"),
    (lambda: F.fold(t(rand(2, 13, 9)), 4, 2), "divisible by the product of kernel_size"),
    (lambda: F.fold(t(rand(2, 2, 12, 9)), 4, 2), "Expected 2D or 3D"),
    (lambda: F.pixel_shuffle(t(rand(2, 6, 3, 3)), 2), r"input.size\(-3\)=6 is not divisible by 4"),
    (lambda: F.pixel_shuffle(t(rand(3, 3)), 2), "at least 3 dimensions"),
    (lambda: F.pixel_unshuffle(t(rand(2, 2, 5, 6)), 2), r"height to be divisible by downscale_factor"),
    (lambda: F.pixel_unshuffle(t(rand(2, 2, 4, 6)), 0), "positive downscale_factor"),
    (lambda: F.channel_shuffle(t(rand(2, 6)), 2), "channel_shuffle expects input with > 2 dims"),
    (lambda: F.channel_shuffle(t(rand(2, 5, 3)), 2), "Got 5 channels and 2 groups"),
    (lambda: F.conv_tbc(t(rand(5, 2, 3)), t(rand(3, 2, 4)), t(rand(4))), "Input dim 2 .* dim 1 in the weight"),
    (lambda: F.conv_tbc(t(rand(5, 2, 3)), t(rand(3, 3, 4)), t(rand(3))), "Bias size must equal dim 2"),
])
def test_spatial_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_shuffle_layers():
    x = t(rand(2, 8, 3, 4))
    up = nn.PixelShuffle(2)
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(up(x)).numpy(), x.numpy())
    assert tuple(up(x).shape) == (2, 2, 6, 8) and repr(up) == "PixelShuffle(upscale_factor=2)"
    y = nn.ChannelShuffle(2)(t(np.arange(4.0).reshape(1, 4, 1, 1)))
    np.testing.assert_array_equal(y.numpy().ravel(), [0, 2, 1, 3])
    assert repr(nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"


# ---- upsampling ----------------------------------------------------------------------------------
def test_upsample_layers():
    x = t(rand(1, 2, 3, 4))
    layer = nn.Upsample(scale_factor=2)
    assert layer.scale_factor == 2.0 and repr(layer) == "Upsample(scale_factor=2.0, mode='nearest')"
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy().repeat(2, 2).repeat(2, 3))
    bilinear = nn.UpsamplingBilinear2d(size=(5, 7))
    assert repr(bilinear) == "UpsamplingBilinear2d(size=(5, 7), mode='bilinear')"
    y = bilinear(x).numpy()
    np.testing.assert_allclose(y[..., [0, -1], :][..., [0, -1]], x.numpy()[..., [0, -1], :][..., [0, -1]])
    assert nn.Upsample(scale_factor=(2, 3)).scale_factor == (2.0, 3.0)
    assert tuple(nn.UpsamplingNearest2d(scale_factor=3)(x).shape) == (1, 2, 9, 12)
    bicubic = nn.Upsample(size=(6, 8), mode="bicubic", align_corners=True)(x).numpy()
    np.testing.assert_allclose(bicubic[..., [0, -1], :][..., [0, -1]], x.numpy()[..., [0, -1], :][..., [0, -1]],
                               atol=1e-12)


@pytest.mark.parametrize("name, kwargs", [("upsample", {}), ("upsample_nearest", {}), ("upsample_bilinear", {})])
def test_deprecated_upsample_wrappers_warn(name, kwargs):
    x = t(rand(1, 2, 3, 4))
    with pytest.warns(UserWarning, match=rf"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate`"):
        y = getattr(F, name)(x, scale_factor=2, **kwargs)
    mode = {"upsample_bilinear": "bilinear"}.get(name, "nearest")
    align = True if name == "upsample_bilinear" else None
    np.testing.assert_allclose(y.numpy(), F.interpolate(x, scale_factor=2, mode=mode, align_corners=align).numpy())


def test_interpolate_mode_errors():
    x = t(rand(1, 1, 4, 4))
    with pytest.raises(ValueError, match="Lanczos mode does not support align_corners=True"):
        F.interpolate(x, 2, mode="lanczos", antialias=True, align_corners=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear, bicubic, and lanczos"):
        F.interpolate(t(rand(1, 1, 4)), 2, mode="linear", antialias=True)
    with pytest.raises(NotImplementedError, match=r"\(got 5D\) .*\(got bicubic\)"):
        F.interpolate(t(rand(1, 1, 2, 2, 2)), 3, mode="bicubic")


# ---- grid_sample / affine_grid -------------------------------------------------------------------
@pytest.mark.parametrize("nd", [2, 3])
def test_identity_affine_grid_samples_the_input(nd):
    x = t(rand(2, 3, *(4, 5, 3)[:nd]))
    eye = np.concatenate([np.eye(nd), np.zeros((nd, 1))], 1)
    for align in (False, True):
        grid = F.affine_grid(t(np.stack([eye, eye])), tuple(x.shape), align_corners=align)
        for mode in ("bilinear", "nearest") + (("bicubic",) if nd == 2 else ()):
            y = F.grid_sample(x, grid, mode=mode, align_corners=align)
            np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-12)


def test_grid_sample_masks_outside_corners():
    """A corner outside the input is masked, never multiplied by a zero weight: an inf there does not reach the
    output. (A corner inside the input is weighted even when its weight is 0, as in PyTorch: inf * 0 = NaN.)"""
    x = t([[[[1.0, 2.0], [3.0, INF]]]])
    grid = t([[[[5.0, 5.0], [1.0, 1.0], [1.0, 3.0], [-1.0, -1.0]]]])
    y = F.grid_sample(x, grid, align_corners=True).numpy().ravel()
    np.testing.assert_allclose(y, [0.0, INF, 0.0, NAN])
    y = F.grid_sample(x, grid, padding_mode="border", align_corners=True).numpy().ravel()
    np.testing.assert_allclose(y, [INF, INF, INF, NAN])
    y = F.grid_sample(t([[[[1.0, 2.0]]]]), t([[[[NAN, 0.0]]]]), align_corners=True).numpy()  # NaN counts as -1
    np.testing.assert_allclose(y.ravel(), [1.0])


def test_grid_sample_warnings_and_errors():
    x, grid = t(rand(2, 3, 4, 5)), t(rand(2, 6, 7, 2))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        F.affine_grid(t(rand(2, 2, 3)), (2, 3, 4, 5))
    with pytest.warns(UserWarning, match="affine_grid behavior has changed for unit-size grids"):
        F.affine_grid(t(rand(2, 2, 3)), (2, 3, 1, 5), align_corners=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.grid_sample(x, grid, align_corners=False)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'foo'"):
        F.grid_sample(x, grid, mode="foo", align_corners=True)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, grid, padding_mode="edge", align_corners=True)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, grid[:1], align_corners=True)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, t(rand(2, 6, 7, 3)), align_corners=True)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(t(rand(1, 1, 2, 2, 2)), t(rand(1, 1, 1, 1, 3)), mode="bicubic", align_corners=True)
    with pytest.raises(RuntimeError, match="expected input and grid to have same dtype"):
        F.grid_sample(x, t(rand(2, 6, 7, 2), flow.float32), align_corners=True)
    with pytest.raises(ValueError, match=r"Expected a batch of 3D affine matrices of shape Nx3x4"):
        F.affine_grid(t(rand(2, 2, 3)), (2, 3, 4, 5, 6), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(t(rand(2, 2, 3)), (2, 3, 4), align_corners=False)
    with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
        F.affine_grid(t(rand(2, 2, 3)), (2, 3, 0, 5), align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(flow.zeros(2, 2, 3, dtype=flow.int64), (2, 3, 4, 5), align_corners=False)


def test_grid_sample_warnings_point_at_the_callers_line_on_the_first_call_too():
    """The first call of a functional function resolves its overload (more frames than later calls) and
    grid_sample goes through the fp32 autocast wrapper: its warning still names the caller's line (as PyTorch's)."""
    import subprocess
    import sys

    code = ("import warnings, oneflow_lite as flow\n"
            "import oneflow_lite.nn.functional as F\n"
            "warnings.simplefilter('always')\n"
            "theta, x = flow.tensor([[[1.0, 0, 0], [0, 1, 0]]]), flow.ones(1, 1, 3, 3)\n"
            "for _ in range(2):\n"
            "    grid = F.affine_grid(theta, x.size())\n"
            "    y = F.grid_sample(x, grid)\n")
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), check=True).stderr
    lines = [line.split(": UserWarning")[0] for line in out.splitlines() if "UserWarning: Default grid_sample" in line]
    assert lines == ["<string>:6", "<string>:7", "<string>:6", "<string>:7"], out


def test_grid_sample_nearest_gives_the_grid_a_zero_gradient():
    """Nearest sampling is piecewise constant in the grid: its gradient is zeros (a tensor, as PyTorch's), also with
    infinite grid values; the input's gradient counts each sampled pixel."""
    x = flow.tensor(np.arange(4.0, dtype=np.float32).reshape(1, 1, 2, 2), requires_grad=True)
    grid = flow.tensor([[[[-0.5, -0.5], [0.5, 0.5], [INF, 0.0]]]], requires_grad=True)
    y = F.grid_sample(x, grid, mode="nearest", align_corners=False)
    np.testing.assert_array_equal(y.detach().numpy().ravel(), [0.0, 3.0, 0.0])
    y.sum().backward()
    np.testing.assert_array_equal(grid.grad.numpy(), np.zeros((1, 1, 3, 2)))
    np.testing.assert_array_equal(x.grad.numpy().ravel(), [1.0, 0.0, 0.0, 1.0])


def test_torch_names_under_mock_torch():
    with flow.mock_torch.enable():
        import torch
        layer = torch.nn.Sequential(torch.nn.ReflectionPad2d(1), torch.nn.Conv2d(3, 8, 3), torch.nn.PixelShuffle(2),
                                    torch.nn.AdaptiveMaxPool2d(3), torch.nn.Upsample(scale_factor=2, mode="bilinear"))
        y = layer(torch.randn(1, 3, 6, 6))
        assert tuple(y.shape) == (1, 2, 6, 6)
        assert torch.nn.functional.unfold(torch.randn(1, 2, 4, 4), 2).shape == (1, 8, 9)


# ---- optional: PyTorch as an oracle --------------------------------------------------------------
def _torch_cases(torch):
    """(name, call) pairs run on both libraries: ``call(F, T, tensor)`` with the library's functional module, its
    top module and a constructor from NumPy."""
    rng = np.random.default_rng(3)
    x4, x5 = rng.standard_normal((2, 3, 7, 9)), rng.standard_normal((1, 2, 5, 4, 6))
    x3 = rng.standard_normal((11, 2, 3))  # (time, batch, channels) for conv_tbc
    grid = rng.random((2, 5, 6, 2)) * 2.6 - 1.3
    samples = rng.random((2, 3, 2))
    cases = [
        ("adaptive_max_pool2d", lambda F, T, c: F.adaptive_max_pool2d(c(x4), (4, 5), True)),
        ("adaptive_max_pool3d", lambda F, T, c: F.adaptive_max_pool3d(c(x5), (2, 3, 4), True)),
        ("adaptive_avg_pool1d", lambda F, T, c: F.adaptive_avg_pool1d(c(x4[0]), 4)),
        ("fractional_max_pool2d", lambda F, T, c: F.fractional_max_pool2d(c(x4), 2, (4, 5), None, True, c(samples))),
        ("lp_pool1d", lambda F, T, c: F.lp_pool1d(c(np.abs(x4[0])), 2.5, 3, 2, True)),
        ("max_unpool2d", lambda F, T, c: F.max_unpool2d(*F.max_pool2d(c(x4), 2, return_indices=True), 2,
                                                       output_size=(7, 9))),
        ("unfold", lambda F, T, c: F.unfold(c(x4), (2, 3), 2, 1, (2, 1))),
        ("fold", lambda F, T, c: F.fold(F.unfold(c(x4), 3, 1, 1, 2), (7, 9), 3, 1, 1, 2)),
        ("pixel_unshuffle", lambda F, T, c: F.pixel_unshuffle(c(x4[:, :, :6, :6]), 3)),
        ("channel_shuffle", lambda F, T, c: F.channel_shuffle(c(x4), 3)),
        ("conv_tbc", lambda F, T, c: F.conv_tbc(c(x3), c(x4[0, :, :3, :3].copy()), c(x4[0, 0, 0, :3].copy()), 1)),
        ("affine_grid", lambda F, T, c: F.affine_grid(c(x4[:, :2, 0, :3]), (2, 3, 5, 6), False)),
        ("pad-reflect-3d", lambda F, T, c: F.pad(c(x5), (1, 2, 0, 3, 2, 1), mode="reflect")),
        ("pad-circular-3d", lambda F, T, c: F.pad(c(x5), (1, 2, 0, 3, 2, 1), mode="circular")),
        ("pad-replicate-3d", lambda F, T, c: F.pad(c(x5), (1, 2, 0, 3, 2, 1), mode="replicate")),
    ]
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            cases.append((f"grid_sample-{mode}-{pad}",
                          lambda F, T, c, m=mode, p=pad: F.grid_sample(c(x4), c(grid), m, p, False)))
    for mode, aa in (("bicubic", False), ("bilinear", True), ("bicubic", True), ("lanczos", True), ("area", False)):
        for size in ((3, 4), (10, 13)):
            cases.append((f"interpolate-{mode}-{aa}-{size}",
                          lambda F, T, c, m=mode, a=aa, s=size: F.interpolate(c(x4), s, mode=m, antialias=a)))
    return cases


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF
    for name, call in _torch_cases(torch):
        expected = call(TF, torch, torch.tensor)
        got = call(F, flow, lambda a: flow.tensor(a))
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g.numpy(), e.numpy(), atol=1e-10, rtol=1e-9, err_msg=name)
