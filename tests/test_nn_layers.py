"""flow.nn layers and losses: each forward against its NumPy formula (written out here), parameter gradients
of a few layers against hand-derived NumPy gradients, PyTorch's default initialisation (ranges and
statistics), running statistics, masks, reprs and constructor / call errors."""

import math
import warnings

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

f64 = flow.float64
ERF = np.vectorize(math.erf)


def arr(t):
    return t.numpy().astype(np.float64)


def rand(*shape, dtype=f64, requires_grad=False):
    return flow.tensor(np.random.randn(*shape), dtype=dtype, requires_grad=requires_grad)


def close(t, expected, atol=1e-9, rtol=1e-7):
    np.testing.assert_allclose(arr(t), expected, atol=atol, rtol=rtol)


# ---- NumPy references ------------------------------------------------------------------------------
def np_conv2d(x, w, b, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    x = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    n, _c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = np.zeros((n, o, ho, wo))
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                r, s = i * dilation[0], j * dilation[1]
                patch = xs[:, :, r:r + stride[0] * (ho - 1) + 1:stride[0], s:s + stride[1] * (wo - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def np_conv_transpose2d(x, w, b, stride, padding, output_padding=(0, 0), groups=1):
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    cg = c // groups
    full = np.zeros((n, og * groups, (h - 1) * stride[0] + kh + output_padding[0],
                     (wd - 1) * stride[1] + kw + output_padding[1]))
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                full[:, g * og:(g + 1) * og, i:i + stride[0] * (h - 1) + 1:stride[0],
                     j:j + stride[1] * (wd - 1) + 1:stride[1]] += np.einsum(
                    "nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    out = full[:, :, padding[0]:full.shape[2] - padding[0], padding[1]:full.shape[3] - padding[1]]
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_gelu(x):
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)))


def np_mha(q, k, v, heads, w_in, b_in, w_out, b_out, mask=None):
    """Sequence-first (L, N, E) multi-head attention; ``mask`` additive, broadcast to (N * H, L, S)."""
    e = q.shape[-1]
    hd = e // heads
    wq, wk, wv = np.split(w_in, 3)
    bq, bk, bv = np.split(b_in, 3)

    def heads_first(t):  # (L, N, E) -> (N * H, L, hd)
        return t.reshape(t.shape[0], -1, hd).transpose(1, 0, 2)

    qh, kh, vh = heads_first(q @ wq.T + bq), heads_first(k @ wk.T + bk), heads_first(v @ wv.T + bv)
    scores = qh @ kh.transpose(0, 2, 1) / math.sqrt(hd)
    if mask is not None:
        scores = scores + mask
    weights = np_softmax(scores, -1)
    out = (weights @ vh).transpose(1, 0, 2).reshape(q.shape[0], q.shape[1], e)
    return out @ w_out.T + b_out, weights


def mha_params(m):
    return (arr(m.in_proj_weight), arr(m.in_proj_bias), arr(m.out_proj.weight), arr(m.out_proj.bias))


def uniform_params(m):
    """Give every parameter of ``m`` values from U(-0.5, 0.5) (so zero-initialised biases matter too)."""
    with flow.no_grad():
        for p in m.parameters():
            p.copy_(flow.tensor(np.random.uniform(-0.5, 0.5, p.shape)))
    return m


# ---- Linear / Bilinear / Identity --------------------------------------------------------------------
def test_linear_forward_backward_and_init():
    lin = nn.Linear(3, 2, dtype=f64)
    assert lin.weight.shape == (2, 3) and lin.bias.shape == (2,) and lin.weight.dtype == f64
    x = rand(4, 3, requires_grad=True)
    w, b = arr(lin.weight), arr(lin.bias)
    y = lin(x)
    close(y, x.numpy() @ w.T + b)
    g = np.random.randn(4, 2)
    y.backward(flow.tensor(g))
    close(lin.weight.grad, g.T @ x.numpy())
    close(lin.bias.grad, g.sum(0))
    close(x.grad, g @ w)
    nb = nn.Linear(3, 2, bias=False, dtype=f64)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    close(nb(x), x.numpy() @ arr(nb.weight).T)
    x3 = rand(2, 5, 3)
    close(lin(x3), x3.numpy() @ w.T + b)
    assert repr(lin) == "Linear(in_features=3, out_features=2, bias=True)"


def test_linear_default_init_statistics():
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w, b = arr(lin.weight), arr(lin.bias)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.mean()) < 0.01 * bound
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.02  # the variance of U(-a, a) is a**2 / 3
    assert np.abs(w).max() > 0.99 * bound
    flow.manual_seed(3)
    a = arr(nn.Linear(4, 4).weight)
    flow.manual_seed(3)
    np.testing.assert_array_equal(a, arr(nn.Linear(4, 4).weight))  # seeded by flow.manual_seed
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        empty = nn.Linear(0, 3)
    np.testing.assert_array_equal(arr(empty.bias), np.zeros(3))  # fan_in 0: bias bound 0


