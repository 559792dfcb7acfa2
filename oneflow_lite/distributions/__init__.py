"""``flow.distributions`` (``torch.distributions``, OneFlow's ``oneflow.distributions``): probability
distributions with sampling, log densities and entropies, as policy-gradient and variational code uses them.
``Categorical``, ``Normal``, ``MultivariateNormal`` and ``Independent`` are provided, with ``kl_divergence`` between
them; their methods follow PyTorch's (shapes, defaults, argument validation)."""

from oneflow_lite.distributions import kl  # noqa: F401
from oneflow_lite.distributions.categorical import Categorical
from oneflow_lite.distributions.distribution import Distribution
from oneflow_lite.distributions.independent import Independent
from oneflow_lite.distributions.kl import kl_divergence, register_kl
from oneflow_lite.distributions.multivariate_normal import MultivariateNormal
from oneflow_lite.distributions.normal import Normal

__all__ = ["Categorical", "Distribution", "Independent", "MultivariateNormal", "Normal", "kl_divergence",
           "register_kl"]
