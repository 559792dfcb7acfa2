"""``MultivariateNormal``: the Gaussian over vectors, kept as its mean and the Cholesky factor of its covariance."""

from __future__ import annotations

import math

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.distributions.distribution import Distribution
from oneflow_lite.functors.shape import broadcast_shapes


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None, scale_tril=None): exactly one of
    the three describes the covariance (its Cholesky factor ``scale_tril`` is what is kept)."""

    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if scale_tril is None:
            matrix = covariance_matrix if covariance_matrix is not None else F.linalg_inv(precision_matrix)
            if matrix.dim() < 2:
                raise ValueError("covariance_matrix or precision_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            scale_tril = F.linalg_cholesky(matrix)
        batch = broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(loc.shape[:-1]))
        k = loc.shape[-1]
        self.scale_tril = scale_tril.expand(*batch, k, k)
        self.loc = loc.expand(*batch, k)
        super().__init__(batch, (k,), validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)
    covariance_matrix = property(lambda self: self.scale_tril @ self.scale_tril.mT)
    variance = property(lambda self: self.scale_tril.pow(2).sum(-1))

    def rsample(self, sample_shape=()):
        eps = F.randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self.scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def sample(self, sample_shape=()):
        with no_grad():
            return self.rsample(sample_shape)

    def _half_log_det(self):
        return self.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        diff = (value - self.loc).unsqueeze(-1)
        solved = F.linalg_solve_triangular(self.scale_tril.expand(*diff.shape[:-2], *self.scale_tril.shape[-2:]),
                                           diff, upper=False)
        maha = solved.squeeze(-1).pow(2).sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + maha) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
