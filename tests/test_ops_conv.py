"""Targeted tests of convolution, pooling and interpolate: hand-computed values, PyTorch's special cases
(``padding="same"`` with even kernels, NaN / -inf in max pooling, scale factors in interpolate), errors, meta and
gradients. The table-driven tests are in tests/op_specs/conv.py."""

import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.framework.errors import OpKernelNotFoundError

F = flow.nn.functional


def t(a, dtype=np.float32, requires_grad=False):
    x = flow.tensor(np.asarray(a, dtype=dtype))
    return x.requires_grad_() if requires_grad else x


def f64(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- exposure ------------------------------------------------------------------------------------
NAMES = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool1d",
         "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
         "adaptive_avg_pool2d", "adaptive_avg_pool3d", "interpolate"]


@pytest.mark.parametrize("name", NAMES)
def test_functions_are_exposed_in_nn_functional_and_C(name):
    assert getattr(F, name) is getattr(flow._C, name)


# ---- convolution ---------------------------------------------------------------------------------
def test_conv2d_hand_computed():
    x = t(np.arange(16).reshape(1, 1, 4, 4))
    w = t([[[[1, 0], [0, -1]]]])
    # out[i, j] = x[i, j] - x[i + 1, j + 1] = -5 everywhere
    np.testing.assert_array_equal(F.conv2d(x, w).numpy(), np.full((1, 1, 3, 3), -5.0))
    y = flow.conv2d(x, w, t([10.0]), stride=2, padding=1)
    # windows start at -1, 1, 3; out = x[a, b] - x[a + 1, b + 1] with zero padding, plus 10
    xp = np.pad(np.arange(16.0).reshape(4, 4), 1)
    expected = np.array([[xp[a, b] - xp[a + 1, b + 1] + 10 for b in (0, 2, 4)] for a in (0, 2, 4)])
    np.testing.assert_array_equal(y.numpy()[0, 0], expected)


def test_conv1d_same_with_even_kernel_pads_one_more_after():
    # PyTorch: total padding dilation * (k - 1) = 1, split as 0 before and 1 after
    y = F.conv1d(t([[[1, 2, 3, 4]]]), t([[[1, 1]]]), padding="same")
    np.testing.assert_array_equal(y.numpy(), [[[3, 5, 7, 4]]])
    y = F.conv1d(t([[[1, 2, 3, 4, 5]]]), t([[[1, 0, 1, 0]]]), padding="same", dilation=1)
    # total 3: 1 before, 2 after -> windows x[i-1] + x[i+1]
    np.testing.assert_array_equal(y.numpy(), [[[2, 4, 6, 8, 4]]])


def test_conv2d_groups_are_independent():
    x = f64(1, 4, 5, 5)
    w = f64(6, 2, 3, 3, seed=1)
    y = F.conv2d(t(x, np.float64), t(w, np.float64), groups=2).numpy()
    y0 = F.conv2d(t(x[:, :2], np.float64), t(w[:3], np.float64)).numpy()
    y1 = F.conv2d(t(x[:, 2:], np.float64), t(w[3:], np.float64)).numpy()
    np.testing.assert_allclose(y, np.concatenate([y0, y1], axis=1), rtol=1e-12)


def test_conv_unbatched_input():
    x, w = f64(3, 6, 5), f64(2, 3, 3, 3, seed=1)
    y = F.conv2d(t(x, np.float64), t(w, np.float64), padding=1)
    assert tuple(y.shape) == (2, 6, 5)
    np.testing.assert_allclose(y.numpy(), F.conv2d(t(x[None], np.float64), t(w, np.float64), padding=1).numpy()[0])


