"""flow.nn.init: gains, fans, each initialiser's range and statistics (against the distribution's formulas),
no_grad on parameters, seeding, generators and errors."""

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.nn import init


def arr(t):
    return t.numpy().astype(np.float64)


def test_calculate_gain():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid"):
        assert init.calculate_gain(name) == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("leaky_relu", 1) == 1.0
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity swish"):
        init.calculate_gain("swish")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(flow.empty(6, 4)) == (4, 6)
    assert init._calculate_fan_in_and_fan_out(flow.empty(8, 3, 5, 5)) == (75, 200)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        init._calculate_fan_in_and_fan_out(flow.empty(5))


def test_uniform_normal_constant():
    t = flow.empty(200, 500)
    assert init.uniform_(t, -2.0, 3.0) is t
    a = arr(t)
    assert a.min() >= -2.0 and a.max() < 3.0
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.var() - 25 / 12) < 0.03  # U(a, b): (a+b)/2, (b-a)**2/12
    init.normal_(t, 1.5, 0.5)
    a = arr(t)
    assert abs(a.mean() - 1.5) < 0.005 and abs(a.std() - 0.5) < 0.005
    init.constant_(t, 0.25)
    assert np.all(arr(t) == 0.25)
    init.ones_(t)
    assert np.all(arr(t) == 1)
    init.zeros_(t)
    assert np.all(arr(t) == 0)
    e = init.eye_(flow.empty(2, 3))
    np.testing.assert_array_equal(arr(e), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(flow.empty(3))


def test_xavier():
    t = flow.empty(300, 500)
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 800)
    a = arr(t)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    assert abs(a.var() / (bound ** 2 / 3) - 1) < 0.02
    init.xavier_normal_(t)
    assert abs(arr(t).std() / math.sqrt(2.0 / 800) - 1) < 0.01


def test_kaiming():
    t = flow.empty(400, 30, 3, 3)  # fan_in 270, fan_out 3600
    init.kaiming_uniform_(t, nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 270)
    a = arr(t)
    assert np.abs(a).max() <= bound and abs(a.var() / (bound ** 2 / 3) - 1) < 0.02
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(arr(t).std() / (math.sqrt(2.0) / math.sqrt(3600)) - 1) < 0.01
    init.kaiming_normal_(t, a=0.5, mode="FAN_IN")  # leaky_relu with slope 0.5 (the mode is case-insensitive)
    assert abs(arr(t).std() / (math.sqrt(2.0 / 1.25) / math.sqrt(270)) - 1) < 0.01
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(t, mode="fan_avg")
    empty = flow.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(empty) is empty


def test_trunc_normal_matches_the_truncated_distribution():
    t = flow.empty(200000, dtype=flow.float64)
    mean, std, a, b = 1.0, 2.0, -1.0, 4.0
    assert init.trunc_normal_(t, mean, std, a, b) is t
    x = arr(t)
    assert x.min() >= a and x.max() <= b
    # the truncated normal's mean and variance (alpha, beta the standardised bounds)
    al, be = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2
    z = cdf(be) - cdf(al)
    exp_mean = mean + std * (pdf(al) - pdf(be)) / z
    exp_var = std ** 2 * (1 + (al * pdf(al) - be * pdf(be)) / z - ((pdf(al) - pdf(be)) / z) ** 2)
    assert abs(x.mean() - exp_mean) < 0.01 and abs(x.var() / exp_var - 1) < 0.01
    # the empirical CDF against the truncated CDF at a few points
    for q in (-0.5, 0.5, 1.0, 2.5, 3.5):
        expected = (cdf((q - mean) / std) - cdf(al)) / z
        assert abs((x <= q).mean() - expected) < 0.005


def test_trunc_normal_defaults_and_warning():
    t = flow.empty(100000)
    init.trunc_normal_(t)
    x = arr(t)
    assert x.min() >= -2 and x.max() <= 2
    assert abs(x.std() - 0.8796) < 0.01  # std of N(0, 1) truncated to [-2, 2]
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\] in nn.init.trunc_normal_"):
        init.trunc_normal_(flow.empty(10), mean=10.0)


