"""Instance normalisation: ``InstanceNorm1d`` / ``2d`` / ``3d`` normalise each channel of each sample over its
spatial positions (PyTorch's ``torch.nn.modules.instancenorm``). By default they have no affine parameters and
track no running statistics; with ``track_running_stats`` the running mean and variance (averaged over the
batch) are updated in training and used in evaluation, as PyTorch does."""

from __future__ import annotations

import warnings

from oneflow_lite import functional as F
from oneflow_lite.nn.modules.batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Instance normalisation of batched inputs (N, C, ...) or unbatched ones (C, ...)."""

    _input_dims: tuple = ()  # (unbatched, batched) ranks

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input) -> None:
        if input.ndim not in self._input_dims:
            raise ValueError(f"expected {self._input_dims[0]}D or {self._input_dims[1]}D input (got {input.ndim}D "
                             f"input)")

    def _apply_instance_norm(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs,
                              copies) -> None:
        # Checkpoints from before PyTorch 0.4 hold running statistics for layers that do not track them.
        if not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                names = " and ".join(f'"{k}"' for k in keys)
                klass = type(self).__name__
                error_msgs.append(f"Unexpected running stats buffer(s) {names} for {klass} with "
                                  f"track_running_stats=False. If state_dict is a checkpoint saved before 0.4.0, "
                                  f"this may be expected because {klass} does not track running stats by default "
                                  f"since 0.4.0. Please remove these keys from state_dict. If the running stats "
                                  f"are actually needed, instead set track_running_stats=True in {klass} to enable "
                                  f"them. See the documentation of {klass} for details.")
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, strict, missing_keys, unexpected_keys, error_msgs, copies)

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = self._input_dims[0]
        feature_dim = input.ndim - unbatched
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          f"warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=3)
        if input.ndim == unbatched:
            return F.squeeze(self._apply_instance_norm(F.unsqueeze(input, 0)), 0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) inputs."""

    _input_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) inputs."""

    _input_dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _input_dims = (4, 5)
