"""Normalisation layers: ``LayerNorm``, ``GroupNorm``, ``LocalResponseNorm`` and ``RMSNorm`` (batch and
instance normalisation are in batchnorm.py and instancenorm.py, as in PyTorch).
"""

from __future__ import annotations

import numbers

from oneflow_lite import functional as F
from oneflow_lite.nn import init
from oneflow_lite.nn.module import Module
from oneflow_lite.nn.parameter import Parameter

__all__ = ["GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims: ``(x - mean) / sqrt(var + eps) * weight + bias``
    (biased variance); weight ones and bias zeros when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(F.empty(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(F.empty(self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalise each group of ``num_channels / num_groups`` channels of each sample, then scale and shift
    per channel (weight ones, bias zeros when ``affine``)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(F.empty(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(F.empty(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones, bias zeros."""
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"




class LocalResponseNorm(Module):
    """Normalise each channel by the activity of its ``size`` neighbouring channels:
    ``x / (k + alpha / size * sum(x**2 over the window)) ** beta``."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims: ``x / sqrt(mean(x**2) + eps)
    * weight`` (weight ones when ``elementwise_affine``; ``eps`` None is the dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(F.empty(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
