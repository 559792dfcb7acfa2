"""flow.distributions (torch.distributions): Categorical, Normal, MultivariateNormal, Independent and
kl_divergence against NumPy formulas, sample shapes and frequencies, gradients of log_prob / rsample
(policy-gradient and reparameterisation use), validation errors."""

import math

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.distributions import Categorical, Distribution, Normal

P = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])


def test_categorical_probs_logits_log_prob_entropy():
    raw = np.array([[2.0, 3.0, 5.0], [1.0, 1.0, 8.0]])
    c = Categorical(flow.tensor(raw))
    assert c.batch_shape == (2,) and c.event_shape == () and c.param_shape == (2, 3)
    np.testing.assert_allclose(c.probs.numpy(), P, rtol=1e-6)
    np.testing.assert_allclose(c.logits.numpy(), np.log(P), rtol=1e-5)
    np.testing.assert_allclose(c.log_prob(flow.tensor([2, 0])).numpy(), np.log([0.5, 0.1]), rtol=1e-5)
    # value broadcast against the batch: shape (4, 2)
    v = np.array([[0, 1], [1, 2], [2, 2], [0, 0]])
    np.testing.assert_allclose(c.log_prob(flow.tensor(v)).numpy(), np.log(P[[0, 1], v]), rtol=1e-5)
    np.testing.assert_allclose(c.entropy().numpy(), -(P * np.log(P)).sum(-1), rtol=1e-5)
    np.testing.assert_array_equal(c.mode.numpy(), [2, 2])
    assert np.isnan(c.mean.numpy()).all() and c.mean.shape == (2,)
    lg = np.array([0.5, -1.0, 2.0])
    c = Categorical(logits=flow.tensor(lg))
    p = np.exp(lg) / np.exp(lg).sum()
    np.testing.assert_allclose(c.probs.numpy(), p, rtol=1e-6)
    np.testing.assert_allclose(c.logits.numpy(), np.log(p), rtol=1e-5)
    np.testing.assert_array_equal(c.enumerate_support().numpy(), [0, 1, 2])
    np.testing.assert_array_equal(Categorical(flow.tensor(P)).enumerate_support().numpy(), [[0, 0], [1, 1], [2, 2]])
    assert repr(Categorical(flow.tensor([0.5, 0.5]))).startswith("Categorical(probs: ")


def test_categorical_sample_shapes_and_frequencies():
    flow.manual_seed(0)
    c = Categorical(flow.tensor(P))
    assert c.sample().shape == (2,) and c.sample().dtype == flow.int64
    s = c.sample((4000,))
    assert s.shape == (4000, 2)
    for row in range(2):
        freq = np.bincount(s.numpy()[:, row], minlength=3) / 4000
        np.testing.assert_allclose(freq, P[row], atol=0.03)
    assert Categorical(flow.tensor([0.0, 1.0])).sample((3, 2)).numpy().tolist() == [[1, 1]] * 3


def test_categorical_log_prob_gradient_is_the_policy_gradient():
    """d log softmax(z)[a] / dz = onehot(a) - softmax(z)."""
    z = flow.tensor([0.3, -0.2, 1.1], requires_grad=True)
    Categorical(flow.softmax(z, dim=-1)).log_prob(flow.tensor(1)).backward()
    p = np.exp([0.3, -0.2, 1.1]) / np.exp([0.3, -0.2, 1.1]).sum()
    np.testing.assert_allclose(z.grad.numpy(), np.eye(3)[1] - p, rtol=1e-5, atol=1e-6)
    z.grad = None
    Categorical(logits=z).entropy().backward()
    logp = np.log(p)
    np.testing.assert_allclose(z.grad.numpy(), -p * (logp - (p * logp).sum()), rtol=1e-4, atol=1e-6)