def test_bilinear():
    m = nn.Bilinear(3, 4, 2, dtype=f64)
    assert m.weight.shape == (2, 3, 4) and repr(m) == "Bilinear(in1_features=3, in2_features=4, out_features=2, " \
                                                      "bias=True)"
    bound = 1 / math.sqrt(3)
    assert np.abs(arr(m.weight)).max() <= bound and np.abs(arr(m.bias)).max() <= bound
    x1, x2 = rand(5, 3, requires_grad=True), rand(5, 4)
    w, b = arr(m.weight), arr(m.bias)
    y = m(x1, x2)
    close(y, np.einsum("ni,oij,nj->no", x1.numpy(), w, x2.numpy()) + b)
    y.sum().backward()
    close(m.weight.grad, np.einsum("ni,nj->ij", x1.numpy(), x2.numpy())[None].repeat(2, 0))
    close(x1.grad, np.einsum("oij,nj->ni", w, x2.numpy()))
    close(nn.functional.bilinear(x1, x2, m.weight, m.bias), arr(y))
    assert m(rand(2, 5, 3), rand(2, 5, 4)).shape == (2, 5, 2)  # leading dims
    close(m(flow.ones(3, dtype=f64), flow.ones(4, dtype=f64)), w.sum((1, 2)) + b)  # no batch dim
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input1 size does not match weight size: got 2 but "
                                           "expected 3"):
        m(rand(5, 2), x2)
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input dimensions do not match: got 2 and 3"):
        m(x1, rand(1, 5, 4))
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input batch dimensions do not match: got 5 and 6"):
        m(x1, rand(6, 4))


def test_identity():
    x = flow.ones(2)
    assert nn.Identity(3, key=1)(x) is x and repr(nn.Identity()) == "Identity()"


# ---- convolution --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    {},
    {"stride": 2, "padding": 1},
    {"padding": (1, 2), "dilation": 2},
    {"groups": 2, "bias": False},
    {"padding": "same", "dilation": (1, 2)},
])
def test_conv2d_matches_numpy(kwargs):
    conv = nn.Conv2d(4, 6, (3, 2), dtype=f64, **kwargs)
    x = rand(2, 4, 7, 8)
    ref_kwargs = {"stride": conv.stride, "dilation": conv.dilation, "groups": conv.groups}
    if conv.padding == "same":
        # kernel (3, 2), dilation (1, 2): total padding (2, 2), split evenly
        xp = np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)))
        expected = np_conv2d(xp, arr(conv.weight), None if conv.bias is None else arr(conv.bias), **ref_kwargs)
        assert expected.shape[2:] == (7, 8)
    else:
        expected = np_conv2d(x.numpy(), arr(conv.weight), None if conv.bias is None else arr(conv.bias),
                             padding=conv.padding, **ref_kwargs)
    close(conv(x), expected)


def test_conv2d_padding_modes():
    x = rand(1, 2, 5, 5)
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        conv = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, dtype=f64)
        xp = np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (2, 2)), mode=np_mode)
        close(conv(x), np_conv2d(xp, arr(conv.weight), arr(conv.bias)))
        assert f"padding_mode={mode}" in repr(conv)


def test_conv2d_gradients():
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1, dtype=f64)
    x = rand(2, 2, 6, 5)
    y = conv(x)
    g = np.random.randn(*y.shape)
    y.backward(flow.tensor(g))
    # dL/dW[o, c, i, j] = sum_{n,p,q} g[n, o, p, q] * xpad[n, c, 2p + i, 2q + j]; dL/db[o] = sum g[:, o]
    xp = np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)))
    dw = np.zeros((3, 2, 3, 3))
    ho, wo = g.shape[2:]
    for i in range(3):
        for j in range(3):
            patch = xp[:, :, i:i + 2 * (ho - 1) + 1:2, j:j + 2 * (wo - 1) + 1:2]
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", g, patch)
    close(conv.weight.grad, dw)
    close(conv.bias.grad, g.sum((0, 2, 3)))


def test_conv1d_and_conv3d():
    c1 = nn.Conv1d(2, 3, 3, stride=2, padding=1, dtype=f64)
    x = rand(2, 2, 9)
    expected = np_conv2d(x.numpy()[:, :, None], arr(c1.weight)[:, :, None], arr(c1.bias), stride=(1, 2),
                         padding=(0, 1))[:, :, 0]
    close(c1(x), expected)
    close(c1(x[0]), expected[0])  # unbatched
    assert repr(c1) == "Conv1d(2, 3, kernel_size=(3,), stride=(2,), padding=(1,))"
    c3 = nn.Conv3d(1, 2, (1, 2, 2), dtype=f64)
    x3 = rand(1, 1, 1, 4, 4)
    close(c3(x3)[:, :, 0], np_conv2d(x3.numpy()[:, :, 0], arr(c3.weight)[:, :, 0], arr(c3.bias)))