def test_conv_transpose2d_hand_computed():
    ones = t(np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(F.conv_transpose2d(ones, ones).numpy()[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    np.testing.assert_array_equal(F.conv_transpose2d(ones, ones, stride=2).numpy()[0, 0], np.ones((4, 4)))
    y = F.conv_transpose2d(ones, ones, t([0.5]), stride=2, padding=1, output_padding=1)
    # the 4x4 map cropped by 1 at the start; output_padding keeps one more row / column at the end
    np.testing.assert_array_equal(y.numpy()[0, 0], np.full((3, 3), 1.5))


def test_conv_transpose_is_the_adjoint_of_conv():
    x, w = f64(2, 4, 7, 6), f64(6, 2, 3, 2, seed=1)  # conv: 4 -> 6 channels with groups=2
    kwargs = {"stride": 2, "padding": 1, "dilation": (1, 2), "groups": 2}
    conv = F.conv2d(t(x, np.float64), t(w, np.float64), **kwargs).numpy()
    g = f64(*conv.shape, seed=2)
    # <g, conv(x)> == <conv_transpose(g), x> with the same weight (6 in-channels for the transpose)
    back = F.conv_transpose2d(t(g, np.float64), t(w, np.float64), output_padding=(0, 1), **kwargs)
    assert tuple(back.shape) == x.shape
    np.testing.assert_allclose(np.sum(g * conv), np.sum(back.numpy() * x), rtol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: F.conv2d(t(np.ones((4, 4))), t(np.ones((1, 1, 2, 2)))),
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[4, 4\]"),
    (lambda: F.conv2d(t(np.ones(())), t(np.ones((1, 1, 2, 2)))), r"input to conv2d, but got input of size: \[\]"),
    (lambda: F.conv2d(t(np.ones((1, 3, 5, 5))), t(np.ones((2, 4, 3, 3)))),
     (r"conv2d: Given groups=1, weight of size \[2, 4, 3, 3\], expected input\[1, 3, 5, 5\] to have 4 channels, but "
     r"got 3 channels instead")),
    (lambda: F.conv2d(t(np.ones((1, 4, 5, 5))), t(np.ones((3, 2, 3, 3))), groups=2),
     r"Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size \[3, 2, 3, 3\]"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((2, 1, 3, 3))), t(np.ones(3))),
     r"expected bias to be 1-dimensional with 2 elements, but got bias of size \[3\] instead"),
    (lambda: F.conv2d(t(np.ones((1, 1, 2, 2))), t(np.ones((1, 1, 3, 3)))),
     (r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\). Kernel size can't be greater "
     r"than actual input size")),
    (lambda: F.conv2d(t(np.ones((1, 1, 3, 3))), t(np.ones((1, 1, 2, 2))), dilation=3),
     r"padded input size per channel: \(3 x 3\). Kernel size: \(4 x 4\)"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2))), stride=2, padding="same"),
     r"conv2d: padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2))), padding="full"),
     r"conv2d: Invalid padding string: 'full'"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2))), stride=0),
     r"conv2d: non-positive stride is not supported"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2))), padding=-1),
     r"conv2d: negative padding is not supported"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2))), dilation=0),
     r"conv2d: dilation should be greater than zero"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2))), groups=0),
     r"conv2d: non-positive groups is not supported"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2, 2)), np.float64)),
     r"conv2d: Input type \(float32\) and weight type \(float64\) should be the same"),
    (lambda: F.conv2d(t(np.ones((1, 1, 5, 5))), t(np.ones((1, 1, 2)))), r"conv2d: weight must be 4-D"),
    (lambda: F.conv1d(t(np.ones((1, 1, 5))), t(np.ones((1, 1, 2))), stride=(1, 2)),
     r"conv1d\(\) received an invalid combination of arguments"),
    (lambda: F.conv_transpose2d(t(np.ones((1, 1, 3, 3))), t(np.ones((1, 1, 2, 2))), output_padding=1),
     r"conv_transpose2d: output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(t(np.ones((1, 3, 3, 3))), t(np.ones((2, 1, 2, 2)))),
     (r"conv_transpose2d: Given transposed=1, weight of size \[2, 1, 2, 2\], expected input\[1, 3, 3, 3\] to have "
     r"2 channels, but got 3 channels instead")),
    (lambda: F.conv_transpose2d(t(np.ones((1, 1, 1, 1))), t(np.ones((1, 1, 1, 1))), padding=1),
     (r"conv_transpose2d: Given input size per channel: \(1 x 1\). Calculated output size per channel: \(-1 x -1\). "
     r"Output size is too small")),
    (lambda: F.conv_transpose2d(t(np.ones((1, 2, 3, 3))), t(np.ones((2, 1, 2, 2))), t(np.ones(3))),
     r"expected bias to be 1-dimensional with 1 elements"),
    (lambda: F.conv_transpose1d(t(np.ones((1, 2, 3))), t(np.ones((2, 1, 2))), groups=-1),
     r"conv_transpose1d: non-positive groups is not supported"),
    (lambda: F.conv_transpose1d(t(np.ones(())), t(np.ones((2, 1, 2)))),
     r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv_transpose1d, but got input of size: \[\]"),
])
def test_conv_errors(call, match):
    with pytest.raises((RuntimeError, TypeError), match=match):
        call()


