"""``Categorical``: a distribution over ``{0, ..., K-1}`` given by probabilities or logits."""

from __future__ import annotations

import math

from oneflow_lite import functional as F
from oneflow_lite.autograd.grad_mode import no_grad
from oneflow_lite.distributions.distribution import Distribution
from oneflow_lite.framework import dtype as dt
from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import Size
from oneflow_lite.framework.dtype import finfo
from oneflow_lite.functors.shape import broadcast_shapes


def _as_param(name: str, value) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"Categorical: argument '{name}' must be a Tensor, not {type(value).__name__}")
    if value.ndim < 1:
        raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
    return value


class Categorical(Distribution):
    """Categorical(probs=None, logits=None, validate_args=None): exactly one of ``probs`` (non-negative,
    normalised along the last dim) or ``logits`` (unnormalised log probabilities, normalised with
    logsumexp). The last dim indexes the K categories; the others are the batch shape."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            probs = _as_param("probs", probs)
            self._probs, self._logits = probs / probs.sum(-1, keepdim=True), None
        else:
            logits = _as_param("logits", logits)
            self._probs, self._logits = None, logits - logits.logsumexp(dim=-1, keepdim=True)
        param = self._probs if probs is not None else self._logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], (), validate_args)
        if self._validate_args:
            self._check_params(probs is not None, param)

    def _check_params(self, by_probs: bool, param: Tensor) -> None:
        if by_probs:
            valid = F.logical_and((param >= 0).all(-1), ((param.sum(-1) - 1).abs() < 1e-6))
            self._invalid("parameter probs", param, "Simplex()", valid)
        else:
            self._invalid("parameter logits", param, "IndependentConstraint(Real(), 1)", (param == param).all(-1))

    @property
    def probs(self) -> Tensor:
        if self._probs is None:
            self._probs = F.softmax(self._logits, dim=-1)
        return self._probs

    @property
    def logits(self) -> Tensor:
        if self._logits is None:  # log of the probabilities clamped to [eps, 1 - eps], as PyTorch
            eps = finfo(self._probs.dtype).eps
            self._logits = self._probs.clamp(min=eps, max=1 - eps).log()
        return self._logits

    @property
    def param_shape(self) -> Size:
        return (self._probs if self._probs is not None else self._logits).shape

    @property
    def mean(self) -> Tensor:
        return F.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.mean

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()) -> Tensor:
        """Indices drawn with replacement, shape ``sample_shape + batch_shape``."""
        shape = Size(sample_shape)
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = F.multinomial(probs_2d, shape.numel(), True).t()
            return samples_2d.reshape(self._extended_shape(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """``log p(value)``: ``value`` holds category indices and broadcasts against the batch shape."""
        if self._validate_args:
            self._check_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = F.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def _check_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError(f"Categorical.log_prob: the value argument must be a Tensor, not {type(value).__name__}")
        try:
            broadcast_shapes(tuple(value.shape), tuple(self._batch_shape))
        except RuntimeError:
            raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {tuple(value.shape)} vs "
                             f"{tuple(self._batch_shape)}.") from None
        valid = F.logical_and(F.logical_and(value % 1 == 0, value >= 0), value <= self._num_events - 1)
        if not bool(valid.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support (IntegerInterval(lower_bound=0, upper_bound="
                             f"{self._num_events - 1})) of the distribution {self!r}, but found invalid values:\n"
                             f"{value!r}")

    def entropy(self) -> Tensor:
        """``-sum(p * log p)`` over the categories (``log p`` clamped to the dtype's smallest float)."""
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The K category indices, shape ``(K,) + batch_shape`` (``(K,) + (1,) * len(batch_shape)`` when
        not ``expand``)."""
        values = F.arange(self._num_events, dtype=dt.int64).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    def _params(self) -> dict:
        return {"probs": self._probs} if self._probs is not None else {"logits": self._logits}