def test_erfinv_is_accurate():
    values = np.array([-0.999999, -0.9, -0.5, 0.0, 0.1, 0.7, 0.99, 0.9999999])
    y = arr(init._erfinv(flow.tensor(values, dtype=flow.float64)))
    np.testing.assert_allclose(np.vectorize(math.erf)(y), values, rtol=1e-13, atol=1e-15)
    edges = arr(init._erfinv(flow.tensor([-1.0, 1.0], dtype=flow.float64)))
    assert edges[0] == -np.inf and edges[1] == np.inf


def test_init_on_parameters_runs_without_grad_and_is_seeded():
    lin = nn.Linear(3, 4)
    w = lin.weight
    init.normal_(w)
    init.xavier_uniform_(w)
    init.trunc_normal_(w, std=0.02)
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    flow.manual_seed(7)
    first = arr(init.kaiming_normal_(flow.empty(5, 5)))
    flow.manual_seed(7)
    np.testing.assert_array_equal(first, arr(init.kaiming_normal_(flow.empty(5, 5))))
    g1, g2 = flow.Generator(), flow.Generator()
    g1.manual_seed(3)
    g2.manual_seed(3)
    np.testing.assert_array_equal(arr(init.uniform_(flow.empty(6), generator=g1)),
                                  arr(init.uniform_(flow.empty(6), generator=g2)))


def test_init_errors():
    with pytest.raises(TypeError, match="nn.init.uniform_: argument 'tensor' must be a Tensor, not list"):
        init.uniform_([1.0])
    with pytest.raises(TypeError, match="nn.init.kaiming_normal_: argument 'tensor' must be a Tensor, not int"):
        init.kaiming_normal_(3)
    with pytest.raises(RuntimeError, match="normal_ expects std >= 0.0"):
        init.normal_(flow.empty(2), 0.0, -1.0)


def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain():
    flow.manual_seed(0)
    w = flow.empty(64, 1, 5, 5)
    assert init.orthogonal_(w, init.calculate_gain("relu")) is w
    m = arr(w).reshape(64, 25)
    np.testing.assert_allclose(m.T @ m, 2.0 * np.eye(25), atol=1e-5)  # tall: orthonormal columns, gain**2 = 2
    w = flow.empty(3, 7)
    m = arr(init.orthogonal_(w))
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-5)  # wide: orthonormal rows
    p = nn.Parameter(flow.empty(5, 5))
    init.orthogonal_(p, gain=0.5)
    assert p.grad_fn is None and p.requires_grad
    np.testing.assert_allclose(arr(p) @ arr(p).T, 0.25 * np.eye(5), atol=1e-5)
    flow.manual_seed(3)
    a = arr(init.orthogonal_(flow.empty(4, 4)))
    flow.manual_seed(3)
    np.testing.assert_array_equal(a, arr(init.orthogonal_(flow.empty(4, 4))))
    with pytest.raises(ValueError, match="orthogonal_: only tensors with 2 or more dimensions"):
        init.orthogonal_(flow.empty(3))


def test_dirac_copies_input_channels_at_the_kernel_centre():
    w = init.dirac_(flow.empty(4, 2, 3, 3).fill_(7.0), groups=2)
    expected = np.zeros((4, 2, 3, 3))
    for g in range(2):
        for d in range(2):
            expected[g * 2 + d, d, 1, 1] = 1
    np.testing.assert_array_equal(arr(w), expected)
    x = flow.randn(1, 3, 5)
    w1 = init.dirac_(flow.empty(3, 3, 3))
    np.testing.assert_allclose(flow.nn.functional.conv1d(x, w1, padding=1).numpy(), x.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        init.dirac_(flow.empty(3, 3))
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(flow.empty(3, 3, 3), groups=2)