def test_integer_conv_is_not_supported():
    with pytest.raises(OpKernelNotFoundError, match="conv2d"):
        F.conv2d(t(np.ones((1, 1, 3, 3)), np.int64), t(np.ones((1, 1, 2, 2)), np.int64))


def test_conv_on_meta_gives_shapes_and_the_same_errors():
    x = flow.zeros(2, 4, 9, 8, device="meta")
    w = flow.zeros(6, 2, 3, 3, device="meta")
    y = F.conv2d(x, w, stride=2, padding=(1, 0), groups=2)
    assert (tuple(y.shape), y.device) == ((2, 6, 5, 3), flow.device("meta"))
    assert tuple(F.conv_transpose2d(y, flow.zeros(6, 1, 3, 3, device="meta"), stride=2, groups=2).shape) == \
        (2, 2, 11, 7)
    with pytest.raises(RuntimeError, match="expected input"):
        F.conv2d(x, flow.zeros(6, 3, 3, 3, device="meta"))


def test_conv_gradients_against_numpy():
    """dx, dw, db of a conv with stride, padding, dilation and groups, against the NumPy loops of the definition."""
    x, w, b = f64(2, 4, 6, 5), f64(6, 2, 3, 2, seed=1), f64(6, seed=2)
    kw = {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2), "groups": 2}
    xt, wt, bt = t(x, np.float64, True), t(w, np.float64, True), t(b, np.float64, True)
    y = F.conv2d(xt, wt, bt, **kw)
    g = f64(*y.shape, seed=3)
    y.backward(t(g, np.float64))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)))
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for n, o, i, j in np.ndindex(*g.shape):
        grp = o // 3
        for c, a, bb in np.ndindex(2, 3, 2):
            r, s = i * 2 + a, j + 2 * bb
            dxp[n, grp * 2 + c, r, s] += g[n, o, i, j] * w[o, c, a, bb]
            dw[o, c, a, bb] += g[n, o, i, j] * xp[n, grp * 2 + c, r, s]
    np.testing.assert_allclose(xt.grad.numpy(), dxp[:, :, 1:-1, 2:-2], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(wt.grad.numpy(), dw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(bt.grad.numpy(), g.sum(axis=(0, 2, 3)), rtol=1e-12)


def test_conv2d_double_backward_unbatched_same_padding():
    x, w = t(f64(2, 4, 3), np.float64, True), t(f64(3, 2, 2, 2, seed=1), np.float64, True)
    fn = lambda a, b: F.conv2d(a, b, padding="same", dilation=(2, 1))
    assert flow.autograd.gradcheck(fn, (x, w))
    assert flow.autograd.gradgradcheck(fn, (x, w))


def test_conv_transpose_double_backward():
    x, w = t(f64(1, 2, 3, 2), np.float64, True), t(f64(2, 2, 2, 3, seed=1), np.float64, True)
    fn = lambda a, b: F.conv_transpose2d(a, b, stride=(1, 2), output_padding=(1, 0), dilation=(2, 1))
    assert flow.autograd.gradgradcheck(fn, (x, w))


# ---- pooling -------------------------------------------------------------------------------------
def test_max_pool2d_indices_ties_nan_and_inf():
    x = np.array([[1, np.nan, 3, np.nan],
                  [5, np.nan, 7, 8],
                  [-np.inf, -np.inf, 1, 1],
                  [-np.inf, -np.inf, 1, 1]])
    y, i = F.max_pool2d(t(x[None, None], np.float64), 2, return_indices=True)
    # NaN wins and the last NaN of the window is reported; an all -inf window points at its first element;
    # ties report the first maximum
    np.testing.assert_array_equal(y.numpy()[0, 0], [[np.nan, np.nan], [-np.inf, 1]])
    np.testing.assert_array_equal(i.numpy()[0, 0], [[5, 3], [8, 10]])
    assert i.dtype is flow.int64


def test_max_pool_padding_and_ceil_mode():
    x = np.arange(25.0).reshape(1, 1, 5, 5)
    y, i = F.max_pool2d(t(x), 2, 2, 1, return_indices=True)
    np.testing.assert_array_equal(y.numpy()[0, 0], [[0, 2, 4], [10, 12, 14], [20, 22, 24]])
    np.testing.assert_array_equal(i.numpy()[0, 0], [[0, 2, 4], [10, 12, 14], [20, 22, 24]])
    # ceil_mode keeps a last window that starts inside the input: 5 -> 2 windows of 3 with stride 3
    assert tuple(F.max_pool2d(t(x), 3, 3).shape) == (1, 1, 1, 1)
    np.testing.assert_array_equal(F.max_pool2d(t(x), 3, 3, ceil_mode=True).numpy()[0, 0], [[12, 14], [22, 24]])
    # with padding 1 a third window would start in the right padding: dropped
    assert tuple(F.max_pool2d(t(x), 3, 3, 1, ceil_mode=True).shape) == (1, 1, 2, 2)


def test_max_pool_integers_and_meta():
    x = np.array([[[-5, -7, 3], [2, -9, 3]]], dtype=np.int32)
    y, i = F.max_pool1d(t(x, np.int32), 2, 1, return_indices=True)
    np.testing.assert_array_equal(y.numpy(), [[[-5, 3], [2, 3]]])
    np.testing.assert_array_equal(i.numpy(), [[[0, 2], [0, 2]]])
    assert y.dtype is flow.int32
    m, mi = F.max_pool2d(flow.zeros(0, 3, 7, 7, device="meta"), 3, 2, 1, return_indices=True)
    assert (tuple(m.shape), mi.dtype, m.device) == ((0, 3, 4, 4), flow.int64, flow.device("meta"))


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = t([[[[1.0, 3.0], [3.0, 2.0]]]], np.float64, True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0, 1], [0, 0]]]])
    # overlapping windows add up
    x = t([[0.0, 5.0, 1.0, 0.0]], np.float64, True)
    F.max_pool1d(x, 2, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2, 1, 0]])