def test_conv_transpose2d():
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dtype=f64)
    assert m.weight.shape == (4, 3, 3, 3)
    assert repr(m) == "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), " \
                      "output_padding=(1, 1), groups=2)"
    x = rand(2, 4, 3, 5)
    y = m(x)
    assert y.shape == (2, 6, 6, 10)
    close(y, np_conv_transpose2d(x.numpy(), arr(m.weight), arr(m.bias), (2, 2), (1, 1), (1, 1), groups=2))
    m2 = nn.ConvTranspose2d(2, 3, 3, stride=2, dtype=f64)
    x2 = rand(1, 2, 4, 4)
    for size in ((9, 9), (10, 10), (1, 3, 10, 9)):
        out = m2(x2, output_size=size)
        assert tuple(out.shape[2:]) == tuple(size[-2:])
        op = (size[-2] - 9, size[-1] - 9)
        close(out, np_conv_transpose2d(x2.numpy(), arr(m2.weight), arr(m2.bias), (2, 2), (0, 0), op))
    with pytest.raises(ValueError, match=r"requested an output size of \[11, 9\], but valid sizes range from "
                                         r"\[9, 9\] to \[10, 10\] \(for an input of \[4, 4\]\)"):
        m2(x2, output_size=(11, 9))
    with pytest.raises(ValueError, match="ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements "
                                         "\\(got 3\\)"):
        m2(x2, output_size=(1, 9, 9))
    bound = 1 / math.sqrt(3 * 9)  # fan_in of a transposed weight (in, out / groups, k, k) is size(1) * k * k
    big = nn.ConvTranspose2d(64, 3, 3)
    assert np.abs(arr(big.weight)).max() <= bound and np.abs(arr(big.bias)).max() <= bound


def test_conv_transpose1d():
    m = nn.ConvTranspose1d(2, 3, 3, stride=2, dtype=f64)
    x = rand(1, 2, 4)
    expected = np_conv_transpose2d(x.numpy()[:, :, None], arr(m.weight)[:, :, None], arr(m.bias), (1, 2), (0, 0))
    close(m(x), expected[:, :, 0])


def test_conv_default_init():
    conv = nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)
    w = arr(conv.weight)
    assert np.abs(w).max() <= bound and np.abs(arr(conv.bias)).max() <= bound
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.05


def test_conv_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be one of .*, but got padding_mode='mirror'"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"):
        nn.Conv2d(1, 1, 1)(flow.ones(2, 2))


# ---- pooling ------------------------------------------------------------------------------------------
def test_max_and_avg_pool2d():
    x = rand(2, 3, 6, 7)
    a = x.numpy()
    mp = nn.MaxPool2d(2)
    assert repr(mp) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    close(mp(x), a[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).max((3, 5)))
    mp3 = nn.MaxPool2d(3, stride=2, padding=1)
    ap = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    expected = np.stack([np.stack([ap[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max((2, 3)) for j in range(4)], -1)
                         for i in range(3)], -2)
    close(mp3(x), expected)
    out, idx = nn.MaxPool2d(2, return_indices=True)(x)
    flat = a.reshape(2, 3, -1)
    close(out, np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), -1).reshape(out.shape))
    avg = nn.AvgPool2d(2, stride=1)
    assert repr(avg) == "AvgPool2d(kernel_size=2, stride=1, padding=0)"
    close(avg(x), (a[:, :, :-1, :-1] + a[:, :, 1:, :-1] + a[:, :, :-1, 1:] + a[:, :, 1:, 1:]) / 4)
    avg_pad = nn.AvgPool2d(2, padding=1, count_include_pad=False)
    ones = avg_pad(flow.ones(1, 1, 4, 4, dtype=f64))
    close(ones, np.ones((1, 1, 3, 3)))  # padded zeros are not counted
    close(nn.AvgPool2d(2, divisor_override=1)(x), a[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).sum((3, 5)))


def test_pool1d_and_adaptive():
    x = rand(2, 3, 8)
    a = x.numpy()
    close(nn.MaxPool1d(2)(x), a.reshape(2, 3, 4, 2).max(-1))
    avg1 = nn.AvgPool1d(4)
    assert repr(avg1) == "AvgPool1d(kernel_size=(4,), stride=(4,), padding=(0,))"
    close(avg1(x), a.reshape(2, 3, 2, 4).mean(-1))
    close(nn.AdaptiveAvgPool1d(3)(x), np.stack([a[..., 0:3].mean(-1), a[..., 2:6].mean(-1), a[..., 5:8].mean(-1)],
                                               -1))
    x2 = rand(2, 3, 5, 7)
    a2 = x2.numpy()
    m = nn.AdaptiveAvgPool2d((2, 3))
    assert repr(m) == "AdaptiveAvgPool2d(output_size=(2, 3))"
    # windows: rows [0, 3), [2, 5); columns [0, 3), [2, 5), [4, 7) (floor(i * n / out) .. ceil((i + 1) * n / out))
    expected = np.array([[a2[:, :, r0:r1, c0:c1].mean((2, 3)) for c0, c1 in ((0, 3), (2, 5), (4, 7))]
                         for r0, r1 in ((0, 3), (2, 5))]).transpose(2, 3, 0, 1)
    close(m(x2), expected)
    close(nn.AdaptiveAvgPool2d(1)(x2), a2.mean((2, 3), keepdims=True))
    close(nn.AdaptiveAvgPool2d((None, 1))(x2), a2.mean(3, keepdims=True))


# ---- flatten, dropout ----------------------------------------------------------------------------------
def test_flatten_unflatten():
    x = rand(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    close(nn.Flatten(0, 1)(x), x.numpy().reshape(6, 4, 5))
    u = nn.Unflatten(1, (2, 2))
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(2, 2))"
    close(u(flow.arange(12, dtype=f64).reshape(3, 4)), np.arange(12).reshape(3, 2, 2))
    assert nn.Unflatten(-1, (5, -1))(rand(2, 10)).shape == (2, 5, 2)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float "
                                        "at pos 1"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 4)


