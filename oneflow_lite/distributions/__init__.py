"""``flow.distributions`` (``torch.distributions``, OneFlow's ``oneflow.distributions``): probability
distributions with sampling, log densities and entropies, as policy-gradient and variational code uses them.
``Categorical`` and ``Normal`` are provided; their methods follow PyTorch's (shapes, defaults, argument
validation)."""

from oneflow_lite.distributions.categorical import Categorical
from oneflow_lite.distributions.distribution import Distribution
from oneflow_lite.distributions.normal import Normal

__all__ = ["Categorical", "Distribution", "Normal"]