def test_avg_pool2d_padding_rules():
    x = t(np.ones((1, 1, 3, 3)))
    inc = F.avg_pool2d(x, 3, 1, 1).numpy()[0, 0]
    np.testing.assert_allclose(inc, [[4 / 9, 6 / 9, 4 / 9], [6 / 9, 1, 6 / 9], [4 / 9, 6 / 9, 4 / 9]], rtol=1e-6)
    np.testing.assert_array_equal(F.avg_pool2d(x, 3, 1, 1, count_include_pad=False).numpy(), np.ones((1, 1, 3, 3)))
    np.testing.assert_array_equal(F.avg_pool2d(x, 3, 1, 1, divisor_override=2).numpy()[0, 0],
                                  [[2, 3, 2], [3, 4.5, 3], [2, 3, 2]])
    # ceil mode: the last window runs past the right padding; its divisor counts up to the padding only
    y = F.avg_pool1d(t([[1.0, 2.0, 3.0, 4.0]]), 3, 2, 1, ceil_mode=True)
    np.testing.assert_allclose(y.numpy(), [[(0 + 1 + 2) / 3, (2 + 3 + 4) / 3, (4 + 0) / 2]])


def test_avg_pool_int64_truncates_like_cpp():
    y = F.avg_pool1d(t([[-7, -1, 7, 2]], np.int64), 2)
    np.testing.assert_array_equal(y.numpy(), [[-4, 4]])  # -8 / 2, 9 / 2 -> 4 (toward zero)
    assert y.dtype is flow.int64
    np.testing.assert_array_equal(F.avg_pool1d(t([[-5, 0]], np.int64), 2).numpy(), [[-2]])


