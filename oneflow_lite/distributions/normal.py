"""``Normal``: the Gaussian ``N(loc, scale**2)``, with reparameterised sampling."""

from __future__ import annotations

import math
import numbers

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.distributions.distribution import Distribution
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.functors.creation import tensor


def _broadcast_all(loc, scale):
    """Tensors of one shape from tensors and numbers; numbers take a tensor argument's dtype (or the default)."""
    for name, v in (("loc", loc), ("scale", scale)):
        if not isinstance(v, (Tensor, numbers.Number)):
            raise TypeError(f"Normal: argument '{name}' must be a Tensor or a number, not {type(v).__name__}")
    like = loc if isinstance(loc, Tensor) else scale if isinstance(scale, Tensor) else None
    kwargs = {"dtype": like.dtype, "device": like.device} if like is not None else {}
    loc, scale = (v if isinstance(v, Tensor) else tensor(float(v), **kwargs) for v in (loc, scale))
    return F.broadcast_tensors(loc, scale)


class Normal(Distribution):
    """Normal(loc, scale, validate_args=None): mean ``loc`` and standard deviation ``scale`` (> 0), tensors or
    numbers broadcast together to the batch shape."""

    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)
        if self._validate_args:
            self._invalid("parameter loc", self.loc, "Real()", self.loc == self.loc)
            self._invalid("parameter scale", self.scale, "GreaterThan(lower_bound=0.0)", self.scale > 0)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + eps * scale`` with ``eps ~ N(0, 1)``: differentiable in ``loc`` and ``scale``."""
        shape = self._extended_shape(sample_shape)
        eps = F.randn(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        if self._validate_args and not isinstance(value, (Tensor, numbers.Number)):
            raise ValueError(f"Normal.log_prob: the value argument must be a Tensor, not {type(value).__name__}")
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value) -> Tensor:
        return 0.5 * (1 + F.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value) -> Tensor:
        return self.loc + self.scale * F.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def _params(self) -> dict:
        return {"loc": self.loc, "scale": self.scale}
