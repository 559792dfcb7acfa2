"""``Independent``: a distribution whose rightmost batch dims are reinterpreted as event dims."""

from __future__ import annotations

from oneflow_lite.distributions.distribution import Distribution


class Independent(Distribution):
    """Independent(base_distribution, reinterpreted_batch_ndims): the rightmost batch dims of the base count as
    event dims (log_prob and entropy sum over them)."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        shape = base_distribution.batch_shape + base_distribution.event_shape
        n = len(base_distribution.batch_shape)
        if not 0 <= reinterpreted_batch_ndims <= n:
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {n}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        split = len(shape) - len(base_distribution.event_shape) - reinterpreted_batch_ndims
        super().__init__(shape[:split], shape[split:], validate_args)
        self.has_rsample = base_distribution.has_rsample

    def _sum_rightmost(self, value):
        return value.sum(list(range(-self.reinterpreted_batch_ndims, 0))) if self.reinterpreted_batch_ndims else value

    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum_rightmost(self.base_dist.entropy())

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