def test_dropout():
    x = flow.ones(100000, dtype=f64)
    d = nn.Dropout(0.3)
    assert repr(d) == "Dropout(p=0.3, inplace=False)"
    y = arr(d(x))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(y[kept], 1 / 0.7)
    d.eval()
    assert d(x) is x or np.array_equal(arr(d(x)), arr(x))
    assert np.array_equal(arr(nn.Dropout(1.0)(x)), np.zeros(100000))
    z = flow.ones(10, dtype=f64)
    nn.Dropout(1.0, inplace=True)(z)
    np.testing.assert_array_equal(arr(z), np.zeros(10))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


# ---- activations ----------------------------------------------------------------------------------------
X = np.array([-3.0, -1.5, -0.25, 0.0, 0.5, 2.0, 7.0])
SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
ACTIVATIONS = [
    (nn.ReLU(), np.maximum(X, 0), "ReLU()"),
    (nn.ReLU6(), np.clip(X, 0, 6), "ReLU6()"),
    (nn.LeakyReLU(0.2), np.where(X >= 0, X, 0.2 * X), "LeakyReLU(negative_slope=0.2)"),
    (nn.ELU(0.5), np.where(X > 0, X, 0.5 * (np.exp(X) - 1)), "ELU(alpha=0.5)"),
    (nn.SELU(), SELU_S * np.where(X > 0, X, SELU_A * (np.exp(X) - 1)), "SELU()"),
    (nn.GELU(), np_gelu(X), "GELU(approximate='none')"),
    (nn.GELU("tanh"), 0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X ** 3))),
     "GELU(approximate='tanh')"),
    (nn.SiLU(), X / (1 + np.exp(-X)), "SiLU()"),
    (nn.Mish(), X * np.tanh(np.log1p(np.exp(X))), "Mish()"),
    (nn.Tanh(), np.tanh(X), "Tanh()"),
    (nn.Sigmoid(), 1 / (1 + np.exp(-X)), "Sigmoid()"),
    (nn.Softplus(beta=2.0, threshold=5.0), np.where(2 * X > 5, X, np.log1p(np.exp(2 * X)) / 2),
     "Softplus(beta=2.0, threshold=5.0)"),
    (nn.Hardtanh(-2.0, 1.0), np.clip(X, -2, 1), "Hardtanh(min_val=-2.0, max_val=1.0)"),
    (nn.Hardsigmoid(), np.clip(X + 3, 0, 6) / 6, "Hardsigmoid()"),
    (nn.Hardswish(), X * np.clip(X + 3, 0, 6) / 6, "Hardswish()"),
]


@pytest.mark.parametrize("module,expected,text", ACTIVATIONS, ids=[a[2] for a in ACTIVATIONS])
def test_activation_matches_numpy(module, expected, text):
    close(module(flow.tensor(X, dtype=f64)), expected, atol=1e-12)
    assert repr(module) == text


def test_inplace_activations():
    for module, fn in ((nn.ReLU(inplace=True), lambda a: np.maximum(a, 0)),
                       (nn.LeakyReLU(inplace=True), lambda a: np.where(a >= 0, a, 0.01 * a)),
                       (nn.ELU(inplace=True), lambda a: np.where(a > 0, a, np.exp(a) - 1)),
                       (nn.SiLU(inplace=True), lambda a: a / (1 + np.exp(-a))),
                       (nn.ReLU6(inplace=True), lambda a: np.clip(a, 0, 6))):
        x = flow.tensor(X, dtype=f64)
        assert module(x) is x
        close(x, fn(X), atol=1e-12)
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(inplace=True)) == "LeakyReLU(negative_slope=0.01, inplace=True)"
    with pytest.raises(ValueError, match="GELU: approximate must be 'none' or 'tanh', got 'fast'"):
        nn.GELU("fast")


