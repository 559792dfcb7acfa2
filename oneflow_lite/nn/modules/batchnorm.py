"""Batch normalisation: ``BatchNorm1d`` / ``2d`` / ``3d`` on ``_BatchNorm``, and ``_NormBase``, the parameters
and running-statistics buffers it shares with instance normalisation (instancenorm.py), as in PyTorch's
``torch.nn.modules.batchnorm``.

Note [BatchNorm running statistics]
As PyTorch: in training mode a ``BatchNorm`` normalises with the batch's statistics and,
when ``track_running_stats``, updates ``running_mean`` / ``running_var`` in place
(``(1 - momentum) * running + momentum * batch``, the unbiased batch variance) and adds
one to ``num_batches_tracked``; ``momentum=None`` uses the cumulative average
``1 / num_batches_tracked`` (read from the counter, so not inside a graph capture). In
evaluation mode it normalises with the running statistics, or with the batch's when it
does not track them. All of it runs through the functional ``batch_norm`` and in-place
ops, so an ``nn.Graph`` captures the updates.
"""

from __future__ import annotations

from oneflow_lite import functional as F
from oneflow_lite.framework import dtype as dt
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _NormBase(Module):
    """``weight`` / ``bias`` (C,) when ``affine`` (ones and zeros; ``bias=False`` leaves the bias out) and, when
    ``track_running_stats``, the buffers ``running_mean`` (zeros), ``running_var`` (ones) and
    ``num_batches_tracked`` (an int64 0-d counter)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(F.empty(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(F.empty(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", F.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", F.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", F.zeros((), dtype=dt.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean zeros, running variance ones, no batches tracked."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """Reset the running statistics; weight ones, bias zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs,
                              copies) -> None:
        # A checkpoint without ``num_batches_tracked`` (written before it existed) keeps the current count.
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict and self.num_batches_tracked is not None:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs, copies)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Batch normalisation over dim 1 (Note [BatchNorm running statistics])."""

    _input_dims: tuple = ()

    def _check_input_dim(self, input) -> None:
        if input.ndim not in self._input_dims:
            expected = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(f"expected {expected} input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias, bn_training, factor,
                            self.eps)

    def extra_repr(self) -> str:
        # PyTorch 2.13 also prints "bias=True"; the repr without it is kept (tests/test_nn_layers.py checks it),
        # and a layer made with bias=False says so.
        bias = "" if self.bias is not None or not self.affine else "bias=False, "
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, {bias}"
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs."""

    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs."""

    _input_dims = (5,)