def test_adaptive_avg_pool2d_windows_and_none():
    x = np.arange(20.0).reshape(1, 1, 4, 5)
    y = F.adaptive_avg_pool2d(t(x), (3, None)).numpy()[0, 0]
    # rows: [0, 2), [1, 3), [2, 4)
    np.testing.assert_allclose(y, [x[0, 0, 0:2].mean(0), x[0, 0, 1:3].mean(0), x[0, 0, 2:4].mean(0)], rtol=1e-6)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), 1).numpy(), [[[[9.5]]]])
    assert tuple(F.adaptive_avg_pool2d(t(x[0]), (None, 2)).shape) == (1, 4, 2)


@pytest.mark.parametrize("call, match", [
    (lambda: F.max_pool2d(t(np.ones((4, 4))), 2),
     r"max_pool2d: Expected 3D or 4D \(batch mode\) tensor with optional 0 dim batch size for input, but got: \[4, 4\]"),
    (lambda: F.max_pool2d(t(np.ones(())), 2), r"max_pool2d: Expected 3D or 4D"),
    (lambda: F.max_pool2d(t(np.ones((1, 0, 4, 4))), 2), r"but got: \[1, 0, 4, 4\]"),
    (lambda: F.max_pool2d(t(np.ones((1, 1, 4, 4))), 2, 2, 2),
     r"pad should be smaller than or equal to half of kernel size, but got padding=\[2, 2\] and kernel_size=\[2, 2\]"),
    (lambda: F.max_pool2d(t(np.ones((1, 1, 4, 4))), 0), r"kernel size should be greater than zero"),
    (lambda: F.max_pool2d(t(np.ones((1, 1, 4, 4))), 2, 0), r"stride should be greater than zero"),
    (lambda: F.max_pool2d(t(np.ones((1, 1, 4, 4))), 2, dilation=0), r"dilation should be greater than zero"),
    (lambda: F.max_pool2d(t(np.ones((1, 1, 1, 1))), 2),
     r"max_pool2d: Given input size: \(1x1x1\). Calculated output size: \(1x0x0\). Output size is too small"),
    (lambda: F.avg_pool2d(t(np.ones((1, 1, 4, 4))), 2, divisor_override=0), r"avg_pool2d: divisor must be not zero"),
    (lambda: F.avg_pool3d(t(np.ones((1, 4, 4))), 2), r"avg_pool3d: Expected 4D or 5D"),
    (lambda: F.adaptive_avg_pool2d(t(np.ones((1, 1, 4, 4))), (-1, 2)),
     r"elements of output_size must be greater than or equal to 0 but received \[-1, 2\]"),
    (lambda: F.adaptive_max_pool2d(t(np.ones((1, 0, 4, 4))), 2),  # (adaptive_avg_pool2d takes empty channels)
     (r"Expected input to have non-zero size for non-batch dimensions, but input has sizes \[1, 0, 4, 4\] with "
     r"dimension 1 being empty")),
    (lambda: F.adaptive_avg_pool2d(t(np.ones(4)), (None, 2)), r"adaptive_avg_pool2d: Expected 3D or 4D tensor"),
    (lambda: F.adaptive_avg_pool2d(t(np.ones(())), 2), r"adaptive_avg_pool2d: Expected 3D or 4D tensor, but got \[\]"),
    (lambda: F.avg_pool1d(t(np.ones(())), 2), r"avg_pool1d: Expected 2D or 3D"),
    (lambda: F.adaptive_avg_pool2d(t(np.ones((1, 4, 4))), (1, 2, 3)), r"output_size must be an int or 2 values"),
    (lambda: F.adaptive_avg_pool2d(t(np.ones((1, 4, 4))), 1.5), r"must be int or tuple of ints and Nones"),
])
def test_pool_errors(call, match):
    with pytest.raises((RuntimeError, TypeError), match=match):
        call()