def test_softmax_and_log_softmax():
    x = rand(3, 4, 5)
    sm = nn.Softmax(dim=1)
    assert repr(sm) == "Softmax(dim=1)" and repr(nn.LogSoftmax(-1)) == "LogSoftmax(dim=-1)"
    close(sm(x), np_softmax(x.numpy(), 1))
    close(nn.LogSoftmax(-1)(x), np.log(np_softmax(x.numpy(), -1)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        y = nn.Softmax()(x)  # 3-D: dim 0
    close(y, np_softmax(x.numpy(), 0))


# ---- normalisation ------------------------------------------------------------------------------------
def test_layer_norm_forward_backward():
    ln = nn.LayerNorm((4, 5), dtype=f64)
    assert repr(ln) == "LayerNorm((4, 5), eps=1e-05, elementwise_affine=True)"
    np.testing.assert_array_equal(arr(ln.weight), np.ones((4, 5)))
    np.testing.assert_array_equal(arr(ln.bias), np.zeros((4, 5)))
    uniform_params(ln)
    x = rand(3, 4, 5)
    w, b = arr(ln.weight), arr(ln.bias)
    y = ln(x)
    close(y, np_layer_norm(x.numpy(), 2, w, b))
    g = np.random.randn(3, 4, 5)
    y.backward(flow.tensor(g))
    close(ln.weight.grad, (g * np_layer_norm(x.numpy(), 2)).sum(0))  # dL/dw = sum over the batch of g * xhat
    close(ln.bias.grad, g.sum(0))
    plain = nn.LayerNorm(5, elementwise_affine=False, dtype=f64)
    assert plain.weight is None and plain.bias is None and list(plain.parameters()) == []
    close(plain(x), np_layer_norm(x.numpy(), 1))
    no_bias = nn.LayerNorm(5, bias=False)
    assert no_bias.bias is None and no_bias.weight.shape == (5,)


def test_group_norm():
    gn = uniform_params(nn.GroupNorm(2, 6, eps=1e-3, dtype=f64))
    assert repr(gn) == "GroupNorm(2, 6, eps=0.001, affine=True)"
    x = rand(3, 6, 2, 2)
    a = x.numpy().reshape(3, 2, 12)
    norm = ((a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-3)).reshape(3, 6, 2, 2)
    close(gn(x), norm * arr(gn.weight).reshape(1, 6, 1, 1) + arr(gn.bias).reshape(1, 6, 1, 1))
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_batch_norm_training_updates_running_stats():
    bn = nn.BatchNorm2d(3, momentum=0.2, dtype=f64)
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=0.2, affine=True, track_running_stats=True)"
    uniform_params(bn)
    x = rand(4, 3, 2, 5)
    a = x.numpy()
    mean, var = a.mean((0, 2, 3)), a.var((0, 2, 3))
    expected = (a - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    expected = expected * arr(bn.weight).reshape(1, 3, 1, 1) + arr(bn.bias).reshape(1, 3, 1, 1)
    y = bn(x)
    close(y, expected)
    n = 4 * 2 * 5
    close(bn.running_mean, 0.8 * 0 + 0.2 * mean)
    close(bn.running_var, 0.8 * 1 + 0.2 * var * n / (n - 1))  # the unbiased batch variance
    assert int(bn.num_batches_tracked) == 1 and bn.num_batches_tracked.dtype == flow.int64
    bn(x)
    close(bn.running_mean, 0.8 * 0.2 * mean + 0.2 * mean)
    assert int(bn.num_batches_tracked) == 2
    bn.eval()
    rm, rv = arr(bn.running_mean), arr(bn.running_var)
    expected_eval = (a - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5)
    close(bn(x), expected_eval * arr(bn.weight).reshape(1, 3, 1, 1) + arr(bn.bias).reshape(1, 3, 1, 1))
    assert int(bn.num_batches_tracked) == 2  # evaluation does not count
    bn.reset_running_stats()
    close(bn.running_mean, np.zeros(3))
    close(bn.running_var, np.ones(3))
    assert int(bn.num_batches_tracked) == 0


def test_batch_norm_gradients():
    bn = nn.BatchNorm1d(3, dtype=f64)
    x = rand(6, 3)
    y = bn(x)
    g = np.random.randn(6, 3)
    y.backward(flow.tensor(g))
    a = x.numpy()
    xhat = (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5)
    close(bn.weight.grad, (g * xhat).sum(0))
    close(bn.bias.grad, g.sum(0))


def test_batch_norm_variants():
    x = rand(5, 2, 3)
    a = x.numpy()
    cma = nn.BatchNorm1d(2, momentum=None, affine=False, dtype=f64)
    assert list(cma.parameters()) == []
    cma(x)
    x2 = rand(5, 2, 3)
    cma(x2)
    # momentum None: the cumulative average of the batch means
    close(cma.running_mean, (a.mean((0, 2)) + x2.numpy().mean((0, 2))) / 2)
    free = nn.BatchNorm1d(2, track_running_stats=False, dtype=f64)
    assert free.running_mean is None and free.num_batches_tracked is None
    assert [n for n, _ in free.named_buffers()] == []
    free.eval()
    expected = (a - a.mean((0, 2)).reshape(1, 2, 1)) / np.sqrt(a.var((0, 2)).reshape(1, 2, 1) + 1e-5)
    close(free(x), expected)  # no running statistics: batch statistics even in eval mode
    three = nn.BatchNorm3d(2, dtype=f64)
    assert three(rand(2, 2, 2, 2, 2)).shape == (2, 2, 2, 2, 2)
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(2)(x)
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        nn.BatchNorm1d(2)(rand(2, 2, 2, 2))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(2, dtype=f64)(rand(1, 2))
    assert [n for n, _ in nn.BatchNorm2d(2).named_buffers()] == ["running_mean", "running_var",
                                                                 "num_batches_tracked"]


# ---- embedding ------------------------------------------------------------------------------------------
def test_embedding():
    emb = nn.Embedding(6, 3, padding_idx=-2, dtype=f64)
    assert emb.padding_idx == 4 and repr(emb) == "Embedding(6, 3, padding_idx=4)"
    np.testing.assert_array_equal(arr(emb.weight)[4], np.zeros(3))
    idx = flow.tensor([[0, 4, 2], [2, 2, 5]])
    w = arr(emb.weight)
    y = emb(idx)
    close(y, w[idx.numpy()])
    y.backward(flow.ones(2, 3, 3, dtype=f64))
    expected = np.zeros((6, 3))
    for i in (0, 2, 2, 2, 5):  # row 4 (padding) gets no gradient; repeated rows accumulate
        expected[i] += 1
    close(emb.weight.grad, expected)
    big = nn.Embedding(1000, 100)
    assert abs(arr(big.weight).mean()) < 0.01 and abs(arr(big.weight).std() - 1) < 0.01  # N(0, 1)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)
    # max_norm: the rows looked up are scaled in place to norm max_norm / (norm + 1e-7) * norm (PyTorch's renorm)
    capped = nn.Embedding(3, 2, max_norm=1.0)
    with flow.no_grad():
        capped.weight.copy_(flow.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    close(capped(flow.tensor([0, 1])), [[0.6, 0.8], [0.3, 0.4]], atol=1e-6)
    close(capped.weight, [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], atol=1e-6)  # row 2 was not looked up
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        emb(flow.tensor([0.0]))


def test_embedding_from_pretrained():
    table = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.num_embeddings == 2 and emb.embedding_dim == 2
    close(emb(flow.tensor([1, 0, 1])), [[3.0, 4.0], [1.0, 2.0], [3.0, 4.0]])
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(flow.ones(3))


# ---- attention ----------------------------------------------------------------------------------------
def test_multihead_attention_init_and_repr():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                    "out_proj.bias"]
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                       "out_features=8, bias=True)\n)")
    np.testing.assert_array_equal(arr(m.in_proj_bias), np.zeros(24))
    np.testing.assert_array_equal(arr(m.out_proj.bias), np.zeros(8))
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform_ of the (3E, E) in-projection
    assert np.abs(arr(m.in_proj_weight)).max() <= bound
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)