def test_categorical_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
        Categorical()
    with pytest.raises(ValueError, match="but not both"):
        Categorical(flow.tensor([0.5, 0.5]), flow.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional"):
        Categorical(flow.tensor(1.0))
    with pytest.raises(ValueError, match=r"constraint Simplex\(\)"):
        Categorical(flow.tensor([-0.5, 1.5]))
    with pytest.raises(ValueError, match=r"within the support \(IntegerInterval\(lower_bound=0, upper_bound=1\)\)"):
        Categorical(flow.tensor([0.3, 0.7])).log_prob(flow.tensor(2))
    with pytest.raises(ValueError, match="not broadcastable"):
        Categorical(flow.tensor(P)).log_prob(flow.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match="argument 'probs' must be a Tensor"):
        Categorical([0.5, 0.5])
    # validate_args=False skips the checks
    assert Categorical(flow.tensor([-0.5, 1.5]), validate_args=False).probs.shape == (2,)


def test_normal_densities_and_moments():
    loc, scale = np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 2.0])
    n = Normal(flow.tensor(loc), flow.tensor(scale))
    x = np.array([0.3, 1.5, -5.0])
    logp = -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(n.log_prob(flow.tensor(x)).numpy(), logp, rtol=1e-5)
    np.testing.assert_allclose(n.entropy().numpy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale), rtol=1e-6)
    cdf = np.array([0.5 * (1 + math.erf((a - m) / (s * math.sqrt(2)))) for a, m, s in zip(x, loc, scale)])
    np.testing.assert_allclose(n.cdf(flow.tensor(x)).numpy(), cdf, rtol=1e-5)
    np.testing.assert_allclose(n.icdf(flow.tensor(cdf)).numpy(), x, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(n.variance.numpy(), scale ** 2)
    np.testing.assert_allclose(n.stddev.numpy(), scale)
    assert n.mean is n.loc and n.batch_shape == (3,)
    m = Normal(0.0, flow.tensor([1.0, 2.0]))  # a number broadcast against a tensor
    assert m.loc.shape == (2,) and m.loc.dtype == flow.float32
    assert repr(Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"


def test_normal_sampling_and_reparameterisation():
    flow.manual_seed(0)
    n = Normal(flow.tensor([1.0, -3.0]), flow.tensor([0.5, 2.0]))
    s = n.sample((20000,))
    assert s.shape == (20000, 2) and not s.requires_grad
    np.testing.assert_allclose(s.numpy().mean(0), [1.0, -3.0], atol=0.05)
    np.testing.assert_allclose(s.numpy().std(0), [0.5, 2.0], rtol=0.03)
    mu = flow.tensor([0.5], requires_grad=True)
    sigma = flow.tensor([2.0], requires_grad=True)
    flow.manual_seed(1)
    z = Normal(mu, sigma).rsample((5,))
    flow.manual_seed(1)
    eps = flow.randn(5, 1).numpy()
    np.testing.assert_allclose(z.detach().numpy(), 0.5 + 2.0 * eps, rtol=1e-6)
    z.sum().backward()  # dz/dmu = 1, dz/dsigma = eps
    np.testing.assert_allclose(mu.grad.numpy(), [5.0])
    np.testing.assert_allclose(sigma.grad.numpy(), [eps.sum()], rtol=1e-5)


def test_normal_errors_and_base_class():
    with pytest.raises(ValueError, match=r"parameter scale .* GreaterThan\(lower_bound=0.0\)"):
        Normal(0.0, -1.0)
    with pytest.raises(TypeError, match="argument 'loc' must be a Tensor or a number"):
        Normal("a", 1.0)
    assert Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    with pytest.raises(NotImplementedError, match="Categorical does not support reparameterized sampling"):
        Categorical(flow.tensor([0.5, 0.5])).rsample()
    with pytest.raises(NotImplementedError, match="Distribution.sample is not implemented"):
        Distribution().sample()
    with pytest.raises(ValueError, match="expected True or False"):
        Distribution.set_default_validate_args(2)
    Distribution.set_default_validate_args(False)
    try:
        assert Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        Distribution.set_default_validate_args(True)


def test_distributions_match_pytorch():
    torch = pytest.importorskip("torch")
    td = torch.distributions
    c, tc = Categorical(flow.tensor(P)), td.Categorical(torch.tensor(P))
    v = np.array([[0, 2], [1, 1]])
    np.testing.assert_allclose(c.log_prob(flow.tensor(v)).numpy(), tc.log_prob(torch.tensor(v)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(c.entropy().numpy(), tc.entropy().numpy(), rtol=1e-6)
    n, tn = Normal(flow.tensor([0.5, 1.0]), flow.tensor([1.5, 0.2])), td.Normal(torch.tensor([0.5, 1.0]),
                                                                               torch.tensor([1.5, 0.2]))
    x = np.array([0.1, 0.9], dtype=np.float32)
    np.testing.assert_allclose(n.log_prob(flow.tensor(x)).numpy(), tn.log_prob(torch.tensor(x)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(n.cdf(flow.tensor(x)).numpy(), tn.cdf(torch.tensor(x)).numpy(), rtol=1e-5)
    np.testing.assert_allclose(n.entropy().numpy(), tn.entropy().numpy(), rtol=1e-6)


def test_kl_divergence_independent_and_multivariate_normal_closed_forms():
    from oneflow_lite.distributions import Independent, MultivariateNormal, kl_divergence
    m1, s1, m2, s2 = np.array([0.0, 1.0]), np.array([1.0, 0.5]), np.array([1.0, -1.0]), np.array([2.0, 1.5])
    p, q = Normal(flow.tensor(m1), flow.tensor(s1)), Normal(flow.tensor(m2), flow.tensor(s2))
    expect = np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5
    np.testing.assert_allclose(kl_divergence(p, q).numpy(), expect, rtol=1e-12)
    c1, c2 = Categorical(flow.tensor(P)), Categorical(flow.tensor(P[::-1].copy()))
    np.testing.assert_allclose(kl_divergence(c1, c2).numpy(), (P * np.log(P / P[::-1])).sum(-1), rtol=1e-6)
    zero = Categorical(flow.tensor([[0.5, 0.5, 0.0]]))
    assert kl_divergence(zero, Categorical(flow.tensor([[0.2, 0.3, 0.5]]))).item() == pytest.approx(
        0.5 * np.log(0.5 / 0.2) + 0.5 * np.log(0.5 / 0.3))  # p = 0 terms count 0
    assert kl_divergence(Categorical(flow.tensor([[0.2, 0.3, 0.5]])), zero).item() == math.inf
    ind_p, ind_q = Independent(p, 1), Independent(q, 1)
    assert ind_p.batch_shape == () and ind_p.event_shape == (2,)
    assert kl_divergence(ind_p, ind_q).item() == pytest.approx(expect.sum())
    x = np.array([0.3, 0.2])
    norm_logpdf = -((x - m1) ** 2) / (2 * s1 ** 2) - np.log(s1) - 0.5 * np.log(2 * np.pi)
    assert ind_p.log_prob(flow.tensor(x)).item() == pytest.approx(norm_logpdf.sum())
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    mvn = MultivariateNormal(flow.tensor(m1), covariance_matrix=flow.tensor(cov))
    d = x - m1
    logpdf = -0.5 * (d @ np.linalg.solve(cov, d) + 2 * np.log(2 * np.pi) + np.log(np.linalg.det(cov)))
    assert mvn.log_prob(flow.tensor(x)).item() == pytest.approx(logpdf)
    assert mvn.entropy().item() == pytest.approx(0.5 * np.log(np.linalg.det(2 * np.pi * np.e * cov)))
    by_precision = MultivariateNormal(flow.tensor(m1), precision_matrix=flow.tensor(np.linalg.inv(cov)))
    assert by_precision.log_prob(flow.tensor(x)).item() == pytest.approx(logpdf)
    other = MultivariateNormal(flow.tensor(m2), scale_tril=flow.tensor(np.diag(s2)))  # KL(N0 || N1) in closed form
    cov1 = np.diag(s2 ** 2)
    kl = 0.5 * (np.trace(np.linalg.solve(cov1, cov)) + (m2 - m1) @ np.linalg.solve(cov1, m2 - m1) - 2
                + np.log(np.linalg.det(cov1) / np.linalg.det(cov)))
    assert kl_divergence(mvn, other).item() == pytest.approx(kl)
    batched = MultivariateNormal(flow.zeros(4, 2), flow.diag(flow.full((2,), 0.36)).unsqueeze(0))  # PPO's shape
    assert batched.batch_shape == (4,) and batched.sample().shape == (4, 2)
    assert batched.log_prob(flow.zeros(4, 2)).shape == (4,)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type "
                                                  "Categorical"):
        kl_divergence(p, c1)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        MultivariateNormal(flow.zeros(2))