def test_pool_dtypes():
    with pytest.raises(OpKernelNotFoundError, match="max_pool2d"):
        F.max_pool2d(t(np.ones((1, 1, 2, 2)), np.bool_), 2)
    with pytest.raises(OpKernelNotFoundError, match="avg_pool2d"):
        F.avg_pool2d(t(np.ones((1, 1, 2, 2)), np.int32), 2)
    with pytest.raises(OpKernelNotFoundError, match="adaptive_avg_pool2d"):
        F.adaptive_avg_pool2d(t(np.ones((1, 1, 2, 2)), np.int64), 1)


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 2, 1, 1, dilation=(1, 2), ceil_mode=True),
    lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=None),
    lambda x: F.avg_pool2d(x, 2, 1, 1, divisor_override=3),
    lambda x: F.adaptive_avg_pool2d(x, (2, 5)),
], ids=["max", "avg", "avg-divisor", "adaptive"])
def test_pool_double_backward(fn):
    x = (np.random.default_rng(3).permutation(40).reshape(1, 2, 4, 5) / 3.0)  # distinct: no ties
    assert flow.autograd.gradgradcheck(fn, (t(x, np.float64, True),))


# ---- interpolate ---------------------------------------------------------------------------------
X22 = np.arange(1.0, 5.0).reshape(1, 1, 2, 2)


def test_interpolate_known_values():
    """The values of PyTorch's documentation (``nn.Upsample``) for a 2x2 input scaled by 2."""
    y = F.interpolate(t(X22), scale_factor=2, mode="bilinear").numpy()[0, 0]
    np.testing.assert_allclose(y, [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5],
                                   [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]])
    y = F.interpolate(t(X22), scale_factor=2, mode="bilinear", align_corners=True).numpy()[0, 0]
    third = 1 / 3
    np.testing.assert_allclose(y, [[1, 1 + third, 2 - third, 2], [1 + 2 * third, 2, 2 + third, 3 - third],
                                   [3 - 2 * third, 3 - third, 3, 3 + third], [3, 3 + third, 4 - third, 4]],
                               rtol=1e-6)
    y = F.interpolate(t(X22), scale_factor=2).numpy()[0, 0]
    np.testing.assert_array_equal(y, [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])


def test_interpolate_nearest_indices():
    x = t([[[0.0, 1.0, 2.0]]])
    # size 5: scale 3 / 5 -> floor(o * 0.6); nearest-exact: floor((o + 0.5) * 0.6)
    np.testing.assert_array_equal(F.interpolate(x, 5).numpy(), [[[0, 0, 1, 1, 2]]])
    np.testing.assert_array_equal(F.interpolate(x, 5, mode="nearest-exact").numpy(), [[[0, 0, 1, 2, 2]]])
    x5 = t([[[0.0, 1.0, 2.0, 3.0, 4.0]]])
    # scale_factor 1.7: 8 outputs; the given factor maps them (1 / 1.7), recompute uses 5 / 8
    np.testing.assert_array_equal(F.interpolate(x5, scale_factor=1.7).numpy(), [[[0, 0, 1, 1, 2, 2, 3, 4]]])
    np.testing.assert_array_equal(F.interpolate(x5, scale_factor=1.7, recompute_scale_factor=True).numpy(),
                                  [[[0, 0, 1, 1, 2, 3, 3, 4]]])