def test_multihead_attention_matches_numpy():
    m = uniform_params(nn.MultiheadAttention(8, 2, dtype=f64))
    q, k = rand(4, 3, 8), rand(5, 3, 8)
    out, weights = m(q, k, k)
    ref, ref_w = np_mha(q.numpy(), k.numpy(), k.numpy(), 2, *mha_params(m))
    close(out, ref)
    close(weights, ref_w.reshape(3, 2, 4, 5).mean(1))
    out2, none = m(q, k, k, need_weights=False)
    assert none is None
    close(out2, ref)
    _, per_head = m(q, k, k, average_attn_weights=False)
    close(per_head, ref_w.reshape(3, 2, 4, 5))
    out_f, weights_f = nn.functional.multi_head_attention_forward(
        q, k, k, 8, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0, m.out_proj.weight,
        m.out_proj.bias)
    close(out_f, ref)
    close(weights_f, ref_w.reshape(3, 2, 4, 5).mean(1))
    out_self, _ = m(q, q, q)  # self-attention: one fused projection
    close(out_self, np_mha(q.numpy(), q.numpy(), q.numpy(), 2, *mha_params(m))[0])


def test_multihead_attention_masks():
    m = uniform_params(nn.MultiheadAttention(4, 2, dtype=f64))
    q = rand(3, 2, 4)
    a = q.numpy()
    bool_mask = np.triu(np.ones((3, 3), bool), 1)  # True: not allowed (causal)
    float_mask = np.where(bool_mask, -np.inf, 0.0)
    ref, _ = np_mha(a, a, a, 2, *mha_params(m), mask=float_mask)
    close(m(q, q, q, attn_mask=flow.tensor(bool_mask))[0], ref)
    close(m(q, q, q, attn_mask=flow.tensor(float_mask))[0], ref)
    close(m(q, q, q, attn_mask=flow.tensor(bool_mask), need_weights=False, is_causal=True)[0], ref)
    kpm = np.array([[False, False, True], [False, False, False]])  # batch 0 ignores key 2
    kpm_float = np.where(kpm, -np.inf, 0.0).repeat(2, 0)[:, None, :]  # (N * H, 1, S)
    ref_kpm, _ref_w = np_mha(a, a, a, 2, *mha_params(m), mask=kpm_float)
    out, w = m(q, q, q, key_padding_mask=flow.tensor(kpm))
    close(out, ref_kpm)
    assert np.all(arr(w)[0, :, 2] == 0)
    close(m(q, q, q, key_padding_mask=flow.tensor(kpm), need_weights=False)[0], ref_kpm)
    mask3 = np.random.randn(4, 3, 3)
    close(m(q, q, q, attn_mask=flow.tensor(mask3))[0], np_mha(a, a, a, 2, *mha_params(m), mask=mask3)[0])
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(q, q, q, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is oneflow_lite.Size\(\[2, 3\]\), but "
                                           r"should be \(3, 3\)."):
        m(q, q, q, attn_mask=flow.zeros(2, 3, dtype=f64))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(q, q, q, attn_mask=flow.zeros(3, 3, dtype=flow.int64))


