"""The ``Distribution`` base class: batch and event shapes, argument validation, the shape of samples."""

from __future__ import annotations

from oneflow_lite.framework.tensor import Tensor
from oneflow_lite.framework.tensor_meta import Size


class Distribution:
    """A batch of distributions of shape ``batch_shape``, each over events of shape ``event_shape``.

    Subclasses implement ``sample`` / ``rsample``, ``log_prob``, ``entropy`` and the moments they have;
    ``validate_args`` (default: ``Distribution.set_default_validate_args``, True as in PyTorch) checks
    parameters at construction and values given to ``log_prob``.
    """

    has_rsample = False
    _validate_default = True

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = self._validate_default if validate_args is None else bool(validate_args)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in (True, False):
            raise ValueError(f"Distribution.set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_default = value

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def _extended_shape(self, sample_shape=()) -> Size:
        """``sample_shape + batch_shape + event_shape``: the shape of ``sample(sample_shape)``."""
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(sample_shape + self._batch_shape + self._event_shape)

    def sample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__}.sample is not implemented")

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} does not support reparameterized sampling (rsample)")

    def sample_n(self, n: int):
        return self.sample(Size((n,)))

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _invalid(self, what: str, value: Tensor, constraint: str, valid: Tensor) -> None:
        """Raise PyTorch's ValueError when ``valid`` (a bool tensor) is not all True."""
        if not bool(valid.all()):
            raise ValueError(f"Expected {what} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                             f"distribution {self!r} to satisfy the constraint {constraint}, but found invalid "
                             f"values:\n{value!r}")

    def __repr__(self) -> str:
        params = ", ".join(f"{k}: {v.shape if v.numel() != 1 else v.item()}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self) -> dict:
        return {}