def test_interpolate_tuple_scale_factor_linear_and_area():
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    y = F.interpolate(t(x), scale_factor=(1.0, 0.5), mode="bilinear")
    # width 4 -> 2 with scale 2: sources 0.5 and 2.5 -> averages of neighbouring columns
    np.testing.assert_allclose(y.numpy()[0, 0], (x[0, 0][:, [0, 2]] + x[0, 0][:, [1, 3]]) / 2)
    y = F.interpolate(t(x), size=(1, 2), mode="area")
    np.testing.assert_allclose(y.numpy()[0, 0], [[x[0, 0, :, :2].mean(), x[0, 0, :, 2:].mean()]])
    y = F.interpolate(t([[[0.0, 10.0]]]), size=5, mode="linear", align_corners=True)
    np.testing.assert_allclose(y.numpy(), [[[0, 2.5, 5, 7.5, 10]]])


def test_interpolate_uint8_nearest_only():
    y = F.interpolate(t(X22, np.uint8), scale_factor=2)
    assert y.dtype is flow.uint8
    with pytest.raises(OpKernelNotFoundError, match="upsample_linear"):
        F.interpolate(t(X22, np.uint8), scale_factor=2, mode="bilinear")


@pytest.mark.parametrize("call, error, match", [
    (lambda: F.interpolate(t(X22), 4, 2.0), ValueError, "only one of size or scale_factor should be defined"),
    (lambda: F.interpolate(t(X22)), ValueError, "either size or scale_factor should be defined"),
    (lambda: F.interpolate(t(X22), 4, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"),
    (lambda: F.interpolate(t(X22[0]), 4, mode="bilinear"), NotImplementedError,
     "Got 3D input, but bilinear mode needs 4D input"),
    (lambda: F.interpolate(t(X22), 4, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs 3D"),
    (lambda: F.interpolate(t(X22[0, 0]), 4), NotImplementedError,
     r"Input Error: Only 3D, 4D and 5D input Tensors supported \(got 2D\)"),
    (lambda: F.interpolate(t(X22), 4, mode="cubic"), NotImplementedError, r"\(got cubic\)"),
    (lambda: F.interpolate(t(X22[0]), 4, mode="bicubic"), NotImplementedError, r"\(got 3D\).*\(got bicubic\)"),
    (lambda: F.interpolate(t(X22), (4, 4, 4)), ValueError,
     (r"Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
     r"\[2, 2\] and output size of \[4, 4, 4\]")),
    (lambda: F.interpolate(t(X22), 4, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor is not meaningful with an explicit size"),
    (lambda: F.interpolate(t(X22), 4, mode="nearest", antialias=True), ValueError,
     "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes"),
    (lambda: F.interpolate(t(X22), 4, mode="lanczos"), ValueError, "Lanczos mode requires antialias=True"),
    (lambda: F.interpolate(t(X22), (0, 3)), RuntimeError,
     r"upsample_nearest: Input and output sizes should be greater than 0, but got input \(2 x 2\) output \(0 x 3\)"),
    (lambda: F.interpolate(t(X22), scale_factor=0.2, mode="bilinear"), RuntimeError,
     "Input and output sizes should be greater than 0"),
    (lambda: F.interpolate(t(X22), "4"), TypeError, "interpolate"),
    (lambda: F.interpolate(t(X22), scale_factor=(2.0, "x")), TypeError,
     r"argument 'scale_factor' \(keyword\) must be float or tuple of floats"),
    (lambda: F.interpolate(t(np.ones(())), 2), NotImplementedError, r"\(got 0D\)"),
])
def test_interpolate_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_interpolate_on_meta():
    y = F.interpolate(flow.zeros(2, 3, 4, 5, device="meta"), scale_factor=(1.5, 2.0), mode="bilinear")
    assert (tuple(y.shape), y.device) == ((2, 3, 6, 10), flow.device("meta"))


def test_interpolate_gradient_against_numpy():
    """Each output of bilinear interpolation is a weighted sum of four inputs: the gradient of the input is the
    transpose of those weights applied to the output gradient."""
    x = t(f64(1, 1, 3, 2), np.float64, True)
    y = F.interpolate(x, size=(4, 3), mode="bilinear")
    g = f64(1, 1, 4, 3, seed=1)
    y.backward(t(g, np.float64))
    # the weight matrices along each axis, built from PyTorch's source index (scale in / out, clamped at 0)
    def weights(i, o):
        m = np.zeros((o, i))
        for k in range(o):
            src = max((k + 0.5) * i / o - 0.5, 0.0)
            i0 = min(int(src), i - 1)
            i1 = i0 + (i0 < i - 1)
            lam = src - i0
            m[k, i0] += 1 - lam
            m[k, i1] += lam
        return m
    wh, ww = weights(3, 4), weights(2, 3)
    np.testing.assert_allclose(y.detach().numpy()[0, 0], wh @ x.detach().numpy()[0, 0] @ ww.T, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy()[0, 0], wh.T @ g[0, 0] @ ww, rtol=1e-12)


# ---- the backward ops used directly --------------------------------------------------------------
def _run(op_type, inputs, outputs, tensors, attrs):
    from oneflow_lite.framework.op_builder import OpBuilder
    from oneflow_lite.interpreters.op_interp_util import dispatch

    builder = OpBuilder(op_type)
    for name in inputs:
        builder.input(name)
    for name in outputs:
        builder.output(name)
    return dispatch(builder.build(), tensors, attrs)


def test_backward_ops_check_their_inputs():
    conv = {"padding_before": (0, 0), "padding_after": (0, 0), "strides": (1, 1), "dilation_rate": (1, 1),
            "groups": 1}
    dy, w = t(np.ones((1, 2, 3, 3))), t(np.ones((2, 1, 2, 2)))
    (dx,) = _run("conv_data_grad", ("dy", "filter"), ("dx",), (dy, w), {**conv, "input_size": (4, 4)})
    np.testing.assert_array_equal(dx.numpy()[0, 0], [[2, 4, 4, 2], [4, 8, 8, 4], [4, 8, 8, 4], [2, 4, 4, 2]])
    with pytest.raises(RuntimeError, match=r"conv_data_grad: dy of spatial size \(3 x 3\) is larger than the output "
                                           r"\(2 x 2\) of a conv over an input of size \(3 x 3\)"):
        _run("conv_data_grad", ("dy", "filter"), ("dx",), (dy, w), {**conv, "input_size": (3, 3)})
    with pytest.raises(RuntimeError, match=r"conv_filter_grad: expected 2 value\(s\) for kernel_size"):
        _run("conv_filter_grad", ("dy", "x"), ("filter_diff",), (dy, t(np.ones((1, 1, 4, 4)))),
             {**conv, "kernel_size": (2,)})
    idx = t(np.array([[[[0, 16]]]]), np.int64)
    with pytest.raises(RuntimeError, match=r"max_pool_grad: indice holds values outside \[0, 16\)"):
        _run("max_pool2d_grad", ("dy", "indice"), ("dx",), (t(np.ones((1, 1, 1, 2))), idx), {"input_size": (4, 4)})
    with pytest.raises(RuntimeError, match="max_pool2d_grad: indice must be int64, got int32"):
        _run("max_pool2d_grad", ("dy", "indice"), ("dx",), (t(np.ones((1, 1, 1, 2))), t([[[[0, 1]]]], np.int32)),
             {"input_size": (4, 4)})


@pytest.mark.parametrize("fn", [
    lambda x: F.conv2d(x, t(np.ones((1, 1, 2, 2)), np.float64), t([1.0], np.float64)),
    lambda x: F.conv_transpose2d(x, t(np.ones((1, 1, 2, 2)), np.float64)),
    lambda x: F.max_pool2d(x, 2),
    lambda x: F.avg_pool2d(x, 2),
    lambda x: F.adaptive_avg_pool2d(x, 1),
    lambda x: F.interpolate(x, scale_factor=2),
    lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
], ids=["conv", "conv_transpose", "max_pool", "avg_pool", "adaptive", "nearest", "bilinear"])
def test_inf_and_nan_propagate_without_warnings(fn):
    x = t([[[[np.inf, -np.inf], [1.0, np.nan]]]], np.float64, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = fn(x)
        y.backward(flow.tensor(np.full(tuple(y.shape), np.inf)))
    assert np.isnan(y.numpy()).any()