def test_multihead_attention_batch_first_unbatched_and_options():
    m = uniform_params(nn.MultiheadAttention(4, 2, batch_first=True, dtype=f64))
    q = rand(2, 3, 4)  # (N, L, E)
    out, _w = m(q, q, q)
    seq = q.numpy().transpose(1, 0, 2)
    ref, _ref_w = np_mha(seq, seq, seq, 2, *mha_params(m))
    close(out, ref.transpose(1, 0, 2))
    u = rand(3, 4)  # unbatched (L, E)
    out_u, w_u = m(u, u, u)
    ref_u, _ref_wu = np_mha(u.numpy()[:, None], u.numpy()[:, None], u.numpy()[:, None], 2, *mha_params(m))
    close(out_u, ref_u[:, 0])
    assert w_u.shape == (3, 3)
    kv = nn.MultiheadAttention(4, 2, kdim=3, vdim=5, dtype=f64)
    assert kv.in_proj_weight is None and kv.k_proj_weight.shape == (4, 3) and kv.v_proj_weight.shape == (4, 5)
    qq, kk, vv = rand(2, 1, 4), rand(3, 1, 3), rand(3, 1, 5)
    qp = qq.numpy() @ arr(kv.q_proj_weight).T + arr(kv.in_proj_bias)[:4]
    kp = kk.numpy() @ arr(kv.k_proj_weight).T + arr(kv.in_proj_bias)[4:8]
    vp = vv.numpy() @ arr(kv.v_proj_weight).T + arr(kv.in_proj_bias)[8:]
    eye = np.eye(4)
    ref_kv, _ = np_mha(qp, kp, vp, 2, np.concatenate([eye, eye, eye]), np.zeros(12), arr(kv.out_proj.weight),
                       arr(kv.out_proj.bias))
    close(kv(qq, kk, vv)[0], ref_kv)
    bkv = nn.MultiheadAttention(4, 1, add_bias_kv=True, add_zero_attn=True, dtype=f64)
    assert bkv.bias_k.shape == (1, 1, 4) and [n for n, _ in bkv.named_parameters()][2:4] == ["bias_k", "bias_v"]
    x = rand(2, 1, 4)
    _, w_b = bkv(x, x, x)
    assert w_b.shape == (1, 2, 4)  # two keys, bias_k and the zero key


def test_multihead_attention_gradients_flow_to_every_parameter():
    m = nn.MultiheadAttention(4, 2, dtype=f64)
    q = rand(3, 2, 4)
    m(q, q, q)[0].sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in m.parameters())
    # d(sum of outputs)/d(out_proj.bias) is the number of output rows (L * N)
    close(m.out_proj.bias.grad, np.full(4, 6.0))


# ---- transformer ----------------------------------------------------------------------------------------
def np_encoder_layer(layer, x, norm_first=False, activation=lambda h: np.maximum(h, 0)):
    a = layer.self_attn
    ln = lambda t, norm: np_layer_norm(t, 1, arr(norm.weight), arr(norm.bias))

    def sa(t):
        return np_mha(t, t, t, a.num_heads, *mha_params(a))[0]

    def ff(t):
        h = activation(t @ arr(layer.linear1.weight).T + arr(layer.linear1.bias))
        return h @ arr(layer.linear2.weight).T + arr(layer.linear2.bias)

    if norm_first:
        x = x + sa(ln(x, layer.norm1))
        return x + ff(ln(x, layer.norm2))
    x = ln(x + sa(x), layer.norm1)
    return ln(x + ff(x), layer.norm2)


def test_transformer_encoder_layer_matches_numpy():
    layer = uniform_params(nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=f64))
    assert [n for n, _ in layer.named_children()] == ["self_attn", "linear1", "dropout", "linear2", "norm1",
                                                      "norm2", "dropout1", "dropout2"]
    x = rand(5, 3, 8)
    close(layer(x), np_encoder_layer(layer, x.numpy()), atol=1e-8)
    pre = uniform_params(nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation="gelu", norm_first=True,
                                                    batch_first=True, dtype=f64))
    xb = rand(3, 5, 8)
    ref = np_encoder_layer(pre, xb.numpy().transpose(1, 0, 2), norm_first=True, activation=np_gelu)
    close(pre(xb), ref.transpose(1, 0, 2), atol=1e-8)
    custom = nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation=nn.Tanh(), dtype=f64)
    assert "(activation): Tanh()" in repr(custom)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")


def test_transformer_encoder_layer_masks_and_training():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, dtype=f64)
    x = rand(3, 2, 4)
    causal = np.triu(np.ones((3, 3), bool), 1)
    out_bool = layer(x, src_mask=flow.tensor(causal), is_causal=True)
    out_float = layer(x, src_mask=flow.tensor(np.where(causal, -np.inf, 0.0)))
    close(out_bool, arr(out_float))
    layer(x).sum().backward()
    assert all(p.grad is not None for p in layer.parameters())


def test_transformer_encoder_stacks_independent_copies():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, dtype=f64)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(4, dtype=f64))
    assert len(enc.layers) == 2 and enc.layers[0] is not layer
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    uniform_params(enc)
    x = rand(3, 2, 4)
    h = np_encoder_layer(enc.layers[1], np_encoder_layer(enc.layers[0], x.numpy()))
    close(enc(x), np_layer_norm(h, 1, arr(enc.norm.weight), arr(enc.norm.bias)), atol=1e-8)
    assert len(list(enc.parameters())) == 2 * 12 + 2


# ---- losses --------------------------------------------------------------------------------------------
def test_cross_entropy_and_nll_loss():
    x = rand(4, 3)
    t = flow.tensor([0, 2, 1, 2])
    logp = np.log(np_softmax(x.numpy(), 1))
    picked = -logp[np.arange(4), t.numpy()]
    ce = nn.CrossEntropyLoss()
    assert repr(ce) == "CrossEntropyLoss()"
    close(ce(x, t), picked.mean())
    close(nn.CrossEntropyLoss(reduction="sum")(x, t), picked.sum())
    close(nn.CrossEntropyLoss(reduction="none")(x, t), picked)
    w = np.array([0.2, 1.0, 3.0])
    weighted = nn.CrossEntropyLoss(weight=flow.tensor(w))
    assert "weight" in weighted.state_dict()  # the class weight is a buffer
    close(weighted(x, t), (w[t.numpy()] * picked).sum() / w[t.numpy()].sum())
    ignore = nn.CrossEntropyLoss(ignore_index=2)
    close(ignore(x, t), picked[[0, 2]].mean())
    eps = 0.1
    smooth = (1 - eps) * picked.mean() + eps / 3 * (-logp.sum(1)).mean()
    close(nn.CrossEntropyLoss(label_smoothing=eps)(x, t), smooth)
    probs = np_softmax(np.random.randn(4, 3), 1)
    close(ce(x, flow.tensor(probs)), -(probs * logp).sum(1).mean())
    nll = nn.NLLLoss()
    close(nll(flow.tensor(logp), t), picked.mean())
    close(nn.NLLLoss(weight=flow.tensor(w), reduction="sum")(flow.tensor(logp), t), (w[t.numpy()] * picked).sum())


def test_cross_entropy_gradient():
    x = rand(4, 3, requires_grad=True)
    t = flow.tensor([0, 2, 1, 2])
    nn.CrossEntropyLoss()(x, t).backward()
    onehot = np.eye(3)[t.numpy()]
    close(x.grad, (np_softmax(x.numpy(), 1) - onehot) / 4)


def test_regression_losses():
    x, y = rand(3, 4), rand(3, 4)
    d = x.numpy() - y.numpy()
    close(nn.MSELoss()(x, y), (d ** 2).mean())
    close(nn.MSELoss(reduction="sum")(x, y), (d ** 2).sum())
    close(nn.L1Loss()(x, y), np.abs(d).mean())
    close(nn.L1Loss(reduction="none")(x, y), np.abs(d))
    beta = 0.5
    close(nn.SmoothL1Loss(beta=beta)(x, y), np.where(np.abs(d) < beta, 0.5 * d ** 2 / beta,
                                                     np.abs(d) - 0.5 * beta).mean())
    delta = 0.7
    close(nn.HuberLoss(delta=delta)(x, y), np.where(np.abs(d) < delta, 0.5 * d ** 2,
                                                    delta * (np.abs(d) - 0.5 * delta)).mean())


def test_binary_losses():
    p = flow.tensor(np.random.uniform(0.05, 0.95, (3, 4)))
    t = flow.tensor(np.random.randint(0, 2, (3, 4)).astype(np.float64))
    pa, ta = p.numpy(), t.numpy()
    bce = -(ta * np.log(pa) + (1 - ta) * np.log(1 - pa))
    close(nn.BCELoss()(p, t), bce.mean())
    w = np.random.uniform(0.5, 2.0, (4,))
    close(nn.BCELoss(weight=flow.tensor(w), reduction="sum")(p, t), (bce * w).sum())
    z = rand(3, 4)
    s = 1 / (1 + np.exp(-z.numpy()))
    close(nn.BCEWithLogitsLoss()(z, t), (-(ta * np.log(s) + (1 - ta) * np.log(1 - s))).mean())
    pw = np.array([1.0, 2.0, 3.0, 4.0])
    logits_loss = nn.BCEWithLogitsLoss(pos_weight=flow.tensor(pw), reduction="none")
    assert [n for n, _ in logits_loss.named_buffers()] == ["pos_weight"]
    close(logits_loss(z, t), -(pw * ta * np.log(s) + (1 - ta) * np.log(1 - s)))


def test_kl_div_loss():
    logq = np.log(np_softmax(np.random.randn(2, 5), 1))
    p = np_softmax(np.random.randn(2, 5), 1)
    pointwise = p * (np.log(p) - logq)
    close(nn.KLDivLoss(reduction="batchmean")(flow.tensor(logq), flow.tensor(p)), pointwise.sum() / 2)
    close(nn.KLDivLoss(reduction="sum", log_target=True)(flow.tensor(logq), flow.tensor(np.log(p))),
          pointwise.sum())
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        close(nn.KLDivLoss()(flow.tensor(logq), flow.tensor(p)), pointwise.mean())


def test_loss_reduction_arguments():
    with pytest.raises(ValueError, match="MSELoss: avg is not a valid value for reduction; expected one of 'none', "
                                         "'mean', 'sum'"):
        nn.MSELoss(reduction="avg")
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        legacy = nn.L1Loss(size_average=False)
    assert legacy.reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert nn.MSELoss(reduce=False).reduction == "none"
    assert nn.KLDivLoss(reduction="batchmean").reduction == "batchmean"


# ---- a model trains ---------------------------------------------------------------------------------------
def test_small_cnn_trains_with_hand_written_sgd():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Dropout(0.1), nn.Linear(4 * 4 * 4, 2))
    x = flow.randn(16, 1, 8, 8)
    y = flow.tensor((x.numpy().mean((1, 2, 3)) > 0).astype(np.int64))
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(30):
        loss = loss_fn(model(x), y)
        model.zero_grad()
        loss.backward()
        with flow.no_grad():
            for p in model.parameters():
                p.sub_(0.1 * p.grad)
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
